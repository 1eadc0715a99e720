package qualify_test

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/qualify"
)

// A plan whose gates need production's answers, with production down:
// --check warns (names the gates and how to start it) instead of saying
// only "valid", and the run says the same at its start; an exclusive plan
// (its comparison skipped) and a serving production get no warning
// (issue 26, F11).
func TestProductionNotServingIsNamedWithTheGatesThatNeedIt(t *testing.T) {
	e := perfEnv(t)
	gates := "[[gates]]\nid = \"launch\"\nkind = \"launch\"\n[[gates]]\nid = \"speed\"\nkind = \"sequential\"\nrequests = 4\n" + perfCompareKeys
	planPath := e.writePlan("exclusive = false\n" + gates)
	p, cfg, err := qualify.LoadPlan(planPath, e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.GatesAskingProduction(cfg.Backends["prod"], cfg.StateDir); len(got) != 1 || got[0] != "speed (sequential)" {
		t.Errorf("GatesAskingProduction = %v, want [speed (sequential)]", got)
	}
	w := p.ProductionNotServing(context.Background(), cfg)
	for _, want := range []string{"production prod is not serving now at http://127.0.0.1:", "speed (sequential) needs production's answers", "'hiro backend start prod' before the run"} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q lacks %q", w, want)
		}
	}
	// A refused connection is said in words, not as Go's dial error (U4).
	if !strings.Contains(w, "(nothing listens on its port: the connection was refused)") || strings.Contains(w, "dial tcp") {
		t.Errorf("warning %q: want the refused connection in words, without Go's dial error", w)
	}
	var progress bytes.Buffer
	out, err := qualify.Run(context.Background(), p, cfg, qualify.Options{LeaseDir: e.leaseDir, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "speed (sequential) needs production's answers and will end without a result unless it serves when they run: start it with 'hiro backend start prod' and rerun") {
		t.Errorf("the run's start does not say which gates need production (exit %d):\n%s", out.ExitCode, progress.String())
	}

	excl, cfg2, err := qualify.LoadPlan(e.writePlan("exclusive = true\n"+gates), e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if w := excl.ProductionNotServing(context.Background(), cfg2); w != "" {
		t.Errorf("exclusive plan (comparison skipped) warned: %q", w)
	}
	// The semantic gate needs production in an exclusive plan too (its
	// baseline is extracted before production is stopped).
	sem, _, err := qualify.LoadPlan(e.writePlan("exclusive = true\n[[gates]]\nid = \"launch\"\nkind = \"launch\"\n"+strings.Replace(semanticGate(0.05), "[[gates]]\n", "[[gates]]\nid = \"quality\"\n", 1)), e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := sem.GatesAskingProduction(nil, ""); len(got) != 1 || got[0] != "quality (semantic)" {
		t.Errorf("GatesAskingProduction = %v, want [quality (semantic)]", got)
	}
	// A gate without an id takes its kind as id: named once, not
	// "semantic (semantic)" (issue 26, T6).
	bare, _, err := qualify.LoadPlan(e.writePlan("exclusive = true\n[[gates]]\nid = \"launch\"\nkind = \"launch\"\n"+semanticGate(0.05)), e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := bare.GatesAskingProduction(nil, ""); len(got) != 1 || got[0] != "semantic" {
		t.Errorf("GatesAskingProduction of a gate without an id = %v, want [semantic]", got)
	}
	e.startProduction()
	if w := p.ProductionNotServing(context.Background(), cfg); w != "" {
		t.Errorf("production serves, yet: %q", w)
	}
}

// A semantic gate whose production baseline is cached (a campaign
// computed it while production served) sends production nothing, so
// with production stopped --check does not warn about it; a gate whose
// settings change the cache key does (issue 26, S18).
func TestProductionNotServingSkipsACachedBaseline(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	e.startProduction()
	gates := "exclusive = false\n[[gates]]\nid = \"launch\"\nkind = \"launch\"\n" + strings.Replace(semanticGate(0.05), "[[gates]]\n", "[[gates]]\nid = \"quality\"\n", 1)
	planPath := e.writePlan(gates)
	p, cfg, err := qualify.LoadPlan(planPath, e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.GatesAskingProduction(cfg.Backends["prod"], cfg.StateDir); len(got) != 1 || got[0] != "quality (semantic)" {
		t.Fatalf("before any campaign GatesAskingProduction = %v, want [quality (semantic)]", got)
	}
	if _, err := qualify.Run(context.Background(), p, cfg, qualify.Options{LeaseDir: e.leaseDir, Progress: io.Discard}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (production.Keeper{StateDir: cfg.StateDir}).StopRecorded(context.Background(), "prod", 0); err != nil {
		t.Fatal(err)
	}
	if e.productionReady() {
		t.Fatal("production still serves after its stop")
	}
	if w := p.ProductionNotServing(context.Background(), cfg); w != "" {
		t.Errorf("the baseline is cached, yet --check warns: %q", w)
	}
	other, cfg2, err := qualify.LoadPlan(e.writePlan(strings.Replace(gates, "tolerance = 0.05\n", "tolerance = 0.05\nmax_tokens = 333\n", 1)), e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if w := other.ProductionNotServing(context.Background(), cfg2); !strings.Contains(w, "quality (semantic) needs production's answers") {
		t.Errorf("another max_tokens has no cached baseline, yet the warning is %q", w)
	}
}
