package serve

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// servedWatch is what the router knows of a profile listed in [serve]
// served: such a backend is proxied as is (never started, stopped or
// restarted by the router) and its health is polled every
// health_interval, so that the status says whether it answers and a
// request for it while it does not gets 503 with Retry-After at once
// instead of waiting on a dead address.
type servedWatch struct {
	mu      sync.Mutex
	state   control.State // StateReady or StateDown; StateStarting before the first poll
	since   time.Time
	message string
	last    *control.Check
}

// snapshot returns the state, since when, the message and the last check.
func (w *servedWatch) snapshot() (control.State, time.Time, string, *control.Check) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state, w.since, w.message, w.last
}

func (w *servedWatch) set(st control.State, msg string, c *control.Check) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if st != w.state {
		w.state, w.since = st, time.Now()
	}
	w.message, w.last = msg, c
}

// down reports whether the last poll found the backend not answering.
func (w *servedWatch) down() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == control.StateDown
}

// watchServed polls every served backend's health until ctx ends.
func (s *Server) watchServed(ctx context.Context) {
	if len(s.served) == 0 {
		return
	}
	t := time.NewTicker(s.sc.HealthInterval.Duration)
	defer t.Stop()
	for {
		for _, rt := range s.served {
			s.pollServed(ctx, rt)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollServed checks rt's health once and records a change as an event.
func (s *Server) pollServed(ctx context.Context, rt *route) {
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, supervisor.DefaultHealthRequestTimeout)
	h := rt.eng.CheckHealth(hctx, rt.hc, rt.prof.BaseURL, rt.prof.Model)
	cancel()
	if ctx.Err() != nil {
		return
	}
	before, _, _, _ := rt.watch.snapshot()
	c := &control.Check{At: start, OK: h.State == engine.HealthReady, DurationMS: msSince(start)}
	if c.OK {
		rt.watch.set(control.StateReady, "served as is (not started or restarted by the router); health answers", c)
	} else {
		c.Error = h.Message
		msg := fmt.Sprintf("served as is (not started or restarted by the router); health: %s", h.Message)
		// A certificate not trusted or a key refused: say which setting
		// to fix, in the words every command uses.
		if a := supervisor.HealthAdvice(rt.prof, h); a != "" {
			msg += "; " + a
		}
		rt.watch.set(control.StateDown, msg, c)
	}
	if after, _, msg, _ := rt.watch.snapshot(); after != before {
		s.event("served_state", map[string]any{"backend": rt.name, "state": after, "message": msg})
	}
}
