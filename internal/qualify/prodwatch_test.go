package qualify_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// onLine is a progress writer that calls act once, synchronously, when a
// line holding marker is written: the campaign waits for it, so what act
// does happens at that point of the campaign and nowhere else.
type onLine struct {
	mu     sync.Mutex
	buf    strings.Builder
	marker string
	act    func()
	done   bool
}

func (w *onLine) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(string(p), w.marker) {
		w.done = true
		w.act()
	}
	return len(p), nil
}

func (w *onLine) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// runWithProgress is runPlan with a progress writer.
func runWithProgress(t *testing.T, e *env, plan string, w *onLine) *qualify.Outcome {
	t.Helper()
	p, cfg, err := qualify.LoadPlan(plan, e.cfgPath)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	out, err := qualify.Run(context.Background(), p, cfg, qualify.Options{LeaseDir: e.leaseDir, Progress: w})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stopProductionAt stops production (as 'hiro backend stop' does from
// another terminal) when the campaign writes a line holding marker.
func stopProductionAt(t *testing.T, e *env, marker string) *onLine {
	return &onLine{marker: marker, act: func() {
		if _, _, err := supervisor.StopRecorded(context.Background(), e.cfg.StateDir, "prod", time.Second); err != nil {
			t.Errorf("stopping production: %v", err)
		}
	}}
}

func reportOf(t *testing.T, out *qualify.Outcome) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out.Dir, evidence.ReportFile))
	must(t, err)
	return string(b)
}

// TestProductionLostMidGateEndsTheGate (issue 26 F15): production,
// serving beside the candidate, is stopped by someone else just as the
// semantic gate starts asking it. The campaign says at once that
// production stopped answering (the time and the reason, connection
// refused), the gate ends with no result (not run, not failed: the
// candidate was never compared) and the campaign is aborted (exit 3),
// instead of a generic "production extraction incomplete: N documents
// had failed requests"; the report says production did not serve at the
// end, never that it kept serving.
func TestProductionLostMidGateEndsTheGate(t *testing.T) {
	e := claimsEnv(t, 0, "lost")
	e.startProduction()
	w := stopProductionAt(t, e, "semantic gate: started")
	out := runWithProgress(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n"+semanticGate(0.05)), w)
	log := w.String()
	ev := out.Evidence
	g := ev.Gates[1]
	if out.ExitCode != qualify.ExitAborted || ev.Verdict != evidence.VerdictAborted {
		t.Errorf("exit %d, verdict %s; want 3, aborted\n%s", out.ExitCode, ev.Verdict, log)
	}
	if g.Status != evidence.StatusNotRun || !strings.Contains(g.Reason, "production prod stopped answering at ") ||
		!strings.Contains(g.Reason, "(connection refused)") || !strings.Contains(g.Reason, "no result") {
		t.Errorf("semantic gate %s: %q; want not_run naming production's loss and its reason", g.Status, g.Reason)
	}
	if strings.Contains(g.Reason, "incomplete") || strings.Contains(ev.TerminationReason, "incomplete") {
		t.Errorf("the loss is reported as an incomplete extraction: %q / %q", g.Reason, ev.TerminationReason)
	}
	if !strings.Contains(log, "production prod stopped answering at ") {
		t.Errorf("the progress does not say production stopped answering:\n%s", log)
	}
	p := ev.Production
	if p.Lost == nil || p.Lost.Error != "connection refused" || p.AtEnd == nil || p.AtEnd.OK || p.Stopped {
		t.Errorf("production facts %+v (lost %+v, at end %+v); want lost and not serving at the end, not stopped by the campaign", p, p.Lost, p.AtEnd)
	}
	md := reportOf(t, out)
	if strings.Contains(md, "kept serving") || !strings.Contains(md, "did not serve at the end") || !strings.Contains(md, "stopped answering at") {
		t.Errorf("report.md does not say what the watch and the end's check found:\n%s", md)
	}
	if strings.Contains(md, "Semantic quality against production: Failed") || strings.Contains(md, "| failed |") {
		t.Errorf("report.md reads as a candidate failure:\n%s", md)
	}
}

// TestProductionStoppedBesideCampaignIsCheckedAtTheEnd (issue 26 F15,
// second repro): production is stopped by someone else while a campaign
// that never asks it runs beside it (launch, ready_control). The
// candidate still qualifies, but the report does not say production
// "kept serving throughout": the check at the end found it not serving,
// and the next steps say how to start it.
func TestProductionStoppedBesideCampaignIsCheckedAtTheEnd(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	e.startProduction()
	w := stopProductionAt(t, e, "launch gate: started")
	out := runWithProgress(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n"), w)
	p := out.Evidence.Production
	if out.ExitCode != qualify.ExitQualified || !p.WasRunning || p.Stopped || p.AtEnd == nil || p.AtEnd.OK || p.AtEnd.Error != "connection refused" {
		t.Fatalf("exit %d, production %+v, at end %+v\n%s", out.ExitCode, p, p.AtEnd, w.String())
	}
	md := reportOf(t, out)
	if strings.Contains(md, "kept serving") || strings.Contains(md, "production is as it was") ||
		!strings.Contains(md, "did not serve at the end (connection refused") || !strings.Contains(md, "hiro backend start prod") {
		t.Errorf("report.md does not say production was found not serving at the end:\n%s", md)
	}
	if !strings.Contains(w.String(), "production prod does not serve at the end of the campaign (connection refused)") {
		t.Errorf("the terminal does not say production does not serve at the end:\n%s", w.String())
	}
}

// TestProductionRestartedByRouterIsWaitedFor (issue 26 G12): production
// dies beside a campaign while a 'hiro serve' (its router lease, held
// here) serves it, and comes back as the router restarts it. The check
// at the end waits for it and says the router restarted it, never
// "start it with 'hiro backend start'"; the report says it served again.
func TestProductionRestartedByRouterIsWaitedFor(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	e.startProduction()
	h, err := lease.Acquire(e.leaseDir, &lease.Lease{Kind: lease.KindCommand, Command: "hiro serve"}, lease.RouterKey(e.cfg.Backends["prod"].BaseURL))
	must(t, err)
	defer h.Release()
	w := stopProductionAt(t, e, "launch gate: started")
	stop := w.act
	restarted, fired := make(chan struct{}), false
	w.act = func() {
		stop()
		// The router's restart, once the campaign's end check has
		// found production down.
		w.marker, w.done = "serves it and restarts it: waiting up to", false
		w.act = func() {
			fired = true
			go func() {
				defer close(restarted)
				proc, res := supervisor.Start(context.Background(), e.cfg.Backends["prod"], supervisor.Options{StateDir: e.cfg.StateDir})
				if res.State != supervisor.StateReady {
					t.Errorf("production did not start again: %+v %v", res.Failure, res.Err)
					return
				}
				proc.Detach()
			}()
		}
	}
	out := runWithProgress(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n"), w)
	log := w.String() // under w's lock: fired is set
	if fired {
		<-restarted
	}
	p := out.Evidence.Production
	if out.ExitCode != qualify.ExitQualified || p.AtEnd == nil || !p.AtEnd.OK {
		t.Fatalf("exit %d, at end %+v\n%s", out.ExitCode, p.AtEnd, log)
	}
	want := "production prod serves again: hiro serve pid " + strconv.Itoa(os.Getpid()) + " restarted it"
	if !strings.Contains(log, want) || strings.Contains(log, "hiro backend start") {
		t.Errorf("the terminal does not say the router restarted production (%q):\n%s", want, log)
	}
}

// TestProductionServingBesideCampaignIsChecked: the same campaign with
// production left alone: the check at the end finds it serving, and only
// then does the report say it kept serving throughout.
func TestProductionServingBesideCampaignIsChecked(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	e.startProduction()
	out := runPlan(t, e, e.writePlan("exclusive = false\n[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n"))
	p := out.Evidence.Production
	if out.ExitCode != qualify.ExitQualified || p.AtEnd == nil || !p.AtEnd.OK || p.AtEnd.Model != "prod-model" || p.Lost != nil {
		t.Fatalf("exit %d, production %+v, at end %+v", out.ExitCode, p, p.AtEnd)
	}
	if md := reportOf(t, out); !strings.Contains(md, "kept serving throughout (watched while the gates ran; health and model prod-model checked at the end") {
		t.Errorf("report.md does not say what the end's check found:\n%s", md)
	}
}
