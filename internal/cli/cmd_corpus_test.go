package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCorpusImportVerifyCLI(t *testing.T) {
	file := "/work/shared/corpora/factcheck-gpt/factcheck-GPT-benchmark.jsonl"
	if p := os.Getenv("HIRO_FACTCHECK_GPT"); p != "" {
		file = p
	}
	if _, err := os.Stat(file); err != nil {
		t.Skipf("Factcheck-GPT benchmark not found at %s (set HIRO_FACTCHECK_GPT): %v", file, err)
	}
	dir := filepath.Join(t.TempDir(), "fc6")
	code, out, errs := claimsCLI(t, "corpus", "import", "factcheck-gpt", file, "--take", "6", "--out", dir)
	if code != ExitOK || !strings.Contains(out, "imported 6 of 94 sources") {
		t.Fatalf("import exit %d:\n%s%s", code, out, errs)
	}
	if code, out, _ = claimsCLI(t, "corpus", "verify", dir); code != ExitOK || !strings.Contains(out, "matches its manifest") {
		t.Errorf("verify exit %d:\n%s", code, out)
	}
	docs, _ := filepath.Glob(filepath.Join(dir, "docs", "*.txt"))
	os.WriteFile(docs[0], []byte("changed"), 0o644)
	code, out, _ = claimsCLI(t, "corpus", "verify", dir, "--json")
	if code != ExitFailed || !strings.Contains(out, `"changed"`) || !strings.Contains(out, `"ok": false`) {
		t.Errorf("verify after a change: exit %d:\n%s", code, out)
	}
	if code, _, _ = claimsCLI(t, "corpus", "import", "factcheck-gpt", file, "--take", "6", "--out", dir); code != ExitFailed {
		t.Errorf("import over an existing corpus: exit %d, want 1", code)
	}
}

// A missing input file is bad usage (exit 2), as for every other command,
// and nothing is written.
func TestCorpusImportMissingFileIsUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "fc6")
	missing := filepath.Join(t.TempDir(), "nope.jsonl")
	code, stdout, errs := runHiro(t, "corpus", "import", "factcheck-gpt", missing, "--take", "6", "--out", out)
	if code != ExitUsage || stdout != "" || !strings.HasPrefix(errs, "hiro: corpus import: "+missing+": file not found; download factcheck-GPT-benchmark.jsonl from the root of github.com/yuxiaw/Factcheck-GPT") ||
		!strings.Contains(errs, "8bbf41a58ee1b7431fecd2a23f231f764e378e04edeb4d2a7a83949a7f40cf4b") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 naming the missing file and where the benchmark comes from", code, stdout, errs)
	}
	// A file of another shape names what it lacks (issue 26, F17: it said
	// only "empty response").
	other := filepath.Join(t.TempDir(), "other.jsonl")
	os.WriteFile(other, []byte("{\"x\":1}\n"), 0o644)
	code, _, errs = runHiro(t, "corpus", "import", "factcheck-gpt", other, "--take", "6", "--out", out)
	if code == ExitOK || !strings.Contains(errs, "not a Factcheck-GPT record: no \"response\" field (keys: x)") {
		t.Errorf("a file of another shape: exit %d, stderr %q", code, errs)
	}
	// --take left out is said to be required, not "--take 0" (trial 10, Q14).
	code, _, errs = runHiro(t, "corpus", "import", "factcheck-gpt", other, "--out", out)
	if code != ExitUsage || !strings.Contains(errs, "--take is required") || strings.Contains(errs, "--take 0") {
		t.Errorf("no --take: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("%s was written: %v", out, err)
	}
}
