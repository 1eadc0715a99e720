package serve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/supervisor"
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
	name, unmanaged := p.name(), p.prof().Unmanaged
	p.mu.Lock()
	defer p.mu.Unlock()
	return watchState{Name: name, State: p.st, Unmanaged: unmanaged, Handover: p.handover, Owner: p.owner,
		Foreign: p.foreign != nil, Window: p.window, Restarts: p.restarts}
}

// storeWatch keeps what step decided of the restart count, the
// hand-over and its owner, and the process production was left to (only
// forgotten here: leaveToForeign sets it); the state itself changes
// through effState (setState), the profile through effSwitch.
func (p *prodCtl) storeWatch(s watchState) {
	p.mu.Lock()
	p.window, p.restarts, p.handover = s.Window, s.Restarts, s.Handover
	p.mu.Unlock()
	p.owner = s.Owner
	if !s.Foreign {
		p.foreign = nil
	}
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

// senseBringUp is the bring-up, with the live holder of production's
// lease (nil: none).
func (p *prodCtl) senseBringUp() event {
	return event{Kind: evBringUp, Holder: p.campaign(), Now: time.Now()}
}

// senseOwner looks at the owner of a control hand-over: gone when its
// pid is not running or is another process now (its start time).
func (p *prodCtl) senseOwner() event {
	e := event{Kind: evOwnerCheck, Now: time.Now()}
	p.mu.Lock()
	h := p.handover
	p.mu.Unlock()
	if h != nil && h.Source == "control" {
		t, ok := procfs.StartTicks(h.OwnerPID)
		e.OwnerGone = !ok || t != p.owner
	}
	return e
}

// senseCanaryTick is the canary tick: whether one is still in flight,
// and whether a proxied request succeeded within the canary interval.
func (p *prodCtl) senseCanaryTick() event {
	last := p.lastOK.Load()
	return event{Kind: evCanaryTick, Now: time.Now(), CanaryInFlight: p.canaryCancel != nil,
		ServedRecently: last > 0 && time.Since(time.Unix(0, last)) < p.sc.CanaryInterval.Duration}
}

// senseCanaryDone ends the canary in flight and is its outcome, stale
// when it probed a production that is no longer the one served (another
// generation or route) or its context ended.
func (p *prodCtl) senseCanaryDone(ctx context.Context, o canaryOutcome) event {
	p.canaryCancel()
	p.canaryCancel = nil
	return event{Kind: evCanaryDone, Now: time.Now(), Canary: &o,
		Stale: o.aborted || ctx.Err() != nil || o.gen != p.canaryGen || o.rt != p.current()}
}

// senseCommand is command e with the facts its decision needs: the
// running record of the profile a switch goes to.
func (p *prodCtl) senseCommand(e event) event {
	e.Now = time.Now()
	if c := e.Cmd; e.Kind == evSwitch && !c.Prof.Unmanaged {
		if st, err := supervisor.Status(p.stateDir(), c.Prof.Name); err == nil && st.Status == supervisor.StatusRunning {
			rec := st.Record
			c.Record = &rec
		}
	}
	return e
}

// send hands command c (of kind k) to the run goroutine and waits for
// its answer; the error is ctx's when it ended first (the command still
// runs to its end there).
func (p *prodCtl) send(ctx context.Context, k eventKind, c *command) error {
	c.done = make(chan struct{})
	select {
	case p.cmd <- event{Kind: k, Cmd: c}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
// be applied (an effect that learned something: it ends the list).
func (p *prodCtl) perform(ctx context.Context, e event, effs []effect) (next event, more bool) {
	for _, ef := range effs {
		if next, more := p.perform1(ctx, e, ef); more {
			return next, true
		}
	}
	return event{}, false
}

// perform1 does one effect of event e.
func (p *prodCtl) perform1(ctx context.Context, e event, ef effect) (next event, more bool) {
	c := e.Cmd
	if c == nil {
		c = &command{} // answers go nowhere
	}
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
		if sr := p.stopAny(ctx); sr != nil && c.handover != nil {
			c.handover.Stopped, c.handover.Stop = true, sr
		}
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
	case effCancelRestart:
		p.restart = nil
		p.mu.Lock()
		p.restartAt = time.Time{}
		p.mu.Unlock()
	case effBudgetSpent:
		p.s.event("restart_budget_spent", map[string]any{"backend": p.name(), "restarts_in_window": ef.N})
	case effNote:
		if e.ExitPID != 0 {
			p.s.event("engine_exited", map[string]any{"backend": p.name(), "pid": e.ExitPID, "exit": e.Exit,
				"note": "after its failure was recorded; not a second failure"})
		}
	case effRestart:
		return p.restartNow(ctx, ef.N)
	case effStart:
		p.s.metrics.restarts.WithLabelValues(p.name()).Inc()
		p.s.event("restart", map[string]any{"backend": p.name(), "restart": ef.N})
		p.start(ctx, fmt.Sprintf("restart %d", ef.N))
	case effOwnerDied:
		p.s.event("lease_owner_died", map[string]any{"backend": p.name(), "campaign": ef.Holder.Campaign, "lease_owner_pid": ef.Holder.OwnerPID})
	case effTakeBack:
		c.takeback = p.takebackNow(ctx, ef.Msg)
	case effRecoverCampaign:
		p.recoverCampaign(ctx, ef.Msg)
	case effLeasedStart:
		if h := p.underLease(ef.Msg, func() {
			if !p.recorded(ctx, ef.Msg) {
				p.start(ctx, "starting")
			}
		}); h != nil {
			return event{Kind: evLeaseHeld, What: ef.Msg, Holder: h, Now: time.Now()}, true
		}
	case effStartRefused:
		p.s.event("start_refused", map[string]any{"backend": p.name(), "what": ef.Msg, "holder": ef.Holder.Campaign, "lease_owner_pid": ef.Holder.OwnerPID})
	case effCheckHealth:
		return p.checkHealth(ctx)
	case effCheckUnmanaged:
		p.checkUnmanaged(ctx)
	case effCheckForeign:
		if pid, gone := p.foreignGone(); gone {
			return event{Kind: evForeignGone, OtherPID: pid, Holder: p.campaign(), Now: time.Now()}, true
		}
	case effForeignGone:
		p.s.event("foreign_gone", map[string]any{"backend": p.name(), "pid": ef.N})
	case effCheckLease:
		if p.campaign() == nil {
			return event{Kind: evLeaseReleased, Now: time.Now()}, true
		}
	case effLeaseReleased:
		if ef.Holder != nil {
			p.s.event("lease_released", map[string]any{"backend": p.name(), "campaign": ef.Holder.Campaign})
		}
	case effCanarySkipped:
		p.canarySkipped(p.current(), ef.Msg)
	case effCanaryLaunch:
		p.launchCanary(ctx)
	case effCanaryJudge:
		return p.canaryResult(ctx, *e.Canary)
	case effRefuse:
		c.code, c.err = ef.Code, errors.New(ef.Msg)
	case effDrain:
		c.handover = &control.HandoverResult{Production: p.name(), Drain: p.s.drain(ctx, ef.Wait)}
	case effHandedOver:
		f := map[string]any{"backend": p.name(), "campaign": ef.Holder.Campaign, "lease_owner_pid": ef.Holder.OwnerPID}
		if c.handover != nil {
			f["drain"], f["stopped"] = c.handover.Drain, c.handover.Stopped
		}
		p.s.event("handover", f)
	case effVerify:
		c.takeback = p.verifyRunning(ctx)
	case effSwitch:
		p.switchNow(c)
	case effResume:
		p.s.draining.Store(false)
	case effSwitched:
		p.s.event("switch", map[string]any{"from": ef.Msg, "to": p.name()})
	}
	return event{}, false
}

// restartNow is restart n, due now: holding production's lease, the old
// process is stopped, the record settled (adopted, or left to another
// configuration), and, when nothing was, evRestarting counts it and
// starts production. A lease another hiro took while the restart waited
// comes back as evLeaseHeld.
func (p *prodCtl) restartNow(ctx context.Context, n int) (event, bool) {
	h := p.underLease("restart", func() {
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
	if h != nil {
		return event{Kind: evLeaseHeld, What: "restart", Holder: h, Now: time.Now()}, true
	}
	return event{}, false
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
