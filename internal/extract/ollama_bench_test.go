package extract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/ollamatest"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// benchCorpus is $HIRO_BENCH_CORPUS (a frozen corpus directory, relative
// to the repository root), else the 6-source Factcheck-GPT corpus.
func benchCorpus(b *testing.B) *corpus.Corpus {
	if dir := os.Getenv("HIRO_BENCH_CORPUS"); dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(ollamatest.RepoRoot(b), dir)
		}
		c, err := corpus.Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	return factcheckCorpus(b, 6)
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// bareRequest is one chat completion as JSON: exactly what hiro's first
// attempt for a sentence asks (model, messages, max_tokens, temperature 0,
// seed, the claims schema as response_format, streaming with usage).
func bareRequest(model string, msgs []llm.Message, maxTokens int) []byte {
	b, _ := json.Marshal(map[string]any{
		"model": model, "messages": msgs, "max_tokens": maxTokens, "temperature": 0, "seed": Seed,
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{
			"name": "claims", "schema": json.RawMessage(prompt.SchemaJSON()), "strict": true}},
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	})
	return b
}

// bareRun sends bodies with conc requests in flight using net/http alone,
// reads each stream to the end, and returns the completion tokens of the
// servers' usage chunks and the wall time.
func bareRun(base string, bodies [][]byte, conc int) (int64, time.Duration, error) {
	jobs := make(chan []byte)
	var mu sync.Mutex
	var tokens int64
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for body := range jobs {
				n, err := bareOne(base, body)
				mu.Lock()
				tokens += n
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, b := range bodies {
		jobs <- b
	}
	close(jobs)
	wg.Wait()
	return tokens, time.Since(start), firstErr
}

func bareOne(base string, body []byte) (int64, error) {
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var n int64
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Usage *struct {
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(data), &ch) == nil && ch.Usage != nil {
			n = ch.Usage.CompletionTokens
		}
	}
	return n, sc.Err()
}

// BenchmarkOllamaThroughput compares hiro's extraction output tokens/s
// with a bare net/http client sending the same requests to the same Ollama
// at the same concurrency, in the same run: rounds alternate which side
// goes first (bare, hiro; hiro, bare; ...) after an untimed warm-up pass,
// with repairs off so both send exactly the first-attempt requests.
// Metrics: bare-tok/s, hiro-tok/s and hiro/bare (the issue's
// bound: >= 0.95). Run it with bench/extract-throughput.sh.
func BenchmarkOllamaThroughput(b *testing.B) {
	c := benchCorpus(b)
	conc := envInt("HIRO_BENCH_CONCURRENCY", 2)
	base, model := startOllama(b, conc)
	rounds := envInt("HIRO_BENCH_ROUNDS", 2)
	maxTokens := envInt("HIRO_BENCH_MAX_TOKENS", 128)
	var bodies [][]byte
	for _, d := range c.Docs {
		ss, err := corpus.Split(string(d.Text), d.Markdown)
		if err != nil {
			b.Fatal(err)
		}
		for i := range ss {
			bodies = append(bodies, bareRequest(model, Messages(Window(ss, i)), maxTokens))
		}
	}
	// Warm-up, untimed: load the model and fill the engine's prompt cache
	// the same way for both sides.
	if _, _, err := bareRun(base, bodies, conc); err != nil {
		b.Fatal(err)
	}
	var bareTok, hiroTok int64
	var bareWall, hiroWall time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for r := 0; r < rounds; r++ {
			var tok int64
			var wall time.Duration
			bare := func() {
				var err error
				if tok, wall, err = bareRun(base, bodies, conc); err != nil {
					b.Fatal(err)
				}
			}
			if r%2 == 0 { // alternate which side goes first
				bare()
			}
			out := filepath.Join(b.TempDir(), "out")
			sum, err := Run(context.Background(), c.Docs, Options{Client: llm.New(base, nil), Backend: "ollama", BaseURL: base, Model: model,
				OutDir: out, Concurrency: conc, MaxRepairs: 0, MaxTokens: maxTokens})
			if err != nil {
				b.Fatal(err)
			}
			if sum.Requests != len(bodies) {
				b.Fatalf("hiro sent %d requests, the bare client %d", sum.Requests, len(bodies))
			}
			if r%2 == 1 {
				bare()
			}
			bareTok, bareWall = bareTok+tok, bareWall+wall
			hiroTok, hiroWall = hiroTok+sum.CompletionTokens, hiroWall+time.Duration(sum.WallSeconds*float64(time.Second))
			b.Logf("round %d: bare %d tokens in %.1fs (%.2f tok/s); hiro %d tokens in %.1fs (%.2f tok/s)", r+1,
				tok, wall.Seconds(), float64(tok)/wall.Seconds(), sum.CompletionTokens, sum.WallSeconds, sum.OutputTokensPerSecond)
		}
	}
	b.StopTimer()
	bareRate := float64(bareTok) / bareWall.Seconds()
	hiroRate := float64(hiroTok) / hiroWall.Seconds()
	b.ReportMetric(bareRate, "bare-tok/s")
	b.ReportMetric(hiroRate, "hiro-tok/s")
	b.ReportMetric(hiroRate/bareRate, "hiro/bare")
	b.Logf("%d requests x %d rounds at concurrency %d, model %s: bare %.2f tok/s, hiro %.2f tok/s, ratio %.3f",
		len(bodies), rounds, conc, model, bareRate, hiroRate, hiroRate/bareRate)
}
