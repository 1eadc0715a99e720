package qualify

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// handOver asks a running 'hiro serve' of this configuration, when it
// serves this production, to drain and hand production over to the
// campaign (in-flight requests finish, new ones get 503 + Retry-After,
// the router stops production and watches this hiro: if it dies, the
// router takes production back by itself). handled is false when no such
// router runs: the guard stops production itself.
func (c *campaign) handOver(ctx context.Context) (handled bool, err error) {
	rc, st, err := control.DialFor(ctx, c.cfg.Path, c.prod.BaseURL)
	if err != nil {
		return false, nil
	}
	if st.Production.Name != c.prod.Name && lease.ProductionKey(st.Production.BaseURL) != lease.ProductionKey(c.prod.BaseURL) {
		rc.Close()
		return false, nil
	}
	c.out.line("hiro serve (pid %d) serves production %s: asking it to drain and hand production over", st.PID, c.prod.Name)
	t0 := time.Now()
	res, err := rc.Handover(ctx, c.ev.ID, os.Getpid())
	c.waited(t0)
	now := time.Now().UTC()
	p := &c.ev.Production
	p.Stopped, p.StoppedAt = true, &now
	if err != nil {
		rc.Close()
		return true, fmt.Errorf("hiro serve did not hand production %s over: %w", c.prod.Name, err)
	}
	c.router = rc
	c.out.line("hiro serve handed production %s over (drained: %v, %d in flight at the end, stopped: %v)", res.Production, res.Drain.Drained, res.Drain.InFlight, res.Stopped)
	if res.Stop != nil && res.Stop.Leak != nil {
		return true, fmt.Errorf("stopping production %s left processes behind: %s", c.prod.Name, res.Stop.Leak.RootCause)
	}
	return true, nil
}

// restoreProduction puts production back at the end: through the router
// when it holds production for this campaign (it starts and verifies it
// and resumes serving), else (or when that fails) with Restore.
func (c *campaign) restoreProduction(ctx context.Context) *RestoreResult {
	progress := func(s string) { c.out.line("%s", s) }
	if c.router != nil {
		defer c.router.Close()
		progress(fmt.Sprintf("asking hiro serve to take production %s back", c.prod.Name))
		rr := control.Verified(c.router.Takeback(ctx, c.ev.ID))
		if rr.OK {
			return rr
		}
		progress("hiro serve could not take production back: " + rr.Error + "; restoring it directly")
	}
	return Restore(ctx, c.cfg, c.prod, c.cfg.Production.RestoreAttempts, progress)
}

// restoreAfterDeath is the recovery's restore for a campaign whose hiro
// died: a running router that holds production for that campaign takes
// it back (it may have done so already: then it verifies it); otherwise
// Restore.
func restoreAfterDeath(ctx context.Context, cfg *config.Config, prod *config.Profile, campaign string, progress func(string)) *RestoreResult {
	if rc, st, err := control.DialFor(ctx, cfg.Path, prod.BaseURL); err == nil {
		defer rc.Close()
		if (st.Production.Name == prod.Name || lease.ProductionKey(st.Production.BaseURL) == lease.ProductionKey(prod.BaseURL)) && (st.Handover == nil || st.Handover.Campaign == campaign) {
			progress(fmt.Sprintf("asking hiro serve to take production %s back from campaign %s", prod.Name, campaign))
			if rr := control.Verified(rc.Takeback(ctx, campaign)); rr.OK {
				return rr
			}
		}
	}
	return Restore(ctx, cfg, prod, cfg.Production.RestoreAttempts, progress)
}

// routerBackoff is what a router's restart may add to production's
// ready_timeout before it is back: its backoff at the default policy.
const routerBackoff = 30 * time.Second

// routerOf names the live 'hiro serve' that serves prod as production
// ("hiro serve pid N"), "" when none does (control.RouterServing: this
// state home's router, any live router named in the leases, then the
// endpoint's router lease).
func routerOf(prod *config.Profile) string {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if r := control.RouterServing(ctx, prod.BaseURL); r != nil {
		return fmt.Sprintf("hiro serve pid %d", r.PID)
	}
	return ""
}

// servingWithin checks prod every prodWatchEvery until it serves or d
// has passed, the router r names restarting it: the last check is
// returned, and note says why it stopped waiting when prod does not
// serve (the router will not restart it, is gone, d passed,
// interrupted).
func servingWithin(ctx context.Context, prod *config.Profile, router string, d time.Duration) (last *evidence.ServingCheck, note string) {
	deadline := time.Now().Add(d)
	for {
		cctx, cancel := context.WithTimeout(ctx, 3*supervisor.DefaultHealthRequestTimeout)
		last = servingAtEnd(cctx, prod)
		cancel()
		switch {
		case last.OK:
			return last, ""
		case ctx.Err() != nil:
			return last, "interrupted while waiting for " + router + " to restart it"
		case time.Now().After(deadline):
			return last, fmt.Sprintf("%s did not have it back within %s", router, d)
		}
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		r := control.RouterServing(rctx, prod.BaseURL)
		cancel()
		switch {
		case r == nil && ctx.Err() == nil:
			return last, router + " no longer serves it"
		case r != nil && (r.State == control.StateDown || r.State == control.StateStopped || r.State == control.StateHandedOver):
			return last, fmt.Sprintf("%s will not restart it (production %s there)", router, r.State)
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(prodWatchEvery, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// awaitRouter is what the campaign does when production, serving beside
// the candidate, was lost mid-gate: when a live 'hiro serve' serves
// production it waits for the router's restart, up to the profile's
// ready_timeout plus routerBackoff, checking every prodWatchEvery
// (health and identity). It returns the loss as the gate's evidence
// records it, and back when production serves again; otherwise note
// says why the campaign cannot go on (the router will not restart it or
// is gone, not back within the bound, interrupted), "" when no router
// serves production (nothing was waited for).
func (c *campaign) awaitRouter(ctx context.Context, lost *ProductionLostError) (loss evidence.ProductionLoss, back bool, note string) {
	loss = evidence.ProductionLoss{At: lost.At.UTC(), Error: lost.Problem}
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	r := control.RouterServing(rctx, c.prod.BaseURL)
	cancel()
	if r == nil {
		return loss, false, ""
	}
	loss.Router = fmt.Sprintf("hiro serve pid %d", r.PID)
	bound := c.prod.ReadyTimeout.Duration + routerBackoff
	loss.BoundMS = bound.Milliseconds()
	c.out.line("production %s stopped answering mid-gate; %s serves it and restarts it: waiting up to %s for it to serve again", c.prod.Name, loss.Router, bound)
	t0 := time.Now()
	check, note := servingWithin(ctx, c.prod, loss.Router, bound)
	loss.WaitedMS = time.Since(t0).Milliseconds()
	c.waited(t0)
	if !check.OK {
		return loss, false, fmt.Sprintf("%s; the last check: %s", note, check.Error)
	}
	at := check.At
	loss.BackAt, loss.AwayMS = &at, at.Sub(loss.At).Milliseconds()
	return loss, true, ""
}

// RouterElsewhereError refuses an exclusive campaign whose production a
// live router watches whose lease this hiro cannot see: one under
// another HOME or HIRO_LEASE_DIR (its lease is in another folder), seen
// only in production's record (production.RouterWatching).
// The campaign could not ask it to hand production over, and a stop of
// its own would be undone by that router's restart beside the exclusive
// candidate. errors.Is(err, lease.ErrHeld): exit 6, busy; nothing was
// started or stopped.
type RouterElsewhereError struct {
	Production string
	RouterPID  int
	Record     string // production's record path
}

func (e *RouterElsewhereError) Error() string {
	return fmt.Sprintf("production %s is served by hiro serve (pid %d), whose state home this hiro does not share (another HOME or HIRO_LEASE_DIR; its record %s names it): "+
		"it would restart production beside the exclusive candidate. Run the campaign under that router's HOME (or HIRO_STATE_HOME), so it hands production over, or stop the router first (kill -TERM %d); nothing was started or stopped",
		e.Production, e.RouterPID, e.Record, e.RouterPID)
}

// Is makes errors.Is(err, lease.ErrHeld) true.
func (e *RouterElsewhereError) Is(target error) bool { return target == lease.ErrHeld }

// routerElsewhere returns a *RouterElsewhereError when prod's record
// names a live router (production.RouterWatching) that this hiro's
// leases do not show (control.RouterServing); nil when none does, or the
// router is one they show (of this state home: the campaign asks it to
// hand production over; of another HIRO_STATE_HOME: it sees the
// campaign's production lease and leaves production stopped).
func routerElsewhere(ctx context.Context, cfg *config.Config, prod *config.Profile) error {
	if prod == nil || prod.Unmanaged {
		return nil
	}
	st, ok := production.RouterWatching(cfg.StateDir, prod.Name)
	if !ok {
		return nil
	}
	// A router this hiro's leases show (its own state home, or another
	// HIRO_STATE_HOME of this user) sees the campaign's production lease
	// and leaves production to it; only one under another HOME or
	// HIRO_LEASE_DIR does not.
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if control.RouterServing(rctx, prod.BaseURL) != nil {
		return nil
	}
	return &RouterElsewhereError{Production: prod.Name, RouterPID: st.Owner.PID, Record: st.RecordPath}
}
