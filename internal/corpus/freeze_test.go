package corpus

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (path: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// A user's own documents and gold claims become a corpus that loads, with
// the digest of the documented formula; an edit and a second freeze give
// a new digest and name the old one.
func TestFreezeOwnCorpus(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mine")
	writeTree(t, dir, map[string]string{
		"docs/library.md":  "# Library\n\nThe library opened in 1911.\n",
		"docs/notes/a.txt": "The bridge is 40 metres long.",
		"gold.jsonl":       `{"doc_id":"library","sentence_index":0,"text":"The library opened in 1911."}` + "\n" + `{"doc_id":"notes/a","sentence_index":0,"text":"The bridge is 40 metres long."}` + "\n",
	})
	m, prev, err := Freeze(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if prev != "" || m.Name != "mine" || m.Documents != 2 || m.GoldClaims != 2 || len(m.Digest) != 64 {
		t.Errorf("manifest %+v, previous %q", m, prev)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Docs) != 2 || c.Docs[0].ID != "library" || c.Docs[1].ID != "notes/a" {
		t.Errorf("docs %+v", c.Docs)
	}
	// The digest is docs/corpus.md's formula: SHA-256 over the lines
	// "<sha256>  <path>\n" of every file but the manifest, sorted by path.
	if d := filesDigest(m.Files); d != m.Digest || m.Files[0].Path != "docs/library.md" || m.Files[2].Path != "gold.jsonl" {
		t.Errorf("files %+v digest %s", m.Files, d)
	}
	writeTree(t, dir, map[string]string{"docs/notes/a.txt": "The bridge is 41 metres long."})
	r, err := Verify(dir)
	if err != nil || r.OK || r.Digest != m.Digest || r.ActualDigest == m.Digest || len(r.ActualDigest) != 64 {
		t.Fatalf("verify after an edit: %+v %v", r, err)
	}
	m2, prev, err := Freeze(dir, "")
	if err != nil || prev != m.Digest || m2.Digest != r.ActualDigest {
		t.Errorf("refreeze: %+v previous %q, want previous %s and digest %s (%v)", m2, prev, m.Digest, r.ActualDigest, err)
	}
}

// Freeze refuses a layout or a claim it could not load, listing every
// problem, and writes nothing.
func TestFreezeRefusesBadInput(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"no docs", map[string]string{"gold.jsonl": ""}, []string{"no docs/ folder"}},
		{"bad claims", map[string]string{
			"docs/a.txt": "A.",
			"docs/a.md":  "# A",
			"docs/b.pdf": "x",
			"notes.txt":  "x",
			"gold.jsonl": `{"doc_id":"zz","sentence_index":0,"text":"x"}` + "\n" + `{"doc_id":"a","sentence_index":-1,"text":"x"}` + "\n",
		}, []string{`same id "a"`, "docs/b.pdf: not a document", "notes.txt: not part of a corpus", `doc_id "zz" is no document`, "sentence_index -1"}},
		{"bad json", map[string]string{"docs/a.txt": "A.", "gold.jsonl": `{"doc_id":"a","sentence":0}` + "\n"}, []string{"gold.jsonl:1", "unknown field"}},
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "c")
		writeTree(t, dir, c.files)
		_, _, err := Freeze(dir, "")
		if err == nil {
			t.Errorf("%s: frozen", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
			t.Errorf("%s: a manifest was written", c.name)
		}
	}
}

// 'hiro extract PATHS' and a corpus of the same files give the same ids.
func TestPathIDsAreCorpusIDs(t *testing.T) {
	mini := filepath.Join("..", "..", "corpora", "hiro-mini")
	c, err := Load(mini)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := LoadPaths([]string{filepath.Join(mini, DocsDir)})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != len(c.Docs) {
		t.Fatalf("%d documents from the paths, %d from the corpus", len(docs), len(c.Docs))
	}
	for i := range docs {
		if docs[i].ID != c.Docs[i].ID {
			t.Errorf("document %d: id %q from the paths, %q from the corpus", i, docs[i].ID, c.Docs[i].ID)
		}
	}
	one, err := LoadPaths([]string{c.Docs[0].Path})
	if err != nil || one[0].ID != c.Docs[0].ID {
		t.Errorf("one file: %v %v, want id %q", one, err, c.Docs[0].ID)
	}
}

// Freeze names every bad gold line with its line number, not only the
// first; past FreezeShown it lists the first ones and counts the rest.
func TestFreezeNamesEveryBadLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	writeTree(t, dir, map[string]string{"docs/a.txt": "A.", "gold.jsonl": `{"doc_id":"a","sentence_index":0,"text":"A."}` + "\n" +
		`{"doc_id":"zz","sentence_index":0,"text":"x"}` + "\nnot json\n" + `{"doc_id":"a","sentence_index":-2,"text":"x"}` + "\n"})
	_, _, err := Freeze(dir, "")
	var fe *FreezeError
	if !errors.As(err, &fe) || len(fe.Problems) != 3 {
		t.Fatalf("err %v, want a FreezeError with 3 problems", err)
	}
	for _, w := range []string{"3 problems, nothing written", `gold.jsonl:2: doc_id "zz"`, "gold.jsonl:3: not a gold claim", "gold.jsonl:4: sentence_index -2"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	var many strings.Builder
	for i := 0; i < FreezeShown+5; i++ {
		many.WriteString(`{"doc_id":"zz","sentence_index":0,"text":"x"}` + "\n")
	}
	writeTree(t, dir, map[string]string{"gold.jsonl": many.String()})
	_, _, err = Freeze(dir, "")
	if err == nil || !strings.Contains(err.Error(), "... and 5 more") || !strings.Contains(err.Error(), fmt.Sprintf("gold.jsonl:%d:", FreezeShown)) || strings.Contains(err.Error(), fmt.Sprintf("gold.jsonl:%d:", FreezeShown+1)) {
		t.Errorf("%d bad lines: %v", FreezeShown+5, err)
	}
}

// Issue 26 (F18): a document that is not UTF-8 (Latin-1 here), one that
// is empty and one of white space only are each refused, the file named
// with what is wrong (the byte offset and line of the first invalid
// byte; "empty") and what to do; nothing is written. They were frozen.
func TestFreezeRefusesDocumentsThatAreNotText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	writeTree(t, dir, map[string]string{
		"docs/latin1.txt": "First line.\ncaf\xe9 au lait.\n",
		"docs/empty.txt":  "",
		"docs/blank.md":   " \n\t\n",
		"docs/good.txt":   "Caf\u00e9 is UTF-8 here.",
	})
	_, _, err := Freeze(dir, "")
	var fe *FreezeError
	if !errors.As(err, &fe) || len(fe.Problems) != 3 {
		t.Fatalf("want a FreezeError with 3 problems, got %v", err)
	}
	for _, w := range []string{
		"docs/latin1.txt: not UTF-8: byte 0xe9 at byte offset 15 (line 2)", "iconv -f LATIN1 -t UTF-8",
		"docs/empty.txt: empty (0 bytes)", "docs/blank.md: only white space (4 bytes)", "remove the file",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "good.txt") {
		t.Errorf("a UTF-8 document was refused: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		t.Error("a manifest was written")
	}
}
