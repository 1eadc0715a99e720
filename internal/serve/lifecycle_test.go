package serve

import (
	"context"
	"encoding/json"
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
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
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
	_, ok := procfs.ProcessState(pid)
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
	pid := r1.waitState(t, control.StateReady, 20*time.Second).Production.PID
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
	if st := r3.waitState(t, control.StateReady, 20*time.Second); st.Production.PID != pid {
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
	first := r.waitState(t, control.StateReady, 20*time.Second).Production.PID
	// The other configuration's production must be recorded before A's
	// restart comes due. Its start (ready, then the record) outlasted the
	// 2 s backoff on a loaded machine, and A then started its own
	// production first (the flake). So, once A waits for its restart, the
	// test takes production's lease as a 'hiro backend start' does and
	// holds it until the record is written: A's restart comes due with the
	// lease taken, starts nothing beside its holder, and looks at the
	// record once the lease is released. Should A's restart have begun
	// first (it holds the lease then), the round is done again.
	dir, err := lease.Dir()
	if err != nil {
		t.Fatal(err)
	}
	var h *lease.Hold
	for round := 1; h == nil; round++ {
		if round > 3 {
			t.Fatal("A's restart took production's lease first in 3 rounds")
		}
		syscall.Kill(first, syscall.SIGKILL)
		r.waitState(t, control.StateRestarting, 10*time.Second)
		h, err = lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "hiro backend start prod (the other configuration)"},
			lease.ProductionKey(prod.BaseURL))
		var held *lease.HeldError
		if err != nil && !errors.As(err, &held) {
			t.Fatalf("production's lease: %v", err)
		}
		if st, _ := r.ctl.Status(context.Background()); h != nil && st.Production.State != control.StateRestarting {
			h.Release() // A's restart ran before the lease was taken
			h = nil
		}
		if h == nil {
			first = r.waitState(t, control.StateReady, 20*time.Second).Production.PID
		}
	}
	r.waitState(t, control.StateHandedOver, 15*time.Second)

	proc, res := supervisor.Start(context.Background(), other, supervisor.Options{StateDir: cfg.StateDir})
	if res.State != supervisor.StateReady {
		t.Fatalf("the other configuration's prod: %+v", res)
	}
	if _, err := proc.Detach(); err != nil {
		t.Fatal(err)
	}
	b := proc.PID()
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	st := r.waitState(t, control.StateDown, 15*time.Second)
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
	// The watch looks again and again (step's rule:
	// TestWatchForeignRecheck) and neither stops nor starts anything.
	r.waitLooks(t, 3, 10*time.Second)
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
	st = r.waitState(t, control.StateReady, 20*time.Second)
	if rec, err := supervisor.ReadRecord(cfg.StateDir, "prod"); err != nil || rec.PID != st.Production.PID || rec.Port != prod.Port {
		t.Errorf("after the other one stopped: record %+v (%v), status pid %d", rec, err, st.Production.PID)
	}
}

// events returns the router's events of kind.
func eventsOf(r *router, kind string) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(r.events.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event"] == kind {
			out = append(out, m)
		}
	}
	return out
}

// TestStopWhileStartingLeavesProductionRunning: SIGTERM while production
// is being restarted (state starting after a death), on_exit = "leave":
// the start ends within drain_timeout and production is left running,
// said with its live pid. Was: the start was cut, production left down,
// and no event said so.
func TestStopWhileStartingLeavesProductionRunning(t *testing.T) {
	cfg := fakeConfig(t, []string{"--load-time", "2s"}, `on_exit = "leave"
drain_timeout = "15s"`)
	killEngines(t, cfg.Backends["prod"].Port)
	r := startRouter(t, cfg, nil)
	first := r.waitState(t, control.StateReady, 20*time.Second).Production.PID
	syscall.Kill(first, syscall.SIGKILL)
	// The restart is counted a moment before its start says starting:
	// wait for both.
	restarting := func(st *control.Status) bool {
		return st.Production.Restarts >= 1 && st.Production.State == control.StateStarting
	}
	if st := r.waitStatus(t, 10*time.Second, restarting); !restarting(st) {
		t.Fatalf("production is %s after %d restarts, want starting", st.Production.State, st.Production.Restarts)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	left := eventsOf(r, "production_left_running")
	if len(left) != 1 {
		t.Fatalf("production_left_running events: %v\n%s", left, r.events.String())
	}
	pid := int(left[0]["pid"].(float64))
	if pid == first || !alive(pid) {
		t.Errorf("production_left_running names pid %d (first %d, alive %v)", pid, first, alive(pid))
	}
	if rec, err := supervisor.ReadRecord(cfg.StateDir, "prod"); err != nil || rec.PID != pid {
		t.Errorf("record %+v %v, want pid %d", rec, err, pid)
	}
}

// TestStopCutsALongStartAndSaysSo: a start that does not end within
// drain_timeout of the stop is cut, and the event log says the start was
// abandoned and production is down; nothing is claimed left running and
// no engine is left.
func TestStopCutsALongStartAndSaysSo(t *testing.T) {
	cfg := fakeConfig(t, []string{"--load-time", "3s"}, `on_exit = "leave"
drain_timeout = "300ms"`)
	port := cfg.Backends["prod"].Port
	killEngines(t, port)
	r := startRouter(t, cfg, nil)
	first := r.waitState(t, control.StateReady, 20*time.Second).Production.PID
	syscall.Kill(first, syscall.SIGKILL)
	r.waitRestarts(t, 1, 10*time.Second)
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if a := eventsOf(r, "start_abandoned"); len(a) != 1 || !strings.Contains(a[0]["reason"].(string), "production is down") {
		t.Errorf("start_abandoned events: %v\n%s", a, r.events.String())
	}
	if l := eventsOf(r, "production_left_running"); len(l) != 0 {
		t.Errorf("production claimed left running: %v", l)
	}
	if pids := enginePIDs(port); len(pids) != 0 {
		t.Errorf("engines left: %v", pids)
	}
}

// TestStopSaysTheTruthAboutADeadProduction: production (adopted, then
// the router's own) is killed and the router stopped before its watch
// saw the death: no event claims a dead pid runs; production_not_running
// says why.
func TestStopSaysTheTruthAboutADeadProduction(t *testing.T) {
	cfg := fakeConfig(t, nil, `on_exit = "leave"
health_interval = "10s"`)
	killEngines(t, cfg.Backends["prod"].Port)
	r1 := startRouter(t, cfg, nil)
	pid := r1.waitState(t, control.StateReady, 20*time.Second).Production.PID
	r1.stop(t)
	r2 := startRouter(t, cfg, nil)
	if st := r2.waitState(t, control.StateReady, 20*time.Second); st.Production.PID != pid {
		t.Fatalf("not adopted: %+v", st.Production)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid, 5*time.Second)
	r2.stop(t)
	if l := eventsOf(r2, "production_left_running"); len(l) != 0 {
		t.Errorf("a dead adopted pid %d is said left running: %v", pid, l)
	}
	if n := eventsOf(r2, "production_not_running"); len(n) != 1 {
		t.Errorf("production_not_running events: %v\n%s", n, r2.events.String())
	}
	for i := 0; i < 3; i++ {
		r3 := startRouter(t, cfg, nil)
		own := r3.waitState(t, control.StateReady, 20*time.Second).Production.PID
		syscall.Kill(own, syscall.SIGKILL)
		// Dead by the stop (a signal is delivered when the process next
		// runs): what is said then must be true.
		testsupport.WaitFor(100*time.Millisecond, func() bool { return !alive(own) })
		r3.stop(t)
		for _, l := range eventsOf(r3, "production_left_running") {
			if p := int(l["pid"].(float64)); p == own || !alive(p) {
				t.Errorf("production_left_running names pid %d, which is dead:\n%s", p, r3.events.String())
			}
		}
		for _, p := range enginePIDs(cfg.Backends["prod"].Port) {
			syscall.Kill(-p, syscall.SIGKILL)
		}
	}
}

// TestHungEngineRestartSaysStopping: while a stopped (SIGSTOP) engine is
// being stopped before its restart (up to stop_grace), the status says
// so, not a restart due in a second.
func TestHungEngineRestartSaysStopping(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	killEngines(t, cfg.Backends["prod"].Port)
	r := startRouter(t, cfg, nil)
	pid := r.waitState(t, control.StateReady, 20*time.Second).Production.PID
	syscall.Kill(pid, syscall.SIGSTOP)
	stopping := "stopping the old process (pid " + itoa(pid)
	if st := r.waitStatus(t, 15*time.Second, func(st *control.Status) bool { return strings.Contains(st.Production.Message, stopping) }); !strings.Contains(st.Production.Message, stopping) {
		t.Fatalf("the status never said the hung engine was being stopped:\n%s", r.events.String())
	}
	r.waitRestarts(t, 1, 15*time.Second)
}

// TestOneFailurePerDeath: a hung engine (SIGSTOP, its failure recorded)
// killed while the restart waits is one failure, not two: the exit is
// logged as engine_exited, and production is restarted once.
func TestOneFailurePerDeath(t *testing.T) {
	cfg := fakeConfig(t, nil, `restart_backoff = "3s"`)
	killEngines(t, cfg.Backends["prod"].Port)
	r := startRouter(t, cfg, nil)
	pid := r.waitState(t, control.StateReady, 20*time.Second).Production.PID
	syscall.Kill(pid, syscall.SIGSTOP)
	r.waitState(t, control.StateRestarting, 15*time.Second)
	syscall.Kill(pid, syscall.SIGKILL)
	st := r.waitRestarts(t, 1, 15*time.Second)
	r.waitState(t, control.StateReady, 15*time.Second)
	if f := eventsOf(r, "failure"); len(f) != 1 {
		t.Errorf("%d failure events for one death:\n%s", len(f), r.events.String())
	}
	if len(eventsOf(r, "engine_exited")) != 1 {
		t.Errorf("the exit after the recorded failure is not logged as engine_exited:\n%s", r.events.String())
	}
	if st.Production.Restarts != 1 {
		t.Errorf("restarts %d", st.Production.Restarts)
	}
}

// TestDownMarksChecksStale: once the restart budget is spent and
// production stays down, its last health and canary are marked stale
// (hiro status said "health ok 6s ago" next to "down").
func TestDownMarksChecksStale(t *testing.T) {
	cfg := fakeConfig(t, []string{"--exit", "3", "--exit-after", "600ms"}, `restart_budget = 1`)
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateDown, 20*time.Second)
	if h := st.Production.LastHealth; h == nil || !h.Stale {
		t.Errorf("last health while down: %+v, want marked stale", h)
	}
}

// TestWaitForReadyAfterUnseenDeath: with wait_for_ready, the first request
// after production died, before the watch saw it (an adopted production,
// checked every 10 s), waits for the restart and is answered. Was: 503 at
// once.
func TestWaitForReadyAfterUnseenDeath(t *testing.T) {
	cfg := fakeConfig(t, nil, `on_exit = "leave"
health_interval = "10s"
wait_for_ready = "20s"`)
	killEngines(t, cfg.Backends["prod"].Port)
	r1 := startRouter(t, cfg, nil)
	pid := r1.waitState(t, control.StateReady, 20*time.Second).Production.PID
	r1.stop(t)
	r2 := startRouter(t, cfg, func(o *Options) { o.Config.Serve.OnExit = config.ServeOnExitStop })
	if st := r2.waitState(t, control.StateReady, 20*time.Second); st.Production.PID != pid {
		t.Fatalf("not adopted: %+v", st.Production)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	waitGone(t, pid, 5*time.Second)
	code, _, body := post(t, r2.url, RouteChat, chatBody("extraction", false))
	if code != 200 {
		t.Fatalf("the first request after an unseen death: %d %s, want 200 after the restart (wait_for_ready = 20s)", code, body)
	}
	if st, _ := r2.ctl.Status(context.Background()); st.Production.PID == pid || st.Production.Restarts != 1 {
		t.Errorf("after the request: %+v", st.Production)
	}
}

// TestServedDeathIs503AtOnce: a request to a served backend that died,
// before its health poll saw it, gets 503 with Retry-After, as production
// does. Was: 502 'did not answer (connect)'.
func TestServedDeathIs503AtOnce(t *testing.T) {
	port := freePort(t)
	other := startOther(t, port)
	cfg := fakeConfig(t, nil, servedOther(port)+"\n")
	cfg.Serve.HealthInterval.Duration = 10 * time.Second
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	if code, _, body := post(t, r.url, RouteChat, chatBody("other-model", false)); code != 200 {
		t.Fatalf("served backend: %d %s", code, body)
	}
	other.Process.Kill()
	other.Wait()
	code, h, body := post(t, r.url, RouteChat, chatBody("other-model", false))
	if msg := errorMessage(t, body); code != 503 || h.Get("Retry-After") == "" || !strings.Contains(msg, "backend other is not answering") {
		t.Errorf("a served backend that just died: %d %v %q", code, h, msg)
	}
}
