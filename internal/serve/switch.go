package serve

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// switchTo makes name (effective, when given) the production the router
// serves: the caller started and verified it (the watch's evSwitch).
// campaign, when production is handed over to it, ends that hand-over.
func (p *prodCtl) switchTo(ctx context.Context, name string, effective *config.Profile, campaign string) (*control.SwitchResult, int, error) {
	prof := effective
	if prof == nil {
		var err error
		if prof, err = p.s.cfg.Backend(name); err != nil {
			return nil, http.StatusBadRequest, err
		}
	}
	if prof.Name == "" {
		prof.Name = name
	}
	if prof.Name != name {
		return nil, http.StatusBadRequest, fmt.Errorf("effective_profile is named %q, not %q", prof.Name, name)
	}
	if err := prof.Validate(p.s.cfg.Path, "effective_profile"); err != nil {
		return nil, http.StatusBadRequest, err
	}
	rt, err := newRoute(prof, p.s.tr, p.s.upstreamError)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	c := &command{Campaign: campaign, Prof: prof, Route: rt}
	if err := p.send(ctx, evSwitch, c); err != nil {
		return nil, http.StatusServiceUnavailable, err
	}
	if c.err == nil && c.switched != nil && c.prev != nil && c.prev != rt {
		// Requests already on the previous production finish there
		// before the caller stops it.
		c.switched.PreviousInFlight = waitIdle(ctx, c.prev, p.s.sc.DrainTimeout.Duration)
	}
	return c.switched, c.code, c.err
}

// switchNow serves c's profile from now on (the watch's effSwitch): the
// previous engine keeps running, detached with its record (the caller
// stops it by name); the new one's record is adopted; its restarts,
// failures and canaries start afresh. On the owning goroutine.
func (p *prodCtl) switchNow(c *command) {
	old := p.current()
	c.prev = old
	c.switched = &control.SwitchResult{Previous: old.name, Active: c.Prof.Name}
	if p.proc != nil {
		c.switched.PreviousPID = p.proc.PID()
		_, _ = p.proc.Detach()
	} else if p.adopted != nil {
		c.switched.PreviousPID = p.adopted.PID
		p.keeper().Release(*p.adopted)
	}
	p.proc, p.adopted, p.restart, p.foreign = nil, c.Record, nil, nil
	p.pid.Store(0)
	if c.Record != nil {
		p.pid.Store(int64(c.Record.PID))
		p.keeper().Claim(supervisor.RecordStatus{Record: *c.Record}, RouterOwner)
	}
	p.mu.Lock()
	p.lastFailure, p.lastCanary = nil, nil
	p.since = time.Now()
	p.mu.Unlock()
	p.rt.Store(c.Route)
}

// waitIdle waits up to bound for rt's in-flight requests to end and
// returns how many were left.
func waitIdle(ctx context.Context, rt *route, bound time.Duration) int64 {
	deadline := time.Now().Add(bound)
	for rt.inFlight.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	return rt.inFlight.Load()
}
