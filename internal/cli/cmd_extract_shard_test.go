package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/extract"
)

// shardCompared are the files a merge must reproduce byte for byte.
var shardCompared = []string{extract.ClaimsFile, extract.RejectsFile, extract.ProgressFile, extract.StatsFile, extract.RunFile}

// shardedEqualsUnsharded extracts corpusDir through a real fake engine
// answering with claims that quote the sentence, once whole and once in n
// shards, merges the shards, and requires the merged directory and its
// eval report to be byte-identical to the unsharded run's.
func shardedEqualsUnsharded(t *testing.T, corpusDir string, n int) {
	t.Helper()
	fake := buildFakeEngine(t)
	port := cliFreePort(t)
	startFakeDirect(t, fake, port, "")
	dir := t.TempDir()
	t.Setenv("HIRO_LEASE_DIR", t.TempDir())
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[backends.fake]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:%d\"\nmodel = \"fake-model\"\n", port)), 0o644)
	run := func(args ...string) string {
		t.Helper()
		code, out, errs := claimsCLI(t, append([]string{"--config", cfg}, args...)...)
		if code != ExitOK && code != ExitFailed { // 1: natural rejects
			t.Fatalf("%q: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	whole := filepath.Join(dir, "whole")
	run("extract", "--backend", "fake", "--corpus", corpusDir, "--out", whole, "--concurrency", "8", "--json")
	var shards []string
	nonEmpty := 0
	for i := 0; i < n; i++ {
		s := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		run("extract", "--backend", "fake", "--corpus", corpusDir, "--out", s, "--shard", fmt.Sprintf("%d/%d", i, n), "--concurrency", "8", "--json")
		if b, _ := os.ReadFile(filepath.Join(s, extract.ProgressFile)); len(b) > 0 {
			nonEmpty++
		}
		shards = append(shards, s)
	}
	if nonEmpty < 2 {
		t.Fatalf("only %d of %d shards got documents: the split does not spread", nonEmpty, n)
	}
	merged := filepath.Join(dir, "merged")
	code, out, errs := claimsCLI(t, append([]string{"--config", cfg, "extract", "merge", "--out", merged}, shards...)...)
	if code != ExitOK || !strings.Contains(out, fmt.Sprintf("merged %d shards", n)) {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errs)
	}
	for _, f := range shardCompared {
		a, _ := os.ReadFile(filepath.Join(whole, f))
		b, _ := os.ReadFile(filepath.Join(merged, f))
		if len(a) == 0 && f == extract.ClaimsFile {
			t.Fatalf("the unsharded run wrote no claims")
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the unsharded run (%d bytes) and the merged shards (%d bytes)", f, len(a), len(b))
		}
	}
	_, ea, _ := claimsCLI(t, "eval", "--corpus", corpusDir, "--claims", filepath.Join(whole, extract.ClaimsFile), "--json")
	_, eb, _ := claimsCLI(t, "eval", "--corpus", corpusDir, "--claims", filepath.Join(merged, extract.ClaimsFile), "--json")
	if ea == "" || ea != eb {
		t.Errorf("eval of the merged shards differs from the unsharded run's:\n%s\n---\n%s", ea, eb)
	}
}

func TestExtractShardsMergeToUnsharded(t *testing.T) {
	shardedEqualsUnsharded(t, claimsMiniCorpus, 3)
}

// TestExtractShardsFactcheckGPT: the Factcheck-GPT corpus (all 94
// responses, imported with hiro corpus import) in 4 shards merges to the
// unsharded result. Skips when ../shared is absent.
func TestExtractShardsFactcheckGPT(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	src := "/work/shared/corpora/factcheck-gpt/factcheck-GPT-benchmark.jsonl"
	if p := os.Getenv("HIRO_FACTCHECK_GPT"); p != "" {
		src = p
	}
	if _, err := os.Stat(src); err != nil {
		t.Skipf("Factcheck-GPT benchmark not found at %s (set HIRO_FACTCHECK_GPT): %v", src, err)
	}
	dir := filepath.Join(t.TempDir(), "fc94")
	if code, out, errs := claimsCLI(t, "corpus", "import", "factcheck-gpt", src, "--take", "94", "--out", dir); code != ExitOK {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	shardedEqualsUnsharded(t, dir, 4)
}

func TestExtractShardUsage(t *testing.T) {
	srv, _ := echoEngine(t, 0)
	cfg := claimsConfig(t, srv.URL)
	dir := t.TempDir()
	for _, s := range []string{"3/3", "-1/2", "1", "a/b", "0/0"} {
		if code, _, errs := claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "x"), "--shard", s); code != ExitUsage || !strings.Contains(errs, "I/N") {
			t.Errorf("--shard %s: exit %d %s", s, code, errs)
		}
	}
	s0, s1 := filepath.Join(dir, "s0"), filepath.Join(dir, "s1")
	claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", s0, "--shard", "0/2")
	// Resuming a shard's directory as another shard is refused.
	if code, _, errs := claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", s0, "--shard", "1/2"); code != ExitUsage || !strings.Contains(errs, "shard 0/2") {
		t.Errorf("resume as another shard: exit %d %s", code, errs)
	}
	// A missing shard, a repeated one, a non-empty destination.
	if code, _, errs := claimsCLI(t, "extract", "merge", "--out", filepath.Join(dir, "m1"), s0); code != ExitUsage || !strings.Contains(errs, "every shard") {
		t.Errorf("merge with a shard missing: exit %d %s", code, errs)
	}
	if code, _, errs := claimsCLI(t, "extract", "merge", "--out", filepath.Join(dir, "m2"), s0, s0); code != ExitUsage || !strings.Contains(errs, "both shard 0/2") {
		t.Errorf("merge with a shard twice: exit %d %s", code, errs)
	}
	claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", s1, "--shard", "1/2")
	if code, _, errs := claimsCLI(t, "extract", "merge", "--out", s0, s0, s1); code != ExitUsage || !strings.Contains(errs, "not empty") {
		t.Errorf("merge into a shard's directory: exit %d %s", code, errs)
	}
	// An unsharded run is not a shard: said so, not "committed 5 of its 0".
	whole := filepath.Join(dir, "whole")
	claimsCLI(t, "--config", cfg, "extract", "--corpus", claimsMiniCorpus, "--out", whole)
	if code, _, errs := claimsCLI(t, "extract", "merge", "--out", filepath.Join(dir, "m4"), whole); code != ExitUsage || !strings.Contains(errs, "is not a shard") || !strings.Contains(errs, "hiro eval --claims") {
		t.Errorf("merge of an unsharded run: exit %d %s", code, errs)
	}
	if code, out, errs := claimsCLI(t, "extract", "merge", "--out", filepath.Join(dir, "m3"), s1, s0); code != ExitOK {
		t.Errorf("merge in any order: exit %d %s%s", code, out, errs)
	}
}
