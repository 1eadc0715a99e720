package extract

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/fixture"
)

// factcheckFile is the real Factcheck-GPT input, read in place.
const factcheckFile = "/work/shared/corpora/factcheck-gpt/factcheck-GPT-benchmark.jsonl"

// factcheckCorpus imports a take-source corpus of the real benchmark into
// a temporary directory, or skips when the file is absent.
func factcheckCorpus(t testing.TB, take int) *corpus.Corpus {
	p := os.Getenv("HIRO_FACTCHECK_GPT")
	if p == "" {
		p = factcheckFile
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Factcheck-GPT benchmark not found at %s (set HIRO_FACTCHECK_GPT to its path): %v", p, err)
	}
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("fc%d", take))
	if _, err := corpus.ImportFactcheckGPT(p, take, dir); err != nil {
		t.Fatal(err)
	}
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ollamaBinary finds Ollama as DEVELOPERS.md says: $HIRO_OLLAMA, PATH,
// then $(go env GOPATH)/bin/ollama.
func ollamaBinary() string {
	if p := os.Getenv("HIRO_OLLAMA"); p != "" {
		return p
	}
	if p, err := exec.LookPath("ollama"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "ollama")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// startOllama serves a fixture model with a private Ollama on a free port
// and returns its base URL and model id. The model is the GGUF named by
// $HIRO_FIXTURE_GGUF (a trained fixture model), else the tiny
// random-weight model (plumbing only: its claims are noise). Skips when
// Ollama is absent.
//
// TODO(lead): switch to internal/ollamatest once it lands.
func startOllama(t testing.TB) (baseURL, model string) {
	bin := ollamaBinary()
	if bin == "" {
		t.Skip("Ollama not found ($HIRO_OLLAMA, PATH, $GOPATH/bin/ollama); install it with scripts/install-ollama.sh")
	}
	dir := t.TempDir()
	gguf := os.Getenv("HIRO_FIXTURE_GGUF")
	model = "hiro-fixture"
	if gguf == "" {
		model = "hiro-tiny"
		f, err := fixture.Tiny(1)
		if err != nil {
			t.Fatal(err)
		}
		gguf = filepath.Join(dir, "tiny.gguf")
		if _, err := f.WriteFile(gguf); err != nil {
			t.Fatal(err)
		}
	}
	abs, _ := filepath.Abs(gguf)
	if err := os.WriteFile(filepath.Join(dir, "Modelfile"), []byte(fixture.Modelfile(abs)), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	env := append(os.Environ(), "OLLAMA_HOST="+addr, "OLLAMA_MODELS="+filepath.Join(dir, "models"), "HOME="+dir)
	cmd := exec.Command(bin, "serve")
	cmd.Env = env
	log, _ := os.Create(filepath.Join(dir, "serve.log"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		log.Close()
	})
	baseURL = "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(baseURL + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Fatalf("ollama serve not up after 60s: %v\n%s", err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create := exec.CommandContext(ctx, bin, "create", model, "-f", filepath.Join(dir, "Modelfile"))
	create.Env, create.Dir = env, dir
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("ollama create: %v\n%s", err, out)
	}
	return baseURL, model
}

// TestOllamaFactcheck6 is the acceptance test: extraction of the 6-source
// Factcheck-GPT corpus through a real Ollama completes; every claim passes
// every validator; every reject has reasons; a run interrupted after two
// documents and run again finishes without redoing them and without
// duplicates.
func TestOllamaFactcheck6(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Ollama acceptance test takes minutes on CPU")
	}
	c := factcheckCorpus(t, 6)
	base, model := startOllama(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := newCountingClient(base)
	o := Options{Client: client, Backend: "ollama", BaseURL: base, Model: model, OutDir: out,
		Concurrency: 2, MaxRepairs: 1, MaxTokens: 128}
	committed := map[string]bool{}
	o.OnCommit = func(p DocProgress) {
		committed[p.DocID] = true
		if len(committed) == 2 {
			cancel()
		}
	}
	sum, err := Run(ctx, c.Docs, o)
	if err == nil || !sum.Interrupted || sum.Done+sum.Failed != 2 {
		t.Fatalf("interrupted run: err %v, summary %+v", err, sum)
	}
	client2 := newCountingClient(base)
	o.Client, o.OnCommit = client2, nil
	sum, err = Run(context.Background(), c.Docs, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 2 || sum.Done != 4 || sum.Stats.DocumentsDone != 6 {
		t.Errorf("resumed run: %+v", sum)
	}
	for _, tg := range client2.targets() {
		for id := range committed {
			for _, d := range c.Docs {
				if d.ID == id && strings.Contains(strings.Join(strings.Fields(string(d.Text)), " "), tg) {
					t.Errorf("resumed run redid finished document %s", id)
				}
			}
		}
	}
	claims := checkClaims(t, out, c.Docs)
	rejects := checkRejects(t, out)
	t.Logf("6-source corpus through %s: %d claims, %d rejects, %d replies (%d schema-valid), %d output tokens",
		model, len(claims), len(rejects), sum.Stats.Replies, sum.Stats.SchemaValidReplies, sum.Stats.CompletionTokens)
}
