package activation_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/signing"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// Binaries built once per test binary by TestMain.
var (
	fakeEngine string
	hiroBin    string
)

func TestMain(m *testing.M) {
	fakeEngine = testsupport.MustBuild(testsupport.FakeEnginePkg)
	hiroBin = testsupport.MustBuild(testsupport.HiroPkg)
	code := m.Run()
	if err := testsupport.Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// freePort is testsupport.FreePort, the one free-port helper of hiro's tests.
var freePort = testsupport.FreePort

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// world is one test's production and candidate: both the fake engine
// answering READY; the candidate's base attempt exits at once (--exit 1)
// and its plan's variant "no-exit" removes that, so what qualifies is a
// variant.
type world struct {
	t        *testing.T
	dir      string
	cfgPath  string
	cfg      *config.Config
	prodPort int
	candPort int
	journal  string
	env      []string
	// stateHome holds the router's control socket.
	stateHome string
	// servePort is the router's port ([serve] listen).
	servePort int
}

func newWorld(t *testing.T, exclusive bool, candExtra ...string) *world {
	t.Helper()
	return newWorldWith(t, exclusive, nil, candExtra...)
}

// newWorldWith is newWorld with extra arguments for production too.
func newWorldWith(t *testing.T, exclusive bool, prodExtra []string, candExtra ...string) *world {
	t.Helper()
	w := &world{t: t, dir: t.TempDir(), prodPort: freePort(t), candPort: freePort(t), servePort: freePort(t)}
	w.journal = filepath.Join(w.dir, "journal")
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(w.dir, "leases"))
	t.Setenv("HIRO_PRODUCTION_DIR", filepath.Join(w.dir, "private", "production"))
	// A short folder: the router's control socket lives there.
	stateHome, err := os.MkdirTemp("", "h14-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(stateHome) })
	t.Setenv("HIRO_STATE_HOME", stateHome)
	w.stateHome = stateHome
	w.env = append(os.Environ(), "HIRO_LEASE_DIR="+filepath.Join(w.dir, "leases"), "HIRO_PRODUCTION_DIR="+filepath.Join(w.dir, "private", "production"), "HIRO_STATE_HOME="+stateHome)
	candArgs := append([]string{"--port", strconv.Itoa(w.candPort), "--model", "cand-model", "--exit", "1"}, candExtra...)
	toml := fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
restore_attempts = 2

[backends.prod]
engine = "llamacpp"
command = %q
args = %s
port = %d
model = "prod-model"
ready_timeout = "15s"
stall_timeout = "10s"
stop_grace = "2s"
config_files = ["prod-launcher.sh"]

[backends.cand]
engine = "llamacpp"
command = %q
args = %s
port = %d
model = "cand-model"
exclusive_accelerator = %v
ready_timeout = "15s"
stall_timeout = "10s"
stop_grace = "2s"

# The test plan has a launch and a READY control gate only.
[activation]
require = ["launch", "ready_control"]

[serve]
listen = "127.0.0.1:%d"
alias = "extraction"
access_log = "off"
`, fakeEngine, tomlList(append([]string{"--port", strconv.Itoa(w.prodPort), "--model", "prod-model"}, prodExtra...)), w.prodPort, fakeEngine, tomlList(candArgs), w.candPort, exclusive, w.servePort)
	w.cfgPath = filepath.Join(w.dir, "hiro.toml")
	must(t, os.WriteFile(w.cfgPath, []byte(toml), 0o644))
	must(t, os.WriteFile(filepath.Join(w.dir, "prod-launcher.sh"), []byte("#!/bin/sh\n# production launcher\n"), 0o755))
	must(t, os.WriteFile(filepath.Join(w.dir, "plan.toml"), []byte(`title = "Candidate trial"
config = "hiro.toml"
candidate = "cand"
evidence_dir = "evidence"

[[gates]]
id = "launch"
kind = "launch"
[[gates.variants]]
name = "no-exit"
reason = "documented fallback: run without the exit flag"
args_remove = ["--exit"]
env = { CAND_MODE = "fallback" }

[[gates]]
id = "ready"
kind = "ready_control"
`), 0o644))
	w.load()
	t.Cleanup(func() {
		for _, n := range []string{"prod", "cand"} {
			supervisor.StopRecorded(context.Background(), w.cfg.StateDir, n, time.Second)
		}
	})
	return w
}

func (w *world) load() {
	w.t.Helper()
	cfg, err := config.Load(w.cfgPath)
	if err != nil {
		w.t.Fatal(err)
	}
	w.cfg = cfg
}

func tomlList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// startProduction starts prod as 'hiro backend start prod' does.
func (w *world) startProduction() {
	w.t.Helper()
	proc, res := supervisor.Start(context.Background(), w.cfg.Backends["prod"], supervisor.Options{StateDir: w.cfg.StateDir})
	if res.State != supervisor.StateReady {
		w.t.Fatalf("production did not start: %+v %v", res.Failure, res.Err)
	}
	if _, err := proc.Detach(); err != nil {
		w.t.Fatal(err)
	}
}

// qualify runs the plan's campaign and returns its private evidence file;
// it must qualify.
func (w *world) qualify() string {
	w.t.Helper()
	p, cfg, err := qualify.LoadPlan(filepath.Join(w.dir, "plan.toml"), w.cfgPath)
	if err != nil {
		w.t.Fatal(err)
	}
	out, err := qualify.Run(context.Background(), p, cfg, qualify.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	if out.ExitCode != 0 {
		w.t.Fatalf("campaign: exit %d: %s", out.ExitCode, out.Evidence.TerminationReason)
	}
	return filepath.Join(out.Dir, evidence.PrivateFile)
}

func (w *world) running(name string) (supervisor.RecordStatus, bool) {
	st, err := supervisor.Status(w.cfg.StateDir, name)
	return st, err == nil && st.Status == supervisor.StatusRunning
}

func (w *world) ready(name string) bool {
	return supervisor.CheckReady(context.Background(), w.cfg.Backends[name], nil).OK
}

// hiro runs the hiro binary with this world's configuration and private
// state; it returns the exit status and the output.
func (w *world) hiro(args ...string) (int, string) {
	cmd := w.hiroCmd(args...)
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

func (w *world) hiroCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(hiroBin, append([]string{"--config", w.cfgPath}, args...)...)
	cmd.Env = w.env
	cmd.Dir = w.dir
	return cmd
}

// writeSigned writes ev to path signed with the user's own key, as hiro
// writes private evidence: tests of the checks after the signature's.
func writeSigned(t *testing.T, path string, ev *evidence.Evidence) {
	t.Helper()
	k, err := signing.LoadOrCreate()
	must(t, err)
	priv, _, err := evidence.Encode(ev, k)
	must(t, err)
	must(t, os.WriteFile(path, priv, 0o600))
}
