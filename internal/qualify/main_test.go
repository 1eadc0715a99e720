package qualify_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// Binaries built once per test binary by TestMain.
var (
	fakeEngine string
	hiroBin    string
	// seedLogs holds the seed replay's own engine logs, shipped with the
	// checkout (examples/seed-replay/logs), so the seed ladder's tests
	// run in a fresh clone (they read ../shared's case set and skipped
	// without it: issue 26 P8).
	seedLogs string
)

func TestMain(m *testing.M) {
	fakeEngine = testsupport.MustBuild(testsupport.FakeEnginePkg)
	hiroBin = testsupport.MustBuild(testsupport.HiroPkg)
	seedLogs, _ = filepath.Abs("../../examples/seed-replay/logs")
	code := m.Run()
	if err := testsupport.Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// freePort is testsupport.FreePort, the one free-port helper of hiro's tests.
var freePort = testsupport.FreePort

// env is one test's campaign world: a configuration with a production
// profile (the fake engine answering READY) and a candidate profile.
type env struct {
	t        *testing.T
	dir      string
	cfgPath  string
	cfg      *config.Config
	prodPort int
	candPort int
	leaseDir string
	// lastLog is the progress a gate run by gateAlone wrote.
	lastLog string
}

// newEnv writes hiro.toml with production "prod" (fake engine, llama.cpp
// health) and candidate "cand" (fake engine with candArgs; the port is
// appended); prodCommand overrides production's command line when set
// (an argument "PRODPORT" in it becomes production's port).
func newEnv(t *testing.T, candArgs []string, candExtra string, prodCommand []string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), prodPort: freePort(t)}
	e.leaseDir = filepath.Join(e.dir, "leases")
	t.Setenv("HIRO_LEASE_DIR", e.leaseDir)
	candPort := freePort(t)
	e.candPort = candPort
	if prodCommand == nil {
		prodCommand = []string{fakeEngine, "--port", strconv.Itoa(e.prodPort), "--model", "prod-model", "--reply", "READY"}
	}
	prodCommand = append([]string{}, prodCommand...)
	for i, a := range prodCommand {
		if a == "PRODPORT" {
			prodCommand[i] = strconv.Itoa(e.prodPort)
		}
	}
	cand := append([]string{}, candArgs...)
	cand = append(cand, "--port", strconv.Itoa(candPort), "--model", "cand-model")
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
[backends.prod.ready_probe]
expect = "READY"

[backends.cand]
engine = "vllm"
command = %q
args = %s
port = %d
model = "cand-model"
exclusive_accelerator = true
ready_timeout = "15s"
stall_timeout = "10s"
stop_grace = "2s"
%s
`, prodCommand[0], tomlList(prodCommand[1:]), e.prodPort, fakeEngine, tomlList(cand), candPort, candExtra)
	e.cfgPath = filepath.Join(e.dir, "hiro.toml")
	must(t, os.WriteFile(e.cfgPath, []byte(toml), 0o644))
	must(t, os.WriteFile(filepath.Join(e.dir, "prod-launcher.sh"), []byte("#!/bin/sh\n# production launcher (hashed by the guard)\n"), 0o755))
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, toml)
	}
	e.cfg = cfg
	t.Cleanup(func() {
		supervisor.StopRecorded(context.Background(), cfg.StateDir, "prod", time.Second)
		supervisor.StopRecorded(context.Background(), cfg.StateDir, "cand", time.Second)
	})
	return e
}

func tomlList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// startProduction starts production as 'hiro backend start' would and
// leaves it recorded.
func (e *env) startProduction() {
	e.t.Helper()
	proc, res := supervisor.Start(context.Background(), e.cfg.Backends["prod"], supervisor.Options{StateDir: e.cfg.StateDir})
	if res.State != supervisor.StateReady {
		e.t.Fatalf("production did not start: %+v %v", res.Failure, res.Err)
	}
	if _, err := proc.Detach(); err != nil {
		e.t.Fatal(err)
	}
}

// productionReady reports whether production answers READY now.
func (e *env) productionReady() bool {
	return supervisor.CheckReady(context.Background(), e.cfg.Backends["prod"], nil).OK
}

// writePlan writes plan.toml with the given gates TOML.
func (e *env) writePlan(gates string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, "plan.toml")
	must(e.t, os.WriteFile(p, []byte(fmt.Sprintf("title = \"Test campaign\"\nconfig = \"hiro.toml\"\ncandidate = \"cand\"\nevidence_dir = \"evidence\"\n%s", gates)), 0o644))
	return p
}
