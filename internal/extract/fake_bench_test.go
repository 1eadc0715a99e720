package extract

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/ollamatest"
)

// BenchmarkFakeThroughput compares the requests/s of the real `hiro
// extract` command with a bare net/http client sending the same requests
// to the same fake engine (cmd/hiro-fake-engine --chat claims: it answers
// at once with two claims quoting the target sentence, so hiro's
// validators do their full work), at the same concurrency, in the same
// run; rounds alternate which side goes first. hiro's side is the built
// binary writing and fsyncing its output directory (claims, rejects,
// checkpoints) as a user's run does; its rate is the Summary's requests
// over its wall time. The bare client reads every stream to the end and
// decodes every chunk (content and usage), as any client must.
//
// Knobs (environment): HIRO_BENCH_BIN_DIR (a folder with prebuilt hiro
// and hiro-fake-engine, for a machine without Go), HIRO_BENCH_CONCURRENCY (64), HIRO_BENCH_COPIES
// (copies of the corpus, each under its own folder: 40),
// HIRO_BENCH_ROUNDS (2), HIRO_BENCH_CHUNK_TOKENS (pseudo-tokens per
// streamed chunk: 1, as engines stream), HIRO_BENCH_CORPUS (a frozen
// corpus; default the Factcheck-GPT responses, else corpora/hiro-mini).
// Metrics: bare-req/s, hiro-req/s, hiro/bare (the goal at
// concurrency 64: >= 0.5), and the load average before the run.
//
//	bench/extract-fake-throughput.sh
func BenchmarkFakeThroughput(b *testing.B) {
	root := ollamatest.RepoRoot(b)
	bin := os.Getenv("HIRO_BENCH_BIN_DIR") // prebuilt hiro and hiro-fake-engine
	if bin == "" {
		bin = b.TempDir()
	}
	hiro, fake := filepath.Join(bin, "hiro"), filepath.Join(bin, "hiro-fake-engine")
	for out, pkg := range map[string]string{hiro: "./cmd/hiro", fake: "./cmd/hiro-fake-engine"} {
		if _, err := os.Stat(out); err == nil && os.Getenv("HIRO_BENCH_BIN_DIR") != "" {
			continue
		}
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Dir = root
		if o, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", pkg, err, o)
		}
	}
	conc := envInt("HIRO_BENCH_CONCURRENCY", 64)
	copies := envInt("HIRO_BENCH_COPIES", 40)
	rounds := envInt("HIRO_BENCH_ROUNDS", 2)
	chunk := envInt("HIRO_BENCH_CHUNK_TOKENS", 1)
	c := fakeBenchCorpus(b, root)
	docsDir := filepath.Join(b.TempDir(), "docs")
	var bodies [][]byte
	for k := 0; k < copies; k++ {
		for _, d := range c.Docs {
			ext := ".txt"
			if d.Markdown {
				ext = ".md"
			}
			p := filepath.Join(docsDir, fmt.Sprintf("copy%03d", k), strings.ReplaceAll(d.ID, "/", "_")+ext)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, d.Text, 0o644); err != nil {
				b.Fatal(err)
			}
			ss, err := corpus.Split(string(d.Text), d.Markdown)
			if err != nil {
				b.Fatal(err)
			}
			for i := range ss {
				bodies = append(bodies, bareRequest("fake-model", Messages(Window(ss, i)), DefaultMaxTokens))
			}
		}
	}
	port := fakeBenchPort(b)
	engine := exec.Command(fake, "--port", strconv.Itoa(port), "--chat", "claims", "--chunk-tokens", strconv.Itoa(chunk))
	if err := engine.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { engine.Process.Kill(); engine.Wait() }()
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	waitListening(b, port)
	cfg := filepath.Join(b.TempDir(), "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("state_dir = %q\n[backends.fake]\nengine = \"openai\"\nunmanaged = true\nbase_url = %q\nmodel = \"fake-model\"\n",
		filepath.Join(b.TempDir(), "state"), base)), 0o644)
	load0 := loadAvg()
	// Warm-up, untimed: connections, page cache, the engine's first GC.
	if _, _, err := bareThroughput(base, bodies[:min(len(bodies), 2000)], conc); err != nil {
		b.Fatal(err)
	}
	var bareN, hiroN int
	var bareWall, hiroWall time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for r := 0; r < rounds; r++ {
			var bn int
			var bw time.Duration
			bare := func() {
				var err error
				if bn, bw, err = bareThroughput(base, bodies, conc); err != nil {
					b.Fatal(err)
				}
			}
			if r%2 == 0 {
				bare()
			}
			out := filepath.Join(b.TempDir(), "out")
			t0 := time.Now()
			cmd := exec.Command(hiro, "--config", cfg, "extract", docsDir, "--backend", "fake", "--out", out,
				"--concurrency", strconv.Itoa(conc), "--max-repairs", "0", "--json")
			cmd.Env = append(os.Environ(), "HIRO_LEASE_DIR="+b.TempDir())
			o, err := cmd.Output()
			procWall := time.Since(t0)
			var sum Summary
			if jerr := json.Unmarshal(o, &sum); jerr != nil {
				b.Fatalf("hiro extract: %v %v\n%s", err, jerr, o)
			}
			// hiro does not send a sentence its checks reject before asking
			// (e.g. one addressed to the model): a few requests fewer.
			if sum.Requests < len(bodies)*95/100 || sum.Requests > len(bodies) {
				b.Fatalf("hiro sent %d requests (%d rejects), the bare client %d", sum.Requests, sum.Rejects, len(bodies))
			}
			if r%2 == 1 {
				bare()
			}
			hw := time.Duration(sum.WallSeconds * float64(time.Second))
			bareN, bareWall = bareN+bn, bareWall+bw
			hiroN, hiroWall = hiroN+sum.Requests, hiroWall+hw
			b.Logf("round %d: bare %d requests in %.2fs (%.0f req/s); hiro %d requests, %d claims in %.2fs (%.0f req/s; %.2fs with process start and corpus load)",
				r+1, bn, bw.Seconds(), float64(bn)/bw.Seconds(), sum.Requests, sum.Claims, hw.Seconds(), float64(sum.Requests)/hw.Seconds(), procWall.Seconds())
		}
	}
	b.StopTimer()
	bareRate := float64(bareN) / bareWall.Seconds()
	hiroRate := float64(hiroN) / hiroWall.Seconds()
	b.ReportMetric(bareRate, "bare-req/s")
	b.ReportMetric(hiroRate, "hiro-req/s")
	b.ReportMetric(hiroRate/bareRate, "hiro/bare")
	b.ReportMetric(load0, "load1-before")
	b.Logf("%d requests (%d documents) x %d rounds at concurrency %d, %d token(s) per chunk: bare %.0f req/s, hiro %.0f req/s, ratio %.3f; load average before %.2f, after %.2f",
		len(bodies), copies*len(c.Docs), rounds, conc, chunk, bareRate, hiroRate, hiroRate/bareRate, load0, loadAvg())
}

// fakeBenchCorpus is $HIRO_BENCH_CORPUS, else all Factcheck-GPT responses
// when the file is there, else the project's mini corpus.
func fakeBenchCorpus(b *testing.B, root string) *corpus.Corpus {
	if dir := os.Getenv("HIRO_BENCH_CORPUS"); dir != "" {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		c, err := corpus.Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	if _, err := os.Stat(factcheckFile); err == nil && os.Getenv("HIRO_FACTCHECK_GPT") == "" {
		return factcheckCorpus(b, 94)
	}
	c, err := corpus.Load(miniDir)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// bareThroughput sends bodies with conc requests in flight through a
// client over llm.NewTransport (the same connection pool hiro uses),
// reads each stream to the end decoding every chunk, and returns the
// number of completed requests and the wall time.
func bareThroughput(base string, bodies [][]byte, conc int) (int, time.Duration, error) {
	tr, _ := llm.NewTransport(llm.Endpoint{BaseURL: base, Direct: true})
	hc := &http.Client{Transport: tr}
	var next atomic.Int64
	var done atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= len(bodies) {
					return
				}
				if err := bareStream(hc, base, bodies[k]); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(done.Load()), time.Since(start), firstErr
}

// bareStream makes one streamed chat completion and decodes every chunk.
func bareStream(hc *http.Client, base string, body []byte) error {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, base+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok || string(data) == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(data, &ch); err != nil {
			return err
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if text.Len() == 0 {
		return fmt.Errorf("empty reply")
	}
	return nil
}

func fakeBenchPort(b *testing.B) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitListening(b *testing.B, port int) {
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("the fake engine did not listen within 5s")
}

// loadAvg is the 1-minute load average (/proc/loadavg), 0 when unknown.
func loadAvg() float64 {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}
