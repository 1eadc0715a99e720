package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// claimsMiniCorpus is the project's own corpus with gold claims.
var claimsMiniCorpus = filepath.Join("..", "..", "corpora", "hiro-mini")

// claimsCLI runs hiro with args and returns the exit code, stdout and stderr.
func claimsCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// echoEngine is an in-process OpenAI-compatible chat server that answers
// every extraction request with one claim: the target sentence, quoting
// itself. delay is slept before answering. It counts requests.
func echoEngine(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64) {
	srv, n, _ := echoEngineFailing(t, delay)
	return srv, n
}

// echoEngineFailing is echoEngine whose chat completions answer HTTP 500
// while the returned flag is set. GET /v1/models lists "echo-model".
func echoEngineFailing(t *testing.T, delay time.Duration) (*httptest.Server, *atomic.Int64, *atomic.Bool) {
	var n atomic.Int64
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"echo-model","object":"model"}]}`)
			return
		}
		if failing.Load() {
			n.Add(1)
			http.Error(w, `{"error":{"message":"engine overloaded"}}`, 500)
			return
		}
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) < 2 {
			http.Error(w, "bad request", 400)
			return
		}
		n.Add(1)
		time.Sleep(delay)
		target := ""
		lines := strings.Split(req.Messages[1].Content, "\n")
		for i, l := range lines {
			if l == "Target sentence:" && i+1 < len(lines) {
				target = lines[i+1]
			}
		}
		reply, _ := json.Marshal(map[string]any{"claims": []any{map[string]string{"text": target, "quote": target}}})
		chunk, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": string(reply)}, "finish_reason": "stop"}}})
		usage, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\ndata: [DONE]\n\n", chunk, usage)
	}))
	t.Cleanup(srv.Close)
	return srv, &n, &failing
}

// claimsConfig writes a configuration whose production is an unmanaged
// profile at url.
func claimsConfig(t *testing.T, url string) string {
	p := filepath.Join(t.TempDir(), "hiro.toml")
	cfg := fmt.Sprintf("[production]\nbackend = \"echo\"\n\n[backends.echo]\nengine = \"openai\"\nunmanaged = true\nbase_url = %q\nmodel = \"echo-model\"\n", url)
	if err := os.WriteFile(p, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExtractCLI(t *testing.T) {
	srv, n := echoEngine(t, 0)
	cfg := claimsConfig(t, srv.URL)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out, "--concurrency", "3")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	// 2 rejects: the hostile document's sentences that address the model
	// (recorded as data, not sent, not a failure).
	if !strings.Contains(stdout, "5 documents: 5 done now") || !strings.Contains(stdout, "2 rejects") {
		t.Errorf("summary:\n%s", stdout)
	}
	// A line per finished document on stderr (not a terminal here), as
	// the semantic gate writes them (issue 26, a new user's finding F8:
	// nothing until the end).
	for _, want := range []string{"extract: echo: document 1/5 (", "extract: echo: document 5/5 ("} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	claims, err := extract.ReadClaims(filepath.Join(out, extract.ClaimsFile))
	if err != nil || len(claims) != int(n.Load()) || claims[0].Backend != "echo" || claims[0].Model != "echo-model" {
		t.Errorf("claims %d (err %v) for %d requests", len(claims), err, n.Load())
	}
	// Scoring the same inputs twice gives the same bytes.
	_, a, _ := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", filepath.Join(out, extract.ClaimsFile), "--json")
	_, b, _ := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", filepath.Join(out, extract.ClaimsFile), "--json")
	if a != b || !strings.Contains(a, `"schema_valid_rate": 1`) {
		t.Errorf("eval JSON differs between runs or lacks the schema-valid rate:\n%s", a)
	}
	code, text, _ := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", filepath.Join(out, extract.ClaimsFile))
	if code != ExitOK || !strings.Contains(text, "overall") {
		t.Errorf("eval text exit %d:\n%s", code, text)
	}
	// Bad input is rejected with a reason and the exit status says so.
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "ok.txt"), []byte("The Varda River is 412 kilometres long."), 0o644)
	os.WriteFile(filepath.Join(docs, "bad.txt"), []byte("\xff\xfe not text"), 0o644)
	out2 := filepath.Join(t.TempDir(), "out")
	code, stdout, _ = claimsCLI(t, "--config", cfg, "extract", docs, "--out", out2, "--json")
	var sum extract.Summary
	if code != ExitFailed || json.Unmarshal([]byte(stdout), &sum) != nil || sum.Stats.Rejects != 1 || sum.Stats.Claims != 1 {
		t.Errorf("exit %d, summary %s", code, stdout)
	}
}

func TestExtractCLIUsage(t *testing.T) {
	srv, _ := echoEngine(t, 0)
	cfg := claimsConfig(t, srv.URL)
	for _, args := range [][]string{
		{"extract", "--corpus", claimsMiniCorpus},
		{"extract", "--out", t.TempDir()},
		{"extract", "x.txt", "--corpus", claimsMiniCorpus, "--out", t.TempDir()},
		{"extract", "--corpus", claimsMiniCorpus, "--out", t.TempDir(), "--backend", "nope"},
		{"extract", "--corpus", claimsMiniCorpus, "--out", t.TempDir(), "--concurrency", "0"},
		{"extract", "--corpus", t.TempDir(), "--out", t.TempDir()},
		{"eval", "--corpus", claimsMiniCorpus},
		{"corpus", "verify", t.TempDir()},
		{"corpus", "import", "other", "f", "--take", "1", "--out", t.TempDir()},
	} {
		code, _, stderr := claimsCLI(t, append([]string{"--config", cfg}, args...)...)
		if code != ExitUsage || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 with a message", args, code, stderr)
		}
	}
}

// TestExtractKilledAndResumed kills a real hiro process with SIGKILL in
// the middle of a run and runs it again: the second run finishes without
// redoing finished documents and without duplicate claims.
func TestExtractKilledAndResumed(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the hiro binary")
	}
	bin := testsupport.Hiro(t)
	srv, n := echoEngine(t, 40*time.Millisecond)
	cfg := claimsConfig(t, srv.URL)
	out := filepath.Join(t.TempDir(), "out")
	args := []string{"--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out, "--concurrency", "1"}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progress := filepath.Join(out, extract.ProgressFile)
	deadline := time.Now().Add(30 * time.Second)
	for countLines(progress) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no checkpoint after 30s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	finished := countLines(progress)
	if finished >= 5 {
		t.Skipf("the run finished (%d documents) before it could be killed", finished)
	}
	before := n.Load()
	res, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("rerun: %v\n%s", err, res)
	}
	if !strings.Contains(string(res), fmt.Sprintf("%d finished earlier", finished)) {
		t.Errorf("rerun did not skip the %d finished documents:\n%s", finished, res)
	}
	// The progress counts on from what the resume reused (issue 26 F12:
	// it said "document 1/5" and "0 of 5 documents done" after a resume).
	if want := fmt.Sprintf("extract: echo: %d of 5 documents done from the interrupted run, resuming %d\n", finished, 5-finished); !strings.Contains(string(res), want) {
		t.Errorf("rerun does not say what it reused (%q):\n%s", want, res)
	}
	if want := fmt.Sprintf("extract: echo: document %d/5 (", finished+1); !strings.Contains(string(res), want) {
		t.Errorf("rerun's first document line is not %q:\n%s", want, res)
	}
	if strings.Contains(string(res), "document 1/5 (") {
		t.Errorf("rerun counts from 1 again:\n%s", res)
	}
	claims, err := extract.ReadClaims(filepath.Join(out, extract.ClaimsFile))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range claims {
		k := fmt.Sprintf("%s/%d/%s", c.DocID, c.SentenceIndex, c.Text)
		if seen[k] {
			t.Errorf("duplicate claim after resume: %s", k)
		}
		seen[k] = true
	}
	// 27 sentences in the corpus, 2 of which address the model (no
	// claim): one claim each for the other 25, none twice.
	if len(claims) != 25 {
		t.Errorf("%d claims after resume, want 25", len(claims))
	}
	if redone := n.Load() - before; redone >= 25 {
		t.Errorf("rerun sent %d requests: finished documents were redone", redone)
	}
}

func countLines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	return n
}

// A backend that is down fails the run once, clearly, before any request.
func TestExtractBackendDown(t *testing.T) {
	srv, n := echoEngine(t, 0)
	url := srv.URL
	srv.Close()
	cfg := claimsConfig(t, url)
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFailed, stdout, stderr)
	}
	if strings.Count(stderr, "backend is not up") != 1 || !strings.Contains(stderr, "echo at "+url) {
		t.Errorf("stderr should say once that the backend is not up, naming it:\n%s", stderr)
	}
	if n.Load() != 0 {
		t.Errorf("%d requests sent to a backend that is down", n.Load())
	}
	// A run that sent nothing claims no folder: the next run, on another
	// backend, is a new run there, not "a different run".
	if _, err := os.Stat(out); err == nil {
		ls, _ := os.ReadDir(out)
		t.Errorf("the run wrote %s for a backend that is down: %v", out, ls)
	}
	up, _ := echoEngine(t, 0)
	code, stdout, stderr = claimsCLI(t, "--config", claimsConfig(t, up.URL), "extract", "--corpus", claimsMiniCorpus, "--out", out)
	if code != ExitOK {
		t.Fatalf("the next run on a backend that is up: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A resumed run whose retried documents now succeed reports the output as
// it now is: the earlier rejects are superseded and the exit status is 0.
func TestExtractResumeSupersedesRejects(t *testing.T) {
	srv, _, failing := echoEngineFailing(t, 0)
	cfg := claimsConfig(t, srv.URL)
	out := filepath.Join(t.TempDir(), "out")
	failing.Store(true)
	code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out, "--max-repairs", "0")
	if code != ExitFailed {
		t.Fatalf("first run against a failing server: exit %d\n%s%s", code, stdout, stderr)
	}
	first, err := extract.ReadRejects(filepath.Join(out, extract.RejectsFile))
	if err != nil || len(first) == 0 {
		t.Fatalf("first run wrote %d rejects (%v)", len(first), err)
	}
	failing.Store(false)
	code, stdout, stderr = claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out, "--max-repairs", "0", "--json")
	var sum extract.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("summary: %v\n%s%s", err, stdout, stderr)
	}
	// The only current rejects are the hostile document's 2 sentences
	// that address the model (recorded as data, not a failure).
	if code != ExitOK || sum.Stats.Rejects != sum.Stats.AddressesModel || sum.Stats.AddressesModel != 2 || sum.Stats.DocumentsFailed != 0 || sum.Stats.SupersededRejects != len(first) {
		t.Fatalf("resumed run: exit %d, stats %+v; want exit 0, only the 2 addressing rejects, 0 failed, %d superseded", code, sum.Stats, len(first))
	}
	cur, err := extract.ReadCurrentRejects(out)
	if err != nil || len(cur) != 2 {
		t.Errorf("current rejects %d (%v), want the 2 addressing the model", len(cur), err)
	}
	all, _ := extract.ReadRejects(filepath.Join(out, extract.RejectsFile))
	if len(all) != len(first)+2 {
		t.Errorf("rejects.jsonl holds %d lines, want the %d superseded ones kept and the 2 addressing the model", len(all), len(first))
	}
	// The text summary says so in words.
	code, stdout, _ = claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out, "--max-repairs", "0")
	if code != ExitOK || !strings.Contains(stdout, "superseded") || !strings.Contains(stdout, "2 rejects") {
		t.Errorf("third run: exit %d\n%s", code, stdout)
	}
}

// A document over --max-doc-bytes is read only just past the bound; its
// rejection still says its real size, not the bytes read.
func TestExtractTooLongSaysTheRealSize(t *testing.T) {
	srv, _ := echoEngine(t, 0)
	dir := t.TempDir()
	doc := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(doc, bytes.Repeat([]byte("A sentence of the long document.\n"), 1_440_000/33+1)[:1_440_000], 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	code, stdout, stderr := claimsCLI(t, "--config", claimsConfig(t, srv.URL), "extract", doc, "--out", out)
	if code == ExitUsage {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	rs, err := extract.ReadRejects(filepath.Join(out, extract.RejectsFile))
	if err != nil || len(rs) != 1 || len(rs[0].Reasons) != 1 || rs[0].Reasons[0].Code != extract.ReasonDocumentTooLong {
		t.Fatalf("rejects %+v (%v), want one document_too_long", rs, err)
	}
	if d := rs[0].Reasons[0].Detail; !strings.HasPrefix(d, "1440000 bytes, more than the bound of 1048576 bytes") {
		t.Errorf("detail %q, want the document's 1440000 bytes", d)
	}
}

// A run whose rejects include sentences that address the model says so on
// its "this run" line: those rejects were never sent, so a count taken of
// the requests (the router's shadow account) cannot show them.
func TestExtractSummarySaysRejectsNotSent(t *testing.T) {
	var out bytes.Buffer
	p := &config.Profile{Name: "router", BaseURL: "http://127.0.0.1:1", Model: "m"}
	s := &extract.Summary{OutDir: "out", Documents: 5, Done: 5, Claims: 46, Rejects: 3, NotSent: 2, Requests: 25, Replies: 25, WallSeconds: 1}
	printExtractSummary(&Globals{Stdout: &out}, s, p)
	if want := "\nthis run: 46 claims, 3 rejects (2 sentences never sent: they address the model), 25 requests, 25 replies,"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	s.NotSent = 1
	printExtractSummary(&Globals{Stdout: &out}, s, p)
	if want := "3 rejects (1 sentence never sent: it addresses the model), 25 requests"; !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	s.NotSent = 0
	printExtractSummary(&Globals{Stdout: &out}, s, p)
	if strings.Contains(out.String(), "never sent") {
		t.Errorf("no sentence left unsent, yet the summary says one was:\n%s", out.String())
	}
}

// extract's and extract merge's summary lines say "1 document", "1 claim",
// "1 reject"... when a count is one, and the plural otherwise.
func TestExtractSummaryPlurals(t *testing.T) {
	var out bytes.Buffer
	s := &extract.Summary{OutDir: "out", Documents: 1, Done: 1, Claims: 1, Rejects: 1, Requests: 1, Replies: 1, CompletionTokens: 1, WallSeconds: 1,
		Client: &llm.Stats{Retried429: 1, SucceededAfterRetry: 1},
		Stats:  extract.Stats{DocumentsDone: 1, Claims: 1, Rejects: 1, SupersededRejects: 1, SchemaValidReplies: 1, Replies: 1}}
	printExtractSummary(&Globals{Stdout: &out}, s, &config.Profile{Name: "prod", BaseURL: "http://127.0.0.1:1", Model: "m"})
	for _, want := range []string{
		"\n1 document: 1 done now, 0 failed now, 0 finished earlier\n",
		"\nthis run: 1 claim, 1 reject, 1 request, 1 reply, 1 output token in 1.0s",
		"\noverload: 1 busy answer retried (1 HTTP 429, 0 HTTP 503, 0.0s waited), 1 request succeeded after retries, 0 gave up at the bound\n",
		"\ndirectory out now: 1 document done, 0 failed, 1 claim, 1 reject, schema-valid replies 1 of 1\n",
		"\n1 earlier reject was superseded: its document was redone; it stays in rejects.jsonl but no longer counts\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	// Interrupted, the counts are of the finished documents, and the line
	// after says what was sent in all: two "this run" figures no more.
	out.Reset()
	s.Interrupted, s.RequestsSent, s.RepliesReceived, s.Unfinished = true, 3, 2, 1
	printExtractSummary(&Globals{Stdout: &out}, s, &config.Profile{Name: "prod", BaseURL: "http://127.0.0.1:1", Model: "m"})
	for _, want := range []string{
		"\nthe documents this run finished: 1 claim, 1 reject, 1 request, 1 reply",
		"\ninterrupted: this run sent 3 requests and had 2 replies in all, with the documents cut short; the 1 document it finished is kept in out; 1 document started and not finished is not kept",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("interrupted summary lacks %q:\n%s", want, out.String())
		}
	}
	m := &extract.MergeSummary{OutDir: "merged", Shards: 1, Documents: 1, Stats: extract.Stats{DocumentsDone: 1, Claims: 1, Rejects: 1, SchemaValidReplies: 1, Replies: 1}}
	if got, want := mergeSummaryLine(m), "merged 1 shard into merged: 1 document (1 done, 0 failed), 1 claim, 1 reject, schema-valid replies 1 of 1"; got != want {
		t.Errorf("merge summary %q, want %q", got, want)
	}
	m = &extract.MergeSummary{OutDir: "merged", Shards: 2, Documents: 0}
	if got, want := mergeSummaryLine(m), "merged 2 shards into merged: 0 documents (0 done, 0 failed), 0 claims, 0 rejects, schema-valid replies 0 of 0"; got != want {
		t.Errorf("merge summary %q, want %q", got, want)
	}
}

// A named file that is not a document is refused before anything is sent
// (the rule corpus freeze applies); a folder's files that are not
// documents are named on stderr, not dropped in silence (issue 26, T18).
func TestExtractRefusesANamedNonDocumentAndNamesTheLeftOut(t *testing.T) {
	srv, n := echoEngine(t, 0)
	cfg := claimsConfig(t, srv.URL)
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "library.md"), []byte("Marta Olsen founded the Olsen Bakery in Tromvik in 1952.\n"), 0o644)
	pic := filepath.Join(docs, "pic.png")
	os.WriteFile(pic, []byte("x\n"), 0o644)
	code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", pic, "--out", filepath.Join(t.TempDir(), "out"))
	if code != ExitUsage || !strings.Contains(stderr, pic+": not a document (.txt, .md or .markdown)") || n.Load() != 0 {
		t.Errorf("extract of a .png: exit %d, %d requests, want %d and 0 naming it\n%s%s", code, n.Load(), ExitUsage, stdout, stderr)
	}
	code, stdout, stderr = claimsCLI(t, "--config", cfg, "extract", docs, "--out", filepath.Join(t.TempDir(), "out"))
	if code != ExitOK || !strings.Contains(stderr, "hiro: extract: left out 1 file that is not a document (.txt, .md or .markdown): "+pic+"\n") {
		t.Errorf("extract of a folder with a .png: exit %d, want 0 naming the .png left out\n%s%s", code, stdout, stderr)
	}
}
