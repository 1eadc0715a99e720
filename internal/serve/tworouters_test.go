package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/exitcode"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// otherHomeEnv is the environment of a hiro run under another HOME: its
// own state home and lease folder, the configuration's state_dir shared.
func otherHomeEnv(t *testing.T) []string {
	home := shortDir(t)
	return append(os.Environ(), "HIRO_STATE_HOME="+home, "HIRO_LEASE_DIR="+filepath.Join(home, "leases"), "HIRO_PRODUCTION_DIR="+filepath.Join(home, "production"))
}

// TestSecondRouterUnderAnotherHomeIsRefused: production started with
// 'hiro backend start' (detached) is adopted by a router, which claims
// its record (Owner "hiro serve", its pid); a second `hiro serve` under
// another HOME (its own state home and lease folder, the same
// configuration and state_dir) is refused with exit 6 naming the first
// router's pid, and starts or stops nothing. A kill -9 of production is
// then restarted once, by the first router, and the restarted process is
// not stopped by anyone. Before, the second router adopted the same
// process, stopped the first router's restart before it was ready, and
// the first recorded a wrong "exit 0" failure.
func TestSecondRouterUnderAnotherHomeIsRefused(t *testing.T) {
	bin := buildHiro(t)
	cfg := fakeConfig(t, nil, "")
	prof := cfg.Backends["prod"]
	killEngines(t, prof.Port)
	if res, err := (production.Keeper{StateDir: cfg.StateDir}).StartDetached(context.Background(), prof, supervisor.Options{}); err != nil || res.State != supervisor.StateReady {
		t.Fatalf("backend start: %+v %v", res, err)
	}
	rec, err := supervisor.ReadRecord(cfg.StateDir, "prod")
	if err != nil || rec.Owner != nil {
		t.Fatalf("detached record: %+v %v", rec, err)
	}
	r1 := startRouter(t, cfg, nil)
	st := r1.waitState(t, control.StateReady, 20*time.Second)
	if st.Production.PID != rec.PID || !strings.Contains(st.Production.Message, "adopted") {
		t.Fatalf("first router did not adopt pid %d: %+v", rec.PID, st.Production)
	}
	claimed, err := supervisor.ReadRecord(cfg.StateDir, "prod")
	if err != nil || claimed.Owner == nil || claimed.Owner.PID != os.Getpid() || claimed.Owner.What != RouterOwner {
		t.Fatalf("the adopted record does not name the router as its owner: %+v %v", claimed.Owner, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	second := exec.CommandContext(ctx, bin, "--config", cfg.Path, "serve", "--listen", "127.0.0.1:0")
	second.Env = otherHomeEnv(t)
	out, _ := second.CombinedOutput()
	if code := second.ProcessState.ExitCode(); code != exitcode.Busy {
		t.Fatalf("second router exited %d, want %d (busy):\n%s", code, exitcode.Busy, out)
	}
	for _, want := range []string{"already served by another hiro serve (pid " + strconv.Itoa(os.Getpid()) + ")",
		"pid " + strconv.Itoa(rec.PID), "kill -TERM " + strconv.Itoa(os.Getpid()), "a production of its own"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("second router's refusal lacks %q:\n%s", want, out)
		}
	}
	if pids := enginePIDs(prof.Port); len(pids) != 1 || pids[0] != rec.PID {
		t.Fatalf("after the refusal the engines are %v, want only %d", pids, rec.PID)
	}

	syscall.Kill(rec.PID, syscall.SIGKILL)
	r1.waitRestarts(t, 1, 20*time.Second)
	st = r1.waitState(t, control.StateReady, 20*time.Second)
	restarted := st.Production.PID
	r1.waitLooks(t, 5, 10*time.Second)
	st = r1.waitState(t, control.StateReady, time.Second)
	if st.Production.Restarts != 1 || st.Production.PID != restarted || restarted == rec.PID {
		t.Errorf("after the kill: restarts %d, pid %d (restarted %d, killed %d), want one restart that stays", st.Production.Restarts, st.Production.PID, restarted, rec.PID)
	}
	if f := st.Production.LastFailure; f == nil || strings.Contains(f.RootCause, "exited with code 0") {
		t.Errorf("last failure: %+v, want the kill of pid %d", f, rec.PID)
	}
	if ev := r1.events.String(); strings.Contains(ev, `"event":"production_owned"`) || strings.Count(ev, `"event":"restart"`) != 1 {
		t.Errorf("events: want one restart and nothing left to another hiro:\n%s", ev)
	}
}

// TestRouterLeavesAStartAnotherHiroWatches: 'hiro backend start' under
// another HOME (another lease folder) is starting production, not ready
// yet, when a router starts: the router finds the record's live owner,
// leaves the process alone (event production_owned), and adopts it
// once the start is done and detached; the backend start succeeds and one
// engine runs. Before, the router found it not ready and stopped it
// (adopt_refused, stopped_recorded), failing the other hiro's start.
func TestRouterLeavesAStartAnotherHiroWatches(t *testing.T) {
	bin := buildHiro(t)
	cfg := fakeConfig(t, []string{"--load-time", "2500ms"}, "")
	prof := cfg.Backends["prod"]
	killEngines(t, prof.Port)
	start := exec.Command(bin, "--config", cfg.Path, "backend", "start", "prod")
	start.Env = otherHomeEnv(t)
	out := &syncBuffer{}
	start.Stdout, start.Stderr = out, out
	if err := start.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { start.Wait(); close(done) }()
	t.Cleanup(func() { start.Process.Kill(); <-done })
	var rec supervisor.Record
	if !testsupport.WaitFor(10*time.Second, func() bool {
		var err error
		rec, err = supervisor.ReadRecord(cfg.StateDir, "prod")
		return err == nil && rec.Owner != nil && rec.Owner.PID == start.Process.Pid
	}) {
		t.Fatalf("backend start recorded no process it watches:\n%s", out.String())
	}
	r := startRouter(t, cfg, nil)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("backend start did not end within 30s")
	}
	if code := start.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("backend start exited %d:\n%s\nrouter events:\n%s", code, out.String(), r.events.String())
	}
	st := r.waitState(t, control.StateReady, 20*time.Second)
	if st.Production.PID != rec.PID || !strings.Contains(st.Production.Message, "adopted") {
		t.Errorf("router: %+v, want pid %d adopted", st.Production, rec.PID)
	}
	if pids := enginePIDs(prof.Port); len(pids) != 1 || pids[0] != rec.PID {
		t.Errorf("engines: %v, want only %d", pids, rec.PID)
	}
	ev := r.events.String()
	if !strings.Contains(ev, `"event":"production_owned"`) || strings.Contains(ev, `"event":"stopped_recorded"`) {
		t.Errorf("router events: want production_owned and no stop:\n%s", ev)
	}
}

// TestStopByAnotherHiroIsNamed: a `hiro backend stop` under another HOME
// of the production a router started is refused (exit 6, naming the
// router the record names as owner); with --force it stops it, and the router's
// failure says that another hiro stopped it (its pid and command), not
// that the engine exited with code 0 by itself, and production is
// started again.
func TestStopByAnotherHiroIsNamed(t *testing.T) {
	bin := buildHiro(t)
	cfg := fakeConfig(t, nil, "")
	killEngines(t, cfg.Backends["prod"].Port)
	r := startRouter(t, cfg, nil)
	first := r.waitState(t, control.StateReady, 20*time.Second).Production.PID
	env := otherHomeEnv(t)
	// Without --force the stop is refused: the record names this live
	// router as its owner, though its lease is not in that hiro's folder.
	refused := exec.Command(bin, "--config", cfg.Path, "backend", "stop", "prod")
	refused.Env = env
	out, _ := refused.CombinedOutput()
	if code := refused.ProcessState.ExitCode(); code != exitcode.Busy || !strings.Contains(string(out), "hiro serve pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(string(out), "serves to clients") {
		t.Fatalf("backend stop without --force: exit %d, want %d naming the router:\n%s", code, exitcode.Busy, out)
	}
	if pids := enginePIDs(cfg.Backends["prod"].Port); len(pids) != 1 || pids[0] != first {
		t.Fatalf("after the refused stop the engines are %v, want %d", pids, first)
	}
	stop := exec.Command(bin, "--config", cfg.Path, "backend", "stop", "prod", "--force")
	stop.Env = env
	out, err := stop.CombinedOutput()
	if err != nil {
		t.Fatalf("backend stop: %v\n%s", err, out)
	}
	st := r.waitStatus(t, 20*time.Second, recordedFailure)
	f := st.Production.LastFailure
	if f == nil || !strings.Contains(f.RootCause, "stopped by another hiro") || !strings.Contains(f.RootCause, "backend stop prod") ||
		!strings.Contains(f.RootCause, "pid "+strconv.Itoa(first)) || strings.Contains(f.RootCause, "code 0") {
		t.Fatalf("failure: %+v", f)
	}
	if by, ok := f.Detail["stopped_by"].(map[string]any); !ok || by["pid"] != float64(stop.Process.Pid) {
		t.Errorf("failure detail stopped_by: %#v, want pid %d", f.Detail["stopped_by"], stop.Process.Pid)
	}
	if st := r.waitState(t, control.StateReady, 20*time.Second); st.Production.PID == first {
		t.Errorf("not started again: %+v", st.Production)
	}
}

// TestLeavingReadyMakesTheCanaryStale: the last canary probed the
// process that was ready; once production leaves ready (its death, a
// restart) hiro status shows it stale, not "canary ok 1m ago" of a
// killed pid.
func TestLeavingReadyMakesTheCanaryStale(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	s, err := New(Options{Config: cfg, ControlDir: shortDir(t), Events: &syncBuffer{}, AccessLog: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	p := s.prod
	p.setState(control.StateReady, "ready")
	p.lastCanary = &control.Check{At: time.Now(), OK: true}
	p.setState(control.StateRestarting, "restart 1")
	if b, _ := p.status(); b.LastCanary == nil || !b.LastCanary.Stale {
		t.Fatalf("after leaving ready the canary is %+v, want stale", b.LastCanary)
	}
}

// TestStatusUnderAnotherHomeNamesTheRouter: with a hiro serve running
// under one state home, 'hiro status' under another HOME (its own state
// home and lease folder) names that router's pid from production's
// record and the HIRO_STATE_HOME=DIR hiro status that reaches it, not
// "start it with `hiro serve`" (which would be refused). Trial 10, Q7.
func TestStatusUnderAnotherHomeNamesTheRouter(t *testing.T) {
	bin := buildHiro(t)
	cfg := fakeConfig(t, nil, "")
	killEngines(t, cfg.Backends["prod"].Port)
	stateHome := shortDir(t)
	h := startHiroServe(t, bin, cfg, stateHome)
	waitRouterReady(t, filepath.Join(stateHome, "serve"), 30*time.Second)
	status := exec.Command(bin, "--config", cfg.Path, "status")
	status.Env = otherHomeEnv(t)
	out, _ := status.CombinedOutput()
	if code := status.ProcessState.ExitCode(); code != exitcode.Failed ||
		!strings.Contains(string(out), "hiro serve pid "+strconv.Itoa(h.cmd.Process.Pid)) ||
		!strings.Contains(string(out), "HIRO_STATE_HOME="+stateHome+" hiro status") ||
		strings.Contains(string(out), "start it with") {
		t.Fatalf("hiro status under another HOME: exit %d, want %d naming the router and its state home:\n%s", code, exitcode.Failed, out)
	}
	reach := exec.Command(bin, "--config", cfg.Path, "status")
	reach.Env = append(os.Environ(), "HIRO_STATE_HOME="+stateHome)
	if out, err := reach.CombinedOutput(); err != nil || !strings.Contains(string(out), "pid "+strconv.Itoa(h.cmd.Process.Pid)) {
		t.Fatalf("the command it gave: %v\n%s", err, out)
	}
}
