package qualify_test

import (
	"fmt"
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

// editCandidate rewrites the candidate's profile in e's hiro.toml: each
// old string (within [backends.cand]) replaced by its new one.
func editCandidate(t *testing.T, e *env, oldNew ...string) {
	t.Helper()
	b, err := os.ReadFile(e.cfgPath)
	must(t, err)
	head, cand, ok := strings.Cut(string(b), "[backends.cand]")
	if !ok {
		t.Fatal("no [backends.cand] in hiro.toml")
	}
	for i := 0; i+1 < len(oldNew); i += 2 {
		if !strings.Contains(cand, oldNew[i]) {
			t.Fatalf("candidate profile lacks %q", oldNew[i])
		}
		cand = strings.Replace(cand, oldNew[i], oldNew[i+1], 1)
	}
	must(t, os.WriteFile(e.cfgPath, []byte(head+"[backends.cand]"+cand), 0o644))
}

// A candidate whose model name is absent from its engine's store (an
// Ollama profile's typo: /api/tags lists the right one) is a profile
// error like invalid_configuration: the campaign aborts (exit 3), the
// reason names backends.cand.model and the did-you-mean; not a
// publishable not_qualified (issue 26, T16). A served model of another
// identity (vLLM's /v1/models) stays a verdict.
func TestCandidateModelAbsentFromItsStoreAborts(t *testing.T) {
	plan := `
[[gates]]
id = "launch"
kind = "launch"

[[gates]]
id = "ready"
kind = "ready_control"
`
	t.Run("absent from the store", func(t *testing.T) {
		e := newEnv(t, nil, "", nil)
		editCandidate(t, e, `engine = "vllm"`, `engine = "ollama"`, `model = "cand-model"`, `model = "cand-modle"`)
		b, _ := os.ReadFile(e.cfgPath)
		must(t, os.WriteFile(e.cfgPath, append(b, fmt.Sprintf("[backends.cand.env]\nOLLAMA_HOST = \"127.0.0.1:%d\"\nHOME = %q\n", e.candPort, e.dir)...), 0o644))
		e.startProduction()
		out := runPlan(t, e, e.writePlan(plan))
		ev := out.Evidence
		if out.ExitCode != qualify.ExitAborted || ev.Verdict != evidence.VerdictAborted {
			t.Fatalf("exit %d verdict %s (%s), want 3 aborted", out.ExitCode, ev.Verdict, ev.TerminationReason)
		}
		launch := ev.Gates[0]
		if f := launch.Attempts[0].Failure; f == nil || f.Class != failure.ClassIdentityMismatch {
			t.Fatalf("base attempt failure %+v, want identity_mismatch", f)
		}
		for _, w := range []string{"configuration error: attempt base", `backends.cand.model to "cand-model", the did-you-mean`,
			"the profile is wrong, not the candidate"} {
			if !strings.Contains(ev.TerminationReason, w) {
				t.Errorf("termination %q lacks %q", ev.TerminationReason, w)
			}
		}
		if p := ev.Production; p.Restored == nil || !p.Restored.OK {
			t.Errorf("production not restored: %+v", p)
		}
	})
	t.Run("another identity served", func(t *testing.T) {
		e := newEnv(t, nil, "", nil)
		editCandidate(t, e, `model = "cand-model"`, `model = "cand-modle"`)
		e.startProduction()
		out := runPlan(t, e, e.writePlan(plan))
		if ev := out.Evidence; out.ExitCode != qualify.ExitNotQualified || ev.Gates[0].Attempts[0].Failure.Class != failure.ClassIdentityMismatch {
			t.Fatalf("exit %d verdict %s (%s), want 1 not_qualified on identity_mismatch", out.ExitCode, ev.Verdict, ev.TerminationReason)
		}
	})
}

// qualify --check's warning (issue 26, T16): an Ollama profile whose
// model is absent from the store its OLLAMA_MODELS names is named, with
// the key and the did-you-mean; a model the store has, and a store hiro
// cannot read, say nothing.
func TestModelStoreWarningsNameTheAbsentModel(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	store := filepath.Join(e.dir, "store")
	tag := filepath.Join(store, "manifests", "registry.ollama.ai", "library", "hiro-tiny")
	must(t, os.MkdirAll(tag, 0o755))
	must(t, os.WriteFile(filepath.Join(tag, "latest"), []byte("{}"), 0o644))
	editCandidate(t, e, `engine = "vllm"`, `engine = "ollama"`)
	b, _ := os.ReadFile(e.cfgPath)
	base := string(b)
	for _, c := range []struct {
		model, store string
		want         []string
	}{
		{"hiro-tyni", "store", []string{`backends.cand.model "hiro-tyni" is not in the model store ` + store + " (backends.cand.env.OLLAMA_MODELS)",
			`holds 1 other model (did you mean "hiro-tiny:latest"?)`, `set backends.cand.model to "hiro-tiny:latest"`}},
		{"hiro-tiny", "store", nil},
		{"hiro-tiny:latest", "store", nil},
		{"hiro-tyni", "no-such-store", nil},
	} {
		cfg := strings.Replace(base, `model = "cand-model"`, fmt.Sprintf("model = %q", c.model), 1) +
			fmt.Sprintf("[backends.cand.env]\nOLLAMA_HOST = \"127.0.0.1:%d\"\nHOME = %q\nOLLAMA_MODELS = %q\n", e.candPort, e.dir, c.store)
		must(t, os.WriteFile(e.cfgPath, []byte(cfg), 0o644))
		p, lc, err := qualify.LoadPlan(e.writePlan("[[gates]]\nid = \"launch\"\nkind = \"launch\"\n"), e.cfgPath)
		must(t, err)
		ws := p.ModelStoreWarnings(lc)
		if len(c.want) == 0 {
			if len(ws) != 0 {
				t.Errorf("model %s in %s: warnings %q, want none", c.model, c.store, ws)
			}
			continue
		}
		if len(ws) != 1 {
			t.Fatalf("model %s: warnings %q, want one", c.model, ws)
		}
		for _, w := range c.want {
			if !strings.Contains(ws[0], w) {
				t.Errorf("warning %q lacks %q", ws[0], w)
			}
		}
	}
}
