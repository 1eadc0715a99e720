package qualify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// TestPublicOutputHidesProjectFolder runs a campaign from a clone-like
// folder (a ".git" at its top, the configuration and plan in
// examples/demo naming files of the whole clone with "../..") and checks
// that no public byte (evidence.json, report.md) holds the clone's folder,
// that report.md writes its placeholder as a code span, and that a URL in a public failure keeps its host and port.
func TestPublicOutputHidesProjectFolder(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	root := e.dir
	must(t, os.MkdirAll(filepath.Join(root, ".git"), 0o755))
	demo := filepath.Join(root, "examples", "demo")
	must(t, os.MkdirAll(demo, 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "models", "fixture-weak"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "models", "fixture-weak", "model.gguf"), []byte("GGUF"), 0o644))
	cfg, err := os.ReadFile(e.cfgPath)
	must(t, err)
	c := strings.Replace(string(cfg), `state_dir = "state"`, `state_dir = "../../state"`, 1)
	c = strings.Replace(c, `config_files = ["prod-launcher.sh"]`, `config_files = ["../../prod-launcher.sh"]`, 1)
	must(t, os.WriteFile(filepath.Join(demo, "hiro.toml"), []byte(c), 0o644))
	plan := filepath.Join(demo, "plan.toml")
	must(t, os.WriteFile(plan, []byte(`title = "Clone-like campaign"
config = "hiro.toml"
candidate = "cand"
evidence_dir = "../../evidence"
[[gates]]
kind = "prereq"
files = ["../../models/fixture-weak/model.gguf"]
[[gates.disks]]
path = "../.."
min_free_gib = 0.001
[[gates]]
kind = "launch"
`), 0o644))
	e.startProduction()
	e.cfgPath = filepath.Join(demo, "hiro.toml")
	out := runPlan(t, e, plan)
	if out.Evidence == nil || out.Dir == "" {
		t.Fatalf("no evidence: %+v", out)
	}
	for _, name := range []string{evidence.PublicFile, evidence.ReportFile} {
		b, err := os.ReadFile(filepath.Join(out.Dir, name))
		must(t, err)
		if strings.Contains(string(b), root) {
			t.Errorf("%s holds the project folder %s:\n%s", name, root, b)
		}
		if !strings.Contains(string(b), "<project>") && !strings.Contains(string(b), "&lt;project&gt;") && !strings.Contains(string(b), `\u003cproject\u003e`) {
			t.Errorf("%s names no <project> path:\n%s", name, b)
		}
	}
	// report.md is read in a terminal as often as rendered: the project
	// placeholder is a code span (no HTML entities), the disk requirement
	// has its unit.
	rep, err := os.ReadFile(filepath.Join(out.Dir, evidence.ReportFile))
	must(t, err)
	if !strings.Contains(string(rep), "- disk `<project>`: passed (") || !strings.Contains(string(rep), " GiB free, want ≥ 0.001 GiB).") ||
		strings.Contains(string(rep), "&lt;") {
		t.Errorf("report.md's disk check does not read well:\n%s", rep)
	}
	if got := evidence.RedactPaths(`Post "http://127.0.0.1:11538/v1/chat/completions": EOF at /srv/x/y`); got != `Post "http://127.0.0.1:11538/v1/chat/completions": EOF at <path>` {
		t.Errorf("RedactPaths mangles a URL: %s", got)
	}
}
