package qualify

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// productionAsker is a gate whose result needs answers of production: the
// semantic gate (production's side of the corpus, unless a cached
// baseline matches), the shadow gate (production's live requests) and a
// request gate with compare_with_production beside production (an
// exclusive plan skips that comparison). exclusive is the plan's; prod and
// stateDir are production's profile and the state directory, where the
// semantic gate's cached baseline would be (prod nil: none is looked for).
type productionAsker interface {
	asksProduction(exclusive bool, prod *config.Profile, stateDir string) bool
}

func (g *SemanticGate) asksProduction(_ bool, prod *config.Profile, stateDir string) bool {
	return prod == nil || !g.cachedBaseline(prod, stateDir)
}
func (g *ShadowGate) asksProduction(bool, *config.Profile, string) bool { return true }
func (p *PerfCompare) asksProduction(exclusive bool, _ *config.Profile, _ string) bool {
	return p.CompareWithProduction && !exclusive
}

// GatesAskingProduction returns the gates of the plan that run and need
// production's answers, each as gateLabel names it, in plan order. A semantic
// gate whose production baseline is cached in stateDir under prod's
// present configuration asks production nothing and is left out (prod
// nil: it is counted).
func (p *Plan) GatesAskingProduction(prod *config.Profile, stateDir string) []string {
	var out []string
	for _, g := range p.Gates {
		if g == nil || g.Skip {
			continue
		}
		if a, ok := g.Gate.(productionAsker); ok && a.asksProduction(p.Exclusive != nil && *p.Exclusive, prod, stateDir) {
			out = append(out, gateLabel(g.ID, g.Kind))
		}
	}
	return out
}

// gateLabel names a gate for a sentence: "ID (kind)", or the kind alone
// when the gate's id is its kind (a plan's [[gate]] without an id), so
// that a reader does not see "semantic (semantic)".
func gateLabel(id, kind string) string {
	if id == "" || id == kind {
		return kind
	}
	return id + " (" + kind + ")"
}

// productionCheckTimeout bounds the readiness check of ProductionNotServing.
const productionCheckTimeout = 15 * time.Second

// ProductionNotServing is the warning of `hiro qualify --check` when the
// plan's production does not serve now (readiness: health, model id, the
// bounded probe) and gates of the plan need its answers: which, and how to
// start it; "" when it serves, when the plan has no production, or when no
// gate needs it. A warning, not an error: production may be started before
// the run. It starts and stops nothing.
func (p *Plan) ProductionNotServing(ctx context.Context, cfg *config.Config) string {
	if p.Production == "" {
		return ""
	}
	prod, err := production.ProfileFor(cfg, p.Production)
	if err != nil || prod == nil {
		return ""
	}
	gates := p.GatesAskingProduction(prod, cfg.StateDir)
	if len(gates) == 0 {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, productionCheckTimeout)
	defer cancel()
	cr := supervisor.CheckReady(ctx, prod, nil)
	if cr.OK {
		return ""
	}
	why := "it does not answer ready"
	if cr.Failure != nil && cr.Failure.RootCause != "" {
		why = cr.Failure.RootCause
	}
	if strings.Contains(why, "connection refused") {
		why = "nothing listens on its port: the connection was refused" // Go's dial error says no more
	}
	return fmt.Sprintf("production %s is not serving now at %s (%s); %s", prod.Name, prod.BaseURL, why, productionNeededNote(prod, gates, "before the run"))
}

// productionNeededNote says which gates need production's answers and
// how to start it, with when ("before the run", "and rerun"): the --check
// warning's and the run's words.
func productionNeededNote(prod *config.Profile, gates []string, when string) string {
	how := fmt.Sprintf("start it with 'hiro backend start %s' %s", shellquote.Quote(prod.Name), when)
	if prod.Unmanaged {
		how = "start it where it runs (hiro does not manage it) " + when
	}
	return fmt.Sprintf("%s %s production's answers and will end without a result unless it serves when they run: %s",
		strings.Join(gates, ", "), plural(len(gates), "needs", "need"), how)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
