package qualify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/shadow"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// KindShadow qualifies the candidate on production's live traffic.
const KindShadow = "shadow"

func init() {
	RegisterKind(Kind{Name: KindShadow, Rank: 75, Title: "Shadow traffic against production", NeedsCandidate: true, New: func() Gate { return &ShadowGate{} }})
}

// DefaultShadowFor is how long a shadow gate mirrors when its plan sets
// no bound of pairs or time.
const DefaultShadowFor = 30 * time.Minute

// ShadowGate is a shadow gate's section: the running router (hiro serve
// in front of production) mirrors Share of production's chat and
// completion requests to the ready candidate until MaxPairs pairs are
// scored or For has passed (package shadow; docs/shadow.md). The gate
// passes when the paired comparisons of the candidate's success, schema
// validity, grounding and accepted-claim rates are non-inferior to
// production's by Margin on at least MinPairs pairs; with fewer pairs,
// or a comparison that cannot decide, it is inconclusive
// (ErrInconclusive). Agreement with production is reported, not gated
// on. Its result is an evidence.ShadowResult.
type ShadowGate struct {
	// Share is the fraction of production's chat and completion requests mirrored, in (0, 1]; default 0.1.
	Share float64 `toml:"share"`
	// For ends the run after this long; default 30m when max_pairs is not set either.
	For config.Duration `toml:"for"`
	// MaxPairs ends the run once this many pairs are scored; default shadow.DefaultMaxPairs.
	MaxPairs int `toml:"max_pairs"`
	// MinPairs is the fewest pairs the gate decides on (fewer: inconclusive); default shadow.DefaultMinPairs.
	MinPairs int `toml:"min_pairs"`
	// Margin is the non-inferiority margin of the gated rates (a fraction); default shadow.DefaultMargin.
	Margin float64 `toml:"margin"`
	// QueueSize bounds the requests waiting to be mirrored (a full queue drops, counted).
	QueueSize int `toml:"queue_size"`
	// Workers bounds the mirrored requests in flight to the candidate.
	Workers int `toml:"workers"`
	// RequestTimeout bounds one mirrored request.
	RequestTimeout config.Duration `toml:"request_timeout"`
}

func (g *ShadowGate) config() shadow.Config {
	return shadow.Config{Share: g.Share, For: g.For, MaxPairs: g.MaxPairs, MinPairs: g.MinPairs, Margin: g.Margin,
		QueueSize: g.QueueSize, Workers: g.Workers, RequestTimeout: g.RequestTimeout}
}

// Validate fills the defaults (share 0.1, for 30 m) and refuses a shadow
// gate for a candidate that needs the accelerator alone on this machine:
// it cannot run beside production, so there is no live traffic to mirror.
func (g *ShadowGate) Validate(v *Validation) {
	if g.Share == 0 {
		g.Share = 0.1
	}
	if g.For.Duration == 0 && g.MaxPairs == 0 {
		g.For.Duration = DefaultShadowFor
	}
	c := g.config()
	if err := c.Fill(); err != nil {
		v.Errorf("", "%v", strings.TrimPrefix(err.Error(), "shadow "))
		return
	}
	g.MaxPairs, g.MinPairs, g.Margin, g.QueueSize, g.Workers, g.RequestTimeout = c.MaxPairs, c.MinPairs, c.Margin, c.QueueSize, c.Workers, c.RequestTimeout
	cand := v.CandidateProfile()
	if v.Plan.Exclusive != nil && *v.Plan.Exclusive && (cand == nil || !shadow.Remote(cand)) {
		v.Errorf("kind", "shadow traffic is impossible on one machine for a candidate that needs the accelerator alone (the plan is exclusive): production must keep serving while the candidate runs beside it; qualify it on the frozen corpus with a semantic gate, or serve it on a second machine and name that endpoint (an unmanaged profile with shadow_remote = true)")
	}
	if cand != nil && shadow.Remote(cand) && !cand.ShadowRemote {
		v.Errorf("kind", "candidate %s is not on this machine (%s): mirroring sends users' prompts to it; set shadow_remote = true in [backends.%s] to allow it", cand.Name, cand.BaseURL, cand.Name)
	}
}

// Bound is For and a minute for the last replies, else the plan's
// timeout or DefaultGateTimeout.
func (g *ShadowGate) Bound(_ *Handle, timeout time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	if g.For.Duration > 0 {
		return g.For.Duration + time.Minute
	}
	return DefaultGateTimeout
}

// Run starts the run through the router's control socket, waits for its
// end (pairs, time, or the gate's bound: then it is stopped) and records
// its account.
func (g *ShadowGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	r, err := h.Ready()
	if err != nil {
		return err
	}
	if h.Production == nil {
		return fmt.Errorf("no production profile: shadow traffic mirrors production's requests")
	}
	rc, _, err := control.DialFor(ctx, "", h.Production.BaseURL)
	if err != nil {
		return fmt.Errorf("no hiro serve runs in front of production %s: shadow traffic is production's live requests, mirrored by the router (start hiro serve): %v", h.Production.Name, err)
	}
	defer rc.Close()
	st, err := rc.ShadowStart(ctx, control.ShadowStartRequest{Candidate: r.Profile.Name, Effective: r.Profile, Config: g.config()})
	if err != nil {
		return fmt.Errorf("hiro serve did not start shadow traffic to %s: %w", r.Profile.Name, err)
	}
	where := "on this machine"
	if st.Result.Remote {
		where = "not on this machine: users' prompts leave it (shadow_remote)"
	}
	h.Logf("hiro serve mirrors %g %% of production %s's requests to %s (%s), until %s%s", g.Share*100, st.Result.Production, r.Profile.Name, where, termtext.Plural(g.MaxPairs, "pair", "pairs"), forText(g.For.Duration))
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var res *shadow.Result
	for res == nil {
		select {
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			stopped, err := rc.ShadowStop(sctx)
			cancel()
			if err != nil {
				return fmt.Errorf("stopping shadow traffic at the gate's bound: %w", err)
			}
			res = stopped.Result
		case <-tick.C:
			cur, err := rc.ShadowStatus(ctx)
			if err != nil {
				if ctx.Err() != nil {
					continue
				}
				return fmt.Errorf("hiro serve's shadow status: %w", err)
			}
			if !cur.Active {
				res = cur.Result
				break
			}
			h.Statusf("%d of %s (%d sampled, %d dropped)", cur.Result.Pairs, termtext.Plural(g.MaxPairs, "pair", "pairs"), cur.Result.Sampled, cur.Result.Dropped)
		}
	}
	eg.Shadow = res
	h.Logf("%s", res.Summary)
	switch res.Outcome {
	case "passed":
		return nil
	case "inconclusive":
		return fmt.Errorf("%w: shadow traffic could not decide: %s", ErrInconclusive, strings.Join(res.Reasons, "; "))
	}
	return fmt.Errorf("shadow traffic: %s", strings.Join(res.Reasons, "; "))
}

func forText(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return " or " + d.String()
}
