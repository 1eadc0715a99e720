package corpus

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "reseal corpora/hiro-mini after editing its files")

// miniDir is the project's own corpus with gold claims.
var miniDir = filepath.Join("..", "..", "corpora", "hiro-mini")

// FactcheckFile is the real Factcheck-GPT input, read in place.
const factcheckFile = "/work/shared/corpora/factcheck-gpt/factcheck-GPT-benchmark.jsonl"

func factcheckPath(t testing.TB) string {
	p := os.Getenv("HIRO_FACTCHECK_GPT")
	if p == "" {
		p = factcheckFile
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Factcheck-GPT benchmark not found at %s (set HIRO_FACTCHECK_GPT to its path): %v", p, err)
	}
	return p
}

func TestFindQuote(t *testing.T) {
	src := "In 1980, the oldest justice\n was  “William O. Douglas”."
	cases := []struct {
		quote, kind, span string
		ok                bool
	}{
		{"the oldest justice", MatchExact, "the oldest justice", true},
		{"The Oldest justice was", MatchNormalized, "the oldest justice\n was", true},
		{`"william o. douglas"`, MatchNormalized, "“William O. Douglas”", true},
		{"youngest justice", "", "", false},
		{"   ", "", "", false},
	}
	for _, c := range cases {
		s, e, kind, ok := FindQuote(src, c.quote)
		if ok != c.ok || kind != c.kind {
			t.Errorf("FindQuote(%q) = kind %q ok %v, want %q %v", c.quote, kind, ok, c.kind, c.ok)
			continue
		}
		if ok && src[s:e] != c.span {
			t.Errorf("FindQuote(%q) span = %q, want %q", c.quote, src[s:e], c.span)
		}
	}
}

func TestTokensAndNormalizeClaim(t *testing.T) {
	if got := Tokens("The U.S. grew 1,898 — “fast”!"); !reflect.DeepEqual(got, []string{"the", "u", "s", "grew", "1", "898", "fast"}) {
		t.Errorf("Tokens = %q", got)
	}
	if NormalizeClaim("Paris is  big.") != NormalizeClaim("paris IS big") {
		t.Error("claims differing in case, space and punctuation must normalise equal")
	}
}

func TestSplitPlainSpans(t *testing.T) {
	text := "  In 1980, Justice William O. Douglas was old.  He was born on Oct. 16, 1898. He died in 1980. The mirror is 3.6 metres wide.\n\nNew paragraph here"
	ss, err := Split(text, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"In 1980, Justice William O. Douglas was old.", "He was born on Oct. 16, 1898.", "He died in 1980.", "The mirror is 3.6 metres wide.", "New paragraph here"}
	if len(ss) != len(want) {
		t.Fatalf("got %d sentences %+v", len(ss), ss)
	}
	for i, s := range ss {
		if s.Text != want[i] || text[s.Start:s.End] != s.Text || s.Index != i || s.HeadingPath != nil {
			t.Errorf("sentence %d = %+v, want text %q at its span", i, s, want[i])
		}
	}
}

func TestSplitMarkdown(t *testing.T) {
	text := "# Top\n\nIntro sentence. Second one.\n\n## Sub ##\n\n- Item one is here.\n- Item two.\n\n```\ncode. not a sentence.\n```\n\n---\n\n### Deep\nUnder deep.\n\n## Other\n\n> Quoted line."
	ss, err := Split(text, true)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		text    string
		heading string
	}
	ws := []want{
		{"Intro sentence.", "Top"}, {"Second one.", "Top"},
		{"Item one is here.", "Top/Sub"}, {"Item two.", "Top/Sub"},
		{"Under deep.", "Top/Sub/Deep"}, {"Quoted line.", "Top/Other"},
	}
	if len(ss) != len(ws) {
		t.Fatalf("got %d sentences: %+v", len(ss), ss)
	}
	for i, s := range ss {
		if s.Text != ws[i].text || strings.Join(s.HeadingPath, "/") != ws[i].heading || text[s.Start:s.End] != s.Text {
			t.Errorf("sentence %d = %q under %q, want %q under %q", i, s.Text, s.HeadingPath, ws[i].text, ws[i].heading)
		}
	}
}

func TestLoadPaths(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub", ".hidden"), 0o755)
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("B."), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "a.md"), []byte("# A"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", ".hidden", "x.txt"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "skip.bin"), []byte("x"), 0o644)
	docs, err := LoadPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.ID)
	}
	if !reflect.DeepEqual(ids, []string{"b", "sub/a"}) || !docs[1].Markdown || docs[0].Markdown {
		t.Errorf("ids = %q (markdown %v %v)", ids, docs[0].Markdown, docs[1].Markdown)
	}
	if _, err := LoadPaths([]string{filepath.Join(dir, "b.txt"), filepath.Join(dir, "b.txt")}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate id: err = %v", err)
	}
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	if _, err := LoadPaths([]string{empty}); err == nil {
		t.Error("a directory with no documents must be an error")
	}
}

// A file named that is not a document is refused by the rule corpus
// freeze applies (NotDocument), and a folder's walk returns the files it
// left out, which LeftOutNote names: count and the first few (issue 26,
// T18).
func TestLoadPathsNamesWhatIsNotADocument(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "notes.md"), []byte("# Notes"), 0o644)
	for _, n := range []string{"a.png", "b.png", "c.png", "d.png"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x\n"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, ".hidden.png"), []byte("x"), 0o644)
	pic := filepath.Join(dir, "a.png")
	if _, err := LoadPaths([]string{pic}); err == nil || !strings.Contains(err.Error(), pic+": not a document (.txt, .md or .markdown)") {
		t.Errorf("a named .png: err = %v, want %q", err, NotDocument(pic))
	}
	docs, leftOut, err := LoadPathsLeftOut([]string{dir}, -1)
	if err != nil || len(docs) != 1 {
		t.Fatalf("LoadPathsLeftOut = %d docs, %v", len(docs), err)
	}
	want := []string{pic, filepath.Join(dir, "b.png"), filepath.Join(dir, "c.png"), filepath.Join(dir, "d.png")}
	if !reflect.DeepEqual(leftOut, want) {
		t.Errorf("left out %q, want %q (hidden entries are not listed)", leftOut, want)
	}
	note := LeftOutNote(leftOut)
	if !strings.HasPrefix(note, "left out 4 files that are not documents (.txt, .md or .markdown): "+pic+", ") || !strings.HasSuffix(note, " and 1 more") {
		t.Errorf("LeftOutNote = %q", note)
	}
	if n := LeftOutNote(leftOut[:1]); n != "left out 1 file that is not a document (.txt, .md or .markdown): "+pic {
		t.Errorf("LeftOutNote of one = %q", n)
	}
	os.Remove(filepath.Join(dir, "notes.md"))
	if _, err := LoadPaths([]string{dir}); err == nil || !strings.Contains(err.Error(), "left out 4 files") {
		t.Errorf("a folder of images only: err = %v, want the files left out named", err)
	}
}

func TestMiniCorpusFrozen(t *testing.T) {
	if *update {
		if _, err := Seal(miniDir, "hiro-mini", nil); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(miniDir)
	if err != nil {
		t.Fatalf("%v (after editing corpora/hiro-mini run: go test ./internal/corpus -run TestMiniCorpusFrozen -update)", err)
	}
	if len(c.Docs) != 5 || len(c.Gold) == 0 {
		t.Fatalf("docs %d gold %d", len(c.Docs), len(c.Gold))
	}
	ids := map[string]bool{}
	for _, d := range c.Docs {
		ids[d.ID] = true
	}
	for _, g := range c.Gold {
		if !ids[g.DocID] {
			t.Errorf("gold claim for unknown document %q", g.DocID)
		}
	}
}

// copyDir copies a corpus for tests that change it.
func copyDir(t *testing.T, src string) string {
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestVerifyDetectsDrift(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(dir string)
		want   string
	}{
		{"changed", func(d string) { os.WriteFile(filepath.Join(d, "docs", "rivers.txt"), []byte("edited"), 0o644) }, "changed docs/rivers.txt"},
		{"missing", func(d string) { os.Remove(filepath.Join(d, "gold.jsonl")) }, "missing gold.jsonl"},
		{"extra", func(d string) { os.WriteFile(filepath.Join(d, "docs", "new.txt"), []byte("x"), 0o644) }, "extra docs/new.txt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, miniDir)
			if r, err := Verify(dir); err != nil || !r.OK {
				t.Fatalf("pristine copy: %+v %v", r, err)
			}
			c.change(dir)
			r, err := Verify(dir)
			if err != nil {
				t.Fatal(err)
			}
			if r.OK || !strings.Contains(strings.Join(r.Problems(), "\n"), c.want) {
				t.Errorf("report %+v, want problem %q", r, c.want)
			}
			if _, err := Load(dir); err == nil {
				t.Error("Load must refuse a corpus that drifted")
			}
		})
	}
}

func TestImportFactcheckDeterministic(t *testing.T) {
	file := factcheckPath(t)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	ma, err := ImportFactcheckGPT(file, 6, a)
	if err != nil {
		t.Fatal(err)
	}
	mb, err := ImportFactcheckGPT(file, 6, b)
	if err != nil {
		t.Fatal(err)
	}
	if ma.Digest != mb.Digest || ma.Documents != 6 || ma.GoldClaims == 0 {
		t.Fatalf("digests %s %s, docs %d gold %d", ma.Digest, mb.Digest, ma.Documents, ma.GoldClaims)
	}
	ba, _ := os.ReadFile(filepath.Join(a, ManifestFile))
	bb, _ := os.ReadFile(filepath.Join(b, ManifestFile))
	if !bytes.Equal(ba, bb) {
		t.Error("two imports of the same file and take differ")
	}
	// The 6-source corpus is the first 6 of the 20-source one.
	m20, err := ImportFactcheckGPT(file, 20, filepath.Join(t.TempDir(), "c"))
	if err != nil {
		t.Fatal(err)
	}
	in20 := map[string]bool{}
	for _, f := range m20.Files {
		in20[f.Path] = true
	}
	for _, f := range ma.Files {
		if !in20[f.Path] && f.Path != GoldFile {
			t.Errorf("%s of the 6-source corpus is not in the 20-source corpus", f.Path)
		}
	}
	c, err := Load(a)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Docs) != 6 || len(c.Gold) != ma.GoldClaims {
		t.Errorf("loaded %d docs %d gold", len(c.Docs), len(c.Gold))
	}
	if _, err := ImportFactcheckGPT(file, 6, a); err == nil {
		t.Error("importing into a non-empty directory must fail")
	}
	if _, err := ImportFactcheckGPT(file, 1000, filepath.Join(t.TempDir(), "d")); err == nil {
		t.Error("take beyond the file must fail")
	}
}

// Rows that repeat a prompt with another response are distinct sources
// with distinct ids; a row repeating prompt and response is read once.
func TestImportFactcheckRepeatedPrompts(t *testing.T) {
	src := filepath.Join(t.TempDir(), "fc.jsonl")
	rows := `{"prompt":"Who built the bridge?","response":"The bridge was built in 1890.","sentences":{"sentence1":{"text":"The bridge was built in 1890.","claims":["The bridge was built in 1890."]}}}
{"prompt":"Who built the bridge?","response":"Engineers built the bridge.","sentences":{"sentence1":{"text":"Engineers built the bridge.","claims":["Engineers built the bridge."]}}}
{"prompt":"Who built the bridge?","response":"The bridge was built in 1890.","sentences":{"sentence1":{"text":"The bridge was built in 1890.","claims":["The bridge was built in 1890."]}}}
{"prompt":"When did the river flood?","response":"The river flooded in spring.","sentences":{"sentence1":{"text":"The river flooded in spring.","claims":["The river flooded in spring."]}}}
`
	if err := os.WriteFile(src, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "fc")
	m, err := ImportFactcheckGPT(src, 3, out)
	if err != nil {
		t.Fatalf("import of repeated prompts: %v", err)
	}
	if m.Documents != 3 || m.Source.Available != 3 || m.GoldClaims != 3 {
		t.Fatalf("documents %d of %d available, gold %d; want 3 of 3 (the exact repeat read once), 3 gold", m.Documents, m.Source.Available, m.GoldClaims)
	}
	c, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, d := range c.Docs {
		ids[d.ID] = true
	}
	bridge := []string{
		FactcheckDocIDRepeated("Who built the bridge?", "The bridge was built in 1890."),
		FactcheckDocIDRepeated("Who built the bridge?", "Engineers built the bridge."),
		FactcheckDocID("When did the river flood?"),
	}
	for _, id := range bridge {
		if !ids[id] {
			t.Errorf("document %s missing; have %v", id, ids)
		}
	}
	if bridge[0] == bridge[1] {
		t.Fatal("distinct rows got one id")
	}
}

// A failed import leaves nothing: no output folder, no temporary folder,
// and the same command then succeeds.
func TestImportFactcheckFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "fc.jsonl")
	good := `{"prompt":"p1","response":"One sentence here.","sentences":{"sentence1":{"text":"One sentence here.","claims":["One sentence here."]}}}` + "\n"
	if err := os.WriteFile(src, []byte(good+"{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(dir, "corpora")
	out := filepath.Join(parent, "fc1")
	if _, err := ImportFactcheckGPT(src, 1, out); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("bad line 2: err %v", err)
	}
	if _, err := ImportFactcheckGPT(filepath.Join(dir, "missing.jsonl"), 1, out); err == nil {
		t.Fatal("missing file must fail")
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 0 {
		t.Fatalf("a failed import left %v in %s", ents, parent)
	}
	if err := os.WriteFile(src, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil { // an empty folder is fine
		t.Fatal(err)
	}
	if _, err := ImportFactcheckGPT(src, 1, out); err != nil {
		t.Fatalf("retry: %v", err)
	}
	ents, _ = os.ReadDir(parent)
	if len(ents) != 1 || ents[0].Name() != "fc1" {
		t.Fatalf("after the import %s holds %v, want only fc1", parent, ents)
	}
	if _, err := Verify(out); err != nil {
		t.Fatal(err)
	}
}
