package serve

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// killEngines kills, at the end of the test, every fake engine on the
// given ports (and their groups).
func killEngines(t *testing.T, ports ...int) {
	t.Cleanup(func() {
		for _, port := range ports {
			for _, pid := range enginePIDs(port) {
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	})
}

// alive reports whether pid runs (not a zombie).
func alive(pid int) bool {
	_, ok := supervisor.ProcessState(pid)
	return ok
}

// TestConfigChangeLeavesProductionRunning: production runs (left by a
// router with on_exit = "leave"); hiro serve started with a configuration
// whose backends.prod differs (command "ollamaa") is refused with exit 2
// naming the backend, the pid, when it started and the fix, before it
// listens or starts anything; production keeps running, its record
// untouched. Was: the router stopped it and failed to start the new one.
func TestConfigChangeLeavesProductionRunning(t *testing.T) {
	cfg := fakeConfig(t, nil, `on_exit = "leave"`)
	port := cfg.Backends["prod"].Port
	killEngines(t, port)
	r1 := startRouter(t, cfg, nil)
	pid := r1.waitState(t, StateReady, 20*time.Second).Production.PID
	r1.stop(t)

	// The same file, production's command mistyped.
	b, err := os.ReadFile(cfg.Path)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(filepath.Dir(cfg.Path), "hiro-typo.toml")
	typo := strings.Replace(string(b), "command = "+strconv.Quote(fakeEngine), `command = "ollamaa"`, 1)
	if typo == string(b) {
		t.Fatal("the test could not change the command")
	}
	if err := os.WriteFile(bad, []byte(typo), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg2, err := config.Load(bad)
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Config: cfg2, ControlDir: shortDir(t)})
	var fe *ForeignProductionError
	if !errors.As(err, &fe) {
		t.Fatalf("New with production running under another configuration: %v, want a ForeignProductionError", err)
	}
	for _, want := range []string{"backends.prod", "pid " + itoa(pid), "started ", "another configuration", "hiro backend stop prod", "put back the configuration"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}

	// The command: exit 2, nothing started or stopped.
	stateHome := shortDir(t)
	cmd := exec.Command(buildHiro(t), "--config", bad, "serve")
	cmd.Env = append(os.Environ(), "HIRO_STATE_HOME="+stateHome, "HIRO_LEASE_DIR="+filepath.Join(stateHome, "leases"))
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), "hiro backend stop prod") {
		t.Errorf("hiro serve with a changed production: exit %d, want 2:\n%s", code, out)
	}
	if !alive(pid) {
		t.Fatalf("production (pid %d) was stopped by a router refused for its configuration", pid)
	}
	if rec, err := supervisor.ReadRecord(cfg.StateDir, "prod"); err != nil || rec.PID != pid {
		t.Errorf("production's record: %+v %v, want pid %d", rec, err, pid)
	}
	// The configuration it runs with is adopted as before.
	r3 := startRouter(t, cfg, nil)
	if st := r3.waitState(t, StateReady, 20*time.Second); st.Production.PID != pid {
		t.Errorf("the router with production's own configuration: %+v, want pid %d adopted", st.Production, pid)
	}
}

// TestRestartLeavesAnotherConfigurationsProduction: two configurations
// share one state_dir (production "prod" on different ports). Router A's
// production dies; while A waits to restart it, prod is started from the
// other configuration (hiro backend start, or router B) and recorded.
// A's restart neither stops nor overwrites it: production is down for A,
// its status and events say why and what to do, its status never shows
// the other process's pid; B's engine keeps its record. Once that one is
// stopped, A starts production again by itself.
func TestRestartLeavesAnotherConfigurationsProduction(t *testing.T) {
	cfg := fakeConfig(t, nil, `restart_backoff = "2s"`)
	prod := cfg.Backends["prod"]
	other := prod.Clone()
	otherPort := freePort(t)
	other.Port, other.BaseURL = otherPort, "http://127.0.0.1:"+itoa(otherPort)
	for i, a := range other.Args {
		if a == itoa(prod.Port) {
			other.Args[i] = itoa(otherPort)
		}
	}
	killEngines(t, prod.Port, otherPort)
	r := startRouter(t, cfg, nil)
	first := r.waitState(t, StateReady, 20*time.Second).Production.PID
	syscall.Kill(first, syscall.SIGKILL)
	r.waitState(t, StateRestarting, 10*time.Second)

	proc, res := supervisor.Start(context.Background(), other, supervisor.Options{StateDir: cfg.StateDir})
	if res.State != supervisor.StateReady {
		t.Fatalf("the other configuration's prod: %+v", res)
	}
	if _, err := proc.Detach(); err != nil {
		t.Fatal(err)
	}
	b := proc.PID()

	st := r.waitState(t, StateDown, 15*time.Second)
	p := st.Production
	if !strings.Contains(p.Message, "another configuration") || !strings.Contains(p.Message, "hiro backend stop prod") || !strings.Contains(p.Message, "pid "+itoa(b)) {
		t.Errorf("A's status while prod is the other configuration's: %q", p.Message)
	}
	if p.PID == b {
		t.Errorf("A's status shows the other configuration's pid %d as its production", b)
	}
	if !strings.Contains(r.events.String(), `"event":"production_replaced"`) {
		t.Errorf("no production_replaced event:\n%s", r.events.String())
	}
	time.Sleep(500 * time.Millisecond)
	if !alive(b) {
		t.Fatalf("router A stopped the other configuration's production (pid %d)", b)
	}
	if pids := enginePIDs(prod.Port); len(pids) != 0 {
		t.Errorf("router A started engines %v over the other configuration's production", pids)
	}
	if rec, err := supervisor.ReadRecord(cfg.StateDir, "prod"); err != nil || rec.PID != b {
		t.Fatalf("prod's record is %+v (%v), want the other configuration's pid %d", rec, err, b)
	}

	// Stopped by its owner: A brings its own production back.
	if _, _, err := supervisor.StopRecorded(context.Background(), cfg.StateDir, "prod", 0); err != nil {
		t.Fatal(err)
	}
	st = r.waitState(t, StateReady, 20*time.Second)
	if rec, err := supervisor.ReadRecord(cfg.StateDir, "prod"); err != nil || rec.PID != st.Production.PID || rec.Port != prod.Port {
		t.Errorf("after the other one stopped: record %+v (%v), status pid %d", rec, err, st.Production.PID)
	}
}
