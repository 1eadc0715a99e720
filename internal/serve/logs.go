package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hiro-dev/hiro/internal/redact"
)

func (s *Server) openLogs() error {
	s.events = s.opts.Events
	if s.events == nil {
		s.events = os.Stderr
	}
	dir := filepath.Join(s.cfg.StateDir, "serve")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("serve: creating %s: %w; check state_dir", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("serve: opening the event log: %w", err)
	}
	s.evFile = f
	switch {
	case s.opts.AccessLog != nil:
		s.access = newAccessLog(s.opts.AccessLog, nil)
	case s.sc.AccessLog == "off":
	case s.sc.AccessLog == "-":
		s.access = newAccessLog(os.Stderr, nil)
	default:
		af, err := os.OpenFile(s.sc.AccessLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			f.Close()
			return fmt.Errorf("serve.access_log: %w", err)
		}
		s.access = newAccessLog(af, af)
	}
	return nil
}

// reopenLogs opens the access log (when [serve] access_log is a path)
// and events.jsonl again by their paths, as log rotation needs (the old
// files were moved away), and records a "reopened" event; a file that
// cannot be opened keeps the one open before, and says so
// ("reopen_failed").
func (s *Server) reopenLogs() {
	fields := map[string]any{}
	if path := s.sc.AccessLog; s.opts.AccessLog == nil && path != "-" && path != "off" {
		af, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			s.event("reopen_failed", map[string]any{"access_log": path, "error": err.Error(),
				"what_to_do": "the access log goes on to the file open before; fix the folder or its permissions and send SIGHUP again"})
		} else {
			s.access.swap(af, af)
			fields["access_log"] = path
		}
	}
	evPath := filepath.Join(s.cfg.StateDir, "serve", "events.jsonl")
	if f, err := os.OpenFile(evPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		s.event("reopen_failed", map[string]any{"event_log": evPath, "error": err.Error(),
			"what_to_do": "events go on to the file open before; fix state_dir's permissions and send SIGHUP again"})
	} else {
		s.eventsMu.Lock()
		old := s.evFile
		s.evFile = f
		s.eventsMu.Unlock()
		if old != nil {
			old.Close()
		}
		fields["event_log"] = evPath
	}
	s.event("reopened", fields)
}

func (s *Server) closeLogs() {
	s.access.Close()
	if s.evFile != nil {
		s.evFile.Close()
	}
}

// event writes one supervision event as a JSON line.
func (s *Server) event(kind string, fields map[string]any) {
	m := map[string]any{"time": time.Now().UTC(), "event": kind}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	// Events quote engine logs and root causes: keys never reach stderr
	// (journald under systemd) or events.jsonl.
	b = append([]byte(redact.Secrets(string(b))), '\n')
	s.eventsMu.Lock()
	defer s.eventsMu.Unlock()
	if s.events != nil {
		s.events.Write(b)
	}
	if s.evFile != nil {
		s.evFile.Write(b)
	}
}
