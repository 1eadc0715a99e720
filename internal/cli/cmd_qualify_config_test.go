package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Trial 11 R11: an explicit --config was dropped without a word when the
// plan names its own config. The plan still wins (docs/plan.md), and
// qualify says so once on stderr; it says nothing when the two name one
// file or the plan names none.
func TestQualifySaysThePlansConfigWins(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := serveTestState(t)
	conf := func(path string) {
		pp, cp := cliFreePort(t), cliFreePort(t)
		must(t, os.WriteFile(path, []byte(fmt.Sprintf("[production]\nbackend = \"prod\"\n[backends.prod]\nengine = \"llamacpp\"\ncommand = %[1]q\nargs = [\"--port\", \"%[2]d\"]\nport = %[2]d\nmodel = \"fake-model\"\n[backends.cand]\nengine = \"llamacpp\"\ncommand = %[1]q\nargs = [\"--port\", \"%[3]d\"]\nport = %[3]d\nmodel = \"fake-model\"\n", fake, pp, cp)), 0o644))
	}
	own := filepath.Join(dir, "hiro.toml")
	conf(own)
	mine := filepath.Join(t.TempDir(), "mine.toml")
	conf(mine)
	gates := "candidate = \"cand\"\nevidence_dir = \"evidence\"\n[[gates]]\nid = \"launch\"\nkind = \"launch\"\n"
	plan := filepath.Join(dir, "plan.toml")
	must(t, os.WriteFile(plan, []byte("title = \"r11\"\nconfig = \"hiro.toml\"\n"+gates), 0o644))
	bare := filepath.Join(dir, "bare.toml")
	must(t, os.WriteFile(bare, []byte("title = \"r11\"\n"+gates), 0o644))
	t.Setenv("HIRO_CONFIG", "")

	code, out, errs := runHiro(t, "--config", mine, "qualify", plan, "--check")
	if code != ExitOK || strings.Count(errs, "is not read") != 1 || !strings.Contains(errs, "--config "+mine+" is not read") ||
		!strings.Contains(errs, `its own config "hiro.toml" (`+own+")") || !strings.Contains(out, "(config "+own+")") {
		t.Errorf("--config beside the plan's config: exit %d\n%s%s", code, out, errs)
	}
	for _, args := range [][]string{{"--config", own, "qualify", plan, "--check"}, {"--config", mine, "qualify", bare, "--check"}} {
		if code, out, errs := runHiro(t, args...); code != ExitOK || strings.Contains(errs, "is not read") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
}
