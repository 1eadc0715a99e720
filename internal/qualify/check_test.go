package qualify_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/qualify"
)

// Issue 11, item 1: everything that can fail is caught by --check, before
// production is stopped. Each case is one of the examples, with
// real files; hiro is the real binary and production the fake engine,
// running: a refused plan exits 2, names the key, and leaves production
// serving, with no evidence written and no lease taken.
func TestCheckRefusesBeforeProductionIsStopped(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	e.startProduction()
	mini, _ := filepath.Abs("../../corpora/hiro-mini")
	must(t, os.WriteFile(filepath.Join(e.dir, "bad-schema.json"), []byte(`{"type": "object", "properties": {"x": {"type": 12}}}`), 0o644))
	must(t, os.WriteFile(filepath.Join(e.dir, "not-a-manifest.json"), []byte(`{"files": "no"}`), 0o644))
	launch := "[[gates]]\nkind = \"launch\"\n"
	semantic := func(extra string) string {
		return launch + "[[gates]]\nkind = \"semantic\"\ncorpus = \"" + mini + "\"\n" + extra + "\n"
	}
	nested := "x = " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"
	huge := "# " + strings.Repeat("x", 4<<20) + "\n"
	cases := map[string]struct{ plan, want string }{
		"tolerance nan":          {semantic("tolerance = nan"), "gates[1].tolerance: NaN"},
		"tolerance left out":     {semantic(""), "gates[1].tolerance: missing or 0"},
		"min_f1 inf":             {semantic("min_f1 = inf"), "gates[1].min_f1"},
		"missing corpus":         {launch + "[[gates]]\nkind = \"semantic\"\ncorpus = \"no-such-corpus\"\n", "gates[1].corpus"},
		"corpus at /etc":         {launch + "[[gates]]\nkind = \"semantic\"\ncorpus = \"/etc\"\n", "/etc is not a frozen corpus"},
		"missing schema":         {launch + "[[gates]]\nkind = \"structured_control\"\nschema = \"absent.json\"\n", "gates[1].schema"},
		"schema not compiling":   {launch + "[[gates]]\nkind = \"structured_control\"\nschema = \"bad-schema.json\"\n", "does not compile"},
		"missing manifest":       {"[[gates]]\nkind = \"artifact\"\nmanifest = \"absent.json\"\n" + launch, "gates[0].manifest"},
		"manifest not parsing":   {"[[gates]]\nkind = \"artifact\"\nmanifest = \"not-a-manifest.json\"\n" + launch, "gates[0].manifest"},
		"concurrency -4":         {semantic("concurrency = -4"), "gates[1].concurrency: -4"},
		"negative timeout":       {launch + "[[gates]]\nkind = \"sequential\"\ntimeout = \"-5s\"\n", "gates[1].timeout: -5s is negative"},
		"negative req timeout":   {launch + "[[gates]]\nkind = \"sequential\"\nrequest_timeout = \"-1s\"\n", "gates[1].request_timeout"},
		"max_tokens overflow":    {launch + "[[gates]]\nkind = \"ready_control\"\nmax_tokens = 2147483648000\n", "gates[1].max_tokens: 2147483648000"},
		"negative disk":          {"[[gates]]\nkind = \"prereq\"\n[[gates.disks]]\npath = \".\"\nmin_free_gib = -1.0\n" + launch, "gates[0].disks[0].min_free_gib"},
		"disk beyond 1 EiB":      {"[[gates]]\nkind = \"prereq\"\n[[gates.disks]]\npath = \".\"\nmin_free_gib = 1e10\n" + launch, "gates[0].disks[0].min_free_gib: 1e+10: use a number of GiB from 0 to 1073741824 (1 EiB)"},
		"env name with a space":  {"[[gates]]\nkind = \"launch\"\n[[gates.variants]]\nname = \"v\"\nreason = \"r\"\nenv = { \"HF TOKEN\" = \"x\" }\n", "gates[0].variants[0].env"},
		"deeply nested plan":     {launch + nested, "nested more than"},
		"4 MB plan":              {launch + huge, "larger than 1024 KiB"},
		"another kind's key":     {launch + "[[gates]]\nkind = \"ready_control\"\nrequests = 3\n", "gates[1].requests: unknown key"},
		"missing command (cand)": {launch, "command"},
		"evidence_dir a file":    {"evidence_dir = \"hiro.toml\"\n" + launch, "evidence_dir"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := e.cfgPath
			if name == "missing command (cand)" {
				b, _ := os.ReadFile(e.cfgPath)
				text := strings.Replace(string(b), "[backends.cand]\nengine = \"vllm\"\ncommand = \""+fakeEngine+"\"", "[backends.cand]\nengine = \"vllm\"\ncommand = \"/nonexistent/vllm\"", 1)
				cfg = filepath.Join(e.dir, "hiro-missing-command.toml")
				must(t, os.WriteFile(cfg, []byte(text), 0o644))
			}
			plan := filepath.Join(e.dir, "bad.toml")
			must(t, os.WriteFile(plan, []byte("title = \"x\"\ncandidate = \"cand\"\nexclusive = true\n"+tc.plan), 0o644))
			for _, args := range [][]string{{"qualify", "--check", plan}, {"qualify", plan}} {
				code, _, stderr := runHiro(t, e, append([]string{"--config", cfg}, args...)...)
				if code != 2 || !strings.Contains(stderr, tc.want) {
					t.Fatalf("hiro %s: exit %d, stderr %.600q; want exit 2 naming %q", strings.Join(args, " "), code, stderr, tc.want)
				}
			}
			if !e.productionReady() {
				t.Fatal("production is not serving after a refused plan")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(e.dir, "evidence")); !os.IsNotExist(err) {
		t.Errorf("a refused plan wrote evidence")
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Errorf("a refused plan took a lease")
	}
}

// The ready_control gate keeps the max_tokens the plan gives; only an
// absent one takes the probe's default.
func TestReadyControlMaxTokensNotReplaced(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	for _, c := range []struct {
		key  string
		want int
	}{{"max_tokens = 256\n", 256}, {"max_tokens = 3\n", 3}, {"", config.DefaultProbeMaxTokens}} {
		p, _, err := qualify.LoadPlan(e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n"+c.key), e.cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Gates[1].Gate.(*qualify.ReadyControlGate).MaxTokens; got != c.want {
			t.Errorf("%q: max_tokens %d, want %d", c.key, got, c.want)
		}
	}
}

// panicGate is a gate kind that panics: a stand-in for any bug in hiro.
type panicGate struct{}

func (panicGate) Validate(*qualify.Validation)                               {}
func (panicGate) Bound(*qualify.Handle, time.Duration) time.Duration         { return time.Minute }
func (panicGate) Run(context.Context, *qualify.Handle, *evidence.Gate) error { panic("boom") }

func init() {
	qualify.RegisterKind(qualify.Kind{Name: "test_panic", Rank: 66, Title: "Panicking gate", NeedsCandidate: true, New: func() qualify.Gate { return &panicGate{} }})
}

// A panic in a gate is recovered into the abort path: exit 3, the
// candidate stopped, production restored, the lease released.
func TestPanicInGateAbortsAndRestoresProduction(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	e.startProduction()
	mini, _ := filepath.Abs("../../corpora/hiro-mini")
	out := runPlan(t, e, e.writePlan("exclusive = true\n[[gates]]\nkind = \"launch\"\n[[gates]]\nid = \"bug\"\nkind = \"test_panic\"\n[[gates]]\nkind = \"semantic\"\ncorpus = \""+mini+"\"\ntolerance = 0.05\n"))
	ev := out.Evidence
	if out.ExitCode != qualify.ExitAborted || ev.Verdict != evidence.VerdictAborted {
		t.Fatalf("exit %d verdict %s (%s), want 3 aborted", out.ExitCode, ev.Verdict, ev.TerminationReason)
	}
	// hiro's own error is no result of the candidate's: not run, not failed.
	if g := ev.Gates[1]; g.Status != evidence.StatusNotRun || !strings.HasPrefix(g.Reason, "harness error: internal error in bug gate: boom") {
		t.Errorf("panicking gate: %s %q", g.Status, g.Reason)
	}
	if g := ev.Gates[2]; g.Status != evidence.StatusNotRun {
		t.Errorf("gate after the panic: %s", g.Status)
	}
	if r := ev.Production.Restored; !ev.Production.Stopped || r == nil || !r.OK || !e.productionReady() {
		t.Fatalf("production not restored after a panic: %+v", ev.Production)
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Error("lease left behind after a panic")
	}
}

// TestCheckReportsEveryPlanErrorAtOnce: a gate of an unknown kind no
// longer hides the others' errors (requests out of range, a duplicate
// id): 'hiro qualify --check' lists them all, each naming the plan by its
// absolute path.
func TestCheckReportsEveryPlanErrorAtOnce(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	// gates[0] is the launch gate, misspelt.
	plan := e.writePlan("[[gates]]\nkind = \"lanch\"\n[[gates]]\nkind = \"bogus\"\n[[gates]]\nid = \"load\"\nkind = \"sequential\"\nrequests = -5\n[[gates]]\nid = \"load\"\nkind = \"concurrency\"\n")
	rel, err := filepath.Rel(mustGetwd(t), plan)
	must(t, err)
	code, stdout, stderr := runHiro(t, e, "qualify", rel, "--check")
	if code != 2 {
		t.Fatalf("exit %d, want 2; stdout %s stderr %s", code, stdout, stderr)
	}
	for _, want := range []string{
		plan + ": gates[0].kind: unknown gate kind \"lanch\" (did you mean launch?)",
		plan + ": gates[1].kind: unknown gate kind \"bogus\"",
		plan + `: gates[2] (id "load").requests`,
		plan + ": gates[3].id: \"load\" is also the id of gates[2]",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--check does not say %q:\n%s", want, stderr)
		}
	}
	// Nothing is said of a launch gate missing: the misspelt gate may be
	// it.
	if strings.Contains(stderr, "needs a launch gate") {
		t.Errorf("a spurious order error beside the unknown kind:\n%s", stderr)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	must(t, err)
	return wd
}

// TestCheckCountsGatesInTheSingular: a plan of one gate is "1 gate".
func TestCheckCountsGatesInTheSingular(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n")
	code, stdout, stderr := runHiro(t, e, "qualify", plan, "--check")
	if code != 0 || !strings.Contains(stdout, "plan "+plan+" is valid: candidate cand, production prod, 1 gate, exclusive true") {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout, stderr)
	}
}

// A value of the wrong type inside a [[gates]] table is a plan error that
// names the gate and the key, not a nil-pointer panic (issue 26, a new
// user's finding: `requests = "20"`, `timeout = "1 m"`, `max_pairs =
// "10"` crashed 'hiro qualify' at Plan.validate).
func TestWrongTypeInAGateIsAPlanError(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	for _, tc := range []struct{ gates, want string }{
		{"[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"sequential\"\nrequests = \"20\"\n", "gates[1].requests: sequential gate: incompatible types: TOML value has type string; destination has type integer; a whole number is expected, not a string: write it bare"},
		{"[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"sequential\"\ntimeout = \"1 m\"\n", "gates[1].timeout: invalid duration \"1 m\""},
		{"exclusive = false\n[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"shadow\"\nmax_pairs = \"10\"\n", "gates[1].max_pairs: shadow gate: incompatible types"},
	} {
		plan := e.writePlan(tc.gates)
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("LoadPlan panicked on %q: %v", tc.gates, r)
				}
			}()
			_, _, err = qualify.LoadPlan(plan, e.cfgPath)
		}()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plan %q: error %v, want one saying %q", tc.gates, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "line ") {
			t.Errorf("plan %q: error %v gives a line that is not the plan file's", tc.gates, err)
		}
	}
}

// TestPlanErrorsComeInOneRound (issue 26 N6): a plan with independent
// mistakes, decoding errors (wrongly typed values, at the top and in a
// gate) beside unknown keys and out-of-range values, reports every one
// of them in one run: a wrongly typed timeout used to hide the misspelt
// tolerence of the same gate until it was fixed. A value that did not
// decode is not reported "missing" too, nor is the key a typo meant.
func TestPlanErrorsComeInOneRound(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	plan := e.writePlan("exclusive = \"no\"\nsumary = \"x\"\n" +
		"[[gates]]\nkind = \"launch\"\n" +
		"[[gates]]\nkind = \"sequentail\"\n" +
		"[[gates]]\nkind = \"sequential\"\nrequests = \"20\"\ntimeout = \"90\"\nmax_tokenz = 3\n" +
		"[[gates]]\nkind = \"semantic\"\ncorpus = \"c\"\ntolerence = 0.05\nmin_f1 = 2.0\ntimeout = \"90\"\n")
	_, _, err := qualify.LoadPlan(plan, e.cfgPath)
	if err == nil {
		t.Fatal("the plan loaded")
	}
	for _, want := range []string{
		"exclusive: incompatible types",
		"sumary: unknown key; did you mean summary?",
		`gates[1].kind: unknown gate kind "sequentail"`,
		"gates[2].requests: sequential gate: incompatible types",
		`gates[2].timeout: invalid duration "90"`,
		"gates[2].max_tokenz: unknown key for a sequential gate; did you mean max_tokens?",
		`gates[3].timeout: invalid duration "90"`,
		"gates[3].tolerence: unknown key for a semantic gate; did you mean tolerance?",
		"gates[3].min_f1: 2: use a fraction between 0 and 1",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the errors lack %q:\n%v", want, err)
		}
	}
	for _, not := range []string{"gates[3].tolerance:", "gates[2].requests: missing", "line "} {
		if strings.Contains(err.Error(), not) {
			t.Errorf("the errors hold %q:\n%v", not, err)
		}
	}
}

// TestPlanErrorsNameTheGateID: an error at a gate with an id names it
// beside the 0-based index ("gates[1] (id \"quality\").min_f1"), one at a
// gate without an id keeps the index alone (trial 10 Q1: "gates[6]" for
// the 7th [[gates]] table, which a TOML reader counts from 1).
func TestPlanErrorsNameTheGateID(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\ntimeout = \"ninety\"\n" +
		"[[gates]]\nid = \"quality\"\nkind = \"semantic\"\ncorpus = \"c\"\nmin_f1 = 2.0\ntimeout = \"90 minutes\"\n")
	_, _, err := qualify.LoadPlan(plan, e.cfgPath)
	if err == nil {
		t.Fatal("the plan loaded")
	}
	for _, want := range []string{
		`: gates[0].timeout: invalid duration "ninety"`,
		`: gates[1] (id "quality").timeout: invalid duration "90 minutes"`,
		`: gates[1] (id "quality").min_f1: 2: use a fraction between 0 and 1`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the errors lack %q:\n%v", want, err)
		}
	}
}

// A plan naming no candidate is told the profiles it can name, production
// not among them (trial 12's S6: an empty plan suggested prod).
func TestMissingCandidateSuggestsNotProduction(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	plan := filepath.Join(e.dir, "nocand.toml")
	must(t, os.WriteFile(plan, []byte("title = \"t\"\nconfig = \"hiro.toml\"\n[[gates]]\nkind = \"launch\"\n"), 0o644))
	_, _, err := qualify.LoadPlan(plan, e.cfgPath)
	if err == nil || !strings.Contains(err.Error(), "candidate: missing; name the backend profile under test (one of cand; prod is production)") {
		t.Fatalf("error %v, want the profiles but production", err)
	}
}
