package serve

import (
	"context"
	"fmt"
	"net/http"
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
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// buildHiro returns cmd/hiro, built once per test binary
// (testsupport.Hiro; TestMain removes it).
func buildHiro(t testing.TB) string { return testsupport.Hiro(t) }

// hiroServe runs `hiro serve` as a process with a private state.
type hiroServe struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
}

func startHiroServe(t *testing.T, bin string, cfg *config.Config, stateHome string) *hiroServe {
	t.Helper()
	h := &hiroServe{cmd: exec.Command(bin, "--config", cfg.Path, "serve"), stderr: &syncBuffer{}, done: make(chan struct{})}
	h.cmd.Env = append(os.Environ(), "HIRO_STATE_HOME="+stateHome, "HIRO_LEASE_DIR="+filepath.Join(stateHome, "leases"))
	h.cmd.Stderr = h.stderr
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		h.cmd.Process.Kill()
		<-h.done
	})
	return h
}

// waitReady dials the router's socket until production is ready.
func waitRouterReady(t *testing.T, dir string, within time.Duration) *control.Status {
	t.Helper()
	var st *control.Status
	if !testsupport.WaitFor(within, func() bool {
		c, err := control.Dial(dir)
		if err != nil {
			return false
		}
		defer c.Close()
		st, err = c.Status(context.Background())
		return err == nil && st.Production.State == control.StateReady
	}) {
		t.Fatalf("the router did not report production ready within %s", within)
	}
	return st
}

// enginePIDs lists live processes running the fake engine on port.
func enginePIDs(port int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && strings.HasSuffix(args[0], "hiro-fake-engine") && strings.Contains(string(b), "--port\x00"+strconv.Itoa(port)+"\x00") {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
				out = append(out, pid)
			}
		}
	}
	return out
}

// TestSIGKILLWhileRestarting: hiro serve is SIGKILLed while it restarts
// production (the new engine still loading). The engine it was starting
// is recorded; the next hiro serve adopts it or stops it and starts a
// fresh one, and no engine is left behind.
func TestSIGKILLWhileRestarting(t *testing.T) {
	bin := buildHiro(t)
	cfg := fakeConfig(t, []string{"--load-time", "1500ms"}, "")
	port := cfg.Backends["prod"].Port
	stateHome := shortDir(t)
	sockDir := filepath.Join(stateHome, "serve")
	t.Cleanup(func() {
		for _, pid := range enginePIDs(port) {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	})

	h := startHiroServe(t, bin, cfg, stateHome)
	st := waitRouterReady(t, sockDir, 30*time.Second)
	first := st.Production.PID
	syscall.Kill(first, syscall.SIGKILL)
	// Wait until the restart has launched a new engine (still loading).
	var second int
	if !testsupport.WaitFor(20*time.Second, func() bool {
		if r, err := supervisor.ReadRecord(cfg.StateDir, "prod"); err == nil && r.PID != first {
			second = r.PID
		}
		return second != 0
	}) {
		t.Fatalf("no restart was recorded; router stderr:\n%s", h.stderr.String())
	}
	h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done
	if pids := enginePIDs(port); len(pids) != 1 || pids[0] != second {
		t.Fatalf("after the SIGKILL the engines on port %d are %v, want the one being started (%d)", port, pids, second)
	}

	h2 := startHiroServe(t, bin, cfg, stateHome)
	st = waitRouterReady(t, sockDir, 30*time.Second)
	if pids := enginePIDs(port); len(pids) != 1 || pids[0] != st.Production.PID {
		t.Errorf("engines on port %d: %v; production pid %d", port, pids, st.Production.PID)
	}
	code, _, body := post(t, "http://"+strings.TrimPrefix(st.Listen, "http://"), RouteChat, chatBody("extraction", false))
	if code != 200 {
		t.Errorf("through the second router: %d %s", code, body)
	}
	// A graceful stop (SIGTERM) exits 0 and, with on_exit = "stop", leaves no engine.
	h2.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h2.done:
	case <-time.After(30 * time.Second):
		t.Fatal("hiro serve did not stop on SIGTERM")
	}
	if code := h2.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("hiro serve exited %d on SIGTERM:\n%s", code, h2.stderr.String())
	}
	if pids := enginePIDs(port); len(pids) != 0 {
		t.Errorf("engines left after the stop: %v", pids)
	}
	if _, err := os.Stat(filepath.Join(sockDir, control.SocketName)); !os.IsNotExist(err) {
		t.Errorf("control socket left behind: %v", err)
	}
	fi, err := os.Stat(sockDir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("control folder mode: %v %v", fi, err)
	}
}

// TestAdoptedProduction: a router that stops with on_exit = "leave" says
// it left production running; the next router adopts it and, stopping,
// says so too; when the adopted engine dies, the failure is classified
// with how long the process had run (from its record: the log alone does
// not say), and production is restarted.
func TestAdoptedProduction(t *testing.T) {
	cfg := fakeConfig(t, nil, `on_exit = "leave"`)
	port := cfg.Backends["prod"].Port
	t.Cleanup(func() {
		for _, pid := range enginePIDs(port) {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	r1 := startRouter(t, cfg, nil)
	pid := r1.waitState(t, control.StateReady, 20*time.Second).Production.PID
	r1.stop(t)
	if !strings.Contains(r1.events.String(), `"event":"production_left_running"`) {
		t.Errorf("first router's events lack production_left_running:\n%s", r1.events.String())
	}
	r2 := startRouter(t, cfg, nil)
	st := r2.waitState(t, control.StateReady, 20*time.Second)
	if st.Production.PID != pid || !strings.Contains(st.Production.Message, "adopted") {
		t.Fatalf("second router: %+v (first pid %d)", st.Production, pid)
	}
	r2.stop(t)
	if ev := r2.events.String(); !strings.Contains(ev, `"event":"production_left_running"`) || !strings.Contains(ev, `"adopted":true`) {
		t.Errorf("second router's events lack production_left_running (adopted):\n%s", ev)
	}
	r3 := startRouter(t, cfg, nil)
	r3.waitState(t, control.StateReady, 20*time.Second)
	time.Sleep(300 * time.Millisecond)
	syscall.Kill(pid, syscall.SIGKILL)
	if st := r3.waitStatus(t, 20*time.Second, recordedFailure); !recordedFailure(st) {
		t.Fatalf("the adopted engine's death was not recorded: %+v", st)
	} else if f := st.Production.LastFailure; f.SecondsSinceStart < 0.3 {
		t.Errorf("the adopted engine ran over 0.3 s; the failure says %v s", f.SecondsSinceStart)
	}
	// The failure is recorded a moment before the state leaves ready:
	// wait for the restart itself, then for its readiness.
	r3.waitRestarts(t, 1, 20*time.Second)
	if st := r3.waitState(t, control.StateReady, 20*time.Second); st.Production.PID == pid || st.Production.Restarts != 1 {
		t.Errorf("after the death: %+v", st.Production)
	}
}

// TestSIGHUPReopensLogs: `hiro serve` takes SIGHUP as log rotation: the
// access log (a path) and events.jsonl, moved away, are opened again by
// their paths, a "reopened" event says so, and the router goes on
// serving; SIGTERM then stops it gracefully (exit 0). SIGHUP killed it
// at once (exit 129: no drain, no "stopping").
func TestSIGHUPReopensLogs(t *testing.T) {
	bin := buildHiro(t)
	logPath := filepath.Join(t.TempDir(), "access.log")
	cfg := fakeConfig(t, nil, fmt.Sprintf("access_log = %q\n", logPath))
	stateHome := shortDir(t)
	h := startHiroServe(t, bin, cfg, stateHome)
	st := waitRouterReady(t, filepath.Join(stateHome, "serve"), 30*time.Second)
	if code, _, body := post(t, st.Listen, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Fatalf("before SIGHUP: %d %s", code, body)
	}
	evPath := filepath.Join(cfg.StateDir, "serve", "events.jsonl")
	for _, p := range []string{logPath, evPath} {
		if err := os.Rename(p, p+".1"); err != nil {
			t.Fatal(err)
		}
	}
	h.cmd.Process.Signal(syscall.SIGHUP)
	ended := false
	if !testsupport.WaitFor(10*time.Second, func() bool {
		select {
		case <-h.done:
			ended = true
			return true
		default:
		}
		return strings.Contains(h.stderr.String(), `"event":"reopened"`)
	}) || ended {
		if ended {
			t.Fatalf("hiro serve ended on SIGHUP (%v):\n%s", h.cmd.ProcessState, h.stderr.String())
		}
		t.Fatalf("no reopened event within 10s:\n%s", h.stderr.String())
	}
	resp, err := http.Get(st.Listen + RouteModels)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after SIGHUP: %v %v", resp, err)
	}
	resp.Body.Close()
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.done:
	case <-time.After(40 * time.Second):
		t.Fatal("hiro serve did not stop within 40s of SIGTERM")
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 || !strings.Contains(h.stderr.String(), `"event":"stopping"`) {
		t.Errorf("exit %d after SIGTERM:\n%s", code, h.stderr.String())
	}
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if old, cur := read(logPath+".1"), read(logPath); !strings.Contains(old, RouteChat) || strings.Contains(old, RouteModels) ||
		!strings.Contains(cur, RouteModels) || strings.Contains(cur, RouteChat) {
		t.Errorf("access log: the request before SIGHUP belongs in the rotated file, the one after in the new one:\nrotated:\n%s\nnew:\n%s", old, cur)
	}
	if old, cur := read(evPath+".1"), read(evPath); !strings.Contains(old, `"event":"listening"`) || strings.Contains(old, `"event":"stopped"`) ||
		!strings.Contains(cur, `"event":"reopened"`) || !strings.Contains(cur, `"event":"stopped"`) {
		t.Errorf("event log: rotated:\n%s\nnew:\n%s", old, cur)
	}
}
