package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/signing"
)

// seedEvidence is the seed's campaign as evidence: three failed launch
// attempts, later gates withheld, production restored.
func seedEvidence() *evidence.Evidence {
	start := time.Date(2025, 6, 12, 14, 0, 0, 0, time.UTC)
	end := start.Add(42 * time.Minute)
	return &evidence.Evidence{
		Schema: evidence.SchemaID, ID: "20250612T140000Z-vllm-mistral",
		Title:     "Alternate vLLM extraction backend stops before inference",
		Candidate: "vllm-mistral", ProductionBackend: "qwen-llamacpp", Exclusive: true,
		Verdict: evidence.VerdictNotQualified, ExitCode: 1, TerminationReason: "gate launch failed",
		StartedAt: start, FinishedAt: &end, DurationMS: 42 * 60000,
		Gates: []evidence.Gate{
			{ID: "gpu", Kind: "prereq", Title: "GPU prerequisite", Status: evidence.StatusPassed, DurationMS: 900},
			{ID: "launch", Kind: "launch", Title: "vLLM API readiness", Status: evidence.StatusFailed, DurationMS: 600000,
				Attempts: []evidence.Attempt{
					{Name: "base", Failure: &failure.Failure{Class: failure.ClassHostCapability, Phase: failure.PhaseKVInit, RootCause: "RuntimeError: UVA is not available"}},
					{Name: "v1-runner", Failure: &failure.Failure{Class: failure.ClassQuantKernelFailed, Phase: failure.PhaseKernelSetup, RootCause: "gptq_marlin_repack failed <CUDA error>", NextStep: "Try another kernel backend."}},
					{Name: "triton", Failure: &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseKVInit, RootCause: "engine process died"}},
				}},
			{ID: "ready", Kind: "ready_control", Status: evidence.StatusNotRun, Reason: "not authorized: launch failed"},
		},
		Production: evidence.Production{Backend: "qwen-llamacpp", Model: "qwen/qwen3.8-27b", WasRunning: true, Stopped: true,
			Restored: &evidence.Restored{OK: true, Attempts: 1, Health: "200", Model: "qwen/qwen3.8-27b", Reply: "READY"}},
		Fingerprints: evidence.Fingerprints{Plan: strings.Repeat("a", 64)},
		Report: evidence.Report{
			Summary: "No inference request executed.",
			Sections: []evidence.Section{
				{Title: "Backend startup", Status: "Failed before inference", Items: []string{"UVA unavailable under WSL2."}},
			},
			Decisions:    []string{"Stop after the declared ladder."},
			Validation:   []evidence.Validation{{Check: "GPU prerequisite", Status: "passed", Result: "dup"}, {Check: "Storage isolation", Status: "Passed", Result: "secondary drive"}},
			CurrentState: "Production serves as before.",
			NextSteps:    []string{"Try native Linux."},
		},
	}
}

// testKey signs the evidence the tests write: a key no trust list holds,
// like the example evidence shipped in the repository.
var testKey, _ = signing.Generate()

// addOpts adds with an empty trust list (never the user's).
var addOpts = AddOptions{Trust: &signing.Trust{}}

// writeEvidence writes ev as public evidence signed with testKey.
func writeEvidence(t *testing.T, ev *evidence.Evidence) string {
	t.Helper()
	c := *ev
	c.Signature = nil
	b, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if c.Signature, err = testKey.Sign(b); err != nil {
		t.Fatal(err)
	}
	if b, err = json.MarshalIndent(&c, "", "  "); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), evidence.PublicFile)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFromEvidence(t *testing.T) {
	e, err := FromEvidence(seedEvidence(), "evidence/x.json")
	if err != nil {
		t.Fatal(err)
	}
	if e.Slug != "alternate-vllm-extraction-backend-stops-before-inference" || e.Subtitle != "Not qualified: gate launch failed" {
		t.Errorf("slug %q subtitle %q", e.Slug, e.Subtitle)
	}
	if !e.Timestamp.Equal(time.Date(2025, 6, 12, 14, 42, 0, 0, time.UTC)) {
		t.Errorf("timestamp %v, want the finish time", e.Timestamp)
	}
	// The entry tells package account's account of the evidence, nothing
	// merged from elsewhere: the gates, then production restoration (a
	// row only because production was stopped; it is not a gate).
	if !strings.Contains(e.Summary, "No inference request executed, because no attempt reached ready") || len(e.Sections) != 3 ||
		e.Sections[1].Status != "Failed before inference" || e.Sections[2].Status != "Restored" ||
		!strings.HasPrefix(e.CurrentState, "Backend vllm-mistral is not qualified") || len(e.NextSteps) == 0 || len(e.NotTested) == 0 || !strings.HasPrefix(e.NotTested[0], "ready (ready_control)") {
		t.Errorf("account not carried over: %+v", e)
	}
	want := []struct{ check, status, has string }{
		{"GPU prerequisite", StatusPassed, "passed"},
		{"vLLM API readiness", StatusFailed, "base: host_capability in kv_init; v1-runner: quant_kernel_failed in kernel_setup"},
		{"ready (ready_control)", StatusNotRun, "not authorized: launch failed"},
		{"Production restoration", StatusPassed, `health 200, model qwen/qwen3.8-27b, reply "READY"`},
	}
	if len(e.Validation) != len(want) {
		t.Fatalf("validation rows %+v, want %d (gates, then production restoration)", e.Validation, len(want))
	}
	for i, w := range want {
		r := e.Validation[i]
		if r.Check != w.check || r.Status != w.status || !strings.Contains(r.Result, w.has) {
			t.Errorf("row %d = %+v, want %s/%s containing %q", i, r, w.check, w.status, w.has)
		}
	}
	data, _ := MarshalEntry(e)
	if err := ValidateJSON(data); err != nil {
		t.Errorf("entry from evidence does not validate: %v", err)
	}

	// The stored report is not read (v2 evidence keeps the plan's words in
	// Intent): the account comes from the gates and the production guard,
	// so an empty report gives the same entry.
	ev := seedEvidence()
	ev.Intent = &evidence.Intent{Decisions: ev.Report.Decisions}
	ev.Report = evidence.Report{}
	e2, err := FromEvidence(ev, "evidence/x.json")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := MarshalEntry(e)
	b, _ := MarshalEntry(e2)
	if string(a) != string(b) {
		t.Errorf("the stored report changed the entry:\n%s\nvs\n%s", a, b)
	}

	ev.Verdict = evidence.VerdictRunning
	if _, err := FromEvidence(ev, ""); err == nil {
		t.Error("evidence of a running campaign made an entry")
	}
}

func TestAddFromEvidence(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(dir, 0o755)
	j, _ := Load(dir)
	path := writeEvidence(t, seedEvidence())
	rel, err := j.AddFromEvidence(path, addOpts)
	if err != nil {
		t.Fatal(err)
	}
	if rel != "entries/20250612T144200Z_alternate-vllm-extraction-backend-stops-before-inference.json" {
		t.Errorf("entry at %s", rel)
	}
	copied, err := os.ReadFile(filepath.Join(dir, "evidence", "20250612T144200Z_alternate-vllm-extraction-backend-stops-before-inference.json"))
	orig, _ := os.ReadFile(path)
	if err != nil || string(copied) != string(orig) {
		t.Fatalf("evidence not copied into the journal: %v", err)
	}
	if _, err := j.AddFromEvidence(path, addOpts); !errors.Is(err, ErrExists) {
		t.Errorf("adding the same campaign twice: err %v", err)
	}

	// Another campaign with the same title gets a dated slug.
	ev := seedEvidence()
	ev.ID += "-next-day"
	later := ev.FinishedAt.Add(24 * time.Hour)
	ev.FinishedAt = &later
	rel2, err := j.AddFromEvidence(writeEvidence(t, ev), addOpts)
	if err != nil || !strings.HasSuffix(rel2, "_alternate-vllm-extraction-backend-stops-before-inference-20250613.json") {
		t.Errorf("second campaign: %s, %v", rel2, err)
	}

	// The site links the evidence and the link resolves.
	j, _ = Load(dir)
	r, err := Check(j, "")
	if err != nil || len(r.Problems) > 0 {
		t.Fatalf("check after add: %v\n%s", err, problemText(r))
	}

	priv := seedEvidence()
	priv.Plan = "/home/me/plans/vllm.toml"
	if _, err := j.AddFromEvidence(writeEvidence(t, priv), addOpts); !errors.Is(err, ErrPrivateEvidence) {
		t.Errorf("private evidence: err %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"schema":"hiro.evidence/v1"}`), 0o644)
	if _, err := j.AddFromEvidence(bad, AddOptions{Trust: &signing.Trust{}, TrustUnsigned: true}); err == nil || !strings.Contains(err.Error(), "evidence (hiro.evidence/v1) does not match its schema https://hiro.dev/schemas/evidence.schema.json: - at '': missing properties") {
		t.Errorf("invalid evidence: err %v", err)
	}
}

// TestAddFromEvidenceV1 adds the seed replay's evidence as hiro wrote it
// in format v1: the journal still reads it, with the same account.
func TestAddFromEvidenceV1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(dir, 0o755)
	j, _ := Load(dir)
	rel, err := j.AddFromEvidence(filepath.Join("..", "evidence", "testdata", "v1-seed-replay.json"), AddOptions{Trust: &signing.Trust{}, TrustUnsigned: true})
	if err != nil {
		t.Fatalf("v1 evidence refused: %v", err)
	}
	e := j.Find(strings.TrimSuffix(strings.SplitN(filepath.Base(rel), "_", 2)[1], ".json"))
	if e == nil || len(e.Validation) < 8 || !strings.Contains(e.Summary, "not qualified") {
		t.Fatalf("entry %s: %+v", rel, e)
	}
	// Its prereq checks named local folders; the journal's copy does not.
	copied, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.Evidence)))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(copied), "/tmp/h10v1") {
		t.Errorf("the journal's copy of v1 evidence keeps a local folder in a check name")
	}
}

// journal add verifies the evidence's signature: edited evidence is
// refused, unsigned evidence needs TrustUnsigned (recorded), and evidence
// signed by a key not in the trust list is published with a warning, the
// entry naming the key. Before, any evidence that validated was published.
func TestAddFromEvidenceVerifiesSignature(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(dir, 0o755)
	j, _ := Load(dir)
	ev := seedEvidence()
	path := writeEvidence(t, ev)
	signed, _ := os.ReadFile(path)

	edited := filepath.Join(t.TempDir(), evidence.PublicFile)
	os.WriteFile(edited, []byte(strings.Replace(string(signed), `"not_qualified"`, `"qualified"`, 1)), 0o644)
	if _, err := j.AddFromEvidence(edited, addOpts); !errors.Is(err, signing.ErrBadSignature) {
		t.Fatalf("edited evidence: %v, want the signature refused", err)
	}

	unsigned := filepath.Join(t.TempDir(), evidence.PublicFile)
	b, _ := json.MarshalIndent(ev, "", "  ")
	os.WriteFile(unsigned, b, 0o644)
	if _, err := j.AddFromEvidence(unsigned, addOpts); !errors.Is(err, ErrUnsigned) || !strings.Contains(err.Error(), "--trust-unsigned") {
		t.Fatalf("unsigned evidence: %v", err)
	}

	var warned []string
	o := addOpts
	o.Warn = func(s string) { warned = append(warned, s) }
	rel, err := j.AddFromEvidence(path, o)
	if err != nil {
		t.Fatal(err)
	}
	e := j.Entries[0]
	if s := e.EvidenceSignature; s == nil || s.KeyID != testKey.Public().ID() || s.Trusted || s.PublicKey != testKey.Public().String() {
		t.Fatalf("entry %s signature %+v", rel, e.EvidenceSignature)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "do not trust") || !strings.Contains(warned[0], testKey.Public().ID()) {
		t.Fatalf("warnings %q", warned)
	}
	// The copy verifies as the original did.
	copied, _ := os.ReadFile(filepath.Join(dir, filepath.FromSlash(e.Evidence)))
	if _, err := signing.Verify(copied); err != nil {
		t.Errorf("the journal's copy does not verify: %v", err)
	}

	// A trusted signer; an unsigned one accepted and recorded.
	j2dir := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(j2dir, 0o755)
	j2, _ := Load(j2dir)
	tr := &signing.Trust{}
	tr.Keys = append(tr.Keys, signing.TrustedKey{Key: testKey.Public(), Name: "ci"})
	if _, err := j2.AddFromEvidence(path, AddOptions{Trust: tr}); err != nil || !j2.Entries[0].EvidenceSignature.Trusted || j2.Entries[0].EvidenceSignature.TrustedAs != "ci" {
		t.Fatalf("trusted signer: %v %+v", err, j2.Entries)
	}
	later := ev.FinishedAt.Add(time.Hour)
	ev.FinishedAt = &later
	ev.ID += "-later"
	b, _ = json.MarshalIndent(ev, "", "  ")
	os.WriteFile(unsigned, b, 0o644)
	if _, err := j2.AddFromEvidence(unsigned, AddOptions{Trust: tr, TrustUnsigned: true}); err != nil {
		t.Fatal(err)
	}
	unsignedEntries := 0
	for _, e := range j2.Entries {
		if e.EvidenceSignature != nil && e.EvidenceSignature.Unsigned && e.EvidenceSignature.KeyID == "" {
			unsignedEntries++
		}
	}
	if len(j2.Entries) != 2 || unsignedEntries != 1 {
		t.Fatalf("entries %d, %d recorded unsigned; want 2, 1", len(j2.Entries), unsignedEntries)
	}
}

// editJSON returns the evidence file at path as JSON with edit applied to
// its decoded form, written to a new public evidence file.
func editJSON(t *testing.T, path string, edit func(doc map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if b, err = json.MarshalIndent(doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), evidence.PublicFile)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// gateOf returns the gate id of doc's gates.
func gateOf(doc map[string]any, id string) map[string]any {
	for _, g := range doc["gates"].([]any) {
		if g := g.(map[string]any); g["id"] == id {
			return g
		}
	}
	panic("no gate " + id)
}

// The shipped example evidence (unsigned, not qualified: its semantic
// gate failed) is added with TrustUnsigned; each hand edit that makes its
// facts contradict each other is refused, naming the field, with and
// without TrustUnsigned and when signed again. Before, a verdict edited to
// "qualified" over a failed gate was published as "Every gate passed".
func TestAddRefusesEvidenceThatContradictsItself(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "gpu", "results", "campaign", "evidence.json")
	dir := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(dir, 0o755)
	j, _ := Load(dir)
	unsigned := AddOptions{Trust: &signing.Trust{}, TrustUnsigned: true}
	if _, err := j.AddFromEvidence(example, unsigned); err != nil {
		t.Fatalf("the consistent example evidence is refused: %v", err)
	}
	for _, c := range []struct {
		field, says string
		edit        func(doc map[string]any)
	}{
		{"exit_code", `contradicts verdict "qualified"`, func(d map[string]any) { d["verdict"] = "qualified" }},
		{"gates[semantic].status", `contradicts verdict "qualified"`, func(d map[string]any) { d["verdict"], d["exit_code"] = "qualified", 0 }},
		{"gates[semantic].status", `contradicts verdict "inconclusive"`, func(d map[string]any) { d["verdict"], d["exit_code"] = "inconclusive", 5 }},
		{"gates[launch].failure", "passed but carries a failure", func(d map[string]any) {
			gateOf(d, "launch")["failure"] = map[string]any{"class": "engine_died", "phase": "launch", "root_cause": "engine process died", "seconds_since_start": 1}
		}},
		{"verdict", "none failed", func(d map[string]any) { gateOf(d, "semantic")["status"] = "passed" }},
		{"exit_code", "contradicts production.restored.ok false", func(d map[string]any) {
			d["production"] = map[string]any{"stopped": true, "was_running": true, "config_unchanged": true, "restored": map[string]any{"ok": false, "attempts": 3}}
		}},
	} {
		path := editJSON(t, example, c.edit)
		var ie *evidence.InconsistentError
		for _, o := range []AddOptions{unsigned, {Trust: &signing.Trust{}}} {
			_, err := j.AddFromEvidence(path, o)
			if o.TrustUnsigned && (!errors.As(err, &ie) || ie.Field != c.field || !strings.Contains(err.Error(), c.says)) {
				t.Errorf("%s, trusting unsigned: %v, want refused on %s saying %q", c.field, err, c.field, c.says)
			}
			if err == nil {
				t.Errorf("%s: added without --trust-unsigned", c.field)
			}
		}
		ev, err := evidence.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		ev.Schema = evidence.SchemaID // upgraded from v1, signed as this hiro writes it
		if _, err := j.AddFromEvidence(writeEvidence(t, ev), addOpts); !errors.As(err, &ie) || ie.Field != c.field {
			t.Errorf("%s, signed again: %v, want refused on the field", c.field, err)
		}
	}
	if len(j.Entries) != 1 {
		t.Errorf("the journal holds %d entries, want only the consistent one", len(j.Entries))
	}
}

// Two campaigns finishing in the same second are two entries: before,
// the entry's identity was the second alone and the second campaign was
// refused as "already in the journal" under the other's entry. The same
// campaign added again is refused naming its entry; eight hiro adding
// eight such campaigns at once (each with the journal as it was) make
// eight entries and eight evidence copies, none overwritten.
func TestCampaignsFinishingInOneSecondAreTwoEntries(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(dir, 0o755)
	j, _ := Load(dir)
	first := seedEvidence()
	second := seedEvidence()
	second.ID = first.ID + "-b"
	at := first.FinishedAt.Add(400 * time.Millisecond)
	second.FinishedAt = &at
	p1, p2 := writeEvidence(t, first), writeEvidence(t, second)
	r1, err := j.AddFromEvidence(p1, addOpts)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := j.AddFromEvidence(p2, addOpts)
	if err != nil || r1 == r2 {
		t.Fatalf("second campaign of the same second: %s, %v (first %s)", r2, err, r1)
	}
	if _, err := j.AddFromEvidence(p2, addOpts); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), second.ID) {
		t.Fatalf("the same campaign again: %v", err)
	}

	race := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(race, 0o755)
	var paths []string
	for i := 0; i < 8; i++ {
		ev := seedEvidence()
		ev.ID = fmt.Sprintf("%s-%d", ev.ID, i)
		paths = append(paths, writeEvidence(t, ev))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(paths))
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rj, err := Load(race)
			if err == nil {
				_, err = rj.AddFromEvidence(p, addOpts)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("adder %d: %v", i, err)
		}
	}
	rj, err := Load(race)
	if err != nil {
		t.Fatal(err)
	}
	copies, _ := os.ReadDir(filepath.Join(race, EvidenceDir))
	campaigns := map[string]bool{}
	for _, e := range rj.Entries {
		campaigns[e.Campaign] = true
	}
	if len(rj.Entries) != 8 || len(campaigns) != 8 || len(copies) != 8 {
		t.Fatalf("%d entries of %d campaigns, %d evidence copies; want 8 of each", len(rj.Entries), len(campaigns), len(copies))
	}
	if r, err := Check(rj, ""); err != nil || len(r.Problems) > 0 {
		t.Fatalf("check: %v\n%s", err, problemText(r))
	}
}

// Issue 26 (F19): an aborted campaign's evidence (interrupted by Ctrl-C
// here; a harness error, or production not restored, alike) has no
// verdict on the candidate: journal add refuses it, saying why and what
// to do, and writes no entry and no evidence copy. It was published as
// if complete. (README and examples/demo/run.sh: only a verdict, exit 0,
// 1 or 5, is published; an aborted campaign leaves its evidence folder
// and no entry.)
func TestAddRefusesAnAbortedCampaign(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	os.Mkdir(dir, 0o755)
	j, _ := Load(dir)
	// The key is not trusted (addOpts trusts none): its warning says
	// "published", so it must not come before a refusal (trial 10 Q12).
	var warned []string
	o := addOpts
	o.Warn = func(s string) { warned = append(warned, s) }
	for _, exit := range []int{3, 4} {
		ev := seedEvidence()
		ev.ID += fmt.Sprintf("-exit%d", exit)
		ev.Verdict, ev.ExitCode, ev.TerminationReason = evidence.VerdictAborted, exit, "aborted: interrupted by SIGINT"
		ev.Gates[1].Status, ev.Gates[1].Reason = evidence.StatusNotRun, "aborted: interrupted by SIGINT"
		ev.Gates[1].Attempts = nil
		if exit == 4 {
			ev.Production.Restored = &evidence.Restored{OK: false, Attempts: 3, Error: "connection refused"}
		}
		_, err := j.AddFromEvidence(writeEvidence(t, ev), o)
		if len(warned) > 0 {
			t.Errorf("exit %d: warned before the refusal: %q", exit, warned)
		}
		if err == nil || !strings.Contains(err.Error(), "campaign "+ev.ID+" was aborted (exit "+fmt.Sprint(exit)+": aborted: interrupted by SIGINT)") ||
			!strings.Contains(err.Error(), "run the campaign again") {
			t.Fatalf("exit %d: err %v; want a refusal naming the campaign, why it was aborted and what to do", exit, err)
		}
	}
	for _, sub := range []string{"entries", "evidence"} {
		if ents, _ := os.ReadDir(filepath.Join(dir, sub)); len(ents) != 0 {
			t.Errorf("%s/ holds %d files after refusals", sub, len(ents))
		}
	}
}
