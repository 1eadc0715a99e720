package qualify

import (
	"sync"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/signing"
)

// saver writes evidence snapshots from a goroutine of its own, so that
// the campaign does not wait on fsync after every gate: save encodes a
// snapshot (sub-millisecond) and returns; the writer always writes the
// newest snapshot, atomically; flush waits until the newest one is on
// disk. A crash loses at most the snapshot being written, never the last
// complete one (each write is a rename of a fully written file).
type saver struct {
	dir string
	// key signs every snapshot (package signing): a snapshot and its
	// signature are one file, written atomically.
	key *signing.Key

	mu      sync.Mutex
	cond    *sync.Cond
	pending *snapshot
	version int
	written int
	err     error
	closed  bool
	done    chan struct{}
}

type snapshot struct {
	version      int
	private, pub []byte
}

func newSaver(dir string, key *signing.Key) *saver {
	s := &saver{dir: dir, key: key, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.loop()
	return s
}

// save snapshots e for writing. Encoding errors are returned at once.
func (s *saver) save(e *evidence.Evidence) error {
	priv, pub, err := evidence.Encode(e, s.key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.version++
	s.pending = &snapshot{version: s.version, private: priv, pub: pub}
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

// flush waits until every snapshot saved so far is written and returns
// the last write error.
func (s *saver) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.written < s.version && s.err == nil && !s.closed {
		s.cond.Wait()
	}
	return s.err
}

// close flushes and stops the writer goroutine.
func (s *saver) close() error {
	err := s.flush()
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	return err
}

func (s *saver) loop() {
	defer close(s.done)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for s.pending == nil && !s.closed {
			s.cond.Wait()
		}
		if s.pending == nil && s.closed {
			return
		}
		snap := s.pending
		s.pending = nil
		s.mu.Unlock()
		err := evidence.WriteEncoded(s.dir, snap.private, snap.pub)
		s.mu.Lock()
		if err != nil && s.err == nil {
			s.err = err
		}
		s.written = snap.version
		s.cond.Broadcast()
	}
}
