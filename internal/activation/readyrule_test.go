package activation_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/activation"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/production"
)

// chatty is production's reply to the READY prompt: not exactly READY,
// which readiness (no ready_probe.expect) accepts.
const chatty = "READY w0 w1 w2"

// A production whose model answers the READY prompt with more than READY
// is ready for 'backend start' and for the switches alike: activate, then
// rollback starts it again, verified by the same rule, with no second
// copy onto its port.
func TestChattyProductionActivateAndRollBack(t *testing.T) {
	w := newWorldWith(t, false, []string{"--reply", chatty})
	w.startProduction()
	evPath := w.qualify()
	if code, out := w.hiro("activate", evPath, "--journal", ""); code != 0 {
		t.Fatalf("activate: exit %d\n%s", code, out)
	}
	if code, out := w.hiro("rollback", "--check"); code != 0 {
		t.Fatalf("rollback --check: exit %d\n%s", code, out)
	}
	code, out := w.hiro("rollback", "--json", "--journal", "")
	if code != 0 || strings.Contains(out, "port_in_use") {
		t.Fatalf("rollback: exit %d\n%s", code, out)
	}
	if !strings.Contains(out, chatty) {
		t.Fatalf("rollback does not show the verified reply %q:\n%s", chatty, out)
	}
	if !w.ready("prod") {
		t.Fatal("prod is not serving after the rollback")
	}
	if ins, _ := production.Intents(); len(ins) != 0 {
		t.Fatalf("a switch intent is left: %+v", ins[0])
	}
	if code, out := w.hiro("backend", "status"); code != 0 {
		t.Fatalf("status after the rollback: exit %d\n%s", code, out)
	}
}

// A switch cut short while production serves (here: hiro's own chatty
// production, recorded) is settled by the next command, which verifies
// that production by the readiness rule instead of locking every command
// out.
func TestCutShortSwitchSettledWhileChattyProductionServes(t *testing.T) {
	w := newWorldWith(t, false, []string{"--reply", chatty})
	w.startProduction()
	st, _ := w.running("prod")
	must(t, production.WriteIntent(&production.Intent{Config: w.cfg.Path, Kind: production.KindActivate,
		From: production.Snap(w.cfg.Backends["prod"], "", production.SourceConfiguration), To: production.Snap(w.cfg.Backends["cand"], "", ""),
		PID: 999999, StartedAt: time.Now().UTC()}))
	code, out := w.hiro("backend", "status")
	if code != 0 || !strings.Contains(out, "switch settled") {
		t.Fatalf("next command: exit %d\n%s", code, out)
	}
	if ins, _ := production.Intents(); len(ins) != 0 {
		t.Fatal("the switch intent is still there")
	}
	if now, ok := w.running("prod"); !ok || now.PID != st.PID {
		t.Fatalf("production pid %d became %d (running %v)", st.PID, now.PID, ok)
	}
	if code, out := w.hiro("backend", "status"); code != 0 {
		t.Fatalf("a later command: exit %d\n%s", code, out)
	}
}

// Private evidence edited by hand to read qualified while its gates still
// record the failure is refused, naming the contradicting field.
func TestEvidenceContradictingItsVerdictRefused(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	b, err := os.ReadFile(evPath)
	must(t, err)
	tampered := filepath.Join(t.TempDir(), evidence.PrivateFile)
	for _, c := range []struct {
		field string
		edit  func(*evidence.Evidence)
	}{
		{"gates[ready].failure", func(e *evidence.Evidence) {
			g := gate(e, "ready")
			g.Reason = `reply was "NOPE", want exactly "READY"`
			g.Failure = &failure.Failure{Class: failure.ClassProbeFailed, Phase: failure.PhaseInference, RootCause: `reply was "NOPE"`}
		}},
		{"gates[ready].status", func(e *evidence.Evidence) { gate(e, "ready").Status = evidence.StatusFailed }},
		{"gates[ready].status", func(e *evidence.Evidence) { gate(e, "ready").Status = evidence.StatusNotRun }},
		{"exit_code", func(e *evidence.Evidence) { e.ExitCode = 1 }},
	} {
		var ev evidence.Evidence
		must(t, json.Unmarshal(b, &ev))
		c.edit(&ev)
		// Signed again with the user's own key: the checks below hold
		// even for evidence whose signature verifies.
		writeSigned(t, tampered, &ev)
		if _, err := activation.Check(context.Background(), w.cfg, tampered, time.Now(), activation.Accept{}); !refusedOn(err, c.field) {
			t.Fatalf("want refused on %s, got %v", c.field, err)
		}
		if code, out := w.hiro("activate", "--check", tampered); code != 1 || !strings.Contains(out, c.field) {
			t.Fatalf("activate --check: exit %d, want 1 naming %s\n%s", code, c.field, out)
		}
	}
	if _, err := activation.Check(context.Background(), w.cfg, evPath, time.Now(), activation.Accept{}); err != nil {
		t.Fatalf("the untouched evidence is refused: %v", err)
	}
}

func gate(e *evidence.Evidence, id string) *evidence.Gate {
	for i := range e.Gates {
		if e.Gates[i].ID == id {
			return &e.Gates[i]
		}
	}
	panic("no gate " + id)
}

// TestUnsettledSwitchLeavesAWayOut: a switch cut short whose production
// cannot be put back (it dies at start) blocks the commands that depend
// on which production is active (exit 4, saying what to do), but not the
// ones an operator restores it with: 'backend status' (and 'backend
// start', 'recover', 'status') run with a warning.
func TestUnsettledSwitchLeavesAWayOut(t *testing.T) {
	w := newWorldWith(t, false, []string{"--exit", "1"})
	must(t, production.WriteIntent(&production.Intent{Config: w.cfg.Path, Kind: production.KindActivate,
		From: production.Snap(w.cfg.Backends["prod"], "", production.SourceConfiguration), To: production.Snap(w.cfg.Backends["cand"], "", ""),
		PID: 999999, StartedAt: time.Now().UTC()}))
	code, out := w.hiro("qualify", "plan.toml", "--check")
	if code != 4 || !strings.Contains(out, "could not be settled") || !strings.Contains(out, "hiro backend start NAME' runs while a switch is unsettled") {
		t.Errorf("qualify with an unsettled switch: exit %d\n%s", code, out)
	}
	code, out = w.hiro("backend", "status")
	if code == 4 || !strings.Contains(out, "WARNING: a switch cut short could not be settled") {
		t.Errorf("backend status with an unsettled switch: exit %d\n%s", code, out)
	}
}
