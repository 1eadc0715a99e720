package supervisor

import (
	"bytes"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLogPoll is how often the log follower looks for new bytes in the
// attempt's log file. The engine writes the file directly (so it can
// outlive hiro); 5 ms keeps the tracker a few ms behind the engine at the
// cost of one read(2) returning 0 bytes per tick.
const DefaultLogPoll = 5 * time.Millisecond

// maxLineBytes bounds a line held while waiting for its newline; a longer
// run of bytes is fed as a line of its own.
const maxLineBytes = 256 << 10

// follower reads an attempt's log file as it grows and feeds each
// complete line to feed. One goroutine polls; drain reads the rest at
// once (after the process exited) from the caller's goroutine.
type follower struct {
	f    *os.File
	feed func(line string)
	// skip reports lines that must not count as activity for the stall
	// timeout (the engine logging hiro's own health requests).
	skip func(line string) bool

	mu      sync.Mutex // guards f reads, buf
	buf     []byte
	scratch []byte

	lastActivity atomic.Int64 // unix nanoseconds of the last counted line
	started      bool         // start was called; set before any halt
	stopOnce     sync.Once
	stop         chan struct{}
	done         chan struct{}
}

func newFollower(path string, feed func(string), skip func(string) bool) (*follower, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fl := &follower{f: f, feed: feed, skip: skip, scratch: make([]byte, 32<<10),
		stop: make(chan struct{}), done: make(chan struct{})}
	fl.lastActivity.Store(time.Now().UnixNano())
	return fl, nil
}

// start launches the polling goroutine.
func (fl *follower) start(every time.Duration) {
	fl.started = true
	go fl.run(every)
}

// run polls until stopped; it is the follower's one goroutine.
func (fl *follower) run(every time.Duration) {
	defer close(fl.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		fl.read(false)
		select {
		case <-fl.stop:
			return
		case <-t.C:
		}
	}
}

// halt stops the polling goroutine and waits for it; idempotent.
func (fl *follower) halt() {
	fl.stopOnce.Do(func() { close(fl.stop) })
	if fl.started {
		<-fl.done
	}
}

// drain stops polling, reads everything left in the file and feeds the
// last line even without its newline. Used after the process exited.
func (fl *follower) drain() {
	fl.halt()
	fl.read(true)
}

// close stops polling and closes the file.
func (fl *follower) close() {
	fl.halt()
	fl.f.Close()
}

// read feeds every complete line now in the file; with final, also the
// trailing partial line.
func (fl *follower) read(final bool) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for {
		n, err := fl.f.Read(fl.scratch)
		if n > 0 {
			fl.buf = append(fl.buf, fl.scratch[:n]...)
			fl.split()
		}
		if err == io.EOF || n == 0 || err != nil {
			break
		}
	}
	if final && len(fl.buf) > 0 {
		fl.emit(fl.buf)
		fl.buf = fl.buf[:0]
	}
}

// split feeds complete lines from buf and keeps the remainder.
func (fl *follower) split() {
	start := 0
	for {
		i := bytes.IndexByte(fl.buf[start:], '\n')
		if i < 0 {
			break
		}
		fl.emit(fl.buf[start : start+i])
		start += i + 1
	}
	rest := fl.buf[start:]
	if len(rest) > maxLineBytes {
		fl.emit(rest)
		rest = rest[:0]
	}
	fl.buf = append(fl.buf[:0], rest...)
}

func (fl *follower) emit(b []byte) {
	line := string(b)
	if fl.skip == nil || !fl.skip(line) {
		fl.lastActivity.Store(time.Now().UnixNano())
	}
	fl.feed(line)
}

// idleFor returns how long ago the last counted line arrived.
func (fl *follower) idleFor(now time.Time) time.Duration {
	return now.Sub(time.Unix(0, fl.lastActivity.Load()))
}
