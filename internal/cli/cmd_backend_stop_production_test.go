package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
)

// TestStopOfTheActiveProductionSaysSo (issue 26 N10): with no router,
// 'hiro backend stop' of the active production stops it and says that it
// was production and that nothing will start it again: the
// configuration's [production] before any switch, the activated profile
// (activation 1) after 'hiro activate'; a backend that is not production
// gets no such line.
func TestStopOfTheActiveProductionSaysSo(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(dir, "leases"))
	t.Setenv("HIRO_STATE_HOME", filepath.Join(dir, "sh"))
	pp, tp := cliFreePort(t), cliFreePort(t)
	path := filepath.Join(dir, "hiro.toml")
	profile := func(name string, port int) string {
		return fmt.Sprintf("[backends.%s]\nengine = \"llamacpp\"\ncommand = %q\nargs = [\"--port\", \"%d\"]\nport = %d\nmodel = \"fake-model\"\nstop_grace = \"2s\"\n", name, fake, port, port)
	}
	must(t, os.WriteFile(path, []byte("state_dir = \"state\"\n[production]\nbackend = \"prod\"\n"+profile("prod", pp)+profile("twin", tp)), 0o644))
	stop := func(name string) string {
		t.Helper()
		if code, out, errs := runHiro(t, "--config", path, "backend", "start", name); code != ExitOK {
			t.Fatalf("start %s: exit %d\n%s\n%s", name, code, out, errs)
		}
		code, out, errs := runHiro(t, "--config", path, "backend", "stop", name)
		if code != ExitOK || !strings.Contains(out, name+": stopped gracefully") {
			t.Fatalf("stop %s: exit %d\n%s\n%s", name, code, out, errs)
		}
		return out
	}
	note := func(name, origin string, port int) string {
		return fmt.Sprintf("%s: it is the active production (%s) and no router serves it: nothing will start it again, and requests to http://127.0.0.1:%d fail until 'hiro backend start %s'", name, origin, port, name)
	}
	if out := stop("prod"); !strings.Contains(out, note("prod", "the configuration's [production]", pp)) {
		t.Errorf("stop of the configuration's production lacks the note:\n%s", out)
	}
	if out := stop("twin"); strings.Contains(out, "active production") {
		t.Errorf("stop of a backend that is not production says it is:\n%s", out)
	}
	cfg, err := config.Load(path)
	must(t, err)
	must(t, production.Append(&production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: cfg.Path,
		From: production.Snap(cfg.Backends["prod"], "", production.SourceConfiguration), To: production.Snap(cfg.Backends["twin"], "", "")}))
	if out := stop("twin"); !strings.Contains(out, note("twin", "activation 1", tp)) {
		t.Errorf("stop of the activated production lacks the note:\n%s", out)
	}
	if out := stop("prod"); strings.Contains(out, "active production") {
		t.Errorf("stop of the production switched away from says it is production:\n%s", out)
	}
}
