package serve

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/ollamatest"
)

// TestOllamaBehindRouter: the real Ollama as a managed production; a
// completion and a streamed completion through the router's alias, usage
// counted, the canary made on a loaded model.
func TestOllamaBehindRouter(t *testing.T) {
	cfg := ollamaConfig(t, "-1", "1s")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 2*time.Minute)

	body := `{"model":"extraction","max_tokens":4,"messages":[{"role":"user","content":"Say hi."}]}`
	code, _, out := post(t, r.url, RouteChat, body)
	if code != 200 || !strings.Contains(out, `"usage"`) || !strings.Contains(out, ollamatest.TinyModel) {
		t.Fatalf("completion through the router: %d %s", code, out)
	}
	resp, err := http.Post(r.url+RouteChat, "application/json",
		strings.NewReader(`{"model":"`+ollamatest.TinyModel+`","stream":true,"max_tokens":4,"messages":[{"role":"user","content":"Say hi."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	var chunks int
	var last string
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			chunks++
			last = l
		}
	}
	resp.Body.Close()
	if chunks < 2 || last != "data: [DONE]" {
		t.Errorf("stream: %d chunks, last %q", chunks, last)
	}
	// Wait for a canary: no request for a second, the model is loaded.
	made := func(st *control.Status) bool {
		c := st.Production.LastCanary
		return st.Production.State == control.StateReady && c != nil && c.Skipped == ""
	}
	st := r.waitStatus(t, 30*time.Second, made)
	if !made(st) {
		t.Fatalf("no canary made: %+v", st.Production.LastCanary)
	}
	if c := st.Production.LastCanary; !c.OK {
		t.Errorf("canary on Ollama failed: %+v", c)
	}
	mr, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Body.Close()
	sc = bufio.NewScanner(mr.Body)
	found := false
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), `hiro_serve_tokens_total{backend="ollama",kind="completion"}`) {
			found = true
		}
	}
	if !found {
		t.Error("no token count from Ollama's usage in the metrics")
	}
}

// ollamaConfig prepares the tiny model and returns a configuration whose
// managed production is the real Ollama with keepAlive
// (OLLAMA_KEEP_ALIVE) and the router's canary every canary.
func ollamaConfig(t *testing.T, keepAlive, canary string) *config.Config {
	t.Helper()
	bin := ollamatest.Binary(t) // skips with the reason when absent
	models := filepath.Join(t.TempDir(), "models")
	ollamatest.PrepareModels(t, models, map[string]string{ollamatest.TinyModel: ollamatest.ShippedModels(t)[ollamatest.TinyModel]})
	dir := t.TempDir()
	port := freePort(t)
	toml := "state_dir = \"state\"\n[production]\nbackend = \"ollama\"\n" +
		ollamatest.ProfileTOML("ollama", bin, port, ollamatest.TinyModel, models, dir, map[string]string{"OLLAMA_KEEP_ALIVE": keepAlive}) +
		fmt.Sprintf(`[serve]
listen = "127.0.0.1:0"
alias = "extraction"
canary_interval = %q
access_log = "off"
on_exit = "stop"
`, canary)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestOllamaCanaryRespectsKeepAlive: canaries every 300 ms do not keep
// the model loaded past Ollama's 1 s keep-alive; once it is unloaded the
// canary is skipped and never loads it again.
func TestOllamaCanaryRespectsKeepAlive(t *testing.T) {
	cfg := ollamaConfig(t, "1s", "300ms")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 2*time.Minute)
	prof := cfg.Backends["ollama"]
	e := r.s.prod.current()
	skipped := func(st *control.Status) bool {
		c := st.Production.LastCanary
		return st.Production.State == control.StateReady && c != nil && strings.Contains(c.Skipped, "not loaded")
	}
	st := r.waitStatus(t, 30*time.Second, skipped)
	if !skipped(st) {
		t.Fatalf("the canary never said the model is unloaded: %+v", st.Production.LastCanary)
	}
	// Several canaries later (each skipped anew) the model is still not
	// loaded.
	for i := 0; i < 4; i++ {
		last := st.Production.LastCanary.At
		later := func(st *control.Status) bool { return skipped(st) && st.Production.LastCanary.At.After(last) }
		if st = r.waitStatus(t, 10*time.Second, later); !later(st) {
			t.Fatalf("canary %d after the unload: %+v (%s)", i+1, st.Production.LastCanary, st.Production.State)
		}
	}
	if ps := engine.OllamaPS(context.Background(), e.hc, prof.BaseURL, prof.Model); !ps.Known || ps.Loaded {
		t.Errorf("after skipped canaries: %+v; the canary reloaded the model", ps)
	}
	if st := r.waitState(t, control.StateReady, time.Second); st.Production.LastFailure != nil {
		t.Errorf("an unloaded model was taken for a failure: %+v", st.Production.LastFailure)
	}
}
