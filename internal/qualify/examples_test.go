package qualify_test

import (
	"path/filepath"
	"testing"

	"github.com/hiro-dev/hiro/internal/qualify"
)

// The shipped campaigns load: their plans and the configurations they
// name validate (examples/activate is the one that qualifies, for the
// activation walk-through of docs/activation.md).
func TestShippedExamplePlansLoad(t *testing.T) {
	for _, ex := range []string{"demo", "activate", "seed-replay"} {
		plan := filepath.Join("..", "..", "examples", ex, "plan.toml")
		p, cfg, err := qualify.LoadPlan(plan, "")
		if err != nil {
			t.Errorf("examples/%s: %v", ex, err)
			continue
		}
		if cfg.Backends[p.Candidate] == nil {
			t.Errorf("examples/%s: candidate %q is not in its configuration", ex, p.Candidate)
		}
	}
}
