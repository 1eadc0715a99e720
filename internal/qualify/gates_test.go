package qualify_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// gateAlone loads a plan of a launch gate followed by the gate in gateTOML
// and runs that gate alone through a Handle. With ready, the candidate
// (the fake engine, a real process) is started first and handed over as
// the launch gate would.
func gateAlone(t *testing.T, e *env, gateTOML string, ready bool) (evidence.Gate, error) {
	t.Helper()
	launch, at := "[[gates]]\nkind = \"launch\"\n", 1
	plan := e.writePlan(launch + gateTOML)
	if strings.Contains(gateTOML, `"prereq"`) || strings.Contains(gateTOML, `"artifact"`) {
		plan, at = e.writePlan(gateTOML+launch), 0
	}
	p, cfg, err := qualify.LoadPlan(plan, e.cfgPath)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	var log strings.Builder
	h := qualify.NewHandle(cfg.Backends["cand"], cfg.Backends["prod"], cfg.StateDir, t.TempDir(), &log)
	if ready {
		proc, res := supervisor.Start(context.Background(), cfg.Backends["cand"], supervisor.Options{StateDir: cfg.StateDir})
		if res.State != supervisor.StateReady {
			t.Fatalf("candidate did not start: %+v %v", res.Failure, res.Err)
		}
		defer proc.Stop(context.Background())
		h.SetReady(&qualify.Ready{Profile: cfg.Backends["cand"], Proc: proc})
	}
	spec := p.Gates[at]
	g := evidence.Gate{ID: spec.ID, Kind: spec.Kind}
	ctx, cancel := context.WithTimeout(context.Background(), spec.Bound(h))
	defer cancel()
	err = spec.Gate.Run(ctx, h, &g)
	e.lastLog = log.String()
	return g, err
}

func TestGatePrereqAlone(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	g, err := gateAlone(t, e, `[[gates]]
kind = "prereq"
files = ["hiro.toml", "absent.bin"]
[[gates.commands]]
run = ["uname", "-s"]
version_pattern = "Linux"
[[gates.disks]]
path = "."
min_free_gib = 0.001
`, false)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 checks failed") || !strings.Contains(err.Error(), "absent.bin") {
		t.Fatalf("err %v, want the absent file to fail the gate alone", err)
	}
	if len(g.Checks) != 4 || g.Checks[0].Status != evidence.StatusPassed || g.Checks[1].Detail != "Linux" {
		t.Errorf("checks %+v", g.Checks)
	}
}

func TestGateReadyControlAlone(t *testing.T) {
	e := newEnv(t, []string{"--reply", "NOT READY"}, "", nil)
	g, err := gateAlone(t, e, "[[gates]]\nkind = \"ready_control\"\nexpect = \"NOT READY\"\nmax_tokens = 7\n", true)
	if err != nil || g.Requests == nil || g.Requests.Samples[0] != "NOT READY" {
		t.Fatalf("err %v requests %+v", err, g.Requests)
	}
	g, err = gateAlone(t, e, "[[gates]]\nkind = \"ready_control\"\n", true)
	if err == nil || !strings.Contains(err.Error(), `the reply "NOT READY" is not the expected "READY"`) || g.Failure == nil || g.Failure.Class != failure.ClassProbeFailed {
		t.Fatalf("a wrong reply passed or was not probe_failed: %v %+v", err, g.Failure)
	}
}

func TestGateReadyControlNoCandidateIsHarnessError(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	_, err := gateAlone(t, e, "[[gates]]\nkind = \"ready_control\"\n", false)
	if !errors.Is(err, qualify.ErrHarness) {
		t.Fatalf("err %v, want a harness error", err)
	}
}

func TestGateStructuredControlAlone(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	g, err := gateAlone(t, e, "[[gates]]\nkind = \"structured_control\"\nrequests = 2\n", true)
	if err != nil || *g.Requests.SchemaAccepted != 2 || *g.Requests.SchemaValid != 2 {
		t.Fatalf("err %v requests %+v", err, g.Requests)
	}
	e = newEnv(t, []string{"--schema-fail-open"}, "", nil)
	g, err = gateAlone(t, e, "[[gates]]\nkind = \"structured_control\"\nrequests = 2\n", true)
	if err == nil || g.Failure == nil || g.Failure.Class != failure.ClassStructuredOutputFailOpen || *g.Requests.SchemaValid != 0 {
		t.Fatalf("err %v failure %+v", err, g.Failure)
	}
}

func TestGateSequentialAlone(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	g, err := gateAlone(t, e, "[[gates]]\nkind = \"sequential\"\nrequests = 5\n", true)
	if err != nil {
		t.Fatal(err)
	}
	r := g.Requests
	if r.Count != 5 || r.Errors != 0 || r.Latency == nil || r.Concurrency != 1 || r.WallMS < 0 || r.RequestsPerSecond <= 0 {
		t.Fatalf("stats %+v", r)
	}
}

func TestGateArtifactAlone(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	dir := filepath.Join(e.dir, "model")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "w.bin"), []byte("weights"), 0o644))
	m, err := artifact.Pin(context.Background(), dir, "org/model", strings.Repeat("a", 40), artifact.PinOptions{})
	must(t, err)
	must(t, artifact.Write(filepath.Join(e.dir, "manifest.json"), m))
	const gate = "[[gates]]\nkind = \"artifact\"\nmanifest = \"manifest.json\"\ndir = \"model\"\n"
	g, err := gateAlone(t, e, gate, false)
	if err != nil || g.Artifact == nil || g.Artifact.Files != 1 || g.Artifact.Repo != "org/model" {
		t.Fatalf("err %v artifact %+v", err, g.Artifact)
	}
	must(t, os.WriteFile(filepath.Join(dir, "w.bin"), []byte("tampered"), 0o644))
	g, err = gateAlone(t, e, gate, false)
	if err == nil || g.Artifact.Changed != 1 {
		t.Fatalf("drift passed: err %v artifact %+v", err, g.Artifact)
	}
}

// TestGateArtifactChecksTheDirectoryTheManifestRecords: a manifest written
// away from its model (pin --dir "art dir é" --out elsewhere) is checked by
// the gate, like by hiro artifact verify, against the directory it records,
// not against the manifest's own folder (which holds other files). Drift
// names that directory and where it came from; the public copy withholds
// the path whole, spaces included.
func TestGateArtifactChecksTheDirectoryTheManifestRecords(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	dir := filepath.Join(t.TempDir(), "art dir é")
	must(t, os.MkdirAll(dir, 0o755))
	for _, f := range []string{"a.bin", "b.json"} {
		must(t, os.WriteFile(filepath.Join(dir, f), []byte(f), 0o644))
	}
	m, err := artifact.Pin(context.Background(), dir, "org/model", strings.Repeat("a", 40), artifact.PinOptions{})
	must(t, err)
	manifest := filepath.Join(e.dir, "art m.json") // e.dir holds hiro.toml and more
	must(t, artifact.Write(manifest, m))
	gate := fmt.Sprintf("[[gates]]\nkind = \"artifact\"\nmanifest = %q\n", manifest)
	g, err := gateAlone(t, e, gate, false)
	if err != nil || g.Artifact == nil || g.Artifact.Files != 2 || g.Artifact.Paths.Dir != dir {
		t.Fatalf("err %v artifact %+v: want the recorded directory verified", err, g.Artifact)
	}
	must(t, os.Remove(filepath.Join(dir, "b.json")))
	g, err = gateAlone(t, e, gate, false)
	want := "artifact drift in '" + dir + "' (the directory the manifest records): 1 missing, 0 changed, 0 extra"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %s", err, want)
	}
	if got := evidence.RedactPaths(err.Error()); got != "artifact drift in <path> (the directory the manifest records): 1 missing, 0 changed, 0 extra" {
		t.Errorf("public: %s", got)
	}
	// The gate's dir still wins.
	g, err = gateAlone(t, e, gate+"dir = \".\"\n", false)
	if err == nil || !strings.Contains(err.Error(), "(the gate's dir)") {
		t.Fatalf("err %v, want the gate's dir checked", err)
	}
}

// TestGateSemanticAlone compares the fake engine with itself on the
// project's frozen corpus: equal scores pass, production's side is cached
// by fingerprint and reused, and a floor the candidate misses fails the
// gate with the check named.
func TestGateSemanticAlone(t *testing.T) {
	mini, _ := filepath.Abs("../../corpora/hiro-mini")
	e := newEnv(t, nil, "", nil)
	e.startProduction()
	gate := "[[gates]]\nkind = \"semantic\"\ncorpus = \"" + mini + "\"\ntolerance = 0.05\n"
	g, err := gateAlone(t, e, gate, true)
	if err != nil {
		t.Fatal(err)
	}
	s := g.Semantic
	if s == nil || !s.Passed || s.ProductionCached || len(s.Differences) == 0 || len(s.Checks) != 4 || len(s.Comparisons) != 3 || s.Outcome != evidence.StatusPassed || s.CandidateStats.DocumentsDone == 0 {
		t.Fatalf("semantic %+v", s)
	}
	// A corpus through a model takes minutes: each side says how far it is.
	n := s.CandidateStats.DocumentsDone
	for _, side := range []string{"prod", "cand"} {
		want := fmt.Sprintf("%s: document %d/%d (", side, n, n)
		if !strings.Contains(e.lastLog, side+": document 1/") || !strings.Contains(e.lastLog, want) {
			t.Errorf("progress lacks %q and %q:\n%s", side+": document 1/", want, e.lastLog)
		}
	}
	g, err = gateAlone(t, e, gate+"min_f1 = 0.5\n", true)
	if err == nil || !strings.Contains(err.Error(), "f1 floor") || g.Semantic == nil || !g.Semantic.ProductionCached {
		t.Fatalf("err %v semantic %+v: want the f1 floor to fail, production reused from the cache", err, g.Semantic)
	}
}

// TestGateSequentialOverloadIsNotFailure: the candidate (a real fake
// engine) answers every third chat request with 503. The sequential gate, whose requests may not
// fail, passes: each busy answer was retried (the profile's [overload]
// policy), counted as a success, and reported in the evidence. With
// retries off the same engine fails the gate.
func TestGateSequentialOverloadIsNotFailure(t *testing.T) {
	busy := []string{"--overload-status", "503", "--overload-every", "3"}
	fast := "[backends.cand.overload]\ninitial_interval = \"2ms\"\nmax_interval = \"20ms\"\n"
	e := newEnv(t, busy, fast, nil)
	g, err := gateAlone(t, e, "[[gates]]\nkind = \"sequential\"\nrequests = 6\n", true)
	if err != nil {
		t.Fatalf("the gate failed on busy answers: %v", err)
	}
	r := g.Requests
	if r.Count != 6 || r.Errors != 0 || r.Overload == nil || r.Overload.Retried503 < 2 || r.Overload.SucceededAfterRetry < 2 || r.Overload.GaveUp != 0 {
		t.Fatalf("stats %+v overload %+v", r, r.Overload)
	}
	e = newEnv(t, busy, "[backends.cand.overload]\nmax_retries = 0\n", nil)
	g, err = gateAlone(t, e, "[[gates]]\nkind = \"sequential\"\nrequests = 6\n", true)
	if err == nil || g.Requests.Errors == 0 || !strings.Contains(err.Error(), "503") {
		t.Fatalf("without retries: err %v stats %+v", err, g.Requests)
	}
}

// TestGateLaunchAlone walks a ladder alone: the base attempt (the fake
// engine exits during load) fails and is recorded, the variant reaches
// ready and is handed to later gates through the Handle.
func TestGateLaunchAlone(t *testing.T) {
	e := newEnv(t, []string{"--health-style", "vllm", "--load-time", "30s", "--exit", "1", "--exit-after", "300ms"}, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates.variants]]\nname = \"stays-up\"\nreason = \"the documented fallback\"\nargs_remove = [\"--exit\", \"--exit-after\", \"--load-time\"]\n")
	p, cfg, err := qualify.LoadPlan(plan, e.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	h := qualify.NewHandle(cfg.Backends["cand"], cfg.Backends["prod"], cfg.StateDir, t.TempDir(), nil)
	var g evidence.Gate
	ctx, cancel := context.WithTimeout(context.Background(), p.Gates[0].Bound(h))
	defer cancel()
	if err := p.Gates[0].Gate.Run(ctx, h, &g); err != nil {
		t.Fatalf("ladder: %v (attempts %+v)", err, g.Attempts)
	}
	r, err := h.Ready()
	if err != nil || r.Proc == nil {
		t.Fatalf("no ready candidate handed over: %v", err)
	}
	defer r.Proc.Stop(context.Background())
	if len(g.Attempts) != 2 || g.Attempts[0].ReachedReady || g.Attempts[0].Failure == nil || !g.Attempts[1].ReachedReady || g.Attempts[1].Name != "stays-up" {
		t.Fatalf("attempts %+v", g.Attempts)
	}
}
