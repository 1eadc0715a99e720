package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/eval"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// goodClaimLine is a claim of corpora/hiro-mini's document "bakery" as
// hiro extract writes it.
const goodClaimLine = `{"doc_id":"bakery","sentence_index":0,"sentence_span":[0,56],"quote_span":[0,56],"span_unit":"utf8_bytes","text":"Marta Olsen founded the Olsen Bakery in Tromvik in 1952.","quote":"Marta Olsen founded the Olsen Bakery in Tromvik in 1952.","match":"exact"}`

// A directory given as --claims, a file as --corpus or --out, a path
// under a file, a threshold that is not a number in (0, 1]: bad usage
// (exit 2) with a message naming the path and what to give instead.
func TestEvalExtractPathKindsAreUsage(t *testing.T) {
	srv, n := echoEngine(t, 0)
	cfg := claimsConfig(t, srv.URL)
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	os.Mkdir(run, 0o755)
	claims := filepath.Join(run, "claims.jsonl")
	os.WriteFile(claims, []byte(goodClaimLine+"\n"), 0o644)
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, []byte("keep me"), 0o644)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"eval", "--corpus", claimsMiniCorpus, "--claims", run}, []string{run + " is a directory", "--claims " + claims}},
		{[]string{"eval", "--corpus", file, "--claims", claims}, []string{file + " is a file, not a directory", "manifest.json"}},
		{[]string{"eval", "--corpus", claimsMiniCorpus, "--claims", filepath.Join(file, "claims.jsonl")}, []string{"a folder above it is a file"}},
		{[]string{"eval", "--corpus", claimsMiniCorpus, "--claims", claims, "--threshold", "NaN"}, []string{"--threshold NaN", "(0, 1]"}},
		{[]string{"extract", "--corpus", claimsMiniCorpus, "--out", file}, []string{file + " is an existing file, not a directory", "--out"}},
		{[]string{"extract", "--corpus", claimsMiniCorpus, "--out", filepath.Join(file, "sub")}, []string{"a folder above it is a file", "--out"}},
		{[]string{"extract", "merge", "--out", file, run}, []string{"not a directory"}},
		{[]string{"corpus", "import", "factcheck-gpt", claims, "--take", "1", "--out", file}, []string{"--out " + file + " is an existing file, not a directory"}},
		{[]string{"corpus", "import", "factcheck-gpt", claims, "--take", "1", "--out", filepath.Join(file, "c")}, []string{"a folder above it is a file"}},
	} {
		code, _, stderr := claimsCLI(t, append([]string{"--config", cfg}, c.args...)...)
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want %d (bad usage)\n%s", c.args, code, ExitUsage, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, w, stderr)
			}
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Errorf("the file given as --out was changed: %q", b)
	}
	if n.Load() != 0 {
		t.Errorf("%d requests sent by runs that were bad usage", n.Load())
	}
	// The good claims file scores.
	if code, _, stderr := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", claims); code != ExitOK {
		t.Errorf("eval of a good claims file: exit %d\n%s", code, stderr)
	}
}

// A claims.jsonl line that is not a claim object (not JSON, not an
// object, no doc_id or text, a field of the wrong type, a span that is
// not one of the document) stops eval with exit 1, naming the file, the
// line and what is wrong; nothing is scored.
func TestEvalRejectsMalformedClaimLines(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`[1, 2]`, "is an array, not a JSON object"},
		{`"a claim"`, "is a string, not a JSON object"},
		{`null`, "is null, not a JSON object"},
		{`{"doc_id":"bakery","text":"Marta Olsen`, "not valid JSON"},
		{`{"doc_id":"bakery"}`, `"text" is missing`},
		{`{"text":"Marta Olsen founded a bakery"}`, `"doc_id" is missing`},
		{`{"doc_id":"bakery","text":"   "}`, `"text" is empty`},
		{`{"doc_id":"","text":"Marta Olsen founded a bakery"}`, `"doc_id" is empty`},
		{`{"doc_id":7,"text":"Marta Olsen founded a bakery"}`, `"doc_id" is a number, not a string`},
		{`{"doc_id":"bakery","text":["Marta"]}`, `"text" is an array, not a string`},
		{`{"doc_id":"bakery","text":"Marta Olsen founded a bakery","quote":3}`, `"quote" is a number, not a string`},
		{`{"doc_id":"bakery","text":"Marta Olsen founded a bakery","sentence_index":"0"}`, `"sentence_index" is a string, not an integer`},
		{`{"doc_id":"bakery","text":"Marta Olsen founded a bakery","sentence_index":-1}`, `"sentence_index" is -1, not an integer >= 0`},
		{`{"doc_id":"bakery","text":"Marta Olsen founded a bakery","sentence_span":[5]}`, `"sentence_span" is [5], not two integers`},
		{`{"doc_id":"bakery","text":"Marta Olsen founded a bakery","sentence_span":[9,2]}`, `ends before it starts`},
		{`{"doc_id":"bakery","text":"Marta Olsen founded a bakery","sentence_span":[0,99999]}`, `ends after document "bakery"`},
	} {
		dir := t.TempDir()
		claims := filepath.Join(dir, "claims.jsonl")
		os.WriteFile(claims, []byte(goodClaimLine+"\n\n"+c.line+"\n"), 0o644)
		code, stdout, stderr := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", claims)
		if code != ExitFailed {
			t.Errorf("%s: exit %d, want %d (claims could not be read)\n%s%s", c.line, code, ExitFailed, stdout, stderr)
			continue
		}
		where := claims + ":3"
		if strings.Contains(c.want, "ends after") {
			where = "line 3"
		}
		if !strings.Contains(stderr, where) || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, claims) {
			t.Errorf("%s: stderr should name %s and say %q:\n%s", c.line, where, c.want, stderr)
		}
		if strings.Contains(stdout, "overall") {
			t.Errorf("%s: a report was printed:\n%s", c.line, stdout)
		}
	}
}

// TestEvalIgnoresStaleStatsAfterSIGKILL: a run interrupted with SIGINT
// writes stats.json; the resumed run is killed with SIGKILL after it
// committed more documents, so stats.json is the earlier run's. eval must
// not report its schema-valid rate for the later claims: null, with a
// warning saying why. After the run is finished, the rate is back.
func TestEvalIgnoresStaleStatsAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the hiro binary")
	}
	bin := testsupport.Hiro(t)
	// A token every 3 ms: a reply takes about 0.3 s.
	cfg := fakeEngineConfig(t, "--token-delay", "3ms")
	out := filepath.Join(t.TempDir(), "out")
	env := append(os.Environ(), "HIRO_LEASE_DIR="+t.TempDir())
	progress := filepath.Join(out, extract.ProgressFile)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out, "--concurrency", "1")
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	waitLines := func(cmd *exec.Cmd, n int) {
		deadline := time.Now().Add(60 * time.Second)
		for countLines(progress) < n {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("fewer than %d checkpoints after 60s", n)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	cmd := start()
	waitLines(cmd, 1)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	first := countLines(progress)
	if _, err := os.Stat(filepath.Join(out, extract.StatsFile)); err != nil || first >= 4 {
		t.Skipf("SIGINT run left %d checkpoints, stats.json: %v", first, err)
	}
	cmd = start()
	waitLines(cmd, first+1)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if countLines(progress) >= 5 {
		t.Skip("the resumed run finished before it could be killed")
	}
	claims := filepath.Join(out, extract.ClaimsFile)
	code, stdout, stderr := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", claims, "--json")
	if code != ExitOK {
		t.Fatalf("eval exit %d\n%s%s", code, stdout, stderr)
	}
	var r eval.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.SchemaValidRate != nil || r.StatsIgnored == "" || r.Replies != 0 {
		t.Errorf("stale stats.json used: rate %v, replies %d, stats_ignored %q", r.SchemaValidRate, r.Replies, r.StatsIgnored)
	}
	if !strings.Contains(stderr, "stats.json does not describe") || !strings.Contains(stderr, "schema-valid rate is left out") {
		t.Errorf("no warning about the stale stats.json on stderr:\n%s", stderr)
	}
	// Finished, the run rewrites stats.json, and eval uses it again.
	fin := exec.Command(bin, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out, "--concurrency", "4")
	fin.Env = env
	if b, err := fin.CombinedOutput(); err != nil {
		t.Fatalf("finishing run: %v\n%s", err, b)
	}
	code, stdout, stderr = claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", claims, "--json")
	r = eval.Report{}
	json.Unmarshal([]byte(stdout), &r)
	if code != ExitOK || r.SchemaValidRate == nil || r.StatsIgnored != "" || strings.Contains(stderr, "stats.json") {
		t.Errorf("after the finishing run: exit %d, rate %v, ignored %q\n%s", code, r.SchemaValidRate, r.StatsIgnored, stderr)
	}
}

// Claim lines after the last checkpoint (a run killed between writing a
// document's claims and its checkpoint) are not scored, and a progress
// line torn by the kill is not an error.
func TestEvalLeavesUncommittedClaimsOut(t *testing.T) {
	srv, _ := echoEngine(t, 0)
	cfg := claimsConfig(t, srv.URL)
	out := filepath.Join(t.TempDir(), "out")
	if code, stdout, stderr := claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", out); code != ExitOK {
		t.Fatalf("extract exit %d\n%s%s", code, stdout, stderr)
	}
	claims := filepath.Join(out, extract.ClaimsFile)
	_, ref, _ := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", claims, "--json")
	f, _ := os.OpenFile(claims, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(goodClaimLine + "\n" + goodClaimLine + "\n")
	f.Close()
	p, _ := os.OpenFile(filepath.Join(out, extract.ProgressFile), os.O_APPEND|os.O_WRONLY, 0)
	p.WriteString(`{"doc_id":"bakery","status":"do`)
	p.Close()
	code, stdout, stderr := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", claims, "--json")
	var a, b eval.Report
	json.Unmarshal([]byte(ref), &a)
	json.Unmarshal([]byte(stdout), &b)
	if code != ExitOK || b.UncommittedClaims != 2 || b.Overall != a.Overall || !strings.Contains(stderr, "after the last checkpoint") {
		t.Errorf("exit %d, uncommitted %d, overall %+v (want %+v)\n%s", code, b.UncommittedClaims, b.Overall, a.Overall, stderr)
	}
	// A claims file shorter than its checkpoints say is not of that run.
	raw, _ := os.ReadFile(claims)
	os.WriteFile(claims, raw[:len(raw)/2], 0o644)
	if code, _, stderr := claimsCLI(t, "eval", "--corpus", claimsMiniCorpus, "--claims", claims); code != ExitFailed || !strings.Contains(stderr, "not of one extract run") {
		t.Errorf("claims shorter than the checkpoint: exit %d\n%s", code, stderr)
	}
}

// 'hiro eval --claims rejects.jsonl' (the other file extract writes) is
// named as the wrong file, with the claims file to give instead, not
// scored or reported as claims of an unknown document.
func TestEvalGivenTheRejectsFile(t *testing.T) {
	dir := t.TempDir()
	rej := filepath.Join(dir, "rejects.jsonl")
	must(t, os.WriteFile(rej, []byte(`{"kind":"claim","doc_id":"library","sentence_index":0,"attempt":1,"reasons":[{"code":"not_grounded"}],"text":"The library","model":"m","backend":"b","prompt_hash":"h"}`+"\n"), 0o644))
	code, out, errs := runHiro(t, "eval", "--corpus", filepath.Join("..", "..", "corpora", "hiro-mini"), "--claims", rej)
	want := rej + ":1 is a reject record"
	if code == ExitOK || !strings.Contains(errs, want) || !strings.Contains(errs, filepath.Join(dir, "claims.jsonl")) || strings.Contains(errs, "corpus hiro-mini does not have") {
		t.Errorf("eval of rejects.jsonl: exit %d, stdout %q, stderr %q; want %q and the claims file beside it", code, out, errs, want)
	}
}
