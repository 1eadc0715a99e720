package qualify_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// Issue 25, item 10: after a failed recovery, what hiro says next names
// the campaign that left production down, its hiro's pid (not the pid
// of the command that tried to recover it) and where its evidence is;
// the evidence, once production is back, says the campaign's hiro was
// killed, not the recovering one.
func TestAfterAFailedRecoveryMessagesNameTheCampaign(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "launch-prod.sh")
	e := newEnv(t, slowCandidate, "", []string{script})
	must(t, os.WriteFile(script, []byte(fmt.Sprintf("#!/bin/sh\nif [ -f %[1]s/fail-always ]; then echo 'launcher: GPU busy (fail-always)'; exit 1; fi\nexec %[2]s --port %[3]d --model prod-model --reply READY\n",
		dir, fakeEngine, e.prodPort)), 0o755))
	e.startProduction()
	plan := e.writePlan("exclusive = true\n[[gates]]\nkind = \"launch\"\n")
	campaignPID := killMidLaunch(t, e, plan, 0)
	evDir := filepath.Dir(latestEvidencePath(t, e))
	id := filepath.Base(evDir)

	must(t, os.WriteFile(filepath.Join(dir, "fail-always"), nil, 0o644))
	for i := 0; i < 2; i++ {
		code, _, stderr := runHiro(t, e, "recover")
		if code != 4 || !strings.Contains(stderr, "campaign "+id) || !strings.Contains(stderr, evDir) {
			t.Fatalf("recover %d with production failing: exit %d; want 4 naming campaign %s and its evidence %s:\n%s", i+1, code, id, evDir, stderr)
		}
		if pid := "hiro pid " + strconv.Itoa(campaignPID) + ","; !strings.Contains(stderr, pid) {
			t.Errorf("recover %d does not name the campaign's hiro (%s):\n%s", i+1, pid, stderr)
		}
		if i == 1 && !strings.Contains(stderr, "a recovery failed: hiro pid ") {
			t.Errorf("the second recover does not say the first one failed:\n%s", stderr)
		}
		t.Logf("recover %d:\n%s", i+1, stderr)
	}
	must(t, os.Remove(filepath.Join(dir, "fail-always")))
	code, _, stderr := runHiro(t, e, "recover")
	if code != 0 || !e.productionReady() {
		t.Fatalf("recover once production can start: exit %d\n%s", code, stderr)
	}
	ev := latestEvidence(t, e)
	if want := fmt.Sprintf("hiro (pid %d) was killed mid-campaign", campaignPID); ev.Verdict != evidence.VerdictAborted || !strings.Contains(ev.TerminationReason, want) {
		t.Errorf("evidence after recovery: %s %q; want aborted and %q", ev.Verdict, ev.TerminationReason, want)
	}
}
