package qualify_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// The shipped campaigns load: their plans and the configurations they
// name validate (examples/activate is the one that qualifies, for the
// activation walk-through of docs/activation.md).
func TestShippedExamplePlansLoad(t *testing.T) {
	// examples/seed-replay's candidate runs .bin/hiro-fake-engine, which
	// scripts/build.sh makes; a fresh clone has none, so put the test
	// binary's build there (it is ignored by git) when it is missing.
	shipped := filepath.Join(testsupport.Root(), ".bin", "hiro-fake-engine")
	if _, err := os.Stat(shipped); os.IsNotExist(err) {
		installFakeEngine(t, shipped)
	}
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

// installFakeEngine copies the fake engine this test binary built to path.
func installFakeEngine(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(fakeEngine)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
