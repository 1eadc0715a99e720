package qualify_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/qualify"
)

// routerEnv is claimsEnv with a [serve] section and a real `hiro serve`
// of that configuration started (it starts production itself and
// restarts it when it dies); prod is production's command line
// (PRODPORT becomes its port). It returns the env and the router's pid.
func routerEnv(t *testing.T, prod []string, serveExtra string) (*env, *control.Client, int) {
	t.Helper()
	// The control socket's path must stay short (a unix socket's limit).
	home, err := os.MkdirTemp("", "h26g-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(home) })
	t.Setenv("HIRO_STATE_HOME", home)
	servePort := freePort(t)
	e := newEnv(t, []string{"--reply", "READY", "--chat", "claims"},
		fmt.Sprintf("\n[serve]\nlisten = \"127.0.0.1:%d\"\nalias = \"extraction\"\naccess_log = \"off\"\non_exit = \"stop\"\n%s", servePort, serveExtra), prod)
	cmd := exec.Command(hiroBin, "--config", e.cfgPath, "serve")
	var mu sync.Mutex
	var out strings.Builder
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	cmd.Stdout, cmd.Stderr = w, w
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			mu.Lock()
			t.Logf("hiro serve output:\n%s", out.String())
			mu.Unlock()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if c, err := control.Dial(filepath.Join(home, "serve")); err == nil {
			if st, err := c.Status(context.Background()); err == nil && st.Production.State == control.StateReady {
				t.Cleanup(func() { c.Close() })
				return e, c, cmd.Process.Pid
			}
			c.Close()
		}
		if time.Now().After(deadline) {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("hiro serve did not report production ready within 30 s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// killProductionAt kills production's process group (SIGKILL: a crash,
// not a stop) when the campaign writes a line holding marker; the pid is
// the one the router reports ready (a later kill waits, at most 10 s,
// for the router to report the restarted one: the campaign may see it
// serve first).
func killProductionAt(t *testing.T, rc *control.Client, marker string) *onLine {
	killed := 0
	return &onLine{marker: marker, act: func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			st, err := rc.Status(context.Background())
			if err == nil && st.Production.State == control.StateReady && st.Production.PID != 0 && st.Production.PID != killed {
				killed = st.Production.PID
				if err := syscall.Kill(-killed, syscall.SIGKILL); err != nil {
					t.Errorf("killing production: %v", err)
				}
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("hiro serve reports no ready production to kill (%v, %+v)", err, st)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}}
}

// TestProductionRestartedByRouterMidGateIsWaitedFor (issue 26): a
// campaign beside production runs while a real `hiro serve` serves
// production; production is killed just as the semantic gate starts
// asking it. The campaign waits for the router's restart, runs the
// gate's production side again and finishes with the gate's verdict
// (passed: the same engine on both sides), the loss recorded on the gate
// (when, the router, how long production was away, what was re-run) and
// in report.md's gate section and validation row. On main the campaign
// aborted (exit 3).
func TestProductionRestartedByRouterMidGateIsWaitedFor(t *testing.T) {
	prod := []string{fakeEngine, "--port", "PRODPORT", "--model", "prod-model", "--reply", "READY", "--chat", "claims"}
	e, rc, routerPID := routerEnv(t, prod, "")
	w := killProductionAt(t, rc, "semantic gate: started")
	out := runWithProgress(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n"+semanticGate(0.05)), w)
	log := w.String()
	ev := out.Evidence
	g := ev.Gates[1]
	if out.ExitCode != qualify.ExitQualified || g.Status != evidence.StatusPassed || g.Semantic == nil {
		t.Fatalf("exit %d, semantic gate %s (%q); want 0 and passed after the router's restart\n%s", out.ExitCode, g.Status, g.Reason, log)
	}
	router := "hiro serve pid " + strconv.Itoa(routerPID)
	if len(g.ProductionLosses) != 1 {
		t.Fatalf("production losses %+v; want one", g.ProductionLosses)
	}
	l := g.ProductionLosses[0]
	if l.Error != "connection refused" || l.Router != router || l.BackAt == nil || !l.BackAt.After(l.At) ||
		l.AwayMS != l.BackAt.Sub(l.At).Milliseconds() || l.AwayMS <= 0 || l.WaitedMS <= 0 || l.WaitedMS > l.BoundMS ||
		l.BoundMS != (15*time.Second+30*time.Second).Milliseconds() || !strings.Contains(l.Rerun, "production side") {
		t.Errorf("loss %+v; want connection refused, %s, back after it, away and waited within the bound of 45 s, the production side re-run", l, router)
	}
	if g.StartedAt == nil || l.At.Before(*g.StartedAt) {
		t.Errorf("the loss at %s is not within the gate (started %v)", l.At, g.StartedAt)
	}
	if ev.Production.Lost == nil || !ev.Production.Lost.At.Equal(l.At) || ev.Production.AtEnd == nil || !ev.Production.AtEnd.OK {
		t.Errorf("production facts lost %+v, at end %+v; want the loss and serving at the end", ev.Production.Lost, ev.Production.AtEnd)
	}
	if !strings.Contains(log, "serves it and restarts it: waiting up to 45s") || !strings.Contains(log, "production prod serves again ("+router+" had it back after") {
		t.Errorf("the terminal does not say the campaign waited for the router and went on:\n%s", log)
	}
	md := reportOf(t, out)
	for _, want := range []string{
		"Production prod stopped answering at " + l.At.UTC().Format("15:04:05 UTC") + " (connection refused) while this gate asked it; " + router + " restarted it and it served again at " + l.BackAt.UTC().Format("15:04:05 UTC"),
		"and its production side (production's extraction of the corpus; the candidate's side had not started) was run again",
		"production away " + fmt.Sprintf("%.1f s", float64(l.AwayMS)/1000) + " mid-gate, restarted by " + router + ": re-run",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// TestProductionNotBackFromRouterMidGateAborts (issue 26): the same
// campaign, but production's launcher starts it once only, and the
// router's budget is one restart: the router's restart fails and it
// gives production up (down). The campaign stops waiting, the gate has
// no result and the campaign aborts (exit 3) as without a router, the
// loss recorded with the router and no return.
func TestProductionNotBackFromRouterMidGateAborts(t *testing.T) {
	dir := t.TempDir()
	launcher := filepath.Join(dir, "prod-once.sh")
	must(t, os.WriteFile(launcher, []byte(fmt.Sprintf("#!/bin/sh\nif [ -e %q ]; then echo 'prod-once: started once already' >&2; exit 1; fi\n: > %q\nexec %q \"$@\"\n",
		launcher+".started", launcher+".started", fakeEngine)), 0o755))
	prod := []string{launcher, "--port", "PRODPORT", "--model", "prod-model", "--reply", "READY", "--chat", "claims"}
	e, rc, routerPID := routerEnv(t, prod, "restart_budget = 1\n")
	w := killProductionAt(t, rc, "semantic gate: started")
	t0 := time.Now()
	out := runWithProgress(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n"+semanticGate(0.05)), w)
	log := w.String()
	ev := out.Evidence
	g := ev.Gates[1]
	router := "hiro serve pid " + strconv.Itoa(routerPID)
	if out.ExitCode != qualify.ExitAborted || ev.Verdict != evidence.VerdictAborted || g.Status != evidence.StatusNotRun {
		t.Fatalf("exit %d, verdict %s, semantic gate %s; want 3, aborted, not_run\n%s", out.ExitCode, ev.Verdict, g.Status, log)
	}
	if !strings.Contains(g.Reason, "production prod stopped answering at ") || !strings.Contains(g.Reason, router+" will not restart it (production down there)") ||
		!strings.Contains(g.Reason, "no result") {
		t.Errorf("semantic gate's reason %q; want the loss and that %s will not restart it", g.Reason, router)
	}
	if len(g.ProductionLosses) != 1 || g.ProductionLosses[0].Router != router || g.ProductionLosses[0].BackAt != nil || g.ProductionLosses[0].Rerun != "" {
		t.Errorf("production losses %+v; want one, waiting for %s, never back, nothing re-run", g.ProductionLosses, router)
	}
	// Down is said by the router: neither the gate nor the end's check
	// waits out the 45 s bound.
	if d := time.Since(t0); d > 40*time.Second {
		t.Errorf("the campaign took %s: it waited for a router that said production is down", d)
	}
	if p := ev.Production; p.AtEnd == nil || p.AtEnd.OK || p.Stopped {
		t.Errorf("production at end %+v; want not serving, not stopped by the campaign", p.AtEnd)
	}
}

// TestProductionLostTwiceInAGateAborts (issue 26): production is killed
// as the semantic gate starts and again as its production side is run
// again after the router's restart: a second loss in one gate is not
// waited for; the gate has no result and the campaign aborts, both
// losses recorded.
func TestProductionLostTwiceInAGateAborts(t *testing.T) {
	prod := []string{fakeEngine, "--port", "PRODPORT", "--model", "prod-model", "--reply", "READY", "--chat", "claims"}
	e, rc, routerPID := routerEnv(t, prod, "")
	w := killProductionAt(t, rc, "semantic gate: started")
	kill := w.act
	w.act = func() {
		kill()
		w.marker, w.done, w.act = "running its production side", false, kill
	}
	out := runWithProgress(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n"+semanticGate(0.05)), w)
	log := w.String()
	ev := out.Evidence
	g := ev.Gates[1]
	router := "hiro serve pid " + strconv.Itoa(routerPID)
	if out.ExitCode != qualify.ExitAborted || g.Status != evidence.StatusNotRun || !strings.Contains(g.Reason, "lost a second time in this gate, after "+router+" had it back at ") {
		t.Fatalf("exit %d, semantic gate %s (%q); want 3, not_run, lost a second time\n%s", out.ExitCode, g.Status, g.Reason, log)
	}
	if len(g.ProductionLosses) != 2 || g.ProductionLosses[0].BackAt == nil || g.ProductionLosses[1].BackAt != nil ||
		g.ProductionLosses[1].Router != router || !g.ProductionLosses[1].At.After(*g.ProductionLosses[0].BackAt) {
		t.Errorf("production losses %+v; want the first one back, then a second one after it, not waited for", g.ProductionLosses)
	}
	if strings.Count(log, "stopped answering mid-gate; ") != 1 {
		t.Errorf("the campaign waited for the router more than once in the gate:\n%s", log)
	}
}

// TestRequestGateRerunWholeAfterRouterRestart (issue 26): a sequential
// gate comparing with production loses production as it starts; its
// requests to production interleave with the candidate's, so once the
// router has production back the whole gate runs again: it ends with a
// result whose comparison has every one of production's requests
// answered (the cut run's failed ones replaced), the loss recorded.
func TestRequestGateRerunWholeAfterRouterRestart(t *testing.T) {
	prod := []string{fakeEngine, "--port", "PRODPORT", "--model", "prod-model", "--reply", "READY", "--chat", "claims"}
	e, rc, _ := routerEnv(t, prod, "")
	w := killProductionAt(t, rc, "sequential gate: started")
	out := runWithProgress(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"sequential\"\nrequests = 6\n"+perfCompareKeys), w)
	log := w.String()
	g := out.Evidence.Gates[1]
	if out.ExitCode == qualify.ExitAborted || g.Status == evidence.StatusNotRun || g.Requests == nil || g.Requests.Comparison == nil {
		t.Fatalf("exit %d, sequential gate %s (%q); want a result after the router's restart\n%s", out.ExitCode, g.Status, g.Reason, log)
	}
	if pc := g.Requests.Comparison; pc.Requests != 6 || pc.Errors != 0 || g.Requests.Count != 6 {
		t.Errorf("comparison of %d production requests, %d failed, %d candidate requests; want 6, 0, 6 (the re-run's)", pc.Requests, pc.Errors, g.Requests.Count)
	}
	if len(g.ProductionLosses) != 1 || g.ProductionLosses[0].BackAt == nil || !strings.HasPrefix(g.ProductionLosses[0].Rerun, "the whole gate") {
		t.Errorf("production losses %+v; want one, back, the whole gate re-run", g.ProductionLosses)
	}
}
