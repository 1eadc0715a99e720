package qualify_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/qualify"
)

// TestPlanNeverActivates: a plan of launch and READY control can never
// satisfy the default activation policy; each missing kind is named, a
// skipped gate says so, and a shadow gate's absence is not asked for
// when semantic is present.
func TestPlanNeverActivates(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n[[gates]]\nkind = \"structured_control\"\nskip = true\n")
	p, _, err := qualify.LoadPlan(plan, e.cfgPath)
	must(t, err)
	got := strings.Join(p.NeverActivates(config.DefaultActivationRequire), "; ")
	if want := "it has no artifact gate; its structured_control gate is skipped; it has no semantic gate"; got != want {
		t.Errorf("NeverActivates = %q, want %q", got, want)
	}
	if n := p.NeverActivates([]string{"launch", "ready_control"}); len(n) != 0 {
		t.Errorf("a policy the plan meets: %q", n)
	}
}

// TestCorpusWarnings: when the latest campaign on a corpus said more
// documents are needed than the corpus has, --check's warning names the
// gate, the corpus, the campaign, the number and the measure it is for;
// when another measure failed (and so decided the gate), that measure
// is named with its own need, so that the larger number is not read as
// the decision's.
func TestCorpusWarnings(t *testing.T) {
	mini, _ := filepath.Abs("../../corpora/hiro-mini")
	e := newEnv(t, nil, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n" + semanticGate(0.05))
	p, _, err := qualify.LoadPlan(plan, e.cfgPath)
	must(t, err)
	if w := p.CorpusWarnings(); len(w) != 0 {
		t.Fatalf("no campaign yet, warnings %q", w)
	}
	m, err := corpus.ReadManifest(mini)
	must(t, err)
	write := func(id string, cs []evidence.Comparison) {
		ev := &evidence.Evidence{Schema: evidence.SchemaID, ID: id, Gates: []evidence.Gate{{ID: "semantic", Kind: "semantic", Status: evidence.StatusInconclusive,
			Semantic: &evidence.SemanticResult{CorpusDigest: m.Digest, Comparisons: cs}}}}
		dir := filepath.Join(p.EvidenceDir, ev.ID)
		must(t, os.MkdirAll(dir, 0o755))
		b, _ := json.Marshal(ev)
		must(t, os.WriteFile(filepath.Join(dir, evidence.PublicFile), b, 0o644))
	}
	write("20261201T100000Z-cand", []evidence.Comparison{{Measure: "f1", DocumentsNeeded: 16, Outcome: "inconclusive"}, {Measure: "grounding_rate", Outcome: "passed"}})
	w := p.CorpusWarnings()
	if len(w) != 1 || !strings.Contains(w[0], "corpus hiro-mini has 5 documents, but campaign 20261201T100000Z-cand on it said about 16 are needed to tell a drop of the tolerance in f1; freeze") {
		t.Fatalf("warnings %q", w)
	}
	// The demo's case: f1 failed at 39 documents needed, the schema-valid
	// rate (passed) would need 1539 for an equal candidate.
	write("20261202T100000Z-cand", []evidence.Comparison{{Measure: "f1", DocumentsNeeded: 3, Outcome: "failed"}, {Measure: "grounding_rate", DocumentsNeeded: 2, Outcome: "passed"}, {Measure: "schema_valid_rate", DocumentsNeeded: 1539, Outcome: "passed"}})
	w = p.CorpusWarnings()
	want := "said about 1539 are needed to tell a drop of the tolerance in schema_valid_rate (f1 decided that campaign's gate: it failed, and needed about 3); freeze"
	if len(w) != 1 || !strings.Contains(w[0], want) {
		t.Fatalf("warnings %q, want one containing %q", w, want)
	}
}
