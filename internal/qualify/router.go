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
// has passed; the last check is returned.
func servingWithin(prod *config.Profile, d time.Duration) *evidence.ServingCheck {
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 3*supervisor.DefaultHealthRequestTimeout)
		c := servingAtEnd(ctx, prod)
		cancel()
		if c.OK || time.Now().After(deadline) {
			return c
		}
		time.Sleep(min(prodWatchEvery, time.Until(deadline)+time.Millisecond))
	}
}
