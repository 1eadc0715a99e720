package evidence

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/failure"
)

var update = flag.Bool("update", false, "rewrite the committed schema")

func TestCommittedSchemaMatchesTypes(t *testing.T) {
	path := filepath.Join("..", "..", SchemaPath)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, JSONSchema(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/evidence -update)", err)
	}
	if string(b) != string(JSONSchema()) {
		t.Fatalf("%s is stale: run go test ./internal/evidence -update", SchemaPath)
	}
}

func sample() *Evidence {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	code := 1
	return &Evidence{
		Schema: SchemaID, ID: "x", Title: "t", Plan: "/home/u/plan.toml", Candidate: "vllm",
		Verdict: VerdictNotQualified, ExitCode: 1, TerminationReason: "gate launch failed",
		StartedAt: now,
		Gates: []Gate{{ID: "launch", Kind: "launch", Status: StatusFailed, Attempts: []Attempt{{
			Name: "v1-runner", Changes: []string{"env VLLM_USE_V2_MODEL_RUNNER=0", "args +--x"},
			LogPath: "/var/hiro/logs/a.log",
			Failure: &failure.Failure{Class: failure.ClassHostCapability, Phase: failure.PhaseLaunch,
				RootCause: "model '/mnt/d/models/x' failed", ExitCode: &code, LogTail: []string{"loading /mnt/d/models/x"}},
		}}}, {ID: "ready", Kind: "ready_control", Status: StatusNotRun, Reason: "not authorized: launch failed"}},
		Production:   Production{Stopped: true, Restored: &Restored{OK: true, Model: "m", Reply: "READY"}},
		Fingerprints: Fingerprints{Plan: "abc", Files: map[string]string{"/a": "h"}},
		Report:       Report{Summary: "s /home/u/x", Sections: []Section{{Title: "a", Status: "failed", Items: []string{"at /mnt/d/y"}}}, Validation: []Validation{{Check: "c", Status: "passed", Result: "r"}}},
	}
}

func TestEvidenceValidatesAndPublicCopyRedacts(t *testing.T) {
	e := sample()
	for _, doc := range []*Evidence{e, e.Public()} {
		b, _ := json.Marshal(doc)
		if err := Validate(b); err != nil {
			t.Fatalf("valid evidence rejected: %v", err)
		}
	}
	bad, _ := json.Marshal(map[string]any{"schema": SchemaID})
	if Validate(bad) == nil {
		t.Fatal("evidence without gates/verdict validated")
	}
	p := e.Public()
	pb, _ := json.Marshal(p)
	for _, secret := range []string{"/home/u", "/var/hiro", "/mnt/d", `"/a"`} {
		if strings.Contains(string(pb), secret) {
			t.Errorf("public copy still holds %q", secret)
		}
	}
	if p.Gates[0].Attempts[0].Changes[0] != "env VLLM_USE_V2_MODEL_RUNNER=0" {
		t.Errorf("public copy changed a harmless env change: %q", p.Gates[0].Attempts[0].Changes[0])
	}
	if e.Gates[0].Attempts[0].LogPath == "" || e.Fingerprints.Files == nil {
		t.Error("Public modified the private document")
	}
}

func TestWriteBothAndLoad(t *testing.T) {
	dir := t.TempDir()
	if err := WriteBoth(dir, sample(), nil); err != nil {
		t.Fatal(err)
	}
	e, err := Load(filepath.Join(dir, PublicFile))
	if err != nil {
		t.Fatal(err)
	}
	if e.Gates[0].Attempts[0].Failure.Class != failure.ClassHostCapability {
		t.Errorf("round trip lost the failure class")
	}
	os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"schema":"x"}`), 0o644)
	if _, err := Load(filepath.Join(dir, "other.json")); err == nil {
		t.Error("loaded a document of another schema")
	}
}

// TestLoadV1 reads a v1 document (the seed replay's public evidence as
// written before v2): it validates against the v1 schema, and its untyped
// artifact result becomes the typed field.
func TestLoadV1(t *testing.T) {
	path := filepath.Join("testdata", "v1-seed-replay.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(b); err != nil {
		t.Fatalf("v1 evidence does not validate against the v1 schema: %v", err)
	}
	e, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if e.Schema != SchemaV1 || len(e.Gates) != 8 {
		t.Fatalf("schema %q, %d gates", e.Schema, len(e.Gates))
	}
	a := e.Gates[1].Artifact
	if a == nil || a.Repo == "" || a.Files == 0 || a.ManifestDigest == "" {
		t.Fatalf("v1 artifact result not upgraded: %+v", a)
	}
	if l := e.Gates[2]; len(l.Attempts) != 3 || l.Attempts[0].Failure == nil {
		t.Fatalf("launch gate lost its attempts: %+v", l)
	}
	// A v2 document is validated against v2's schema: v1's untyped
	// "result" is refused there.
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	m["schema"] = SchemaID
	b2, _ := json.Marshal(m)
	if Validate(b2) == nil {
		t.Error("a v1-shaped document validated as v2")
	}
}

// TestLoadV2 reads a v2 document (written by the v2 format before the
// bump): it validates against v2's frozen schema and loads with its typed
// semantic result; the frozen schema is v2's, not a regenerated one.
func TestLoadV2(t *testing.T) {
	path := filepath.Join("testdata", "v2-sample.json")
	b, err := os.ReadFile(path)
	must(t, err)
	if err := Validate(b); err != nil {
		t.Fatalf("v2 evidence does not validate against the v2 schema: %v", err)
	}
	e, err := Load(path)
	must(t, err)
	if e.Schema != SchemaV2 || len(e.Gates) != 3 {
		t.Fatalf("schema %q, %d gates", e.Schema, len(e.Gates))
	}
	if s := e.Gates[2].Semantic; s == nil || s.ProductionScores.F1 != 0.877 || len(s.Differences) != 1 {
		t.Fatalf("v2 semantic result not read: %+v", s)
	}
	if !strings.Contains(string(schemaV2), `"title": "hiro campaign evidence (hiro.evidence/v2)"`) {
		t.Error("schema_v2.json is not v2's published schema")
	}
	if string(schemaV2) == string(JSONSchema()) {
		t.Error("the current schema is still v2's")
	}
	// A document that misses a field v2 requires does not validate as v2.
	var m map[string]any
	must(t, json.Unmarshal(b, &m))
	delete(m, "verdict")
	b2, _ := json.Marshal(m)
	if Validate(b2) == nil {
		t.Error("a v2 document without a verdict validated")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestPublicWithholdsEnvValuesInEverySentence: the public copy withholds
// an environment value a launch attempt set when it may be a secret (its
// name looks secret, DB_PASSWORD; or the value looks like a token, 32 hex
// digits under X) wherever the campaign repeats it (the plan's written
// reason in the attempt, the decisions and the report; the change in the
// report's sentences), and keeps what a reader needs to follow the
// campaign: a port, a mode, a flag; a local path reads <path>, as every
// local path of the public copy does (issue 26, F21: every value was
// withheld). hiro's own advice naming a documented setting is kept,
// and Public is idempotent (the journal checks a public copy is left
// unchanged).
func TestPublicWithholdsEnvValuesInEverySentence(t *testing.T) {
	const tok = "0123456789abcdef0123456789abcdef"
	reason := "documented fallback: the V1 model runner (VLLM_USE_V2_MODEL_RUNNER=0) does not need UVA; also MY_MODE = \"fast\", DB_PASSWORD=hunter2"
	advice := "use a documented fallback that avoids UVA, e.g. VLLM_USE_V2_MODEL_RUNNER=0 (the V1 model runner)"
	changes := "env CACHE_DIR=/srv/cache, env DB_PASSWORD=hunter2, env EXTRA_ARGS=--enforce-eager, env MY_MODE=fast, env PORT=8000, env VLLM_USE_V2_MODEL_RUNNER=0, env X=" + tok
	e := &Evidence{Schema: SchemaID, ID: "x", Candidate: "c", Verdict: VerdictNotQualified,
		Intent: &Intent{Decisions: []string{"Attempt v1-runner: " + reason + "."}},
		Gates: []Gate{{ID: "launch", Kind: "launch", Status: StatusFailed, Attempts: []Attempt{
			{Name: "base", Reason: "the profile as configured",
				Failure: &failure.Failure{Class: failure.ClassHostCapability, Phase: failure.PhaseLaunch, RootCause: "UVA is not available", NextStep: advice}},
			{Name: "v1-runner", Reason: reason, Changes: strings.Split(changes, ", ")},
			{Name: "other", Reason: "X=" + tok + " is not X=0", Changes: []string{"env X=0"}},
		}}},
		Report: Report{Sections: []Section{{Title: "launch", Status: "failed", Items: []string{
			"Attempt 2, v1-runner (" + reason + "), changing " + changes + ": failed.",
			"Attempt 3, other (X=" + tok + " is not X=0), changing env X=0: failed.",
		}}}},
	}
	p := e.Public()
	withheld := strings.Replace(reason, "DB_PASSWORD=hunter2", "DB_PASSWORD=<redacted>", 1)
	if got := p.Gates[0].Attempts[1].Reason; got != withheld {
		t.Errorf("attempt reason %q, want %q", got, withheld)
	}
	wantChanges := "env CACHE_DIR=<path>, env DB_PASSWORD=<redacted>, env EXTRA_ARGS=--enforce-eager, env MY_MODE=fast, env PORT=8000, env VLLM_USE_V2_MODEL_RUNNER=0, env X=<redacted>"
	if got := strings.Join(p.Gates[0].Attempts[1].Changes, ", "); got != wantChanges {
		t.Errorf("changes %q, want %q", got, wantChanges)
	}
	if got := p.Intent.Decisions[0]; got != "Attempt v1-runner: "+withheld+"." {
		t.Errorf("decision %q", got)
	}
	if got := p.Report.Sections[0].Items[0]; got != "Attempt 2, v1-runner ("+withheld+"), changing "+wantChanges+": failed." {
		t.Errorf("report item %q", got)
	}
	if got := p.Report.Sections[0].Items[1]; got != "Attempt 3, other (X=<redacted> is not X=0), changing env X=0: failed." {
		t.Errorf("report item %q", got)
	}
	if got := p.Gates[0].Attempts[0].Failure.NextStep; got != advice {
		t.Errorf("hiro's advice changed: %q", got)
	}
	a, _ := json.Marshal(p)
	if strings.Contains(string(a), "hunter2") || strings.Contains(string(a), tok) {
		t.Errorf("a secret-looking value is left in the public copy: %s", a)
	}
	b, _ := json.Marshal(p.Public())
	if string(a) != string(b) {
		t.Errorf("Public is not idempotent:\n%s\n%s", a, b)
	}
}

// The evidence hiro wrote (v1 and v2 files kept in testdata) is consistent;
// the same file edited to read qualified is not, naming exit_code, then
// with exit_code 0 too, the first failed gate's status.
func TestConsistent(t *testing.T) {
	for _, f := range []string{"v1-seed-replay.json", "v2-sample.json"} {
		e, err := Load(filepath.Join("testdata", f))
		must(t, err)
		if err := e.Consistent(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		var ie *InconsistentError
		e.Verdict = VerdictQualified
		if err := e.Consistent(); !errors.As(err, &ie) || ie.Field != "exit_code" {
			t.Errorf("%s edited to qualified: %v, want exit_code", f, err)
		}
		e.ExitCode = 0
		if err := e.Consistent(); !errors.As(err, &ie) || ie.Field != "gates[launch].status" || !strings.Contains(err.Error(), `contradicts verdict "qualified"`) {
			t.Errorf("%s edited to qualified, exit 0: %v, want gates[launch].status", f, err)
		}
	}
}
