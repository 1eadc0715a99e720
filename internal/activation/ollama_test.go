package activation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/ollamatest"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// The life cycle on the reference engine: production and candidate are
// real Ollama servers (the candidate with another configuration); a
// campaign qualifies the candidate, `hiro activate` switches production
// to it while requests flow through `hiro serve`, `hiro rollback` switches
// back; not one request fails.
func TestOllamaActivateServeRollback(t *testing.T) {
	w, evPath := qualifiedOllamaPair(t, "Ollama with two parallel slots",
		map[string]string{"OLLAMA_NUM_PARALLEL": "1"}, map[string]string{"OLLAMA_NUM_PARALLEL": "2"})

	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 2*time.Minute)
	l := startLoad(url, 2, 4)
	l.waitMore(t, 10)

	t0 := time.Now()
	code, out := w.hiro("activate", evPath, "--journal", w.journal)
	activateTook := time.Since(t0)
	if code != 0 {
		l.finish()
		t.Fatalf("activate: exit %d\n%s", code, out)
	}
	if p := sp.production(t); p != "cand" {
		l.finish()
		t.Fatalf("the router serves %s after the activation", p)
	}
	if _, ok := w.running("prod"); ok {
		t.Error("the old production still runs after the activation")
	}
	l.waitMore(t, 10)
	t0 = time.Now()
	code, out = w.hiro("rollback", "--journal", w.journal)
	rollbackTook := time.Since(t0)
	if code != 0 {
		l.finish()
		t.Fatalf("rollback: exit %d\n%s", code, out)
	}
	if p := sp.production(t); p != "prod" {
		l.finish()
		t.Fatalf("the router serves %s after the rollback", p)
	}
	l.waitMore(t, 10)
	l.finish()
	t.Logf("Ollama: activate %s, rollback %s; requests through the router: %s", activateTook.Round(time.Millisecond), rollbackTook.Round(time.Millisecond), l)
	if len(l.failed) > 0 || len(l.retry503) > 0 {
		t.Fatalf("requests failed during the switches: %s", l)
	}
	if _, ok := w.running("cand"); ok {
		t.Error("the candidate still runs after the rollback")
	}
	if !strings.Contains(out, "Production switched from cand back to prod") {
		t.Errorf("rollback output:\n%s", out)
	}
}

// qualifiedOllamaPair is a world whose production (prod, running) and
// candidate (cand) are real Ollama servers with the project's strong
// model, each with its extra environment beside OLLAMA_KEEP_ALIVE=-1,
// and hiro serve configured in front; a campaign titled title (launch,
// READY control) has qualified cand: it returns the world and that
// campaign's private evidence. It skips under -short and without Ollama.
func qualifiedOllamaPair(t *testing.T, title string, prodEnv, candEnv map[string]string) (*world, string) {
	t.Helper()
	return qualifiedOllamaPairOf(t, title, ollamatest.StrongModel, prodEnv, candEnv, nil)
}

// qualifiedOllamaPairOf is qualifiedOllamaPair with the candidate
// serving candModel (one of the shipped models) and what extra returns
// for the world added to the configuration (more profiles; nil: none).
func qualifiedOllamaPairOf(t *testing.T, title, candModel string, prodEnv, candEnv map[string]string, extra func(*world) string) (*world, string) {
	t.Helper()
	bin := ollamatest.Binary(t) // skips with the reason when absent
	models := filepath.Join(t.TempDir(), "models")
	shipped := ollamatest.ShippedModels(t)
	ollamatest.PrepareModels(t, models, map[string]string{ollamatest.StrongModel: shipped[ollamatest.StrongModel], candModel: shipped[candModel]})
	w := newWorld(t, false) // private state and ports; the configuration is rewritten below
	home := t.TempDir()
	extraTOML := ""
	if extra != nil {
		extraTOML = extra(w)
	}
	profile := func(name string, port int, model string, extra map[string]string) string {
		env := map[string]string{"OLLAMA_KEEP_ALIVE": "-1"}
		for k, v := range extra {
			env[k] = v
		}
		return ollamatest.ProfileTOML(name, bin, port, model, models, home, env)
	}
	toml := fmt.Sprintf("state_dir = \"state\"\n[production]\nbackend = \"prod\"\n\n%s\n%s\n%s\n[serve]\nlisten = \"127.0.0.1:%d\"\nalias = \"extraction\"\naccess_log = \"off\"\n[activation]\nrequire = [\"ready_control\"]\n",
		profile("prod", w.prodPort, ollamatest.StrongModel, prodEnv), profile("cand", w.candPort, candModel, candEnv), extraTOML, w.servePort)
	must(t, os.WriteFile(w.cfgPath, []byte(toml), 0o644))
	must(t, os.WriteFile(filepath.Join(w.dir, "plan.toml"), []byte(fmt.Sprintf(`title = %q
config = "hiro.toml"
candidate = "cand"
evidence_dir = "evidence"

[[gates]]
id = "launch"
kind = "launch"

[[gates]]
id = "ready"
kind = "ready_control"
`, title)), 0o644))
	cfg, err := config.Load(w.cfgPath)
	must(t, err)
	w.cfg = cfg
	proc, res := supervisor.Start(context.Background(), cfg.Backends["prod"], supervisor.Options{StateDir: cfg.StateDir})
	if res.State != supervisor.StateReady {
		t.Fatalf("Ollama production did not start: %+v %s", res.Failure, res.Error)
	}
	_, err = proc.Detach()
	must(t, err)
	return w, w.qualify()
}
