package qualify_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/preflight"
	"github.com/hiro-dev/hiro/internal/qualify"
)

// seedHost is the seed campaign's host as its journal recorded it: a
// WSL2 kernel, one RTX 5090, driver 576.88.
func seedHost(t *testing.T) *preflight.Host {
	t.Helper()
	p := filepath.Join(t.TempDir(), "seed-host.json")
	must(t, os.WriteFile(p, []byte(`{"source": "the seed host (recorded)", "kernel": "6.6.87.2-microsoft-standard-WSL2", "wsl": true,
 "driver": "576.88", "cuda_version": "12.9", "devices": [{"index": 0, "name": "NVIDIA GeForce RTX 5090",
 "total_bytes": 34190917632, "free_bytes": 32212254720, "compute_capability": "12.0"}]}`), 0o644))
	h, err := preflight.LoadHost(p)
	must(t, err)
	return h
}

func runPlanWith(t *testing.T, e *env, plan string, o qualify.Options) *qualify.Outcome {
	t.Helper()
	p, cfg, err := qualify.LoadPlan(plan, e.cfgPath)
	must(t, err)
	o.LeaseDir = e.leaseDir
	out, err := qualify.Run(context.Background(), p, cfg, o)
	must(t, err)
	return out
}

// On the seed's host the base attempt (the V2 runner under WSL2) is
// predicted from host facts and not launched; the V1 variants, which
// the preflight cannot size (no artifact), are launched, so production
// is stopped once for them and restored.
func TestPreflightPredictsTheSeedsFirstAttempt(t *testing.T) {
	e, plan := seedEnv(t)
	e.startProduction()
	out := runPlanWith(t, e, plan, qualify.Options{HostFacts: seedHost(t)})
	ev := out.Evidence
	launch := ev.Gates[1]
	if len(launch.Attempts) != 3 {
		t.Fatalf("%d attempts: %+v", len(launch.Attempts), launch.Attempts)
	}
	a := launch.Attempts[0]
	if a.Outcome != evidence.OutcomePredictedFailure || a.Prediction == nil || a.Prediction.Rule != "vllm/v2-runner-needs-uva" ||
		a.Failure == nil || a.Failure.Class != failure.ClassHostCapability || a.Failure.Phase != failure.PhasePrereq || a.LogPath != "" {
		t.Fatalf("base attempt %+v (prediction %+v)", a, a.Prediction)
	}
	if !strings.Contains(a.Failure.RootCause, "WSL2") {
		t.Errorf("root cause %q", a.Failure.RootCause)
	}
	for _, b := range launch.Attempts[1:] {
		if b.Outcome != "" || b.Prediction == nil || !strings.HasPrefix(b.Prediction.CannotPredict, "cannot predict: ") || b.Failure == nil || b.LogPath == "" {
			t.Errorf("attempt %s should have been launched: %+v", b.Name, b)
		}
	}
	if ev.Preflight == nil || !ev.Preflight.Enabled || ev.Preflight.HostSource != "the seed host (recorded)" {
		t.Errorf("preflight %+v", ev.Preflight)
	}
	if p := ev.Production; !p.Stopped || p.Restored == nil || !p.Restored.OK {
		t.Errorf("production %+v", p)
	}
	// Stopped once, inside the launch gate: the prereq gate ran while
	// production served.
	if p, g := ev.Production, launch; p.StoppedAt == nil || g.StartedAt == nil || p.StoppedAt.Before(*g.StartedAt) {
		t.Errorf("production stopped at %v, the launch gate started at %v", p.StoppedAt, g.StartedAt)
	}
	b, err := os.ReadFile(filepath.Join(out.Dir, evidence.PublicFile))
	must(t, err)
	if err := evidence.Validate(b); err != nil {
		t.Errorf("evidence does not validate: %v", err)
	}
	rep, err := os.ReadFile(filepath.Join(out.Dir, "report.md"))
	must(t, err)
	for _, want := range []string{"Attempt 1, base: not launched, predicted to fail as host_capability (rule vllm/v2-runner-needs-uva)",
		"attempt 1 (base) was predicted to fail as host_capability and not launched"} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// When every attempt is predicted to fail, production is never stopped.
func TestPreflightKeepsProductionWhenNothingCanRun(t *testing.T) {
	e, plan := seedEnv(t)
	b, err := os.ReadFile(plan)
	must(t, err)
	// The base attempt alone: the V2 runner under WSL2.
	one := strings.Replace(string(b), "kind = \"launch\"\n", "kind = \"launch\"\nmax_attempts = 1\n", 1)
	must(t, os.WriteFile(plan, []byte(one), 0o644))
	e.startProduction()
	out := runPlanWith(t, e, plan, qualify.Options{HostFacts: seedHost(t)})
	ev := out.Evidence
	if out.ExitCode != qualify.ExitNotQualified {
		t.Fatalf("exit %d (%s)", out.ExitCode, ev.TerminationReason)
	}
	if a := ev.Gates[1].Attempts; len(a) != 1 || a[0].Outcome != evidence.OutcomePredictedFailure {
		t.Fatalf("attempts %+v", a)
	}
	if p := ev.Production; p.Stopped || !p.WasRunning {
		t.Errorf("production was stopped for an attempt predicted to fail: %+v", p)
	}
	if !e.productionReady() {
		t.Error("production is not serving")
	}
}

// --no-preflight launches the attempt the preflight would have stopped,
// and says so in the evidence.
func TestNoPreflightLaunchesAnyway(t *testing.T) {
	e, plan := seedEnv(t)
	e.startProduction()
	out := runPlanWith(t, e, plan, qualify.Options{HostFacts: seedHost(t), NoPreflight: true})
	ev := out.Evidence
	if ev.Preflight == nil || ev.Preflight.Enabled {
		t.Errorf("preflight %+v", ev.Preflight)
	}
	a := ev.Gates[1].Attempts[0]
	if a.Outcome != "" || a.Prediction != nil || a.Failure == nil || a.Failure.Class != failure.ClassHostCapability || a.LogPath == "" {
		t.Errorf("base attempt %+v", a)
	}
}

// A prereq gate that fails in an exclusive campaign never stops
// production: the gates before the launch run while it serves.
func TestExclusivePrereqFailureLeavesProductionServing(t *testing.T) {
	e, plan := seedEnv(t)
	b, err := os.ReadFile(plan)
	must(t, err)
	must(t, os.WriteFile(plan, []byte(strings.Replace(string(b), `version_pattern = "Linux"`, `version_pattern = "NoSuchKernel"`, 1)), 0o644))
	e.startProduction()
	out := runPlanWith(t, e, plan, qualify.Options{})
	ev := out.Evidence
	if out.ExitCode != qualify.ExitNotQualified || ev.Gates[0].Status != evidence.StatusFailed || ev.Gates[1].Status != evidence.StatusNotRun {
		t.Fatalf("exit %d gates %s %s", out.ExitCode, ev.Gates[0].Status, ev.Gates[1].Status)
	}
	if p := ev.Production; p.Stopped || !p.WasRunning {
		t.Errorf("production %+v", p)
	}
	if !e.productionReady() {
		t.Error("production is not serving")
	}
}
