package qualify_test

import (
	"context"
	"testing"

	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// After an activation, the guard stops and restores the ACTIVE
// production as it was activated (its variant's arguments), and "restored
// exactly" is its recorded configuration hash; recovery of a killed
// campaign resolves production the same way.
func TestGuardRestoresTheActiveProductionsRecordedConfiguration(t *testing.T) {
	e := newEnv(t, []string{"--exit", "1"}, "", nil)
	// Record an activation of prod with a variant's extra arguments.
	eff := e.cfg.Backends["prod"].Clone()
	eff.Args = append(eff.Args, "--progress-every", "1h")
	from := production.Snap(e.cfg.Backends["prod"], "", production.SourceConfiguration)
	rec := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: e.cfg.Path,
		From: from, To: production.Snap(eff, "extra-progress", "activation 1")}
	must(t, production.Append(rec))

	// Production runs as activated.
	proc, res := supervisor.Start(context.Background(), eff, supervisor.Options{StateDir: e.cfg.StateDir})
	if res.State != supervisor.StateReady {
		t.Fatalf("production did not start: %+v", res.Failure)
	}
	if _, err := proc.Detach(); err != nil {
		t.Fatal(err)
	}

	plan := e.writePlan("[[gates]]\nid = \"launch\"\nkind = \"launch\"\n")
	out := runPlan(t, e, plan)
	ev := out.Evidence
	if out.ExitCode != qualify.ExitNotQualified {
		t.Fatalf("exit %d (%s), want 1", out.ExitCode, ev.TerminationReason)
	}
	if !ev.Production.Stopped || ev.Production.Restored == nil || !ev.Production.Restored.OK {
		t.Fatalf("production not stopped and restored: %+v", ev.Production)
	}
	if ev.Production.ConfigHashBefore != rec.To.ConfigHash || ev.Production.ConfigHashAfter != rec.To.ConfigHash {
		t.Fatalf("config hash before %s after %s, want the recorded %s", ev.Production.ConfigHashBefore, ev.Production.ConfigHashAfter, rec.To.ConfigHash)
	}
	st, err := supervisor.Status(e.cfg.StateDir, "prod")
	if err != nil || st.Status != supervisor.StatusRunning {
		t.Fatalf("production not running after the campaign: %+v %v", st, err)
	}
	if st.ProfileHash != eff.Hash() {
		t.Fatalf("production restored with profile %s, want the activated variant's %s (the file's is %s)", st.ProfileHash, eff.Hash(), e.cfg.Backends["prod"].Hash())
	}
}
