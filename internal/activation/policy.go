package activation

import (
	"fmt"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// policy refuses evidence that lacks, for a kind the configuration's
// activation policy requires (activation.require), a gate of that kind
// that passed (or was inconclusive, when acc accepts inconclusive
// evidence). A semantic gate satisfies "semantic" only with its intervals
// (evidence v3: comparisons); one of an older schema does so only when acc
// accepts older evidence, which q.Accepted records. The refusal names
// every missing kind ("activation.require").
func (q *Qualified) policy(cfg *config.Config, acc Accept) error {
	var missing, older []string
	for _, req := range cfg.Activation.Require {
		why := fmt.Sprintf("%s: the campaign has no %s gate", req, req)
		ok := false
		for _, g := range q.Evidence.Gates {
			if !config.Satisfies(req, g.Kind) {
				continue
			}
			switch {
			case g.Status == evidence.StatusInconclusive && !acc.Inconclusive:
				why = fmt.Sprintf("%s: gate %s is inconclusive", req, g.ID)
				continue
			case g.Status != evidence.StatusPassed && g.Status != evidence.StatusInconclusive:
				why = fmt.Sprintf("%s: gate %s is %s (%s)", req, g.ID, strings.ReplaceAll(g.Status, "_", " "), g.Reason)
				continue
			case g.Kind == "semantic" && (g.Semantic == nil || len(g.Semantic.Comparisons) == 0) && !acc.OlderEvidence:
				why = fmt.Sprintf("%s: gate %s has no intervals (evidence %s compared two bare figures); qualify again, or pass --accept-older-evidence", req, g.ID, q.Evidence.Schema)
				continue
			case g.Kind == "semantic" && (g.Semantic == nil || len(g.Semantic.Comparisons) == 0):
				older = append(older, g.ID)
			}
			ok = true
			break
		}
		if !ok {
			missing = append(missing, why)
		}
	}
	if len(missing) > 0 {
		return refuse("activation.require", "campaign %s does not hold what the activation policy of %s asks for (require = [%s]): %s; qualify again with a plan that has these gates (hiro qualify PLAN --check says whether a plan can activate), or change [activation] require",
			q.Evidence.ID, cfg.Path, strings.Join(cfg.Activation.Require, ", "), strings.Join(missing, "; "))
	}
	if len(older) > 0 {
		q.Accepted = append(q.Accepted, fmt.Sprintf("accepted older evidence without intervals (--accept-older-evidence): gate %s of %s", strings.Join(older, ", "), q.Evidence.Schema))
	}
	return nil
}
