package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hiro corpus freeze makes a user's folder a corpus that verify, extract
// and eval accept; verify names both digests once a file changed.
func TestCorpusFreezeThenVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	os.MkdirAll(filepath.Join(dir, "docs"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "library.md"), []byte("# Library\n\nThe library opened in 1911.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "gold.jsonl"), []byte(`{"doc_id":"library","sentence_index":0,"text":"The library opened in 1911."}`+"\n"), 0o644)
	code, out, errs := runHiro(t, "corpus", "freeze", dir)
	if code != ExitOK || !strings.Contains(out, "1 document, 1 gold claim, digest ") {
		t.Fatalf("freeze: exit %d\n%s%s", code, out, errs)
	}
	digest := strings.TrimSpace(out[strings.LastIndex(out, "digest ")+len("digest "):])
	if code, out, _ := runHiro(t, "corpus", "verify", dir); code != ExitOK || !strings.Contains(out, digest) {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(dir, "docs", "library.md"), []byte("# Library\n\nThe library opened in 1912.\n"), 0o644)
	code, out, _ = runHiro(t, "corpus", "verify", dir)
	if code != ExitFailed || !strings.Contains(out, "changed docs/library.md") || !strings.Contains(out, ": 1 problem\n") ||
		!strings.Contains(out, "expected digest "+digest) || !strings.Contains(out, "actual digest   ") {
		t.Errorf("verify after an edit: exit %d\n%s", code, out)
	}
	if code, _, errs := runHiro(t, "corpus", "freeze", filepath.Join(dir, "nope")); code != ExitUsage || !strings.Contains(errs, "not a directory") {
		t.Errorf("freeze of a missing folder: exit %d %s", code, errs)
	}
	os.WriteFile(filepath.Join(dir, "gold.jsonl"), []byte(`{"doc_id":"librar","sentence_index":0,"text":"x"}`+"\n"), 0o644)
	if code, _, errs := runHiro(t, "corpus", "freeze", dir); code != ExitFailed || !strings.Contains(errs, `doc_id "librar" is no document`) {
		t.Errorf("freeze with a claim naming no document: exit %d %s", code, errs)
	}
}
