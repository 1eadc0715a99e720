package qualify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/qualify"
)

// A launch the engine refuses for its configuration (here vLLM's
// argparse: "unrecognized arguments", from the fake engine as a real
// process) is no verdict on the candidate: the campaign aborts (exit 3,
// production restored), the ladder stops at that attempt, and the reason
// says the profile is wrong and how to fix it (issue 26, F10: an Ollama
// without HOME was published as not_qualified).
func TestLaunchRefusedForItsConfigurationAborts(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "vllm-bad-flag.log")
	must(t, os.WriteFile(log, []byte("INFO 12-02 06:00:00 [__init__.py:239] Automatically detected platform cuda.\n"+
		"usage: vllm serve [model_tag] [options]\n"+
		"vllm serve: error: unrecognized arguments: --enable-foo\n"), 0o644))
	e := newEnv(t, []string{"--replay", log, "--exit", "2", "--health-style", "vllm", "--load-time", "60s"}, "", nil)
	e.startProduction()
	plan := e.writePlan(`
[[gates]]
id = "launch"
kind = "launch"
[[gates.variants]]
name = "eager"
reason = "documented fallback: CUDA graphs off"
args_append = ["--enforce-eager"]

[[gates]]
id = "ready"
kind = "ready_control"
`)
	out := runPlan(t, e, plan)
	ev := out.Evidence
	if out.ExitCode != qualify.ExitAborted || ev.Verdict != evidence.VerdictAborted {
		t.Fatalf("exit %d verdict %s (%s), want 3 aborted", out.ExitCode, ev.Verdict, ev.TerminationReason)
	}
	launch := ev.Gates[0]
	if launch.Status != evidence.StatusNotRun || len(launch.Attempts) != 1 {
		t.Fatalf("launch gate %s with %d attempts, want not_run after the base attempt alone: %+v", launch.Status, len(launch.Attempts), launch)
	}
	if f := launch.Attempts[0].Failure; f == nil || f.Class != failure.ClassInvalidConfiguration {
		t.Fatalf("base attempt failure %+v, want invalid_configuration", f)
	}
	for _, w := range []string{"configuration error: attempt base", "unrecognized arguments: --enable-foo", "profile cand (backends.cand) is wrong, not the candidate", "fix the profile's args or env"} {
		if !strings.Contains(launch.Reason, w) || !strings.Contains(ev.TerminationReason, w) {
			t.Errorf("gate reason %q / termination %q lack %q", launch.Reason, ev.TerminationReason, w)
		}
	}
	if g := ev.Gates[1]; g.Status != evidence.StatusNotRun {
		t.Errorf("ready gate %s, want not_run", g.Status)
	}
	if p := ev.Production; !p.Stopped || p.Restored == nil || !p.Restored.OK {
		t.Fatalf("production: stopped %v restored %+v, want stopped and restored", p.Stopped, p.Restored)
	}
}
