package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// switchTo makes name (effective, when given) the production the router
// serves: the caller started and verified it.
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
	var res *control.SwitchResult
	var prev *route
	code, serr := 0, error(nil)
	derr := p.do(ctx, func(ctx context.Context) {
		endHandover := false
		if p.handedOver() {
			p.mu.Lock()
			h := p.handover
			p.mu.Unlock()
			if campaign == "" || h == nil || h.Campaign != campaign {
				code, serr = http.StatusConflict, errors.New("production is handed over to a campaign; take it back first")
				return
			}
			endHandover = true
		}
		var adopted *supervisor.Record
		if !prof.Unmanaged {
			st, err := supervisor.Status(p.stateDir(), prof.Name)
			if err != nil || st.Status != supervisor.StatusRunning {
				code, serr = http.StatusConflict, fmt.Errorf("backend %s is not running as a recorded backend (start it with `hiro backend start %s` or through activation first)", prof.Name, shellquote.Quote(prof.Name))
				return
			}
			rec := st.Record
			adopted = &rec
		}
		old := p.current()
		prev = old
		res = &control.SwitchResult{Previous: old.name, Active: prof.Name}
		if p.proc != nil {
			res.PreviousPID = p.proc.PID()
			// The previous engine keeps running (the caller stops it);
			// its record stays so it can be stopped by name.
			_, _ = p.proc.Detach()
		} else if p.adopted != nil {
			res.PreviousPID = p.adopted.PID
		}
		p.proc, p.adopted, p.restart, p.foreign = nil, adopted, nil, nil
		p.pid.Store(0)
		if adopted != nil {
			p.pid.Store(int64(adopted.PID))
		}
		p.mu.Lock()
		// A new production: its own restarts, failures and canaries, and
		// "ready since" the switch.
		p.window, p.lastFailure, p.lastCanary = nil, nil, nil
		p.since = time.Now()
		p.mu.Unlock()
		p.rt.Store(rt)
		if endHandover {
			p.mu.Lock()
			p.handover = nil
			p.mu.Unlock()
			p.owner = 0
			p.s.draining.Store(false)
		}
		p.setState(control.StateReady, "switched from "+old.name)
		p.s.event("switch", map[string]any{"from": old.name, "to": prof.Name})
	})
	if derr != nil {
		return nil, http.StatusServiceUnavailable, derr
	}
	if serr == nil && res != nil && prev != nil && prev != rt {
		// Requests already on the previous production finish there
		// before the caller stops it.
		res.PreviousInFlight = waitIdle(ctx, prev, p.s.sc.DrainTimeout.Duration)
	}
	return res, code, serr
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
