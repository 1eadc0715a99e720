package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// campaign returns the live holder of production's lease, or nil. While
// the router holds that lease itself (underLease) nobody else can.
func (p *prodCtl) campaign() *control.HandoverInfo {
	if p.own != nil {
		return nil
	}
	if p.s.opts.CampaignHolding != nil {
		return p.s.opts.CampaignHolding(p.prof())
	}
	return LeaseHolder(p.prof())
}

// LeaseHolder reports the live hiro (a campaign, or a command such as
// 'hiro backend start') that holds the lease of prof's endpoint (package
// lease), or nil when none does or the lease folder cannot be read.
func LeaseHolder(prof *config.Profile) *control.HandoverInfo {
	dir, err := lease.Dir()
	if err != nil {
		return nil
	}
	return holderInfo(lease.HeldBy(dir, lease.ProductionKey(prof.BaseURL)))
}

// holderInfo describes the hiro whose lease record l is (nil: nil).
func holderInfo(l *lease.Lease) *control.HandoverInfo {
	if l == nil {
		return nil
	}
	who := l.Campaign
	if who == "" {
		who = l.Command
	}
	return &control.HandoverInfo{Campaign: who, OwnerPID: l.PID, Since: l.Created, Source: "lease"}
}

// underLease runs f, a start of production by the router itself (its
// first start, a restart after a death, the start after a campaign's
// lease was released), holding production's endpoint lease
// (lease.ProductionKey) as 'hiro backend start' does: no campaign, switch
// or 'hiro backend start|stop' can act on production between the
// router's decision and the end of the start, and one that tries is
// refused naming 'hiro serve'. The lease goes before production is said
// ready (setState). When a live hiro holds the key, f does not run and
// that hiro is returned (the watch's evLeaseHeld: production is held for
// it); nil otherwise. A lease that cannot be taken for another reason (no
// lease folder, a campaign that died with production in its care) does
// not keep production down: f runs without it and an event says why.
func (p *prodCtl) underLease(why string, f func()) *control.HandoverInfo {
	prof := p.prof()
	dir, err := lease.Dir()
	var h *lease.Hold
	if err == nil {
		h, err = lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "hiro serve (" + why + ")",
			Config: p.s.cfg.Path, Production: prof.Name}, production.LeaseKeys(false, prof)...)
	}
	if err != nil {
		var held *lease.HeldError
		if errors.As(err, &held) {
			if hi := holderInfo(held.Holder); hi != nil {
				return hi
			}
			return &control.HandoverInfo{Campaign: "another hiro (starting)", Source: "lease"}
		}
		p.s.event("start_unleased", map[string]any{"backend": prof.Name, "what": why, "reason": err.Error()})
		f()
		return nil
	}
	p.own = h
	defer p.releaseOwn()
	f()
	return nil
}

// releaseOwn releases production's endpoint lease the router holds for
// its own start (underLease), if it still does. setState calls it before
// it publishes "ready", and underLease when its start ends otherwise: the
// start has ended once production is ready, so whoever sees the router
// say ready (hiro status, a campaign, 'hiro backend start') can take the
// lease at once, never refused by a start that is over.
func (p *prodCtl) releaseOwn() {
	h := p.own
	if h == nil {
		return
	}
	p.own = nil
	if err := h.Release(); err != nil {
		p.s.event("lease_release_failed", map[string]any{"backend": p.name(), "reason": err.Error()})
	}
}

// holdFor marks production held by campaign h (a live lease).
func (p *prodCtl) holdFor(h *control.HandoverInfo) {
	p.mu.Lock()
	p.handover = h
	p.mu.Unlock()
	p.setState(control.StateHandedOver, fmt.Sprintf("held by campaign %s (hiro pid %d); the router waits for it to end", h.Campaign, h.OwnerPID))
}

// handOver hands production over to campaign, whose hiro is ownerPID
// (the watch's evHandover: drain, stop a managed production, hold it).
func (p *prodCtl) handOver(ctx context.Context, campaign string, ownerPID int, drain time.Duration) (*control.HandoverResult, int, error) {
	ticks, ok := procfs.StartTicks(ownerPID)
	if !ok {
		return nil, http.StatusBadRequest, fmt.Errorf("lease owner pid %d is not running", ownerPID)
	}
	c := &command{Campaign: campaign, OwnerPID: ownerPID, OwnerTicks: ticks, Drain: drain}
	if err := p.send(ctx, evHandover, c); err != nil {
		return nil, http.StatusServiceUnavailable, err
	}
	return c.handover, c.code, c.err
}

// takeback ends campaign's hand-over (the watch's evTakeback).
func (p *prodCtl) takeback(ctx context.Context, campaign string) (*control.Takeback, int, error) {
	c := &command{Campaign: campaign}
	if err := p.send(ctx, evTakeback, c); err != nil {
		return nil, http.StatusServiceUnavailable, err
	}
	return c.takeback, c.code, c.err
}

// takebackNow starts production, verifies it (readiness and a READY
// completion) and resumes serving; step ended the hand-over. On the
// owning goroutine.
func (p *prodCtl) takebackNow(ctx context.Context, campaign string) *control.Takeback {
	prof := p.prof()
	v := newTakeback(prof)
	if prof.Unmanaged {
		p.checkUnmanaged(ctx)
	} else if p.proc == nil && p.adopted == nil {
		res := p.start(ctx, "take back from campaign "+campaign)
		v.PID, v.ReadyAfterMS = res.PID, res.ReadyAfterMS
		if len(res.ModelIDs) > 0 {
			v.Model = production.PickModel(prof, res.ModelIDs)
		}
		if res.State != supervisor.StateReady {
			v.Error = res.Error
			if res.Failure != nil {
				v.Error = res.Failure.Error()
			}
			p.s.draining.Store(false)
			p.s.event("takeback", map[string]any{"backend": prof.Name, "campaign": campaign, "ok": false})
			return v
		}
	}
	vv := p.verifyRunning(ctx)
	vv.ReadyAfterMS = v.ReadyAfterMS
	if vv.PID == 0 {
		vv.PID = v.PID
	}
	p.s.draining.Store(false)
	p.s.event("takeback", map[string]any{"backend": prof.Name, "campaign": campaign, "ok": vv.OK})
	return vv
}

// verifyRunning checks production with the rules of readiness, the ready
// probe included (its reply judged by supervisor.JudgeReply, the one rule
// the supervisor, the restore and the switch use).
func (p *prodCtl) verifyRunning(ctx context.Context) *control.Takeback {
	prof := p.prof()
	v := newTakeback(prof)
	if p.proc != nil {
		v.PID = p.proc.PID()
	} else if p.adopted != nil {
		v.PID = p.adopted.PID
	}
	rr := supervisor.CheckReadyTracked(ctx, prof, p.current().hc, p.tracker())
	production.Fill(&v.Verification, prof, rr)
	if !rr.OK {
		p.failed(ctx, rr.Failure, "verify")
		return v
	}
	if ok, why := p.keeper().Attribute(prof); !ok {
		// Restored means the process hiro started answers: an impostor
		// on production's port is never counted.
		v.OK, v.Error = false, why
		p.failed(ctx, &failure.Failure{Class: failure.ClassPortInUse, Phase: failure.PhaseReady, RootCause: why}, "verify")
		return v
	}
	p.setState(control.StateReady, "verified ready (health, identity, ready probe, the listener in hiro's process group)")
	return v
}

// newTakeback is a take-back answer for prof, one attempt made now.
func newTakeback(prof *config.Profile) *control.Takeback {
	now := time.Now().UTC()
	return &control.Takeback{Production: prof.Name, Verification: production.Verification{Attempts: 1, At: &now}}
}
