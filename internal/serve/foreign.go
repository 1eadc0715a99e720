package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// recorded acts on a running process that production's record names,
// before the router starts one (its first start, a restart, the start
// after a campaign's lease was released): started with the same
// configuration and ready, it is adopted and claimed (Keeper.Claim: its
// record names this router as Owner); with the same configuration but
// not ready, it is stopped (the caller starts a fresh one), unless
// another live hiro watches it (Record.OwnerAlive: another router, a
// start still under way), when it is left to that hiro (leaveToOwner);
// started
// with another configuration (another hiro sharing state_dir, or
// `hiro backend start` from another file), it is left running and
// production is left to it (leaveToForeign): never stopped, never
// overwritten. It returns true when production was settled (adopted or
// left), false when the caller is to start it. On the owning goroutine,
// with no process of the router's own (pid 0). what names the step, for
// the event.
func (p *prodCtl) recorded(ctx context.Context, what string) bool {
	prof := p.prof()
	found, st := p.keeper().Look(prof)
	switch found {
	case production.FoundForeign:
		p.leaveToForeign(ctx, st, what)
		return true
	case production.FoundOwn:
	default:
		return false
	}
	if st.OwnerAlive() {
		// Another live hiro launched it and watches it (another router,
		// a 'hiro backend start' still waiting for ready), under a lease
		// folder this router does not see: never stopped from here, even
		// while it is not ready yet.
		p.leaveToOwner(st, what)
		return true
	}
	if rr := supervisor.CheckReady(ctx, prof, p.current().hc); rr.OK {
		rec := st.Record
		// Watched from now on by this router: a router under another
		// HOME finds it so (holdProduction) and leaves it alone.
		p.keeper().Claim(st, RouterOwner)
		p.adopted, p.foreign = &rec, nil
		p.pid.Store(int64(rec.PID))
		p.setHealth(true, "")
		p.setState(control.StateReady, fmt.Sprintf("adopted the running pid %d", rec.PID))
		return true
	} else if rr.Failure != nil {
		p.s.event("adopt_refused", map[string]any{"backend": prof.Name, "pid": st.PID, "failure": rr.Failure})
	}
	_, sr, _ := p.keeper().StopRecorded(ctx, prof.Name, 0)
	p.s.event("stopped_recorded", map[string]any{"backend": prof.Name, "pid": st.PID, "stop": sr})
	return false
}

// ForeignProductionError says that production's record names a running
// process started with another configuration than the router's: New
// refuses to start then (hiro serve exits 2), since serving would mean
// stopping a working production for a configuration change.
type ForeignProductionError struct {
	// Config is the router's configuration file; Record the running
	// process's record (pid, base URL, start time, record path).
	Config string
	Record supervisor.RecordStatus
}

func (e *ForeignProductionError) Error() string {
	r := e.Record
	return fmt.Sprintf("%s: backends.%s: %s is already running (pid %d, %s, started %s; record %s) with another configuration than %s gives it: "+
		"hiro serve does not stop a working production for a configuration change; stop it with 'hiro backend stop %s' and start hiro serve again, "+
		"or put back the configuration it runs with",
		e.Config, r.Name, r.Name, r.PID, r.BaseURL, r.StartedAt.Local().Format(time.RFC3339), r.RecordPath, e.Config, shellquote.Quote(r.Name))
}

// CheckRecordedProduction returns a *ForeignProductionError when prof (a
// managed production) is recorded in cfg's state_dir as running with
// another configuration (config.Profile.Hash), nil otherwise (no record,
// a stale one, the same configuration, an unmanaged profile).
func CheckRecordedProduction(cfg *config.Config, prof *config.Profile) error {
	found, st := production.Keeper{StateDir: cfg.StateDir}.Look(prof)
	if found != production.FoundForeign {
		return nil
	}
	return &ForeignProductionError{Config: cfg.Path, Record: st}
}

// leaveToForeign leaves production to st, a running process of another
// configuration that production's record names (found at what: "start",
// "restart", "health", "canary", "death"): it is not stopped, the router
// starts nothing over it, and the state (down) and the event
// production_replaced say so and what to do. The health tick looks
// again (foreignGone): once that process is gone, the router starts
// production (evForeignGone).
func (p *prodCtl) leaveToForeign(ctx context.Context, st supervisor.RecordStatus, what string) {
	p.foreign = &st
	p.restart = nil
	p.mu.Lock()
	p.restartAt = time.Time{}
	p.mu.Unlock()
	name := p.name()
	p.s.event("production_replaced", map[string]any{"backend": name, "pid": st.PID, "base_url": st.BaseURL, "started_at": st.StartedAt,
		"record": st.RecordPath, "what": what,
		"reason": "production's record names a process this router did not start or adopt, started with another configuration (another hiro sharing state_dir?); it is left running"})
	p.setState(control.StateDown, fmt.Sprintf("%s is recorded as pid %d (%s, started %s) with another configuration than this router's, by another hiro sharing state_dir %s; "+
		"this router leaves it running and starts nothing over it: stop it with 'hiro backend stop %s' (this router then starts production again), or serve that configuration instead",
		name, st.PID, st.BaseURL, st.StartedAt.Local().Format(time.RFC3339), p.stateDir(), shellquote.Quote(name)))
}

// leaveToOwner leaves production to st, a running process of the
// router's configuration that another live hiro watches (its record's
// Owner, found at what): it is not stopped or adopted, the router starts
// nothing over it, and the state (down) and the event production_owned
// say who has it and what to do. The health tick looks again
// (foreignGone): once that hiro lets it go (a 'hiro backend start' that
// ended) or the process is gone, the router brings production up again
// (adopting it when ready).
func (p *prodCtl) leaveToOwner(st supervisor.RecordStatus, what string) {
	p.foreign = &st
	p.restart = nil
	p.mu.Lock()
	p.restartAt = time.Time{}
	p.mu.Unlock()
	name, o := p.name(), st.Owner
	p.s.event("production_owned", map[string]any{"backend": name, "pid": st.PID, "owner_pid": o.PID, "owner": o.What,
		"record": st.RecordPath, "what": what, "reason": "production's record names a process another live hiro watches; it is left to it, not stopped"})
	if strings.HasPrefix(o.What, RouterOwner) {
		p.setState(control.StateDown, fmt.Sprintf("%s (pid %d) is watched by another hiro serve (pid %d), which started or adopted it, under a lease folder this router does not see (another HOME or HIRO_LEASE_DIR); "+
			"this router neither stops nor restarts it: stop that router (kill -TERM %d) and serve from one, or give this router a production of its own",
			name, st.PID, o.PID, o.PID))
		return
	}
	p.setState(control.StateDown, fmt.Sprintf("%s (pid %d) is started or watched by %s (hiro pid %d); this router leaves it running and adopts it once that hiro lets it go",
		name, st.PID, o.What, o.PID))
}

// foreignGone looks again at the process production was left to (the
// watch's effCheckForeign): gone is true, with its pid, once its record no
// longer names it running, or, for one of the router's configuration
// left to its live Owner (leaveToOwner), once no live hiro watches it.
func (p *prodCtl) foreignGone() (pid int, gone bool) {
	st, err := supervisor.Status(p.stateDir(), p.name())
	if err == nil && st.Status == supervisor.StatusRunning && st.PID == p.foreign.PID && st.StartTicks == p.foreign.StartTicks {
		if p.foreign.Owner != nil && st.ProfileHash == p.prof().Hash() && !st.OwnerAlive() {
			return p.foreign.PID, true
		}
		return 0, false
	}
	return p.foreign.PID, true
}

// otherRecord returns production's record when it names a running
// process other than the one this router started or adopted (another
// hiro sharing state_dir replaced it), nil otherwise.
func (p *prodCtl) otherRecord() *supervisor.RecordStatus {
	st, err := supervisor.Status(p.stateDir(), p.name())
	if err != nil || st.Status != supervisor.StatusRunning || int64(st.PID) == p.pid.Load() {
		return nil
	}
	return &st
}
