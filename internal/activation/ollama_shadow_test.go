package activation_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/ollamatest"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Shadow traffic on the reference engine: production and candidate are
// real Ollama servers with the project's trained model; `hiro extract`
// sends production hiro's own extraction requests through `hiro serve`
// while a campaign's shadow gate mirrors them to the candidate. The
// pairs are scored as extraction (the prompt recognised, both replies
// validated); the same model at temperature 0 agrees with itself; no
// extraction request of the client failed. Each pair is two real
// extractions on 2 cores, so the run is five pairs: too few to show a
// rate within the margin (5 of 5 bound a rate above 0.55 only), so the
// gate is inconclusive (exit 5) with that reason; an agreement of at
// least 0.9 over five pairs means every pair agrees. Passing takes 150
// pairs (TestShadowCampaignQualifiesOnLiveTrafficAndActivates, fake engines).
func TestOllamaShadowCampaign(t *testing.T) {
	bin := ollamatest.Binary(t) // skips with the reason when absent
	models := filepath.Join(t.TempDir(), "models")
	ollamatest.PrepareModels(t, models, map[string]string{ollamatest.StrongModel: ollamatest.ShippedModels(t)[ollamatest.StrongModel]})
	w := newWorld(t, false)
	home := t.TempDir()
	profile := func(name string, port int) string {
		return ollamatest.ProfileTOML(name, bin, port, ollamatest.StrongModel, models, home, map[string]string{"OLLAMA_KEEP_ALIVE": "-1"})
	}
	toml := fmt.Sprintf("state_dir = \"state\"\n[production]\nbackend = \"prod\"\n\n%s\n%s\n[backends.router]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:%d\"\nmodel = \"extraction\"\n[serve]\nlisten = \"127.0.0.1:%d\"\nalias = \"extraction\"\naccess_log = \"off\"\n",
		profile("prod", w.prodPort), profile("cand", w.candPort), w.servePort, w.servePort)
	must(t, os.WriteFile(w.cfgPath, []byte(toml), 0o644))
	cfg, err := config.Load(w.cfgPath)
	must(t, err)
	w.cfg = cfg
	proc, res := supervisor.Start(context.Background(), cfg.Backends["prod"], supervisor.Options{StateDir: cfg.StateDir})
	if res.State != supervisor.StateReady {
		t.Fatalf("Ollama production did not start: %+v %s", res.Failure, res.Error)
	}
	_, err = proc.Detach()
	must(t, err)
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	startServe(t, w.cfgPath, url, w.stateHome, w.env, 2*time.Minute)

	corpus, err := filepath.Abs("../../corpora/hiro-mini")
	must(t, err)
	endLoad := w.startExtractLoad(1, false, "--corpus", corpus)
	plan := filepath.Join(w.dir, "plan-ollama-shadow.toml")
	must(t, os.WriteFile(plan, []byte(`title = "Ollama candidate on live traffic"
config = "hiro.toml"
candidate = "cand"
evidence_dir = "evidence"

[[gates]]
id = "launch"
kind = "launch"

[[gates]]
id = "ready"
kind = "ready_control"

[[gates]]
id = "shadow"
kind = "shadow"
share = 1.0
max_pairs = 5
min_pairs = 5
for = "8m"
`), 0o644))
	code, out := w.hiro("qualify", plan)
	runs, failed := endLoad()
	if code != 5 {
		t.Fatalf("qualify: exit %d, want 5 (inconclusive: five pairs)\n%s\nextraction runs: %d, failed: %v", code, out, runs, failed)
	}
	_, ev := w.newestEvidence()
	g := ev.Gates[len(ev.Gates)-1]
	s := g.Shadow
	if g.Status != evidence.StatusInconclusive || !strings.Contains(g.Reason, "show a rate above") || s == nil || s.Extraction.Pairs != s.Pairs || s.Pairs < 5 || s.Extraction.CandidateClaims == 0 || s.Extraction.Agreement < 0.9 {
		t.Fatalf("shadow gate on Ollama: %s %q %+v", g.Status, g.Reason, s)
	}
	t.Logf("Ollama shadow: %s; extraction %+v; %d extraction runs through hiro serve", s.Summary, s.Extraction, runs)
	if len(failed) > 0 {
		t.Fatalf("client extraction runs failed: %v", failed)
	}
}

// startExtractLoad runs `hiro extract ARGS --out DIR --backend router`
// from clients goroutines, one run after another each, until the
// returned end is called; end returns how many runs there were and
// those that failed: a request that failed (a request_failed reject), or
// an exit status other than 0 (or 1, when rejectedOK: a claim was
// rejected).
func (w *world) startExtractLoad(clients int, rejectedOK bool, args ...string) (end func() (runs int, failed []string)) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var runs int
	var failed []string
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				out := filepath.Join(w.dir, fmt.Sprintf("extract-%d-%d", c, i))
				code, text := w.hiro(append(append([]string{"extract"}, args...), "--out", out, "--backend", "router")...)
				rejects, _ := os.ReadFile(filepath.Join(out, "rejects.jsonl"))
				mu.Lock()
				runs++
				if (code != 0 && !(rejectedOK && code == 1)) || strings.Contains(string(rejects), "request_failed") {
					failed = append(failed, fmt.Sprintf("extract %d-%d: exit %d\n%s\n%s", c, i, code, text, rejects))
				}
				mu.Unlock()
			}
		}()
	}
	return func() (int, []string) {
		close(stop)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return runs, failed
	}
}
