package qualify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

const seedLadder = `
[[gates]]
id = "host"
kind = "prereq"
[[gates.commands]]
name = "uname"
run = ["uname", "-s"]
version_pattern = "Linux"

[[gates]]
id = "launch"
kind = "launch"
[[gates.variants]]
name = "v1-runner"
reason = "documented fallback: V1 runner, since the V2 runner needs UVA"
env = { VLLM_USE_V2_MODEL_RUNNER = "0" }
args_set = { "--replay" = "LOGS/v1-marlin-repack.log" }
[[gates.variants]]
name = "triton-w4a16"
based_on = "v1-runner"
reason = "one bounded kernel retry: Triton W4A16 instead of Marlin"
args_set = { "--replay" = "LOGS/triton-w4a16-died.log", "--signal" = "KILL" }
args_remove = ["--exit"]

[[gates]]
id = "ready"
kind = "ready_control"

[[gates]]
id = "structured"
kind = "structured_control"

[[gates]]
id = "sequential"
kind = "sequential"
requests = 20
`

// seedEnv is the seed replay's campaign world: the candidate replays
// examples/seed-replay/logs, the logs examples/seed-replay/run.sh plays.
func seedEnv(t *testing.T) (*env, string) {
	e := newEnv(t, []string{"--replay", seedLogs + "/v2-runner-uva.log", "--line-delay", "2ms", "--exit", "1", "--health-style", "vllm", "--load-time", "60s"}, "", nil)
	return e, e.writePlan(strings.ReplaceAll(seedLadder, "LOGS", seedLogs))
}

func runPlan(t *testing.T, e *env, plan string) *qualify.Outcome {
	t.Helper()
	p, cfg, err := qualify.LoadPlan(plan, e.cfgPath)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	out, err := qualify.Run(context.Background(), p, cfg, qualify.Options{LeaseDir: e.leaseDir})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSeedLadderNotQualifiedProductionRestored(t *testing.T) {
	e, plan := seedEnv(t)
	e.startProduction()
	out := runPlan(t, e, plan)
	ev := out.Evidence
	if out.ExitCode != qualify.ExitNotQualified || ev.Verdict != evidence.VerdictNotQualified {
		t.Fatalf("exit %d verdict %s (%s), want 1 not_qualified", out.ExitCode, ev.Verdict, ev.TerminationReason)
	}
	launch := ev.Gates[1]
	if launch.Status != evidence.StatusFailed || len(launch.Attempts) != 3 {
		t.Fatalf("launch gate %s with %d attempts: %+v", launch.Status, len(launch.Attempts), launch)
	}
	want := []struct {
		name  string
		class failure.Class
		fact  string
		value float64
	}{
		{"base", failure.ClassHostCapability, "", 0},
		{"v1-runner", failure.ClassQuantKernelFailed, "weights_load_seconds", 93.66},
		{"triton-w4a16", failure.ClassEngineDied, "weights_load_seconds", 16.18},
	}
	for i, w := range want {
		a := launch.Attempts[i]
		if a.Name != w.name || a.ReachedReady || a.Failure == nil || a.Failure.Class != w.class {
			t.Errorf("attempt %d = %s ready=%v failure=%+v, want %s %s", i, a.Name, a.ReachedReady, a.Failure, w.name, w.class)
			continue
		}
		if w.fact != "" && a.Facts[w.fact] != w.value {
			t.Errorf("attempt %s fact %s = %v, want %v (facts %v)", a.Name, w.fact, a.Facts[w.fact], w.value, a.Facts)
		}
	}
	if f := launch.Attempts[2].Failure; f.Signal != "KILL" || f.Facts["model_memory_gib"] != 12.0 {
		t.Errorf("triton attempt: signal %q facts %v", f.Signal, f.Facts)
	}
	if !strings.Contains(strings.Join(launch.Attempts[1].Changes, ";"), "VLLM_USE_V2_MODEL_RUNNER=0") {
		t.Errorf("v1-runner changes %v", launch.Attempts[1].Changes)
	}
	for _, g := range ev.Gates[2:] {
		if g.Status != evidence.StatusNotRun || g.Reason != "not authorized: launch failed" {
			t.Errorf("gate %s: %s %q, want not_run 'not authorized: launch failed'", g.ID, g.Status, g.Reason)
		}
	}
	p := ev.Production
	if !p.WasRunning || !p.Stopped || p.Restored == nil || !p.Restored.OK || p.Restored.Reply != "READY" || p.Restored.Model != "prod-model" {
		t.Fatalf("production guard: %+v restored %+v", p, p.Restored)
	}
	if !p.ConfigUnchanged || p.ConfigHashBefore == "" || p.ConfigHashBefore != p.ConfigHashAfter {
		t.Errorf("config hashes %q → %q", p.ConfigHashBefore, p.ConfigHashAfter)
	}
	if !e.productionReady() {
		t.Error("production is not serving after the campaign")
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Errorf("lease left behind: %+v", ls[0])
	}
	// Evidence on disk: both copies validate; the public one has no paths.
	for _, name := range []string{evidence.PublicFile, evidence.PrivateFile} {
		b, err := os.ReadFile(filepath.Join(out.Dir, name))
		must(t, err)
		if err := evidence.Validate(b); err != nil {
			t.Errorf("%s does not validate: %v", name, err)
		}
		if name == evidence.PublicFile && strings.Contains(string(b), e.dir) {
			t.Errorf("public evidence holds a local path %s", e.dir)
		}
	}
	md, err := os.ReadFile(filepath.Join(out.Dir, evidence.ReportFile))
	must(t, err)
	for _, s := range []string{"## Executive summary", "No inference request executed", "host_capability", "quant_kernel_failed", "engine_died",
		"| Check | Status | Result |", "restored and verified", "## Next steps", "VLLM_USE_V2_MODEL_RUNNER=0"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	if ev.HarnessMS <= 0 || ev.HarnessMS > ev.DurationMS {
		t.Errorf("harness %d ms of %d ms", ev.HarnessMS, ev.DurationMS)
	}
}

func TestQualifiedRunsEveryGate(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY", "--json-reply", `{"claims":[{"text":"Marie Curie won the Nobel Prize.","quote":"Marie Curie won the Nobel Prize"}]}`}, "", nil)
	plan := e.writePlan(`
[[gates]]
kind = "launch"
[[gates]]
kind = "ready_control"
[[gates]]
kind = "structured_control"
requests = 2
[[gates]]
kind = "sequential"
requests = 5
`)
	e.startProduction()
	out := runPlan(t, e, plan)
	ev := out.Evidence
	if out.ExitCode != 0 || ev.Verdict != evidence.VerdictQualified {
		b, _ := json.MarshalIndent(ev.Gates, "", " ")
		t.Fatalf("exit %d %s: %s\n%s", out.ExitCode, ev.Verdict, ev.TerminationReason, b)
	}
	seq := ev.Gates[3].Requests
	if seq == nil || seq.Count != 5 || seq.Errors != 0 || seq.Latency == nil || seq.TTFT == nil || seq.Latency.P50 <= 0 {
		t.Fatalf("sequential stats %+v", seq)
	}
	st := ev.Gates[2].Requests
	if *st.SchemaAccepted != 2 || *st.SchemaValid != 2 {
		t.Errorf("structured accepted %d valid %d", *st.SchemaAccepted, *st.SchemaValid)
	}
	if ev.Gates[0].Attempts[0].Stop == nil || ev.Gates[0].Attempts[0].Stop.Leak != nil {
		t.Errorf("candidate stop not recorded cleanly: %+v", ev.Gates[0].Attempts[0].Stop)
	}
	if !ev.Production.Restored.OK || !e.productionReady() {
		t.Error("production not back")
	}
	// No artifact and no semantic gate, which the default activation
	// policy needs: the verdict names them rather than say "qualified"
	// and nothing more.
	if got := strings.Join(ev.NotJudged, ","); got != "artifact,semantic" {
		t.Errorf("not_judged %q, want artifact,semantic", got)
	}
	md, err := os.ReadFile(filepath.Join(out.Dir, evidence.ReportFile))
	must(t, err)
	if !strings.Contains(string(md), "not judged: artifact, semantic") || !strings.Contains(string(md), "extraction quality against production") {
		t.Errorf("report.md does not name what was not judged:\n%s", md)
	}
}

func TestStructuredFailOpenFailsGate(t *testing.T) {
	e := newEnv(t, []string{"--schema-fail-open"}, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"structured_control\"\n[[gates]]\nkind = \"sequential\"\n")
	e.startProduction()
	out := runPlan(t, e, plan)
	g := out.Evidence.Gates[1]
	if out.ExitCode != 1 || g.Status != evidence.StatusFailed || g.Failure == nil || g.Failure.Class != failure.ClassStructuredOutputFailOpen {
		t.Fatalf("exit %d gate %+v", out.ExitCode, g)
	}
	if *g.Requests.SchemaAccepted == 0 || *g.Requests.SchemaValid != 0 {
		t.Errorf("accepted %d valid %d: the server accepted the schema but no reply validated", *g.Requests.SchemaAccepted, *g.Requests.SchemaValid)
	}
	if !strings.Contains(g.Failure.RootCause, "grammar") {
		t.Errorf("root cause %q does not come from the engine log", g.Failure.RootCause)
	}
	if s := out.Evidence.Gates[2]; s.Status != evidence.StatusNotRun || s.Reason != "not authorized: structured_control failed" {
		t.Errorf("sequential %s %q", s.Status, s.Reason)
	}
}

// TestCandidateOnProductionsAddress: a candidate profile that listens on
// production's own host and port is refused by --check, before anything
// starts.
func TestCandidateOnProductionsAddress(t *testing.T) {
	e := newEnv(t, []string{}, "", nil)
	b, err := os.ReadFile(e.cfgPath)
	must(t, err)
	c := strings.Replace(string(b), fmt.Sprintf("port = %d\nmodel = \"cand-model\"", e.candPort), fmt.Sprintf("port = %d\nhost = \"localhost\"\nmodel = \"cand-model\"", e.prodPort), 1)
	if c == string(b) {
		t.Fatal("test setup: candidate port not found in the configuration")
	}
	// Its --port too: a port its own flag contradicts is refused first.
	c = strings.ReplaceAll(c, fmt.Sprintf("%q", fmt.Sprint(e.candPort)), fmt.Sprintf("%q", fmt.Sprint(e.prodPort)))
	must(t, os.WriteFile(e.cfgPath, []byte(c), 0o644))
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n")
	_, _, err = qualify.LoadPlan(plan, e.cfgPath)
	if err == nil || !strings.Contains(err.Error(), "production prod's own address") {
		t.Fatalf("error %v, want one saying the candidate listens on production's address", err)
	}
}

func TestBadPlansStartNothing(t *testing.T) {
	e := newEnv(t, []string{}, "", nil)
	cases := map[string]struct{ plan, want string }{
		"unknown gate kind":      {"[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"vibes\"\n", "gates[1].kind"},
		"unknown profile":        {"candidate = \"nope\"\n", "candidate"},
		"ladder no reason":       {"[[gates]]\nkind = \"launch\"\n[[gates.variants]]\nname = \"v\"\nenv = { A = \"1\" }\n", "gates[0].variants[0].reason"},
		"out of order":           {"[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"prereq\"\n", "gates[1].kind"},
		"request before launch":  {"[[gates]]\nkind = \"ready_control\"\n", "needs a launch gate"},
		"unknown key":            {"[[gates]]\nkind = \"launch\"\nretries = 3\n", "gates[0].retries"},
		"huge timeout":           {"[[gates]]\nkind = \"launch\"\ntimeout = \"999999h\"\n", "gates[0].timeout: 999999h0m0s is longer than the maximum of 7 days"},
		"zero requests":          {"[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"structured_control\"\nrequests = 0\n", "gates[1].requests: 0: use 1 to"},
		"evidence in /proc":      {"evidence_dir = \"/proc/nope\"\n[[gates]]\nkind = \"launch\"\n", "evidence_dir: /proc/nope: cannot create a folder in /proc"},
		"another kind's key":     {"[[gates]]\nkind = \"launch\"\nrequests = 3\n[[gates]]\nkind = \"sequential\"\nrequests = 3\n", "gates[0].requests: unknown key for a launch gate"},
		"gate key misspelt":      {"[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"sequential\"\nrequets = 3\n", "gates[1].requets: unknown key for a sequential gate; did you mean requests?"},
		"an artifact gate's key": {"[[gates]]\nkind = \"artifact\"\ncolour = \"red\"\n[[gates]]\nkind = \"launch\"\n", "gates[0].colour: unknown key for an artifact gate"},
		"plan key misspelt":      {"exlusive = true\n[[gates]]\nkind = \"launch\"\n", "exlusive: unknown key; did you mean exclusive?"},
		"plan key unknown":       {"colour = \"red\"\n[[gates]]\nkind = \"launch\"\n", "colour: unknown key; docs/plan.md lists every key"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			text := "title = \"x\"\nconfig = \"hiro.toml\"\ncandidate = \"cand\"\n" + tc.plan
			if strings.HasPrefix(tc.plan, "candidate") {
				text = "title = \"x\"\nconfig = \"hiro.toml\"\n" + tc.plan + "[[gates]]\nkind = \"launch\"\n"
			}
			p := filepath.Join(e.dir, "bad.toml")
			must(t, os.WriteFile(p, []byte(text), 0o644))
			_, _, err := qualify.LoadPlan(p, e.cfgPath)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one naming %q", err, tc.want)
			}
			code, _, stderr := runHiro(t, e, "qualify", p)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("hiro qualify: exit %d, stderr %q", code, stderr)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(e.cfg.StateDir, "logs")); !os.IsNotExist(err) {
		t.Errorf("a bad plan started something: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "evidence")); !os.IsNotExist(err) {
		t.Errorf("a bad plan wrote evidence")
	}
}

// TestReportSaysProductionWasNotServing: production stopped beforehand
// ('hiro backend stop'), a non-exclusive campaign qualifies; report.md
// says production was not serving, as evidence.json's was_running false
// does (it said "it kept serving throughout").
func TestReportSaysProductionWasNotServing(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	out := runPlan(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n"))
	if out.ExitCode != qualify.ExitQualified || out.Evidence.Production.WasRunning || out.Evidence.Production.Stopped {
		t.Fatalf("exit %d, production %+v", out.ExitCode, out.Evidence.Production)
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, evidence.ReportFile))
	must(t, err)
	md := string(b)
	if !strings.Contains(md, "Production prod was not serving before the campaign") || strings.Contains(md, "kept serving") {
		t.Errorf("report.md contradicts was_running false:\n%s", md)
	}
}

// A typo in the candidate profile's artifact is reported at the key the
// user wrote (backends.cand.artifact, in the configuration file), not at
// the artifact gate's manifest key, which the plan never set.
func TestArtifactTypoNamesTheProfileKey(t *testing.T) {
	e := newEnv(t, []string{}, "", nil)
	b, err := os.ReadFile(e.cfgPath)
	must(t, err)
	c := strings.Replace(string(b), "model = \"cand-model\"", "model = \"cand-model\"\nartifact = \"manifset.json\"", 1)
	if c == string(b) {
		t.Fatal("test setup: candidate model line not found in the configuration")
	}
	must(t, os.WriteFile(e.cfgPath, []byte(c), 0o644))
	plan := e.writePlan("[[gates]]\nkind = \"artifact\"\n[[gates]]\nkind = \"launch\"\n")
	_, _, err = qualify.LoadPlan(plan, e.cfgPath)
	if err == nil || !strings.Contains(err.Error(), e.cfgPath+": backends.cand.artifact: manifest ") || !strings.Contains(err.Error(), "manifset.json not found") ||
		strings.Contains(err.Error(), "gates[0].manifest") {
		t.Fatalf("error %v, want one at backends.cand.artifact saying the manifest is not found", err)
	}
	// The advice to pin is said once (trial 10 Q5: "..., or pin one; pin
	// the artifact first (hiro artifact pin) or fix ...").
	if n := strings.Count(err.Error(), "pin"); n != 2 || !strings.Contains(err.Error(), "or pin one; or fix the profile's artifact path, which the artifact gate checks") {
		t.Errorf("error %v: %d times \"pin\" (want 2: 'hiro artifact pin' and 'or pin one'), and the profile's path to fix", err, n)
	}
}

// TestProductionArtifactTypoNamesTheProfileKey: a typo in production's
// artifact is the same error as one in the candidate's, at
// backends.prod.artifact (trial T5: --check said the plan was valid);
// a candidate's typo is reported without an artifact gate too, and
// once with one.
func TestProductionArtifactTypoNamesTheProfileKey(t *testing.T) {
	e := newEnv(t, []string{}, "", nil)
	b, err := os.ReadFile(e.cfgPath)
	must(t, err)
	c := strings.Replace(string(b), "model = \"prod-model\"", "model = \"prod-model\"\nartifact = \"manifset.json\"", 1)
	if c == string(b) {
		t.Fatal("test setup: production model line not found in the configuration")
	}
	must(t, os.WriteFile(e.cfgPath, []byte(c), 0o644))
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n")
	_, _, err = qualify.LoadPlan(plan, e.cfgPath)
	if err == nil || !strings.Contains(err.Error(), e.cfgPath+": backends.prod.artifact: manifest ") || !strings.Contains(err.Error(), "manifset.json not found") {
		t.Fatalf("error %v, want one at backends.prod.artifact saying the manifest is not found", err)
	}
	if strings.Contains(err.Error(), "gates[") || strings.Contains(err.Error(), "production:") {
		t.Errorf("error %v names a plan key the user never wrote", err)
	}

	// The candidate's typo, with and without an artifact gate.
	c = strings.Replace(string(b), "model = \"cand-model\"", "model = \"cand-model\"\nartifact = \"manifset.json\"", 1)
	must(t, os.WriteFile(e.cfgPath, []byte(c), 0o644))
	for _, gates := range []string{"[[gates]]\nkind = \"launch\"\n", "[[gates]]\nkind = \"artifact\"\n[[gates]]\nkind = \"launch\"\n"} {
		_, _, err = qualify.LoadPlan(e.writePlan(gates), e.cfgPath)
		if err == nil || strings.Count(err.Error(), "backends.cand.artifact: manifest ") != 1 {
			t.Errorf("plan %q: error %v, want one at backends.cand.artifact", gates, err)
		}
	}
}

// TestExclusiveCampaignLeavesStoppedProductionStopped: production was
// stopped on purpose before an exclusive campaign (it is not running);
// the guard puts production back as it found it: it does not start it at
// the end, and the evidence (left_stopped), report.md and the terminal
// say so (issue 26: the campaign started a production stopped on purpose).
func TestExclusiveCampaignLeavesStoppedProductionStopped(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	var term strings.Builder
	p, cfg, err := qualify.LoadPlan(e.writePlan("exclusive = true\n[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n"), e.cfgPath)
	must(t, err)
	out, err := qualify.Run(context.Background(), p, cfg, qualify.Options{LeaseDir: e.leaseDir, Progress: &term})
	must(t, err)
	pr := out.Evidence.Production
	if out.ExitCode != qualify.ExitQualified || pr.WasRunning || pr.Stopped || !pr.LeftStopped || pr.Restored != nil {
		t.Fatalf("exit %d, production %+v; want qualified, left stopped, no restore", out.ExitCode, pr)
	}
	if e.productionReady() {
		t.Error("production answers after the campaign: the guard started a production that was stopped on purpose")
	}
	if _, err := supervisor.Status(e.cfg.StateDir, "prod"); err == nil {
		t.Error("production has a record after the campaign: something started it")
	}
	if !strings.Contains(term.String(), "leaves it stopped and will not start it") {
		t.Errorf("the terminal does not say production is left stopped:\n%s", term.String())
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, evidence.ReportFile))
	must(t, err)
	if md := string(b); !strings.Contains(md, "left it stopped") || strings.Contains(md, "was restored") {
		t.Errorf("report.md does not say production was left stopped:\n%s", md)
	}
}
