package qualify

import (
	"context"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/preflight"
)

// predictLadder predicts every attempt of the plan's launch gate before
// production is stopped (package preflight: memory fit and host
// capability). It returns the predictions by rung name and whether some
// attempt may run (predicted to run, or not predictable: launched as
// without a preflight). Without a launch gate it predicts nothing.
func (c *campaign) predictLadder(ctx context.Context) (map[string]*evidence.Prediction, bool) {
	lg := c.launchGate()
	if lg == nil || c.candidate == nil {
		return nil, true
	}
	h := c.opts.HostFacts
	if h == nil {
		prod := ""
		if c.prod != nil {
			prod = c.prod.Name
		}
		h = preflight.ForProduction(ctx, c.cfg.StateDir, prod)
	}
	c.ev.Preflight = &evidence.PreflightRun{Enabled: true, HostSource: h.Source}
	preds := map[string]*evidence.Prediction{}
	any := false
	for _, r := range lg.Ladder(c.candidate) {
		pr := preflight.Predict(r.Profile, h, *c.plan.Exclusive)
		preds[r.Name] = pr
		switch {
		case pr.Runs:
			c.out.line("preflight %s: predicted to run (%s)", r.Name, fitLine(pr))
			any = true
		case pr.Rule != "":
			c.out.line("preflight %s: predicted failure (%s, %s): %s", r.Name, pr.Class, pr.Rule, pr.Reason)
		default:
			c.out.line("preflight %s: %s; it will be launched", r.Name, pr.CannotPredict)
			any = true
		}
	}
	return preds, any
}

// launchGate is the plan's launch gate, nil when it has none (or skips it).
func (c *campaign) launchGate() *LaunchGate {
	for _, g := range c.plan.Gates {
		if l, ok := g.Gate.(*LaunchGate); ok && !g.Skip {
			return l
		}
	}
	return nil
}

func fitLine(pr *evidence.Prediction) string {
	if pr.Fit == nil {
		return "no memory check"
	}
	return pr.Fit.Detail
}

// predictedFailure is the attempt a predicted failure records: not
// launched, outcome predicted_failure, the rule and figures as its
// failure (phase prereq: nothing started).
func predictedFailure(r *Rung, pr *evidence.Prediction) evidence.Attempt {
	return evidence.Attempt{Name: r.Name, Reason: r.Reason, Changes: r.Changes, Outcome: evidence.OutcomePredictedFailure, Prediction: pr,
		Failure: preflight.AsFailure(pr)}
}
