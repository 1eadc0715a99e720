package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"time"
)

// accessEntry is one line of the JSON access log. It never holds prompt
// or reply text, nor any header (keys stay out).
type accessEntry struct {
	Time       time.Time `json:"time"`
	Remote     string    `json:"remote"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Model      string    `json:"model,omitempty"`
	Backend    string    `json:"backend,omitempty"`
	Status     int       `json:"status"`
	Bytes      int64     `json:"bytes"`
	Stream     bool      `json:"stream,omitempty"`
	TTFBMS     float64   `json:"ttfb_ms,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	Prompt     int64     `json:"prompt_tokens,omitempty"`
	Completion int64     `json:"completion_tokens,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// accessLog writes entries as JSON lines through a buffer flushed every
// flushEvery and at Close, so a request never waits on a write syscall.
type accessLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	c    io.Closer
	enc  *json.Encoder
	stop chan struct{}
	done chan struct{}
}

const accessFlushEvery = 200 * time.Millisecond

// newAccessLog logs to w (nil: no access log); c, when set, is closed at
// Close.
func newAccessLog(w io.Writer, c io.Closer) *accessLog {
	if w == nil {
		return nil
	}
	a := &accessLog{w: bufio.NewWriterSize(w, 64<<10), c: c, stop: make(chan struct{}), done: make(chan struct{})}
	a.enc = json.NewEncoder(a.w)
	go a.flusher()
	return a
}

func (a *accessLog) flusher() {
	defer close(a.done)
	t := time.NewTicker(accessFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.mu.Lock()
			a.w.Flush()
			a.mu.Unlock()
		case <-a.stop:
			return
		}
	}
}

func (a *accessLog) log(e *accessEntry) {
	if a == nil {
		return
	}
	a.mu.Lock()
	_ = a.enc.Encode(e)
	a.mu.Unlock()
}

// Close flushes and closes the log.
func (a *accessLog) Close() {
	if a == nil {
		return
	}
	close(a.stop)
	<-a.done
	a.mu.Lock()
	a.w.Flush()
	a.mu.Unlock()
	if a.c != nil {
		a.c.Close()
	}
}
