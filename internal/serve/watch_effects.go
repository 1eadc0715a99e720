package serve

import (
	"context"
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
)

// The watch's effects, performed by the router on the owning goroutine
// through the keeper and the supervisor: the only place where step's
// decisions touch processes, records, the state and the event log.

// policy is the watch's restart policy from [serve].
func (p *prodCtl) policy() watchPolicy {
	return watchPolicy{Budget: p.sc.RestartBudget, Window: p.sc.RestartWindow.Duration,
		Backoff: p.sc.RestartBackoff.Duration, BackoffMax: p.sc.RestartBackoffMax.Duration}
}

// watchState is the watch's plain state, read from the prodCtl.
func (p *prodCtl) watchState() watchState {
	unmanaged := p.prof().Unmanaged
	p.mu.Lock()
	defer p.mu.Unlock()
	return watchState{State: p.st, Unmanaged: unmanaged, Handover: p.handover, Window: p.window, Restarts: p.restarts}
}

// storeWatch keeps what step decided of the restart count and the
// hand-over; the state itself changes through effState (setState).
func (p *prodCtl) storeWatch(s watchState) {
	p.mu.Lock()
	p.window, p.restarts, p.handover = s.Window, s.Restarts, s.Handover
	p.mu.Unlock()
}

// sense is an event of kind k about failure f seen at what, with the
// facts the decision needs: a live holder of production's lease, a
// record that names a process this router neither started nor adopted.
func (p *prodCtl) sense(k eventKind, f *failure.Failure, what string) event {
	e := event{Kind: k, Failure: f, What: what, Now: time.Now()}
	if !p.prof().Unmanaged {
		e.Holder = p.campaign()
		if o := p.otherRecord(); o != nil {
			e.OtherRecord, e.OtherPID = true, o.PID
		}
	}
	return e
}

// apply applies step to e and performs its effects; an effect that
// learns something (a record settled or not, a restart that found
// nothing to adopt) feeds the next event back.
func (p *prodCtl) apply(ctx context.Context, e event) {
	for {
		s, effs := step(p.watchState(), e, p.policy())
		p.storeWatch(s)
		next, more := p.perform(ctx, e, effs)
		if !more {
			return
		}
		e = next
	}
}

// perform does effs, in order, for event e; more is true when next is to
// be applied.
func (p *prodCtl) perform(ctx context.Context, e event, effs []effect) (next event, more bool) {
	for _, ef := range effs {
		switch ef.Kind {
		case effDiscard:
			fields := map[string]any{"backend": p.name(), "what": e.What, "reason": ef.Msg}
			if ef.Failure != nil {
				fields["class"] = ef.Failure.Class
			}
			if ef.Holder != nil {
				fields["holder"], fields["lease_owner_pid"] = ef.Holder.Campaign, ef.Holder.OwnerPID
			} else {
				fields["pid"] = e.OtherPID
			}
			p.s.event("check_discarded", fields)
		case effStopOwn:
			p.stopAny(ctx)
		case effHold:
			p.holdFor(ef.Holder)
		case effSettle:
			if p.recorded(ctx, e.What) {
				return event{}, false
			}
			e.Settled = true
			return e, true
		case effRecordFailure:
			p.recordFailure(ef.Failure, e.What)
		case effState:
			p.setState(ef.State, ef.Msg)
		case effScheduleRestart:
			p.mu.Lock()
			p.restartAt = time.Now().Add(ef.Wait)
			p.mu.Unlock()
			p.restart = time.After(ef.Wait)
		case effBudgetSpent:
			p.s.event("restart_budget_spent", map[string]any{"backend": p.name(), "restarts_in_window": ef.N})
		case effNote:
			if x := p.exited; x != nil {
				p.s.event("engine_exited", map[string]any{"backend": p.name(), "pid": x.PID(), "exit": x.ExitInfo().String(),
					"note": "after its failure was recorded; not a second failure"})
			}
		case effRestart:
			p.restartNow(ctx, ef.N)
		case effStart:
			p.s.metrics.restarts.WithLabelValues(p.name()).Inc()
			p.s.event("restart", map[string]any{"backend": p.name(), "restart": ef.N})
			p.start(ctx, fmt.Sprintf("restart %d", ef.N))
		case effTakeBack:
			p.s.event("lease_owner_died", map[string]any{"backend": p.name(), "campaign": ef.Holder.Campaign, "lease_owner_pid": ef.Holder.OwnerPID})
			p.takebackNow(ctx, ef.Holder.Campaign)
			p.recoverCampaign(ctx, ef.Holder.Campaign)
		}
	}
	return event{}, false
}

// restartNow is restart n, due now: holding production's lease, the old
// process is stopped, the record settled (adopted, or left to another
// configuration), and, when nothing was, evRestarting counts it and
// starts production.
func (p *prodCtl) restartNow(ctx context.Context, n int) {
	restarted := p.underLease("restart", func() {
		if pid := p.pid.Load(); pid != 0 {
			// A hung engine takes up to stop_grace to stop: the status
			// says so, not the restart's due time.
			p.mu.Lock()
			p.restartAt = time.Time{}
			p.mu.Unlock()
			p.setState(control.StateRestarting, fmt.Sprintf("stopping the old process (pid %d: SIGTERM, SIGKILL after stop_grace %s) before restart %d of %d",
				pid, p.prof().StopGrace.Duration, n, p.sc.RestartBudget))
		}
		p.stopAny(ctx)
		if p.recorded(ctx, "restart") {
			// Adopted, or left to a process of another configuration.
			return
		}
		p.apply(ctx, event{Kind: evRestarting, Now: time.Now()})
	})
	if !restarted {
		// Another hiro took production's endpoint while the restart
		// waited: what the router started (dead or failed) is still its
		// own to stop; production is that hiro's now.
		p.stopAny(ctx)
	}
}

// recoverCampaign settles, beside the watch, what the dead campaign left
// behind once production is back: its candidate is stopped and its leases
// released (Options.RecoverCampaign), as 'hiro recover' does, so that no
// candidate keeps running beside production.
func (p *prodCtl) recoverCampaign(ctx context.Context, campaign string) {
	rc := p.s.opts.RecoverCampaign
	if rc == nil {
		return
	}
	p.recovering.Add(1)
	go func() {
		defer p.recovering.Done()
		p.s.event("campaign_recovery", map[string]any{"backend": p.name(), "campaign": campaign, "message": "stopping its candidate and releasing its leases"})
		rc(ctx, campaign, func(line string) {
			p.s.event("campaign_recovery", map[string]any{"backend": p.name(), "campaign": campaign, "message": line})
		})
	}()
}
