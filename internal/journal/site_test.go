package journal

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (testdata/site) and schemas/journal-entry.schema.json")

const (
	testJournal  = "testdata/journal"
	goldenSite   = "testdata/site"
	schemaOnDisk = "../../schemas/journal-entry.schema.json"
)

func TestSchemaCommitted(t *testing.T) {
	got := SchemaJSON()
	if *update {
		if err := os.MkdirAll(filepath.Dir(schemaOnDisk), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(schemaOnDisk, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaOnDisk)
	if err != nil {
		t.Fatalf("read committed schema: %v (run go test ./internal/journal -run TestSchemaCommitted -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the schema generated from journal.Entry; run go test ./internal/journal -run TestSchemaCommitted -update and commit it", schemaOnDisk)
	}
	for _, field := range []string{`"timestamp"`, `"date-time"`, `"validation"`, `"not_run"`, `"revisions"`, `"aliases"`} {
		if !bytes.Contains(got, []byte(field)) {
			t.Errorf("schema lacks %s", field)
		}
	}
}

func TestEveryTestdataEntryValidates(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testJournal, EntriesDir, "*.json"))
	more, _ := filepath.Glob("../../examples/journal/entries/*.json")
	files = append(files, more...)
	if len(files) < 4 {
		t.Fatalf("found %d entry files, want the test journal and the example", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateJSON(data); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// buildTestSite builds testdata/journal into a new temporary directory.
func buildTestSite(t *testing.T) string {
	t.Helper()
	j, err := Load(testJournal)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "site")
	res, err := Build(j, out, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 3 pages + 3 JSON + 2 aliases + index + feed + 1 evidence file.
	if res.Entries != 3 || res.Aliases != 2 || res.Files != 11 {
		t.Fatalf("build result %+v, want 3 entries, 2 aliases, 11 files", res)
	}
	return out
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func TestBuildGolden(t *testing.T) {
	out := buildTestSite(t)
	if *update {
		if err := os.RemoveAll(goldenSite); err != nil {
			t.Fatal(err)
		}
		for _, f := range listFiles(t, out) {
			data, _ := os.ReadFile(filepath.Join(out, f))
			dst := filepath.Join(goldenSite, f)
			os.MkdirAll(filepath.Dir(dst), 0o755)
			if err := os.WriteFile(dst, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, want := listFiles(t, out), listFiles(t, goldenSite)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("site files differ from %s (refresh with -update):\ngot  %v\nwant %v", goldenSite, got, want)
	}
	for _, f := range got {
		g, _ := os.ReadFile(filepath.Join(out, f))
		w, _ := os.ReadFile(filepath.Join(goldenSite, f))
		if !bytes.Equal(g, w) {
			t.Errorf("%s differs from the golden file (refresh with -update)", f)
		}
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	a, b := buildTestSite(t), buildTestSite(t)
	for _, f := range listFiles(t, a) {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds", f)
		}
	}
}

func TestBuildEscapesMarkup(t *testing.T) {
	out := buildTestSite(t)
	for _, f := range listFiles(t, out) {
		if !strings.HasSuffix(f, ".html") {
			continue
		}
		data, _ := os.ReadFile(filepath.Join(out, f))
		low := strings.ToLower(string(data))
		for _, bad := range []string{"<script", "<img", "<b>", "<i>", "javascript:"} {
			if strings.Contains(low, bad) {
				t.Errorf("%s contains %q: markup from an entry reached the page", f, bad)
			}
		}
	}
	page, _ := os.ReadFile(filepath.Join(out, "entries/script-title.html"))
	for _, want := range []string{
		`<h1>&lt;script&gt;document.title=&#34;pwned&#34;&lt;/script&gt; &amp; &#34;quotes&#34;</h1>`,
		`<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>`,
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("script-title.html lacks the escaped text %s", want)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "entries/storage-relocation.html"))
	if !bytes.Contains(md, []byte("<table>")) || !bytes.Contains(md, []byte(`<h2>What was done</h2>`)) {
		t.Error("the Markdown body was not rendered (no table or heading)")
	}
}

func TestBuildPagesAndAliases(t *testing.T) {
	out := buildTestSite(t)
	index, _ := os.ReadFile(filepath.Join(out, "index.html"))
	// Newest first: script-title (06-13), vllm-trial (06-12), storage-relocation (06-10).
	a := bytes.Index(index, []byte(`href="entries/script-title.html"`))
	b := bytes.Index(index, []byte(`href="entries/vllm-trial.html"`))
	c := bytes.Index(index, []byte(`href="entries/storage-relocation.html"`))
	if a < 0 || b < 0 || c < 0 || !(a < b && b < c) {
		t.Errorf("index order: positions %d %d %d, want newest first", a, b, c)
	}
	for _, alias := range []string{"alternate-backend", "vllm-wsl2"} {
		p, err := os.ReadFile(filepath.Join(out, "entries", alias+".html"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`<link rel="canonical" href="vllm-trial.html">`, `<meta http-equiv="refresh" content="0; url=vllm-trial.html">`} {
			if !bytes.Contains(p, []byte(want)) {
				t.Errorf("alias %s lacks %s", alias, want)
			}
		}
	}
	js, err := os.ReadFile(filepath.Join(out, "entries/vllm-trial.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateJSON(js); err != nil {
		t.Errorf("published JSON does not validate: %v", err)
	}
	feed, _ := os.ReadFile(filepath.Join(out, FeedFile))
	if !bytes.Contains(feed, []byte("<feed xmlns=\"http://www.w3.org/2005/Atom\">")) || bytes.Count(feed, []byte("<entry>")) != 3 {
		t.Errorf("feed is not an Atom feed with 3 entries:\n%s", feed)
	}
	if !bytes.Contains(feed, []byte("<updated>2025-06-14T10:00:00+02:00</updated>")) {
		t.Error("feed updated time is not the latest revision's time")
	}
}

func TestBuildWithBaseURL(t *testing.T) {
	j, err := Load(testJournal)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Build(j, out, BuildOptions{BaseURL: "https://example.org/journal", Title: "Example"}); err != nil {
		t.Fatal(err)
	}
	page, _ := os.ReadFile(filepath.Join(out, "entries/vllm-trial.html"))
	if !bytes.Contains(page, []byte(`<link rel="canonical" href="https://example.org/journal/entries/vllm-trial.html">`)) {
		t.Error("entry page lacks its absolute canonical link")
	}
	feed, _ := os.ReadFile(filepath.Join(out, FeedFile))
	if !bytes.Contains(feed, []byte(`href="https://example.org/journal/entries/vllm-trial.html"`)) {
		t.Error("feed links are not absolute")
	}
	// The absolute links under the base URL are still checked as internal.
	_, links, probs, err := CheckLinks(out)
	if err != nil || len(probs) > 0 || links < 30 {
		t.Fatalf("CheckLinks: %d links, problems %v, err %v", links, probs, err)
	}
	os.Remove(filepath.Join(out, "entries/storage-relocation.html"))
	if _, _, probs, _ := CheckLinks(out); len(probs) == 0 {
		t.Fatal("CheckLinks found no broken link after a page was removed")
	}
}

func TestBuildRefusesForeignDirectory(t *testing.T) {
	j, err := Load(testJournal)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	precious := filepath.Join(out, "thesis.tex")
	os.WriteFile(precious, []byte("x"), 0o644)
	if _, err := Build(j, out, BuildOptions{}); !errors.Is(err, ErrNotSite) {
		t.Fatalf("Build into a foreign directory: err %v, want ErrNotSite", err)
	}
	if _, err := os.Stat(precious); err != nil {
		t.Fatal("Build removed a file it did not write")
	}
}

func TestRebuildRemovesStalePages(t *testing.T) {
	out := buildTestSite(t)
	stale := filepath.Join(out, "entries", "old-alias.html")
	os.WriteFile(stale, []byte("stale"), 0o644)
	j, _ := Load(testJournal)
	if _, err := Build(j, out, BuildOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("a page from an earlier build survived the rebuild")
	}
}

func TestTone(t *testing.T) {
	for status, want := range map[string]string{
		"passed": "ok", "Completed": "ok", "Downloaded and verified": "ok",
		"failed": "bad", "Failed before inference": "bad",
		"not_run": "na", "Installed but not qualified": "warn", "tokenizer": "na", "OK": "ok",
	} {
		if got := Tone(status); got != want {
			t.Errorf("Tone(%q) = %q, want %q", status, got, want)
		}
	}
}

// A journal's identity is made once and kept (ID); a site built before
// journal ids (a marker without one) is taken over by the next build, and
// an id file that is not an id is an error naming it.
func TestJournalIDAndOlderSites(t *testing.T) {
	dir := t.TempDir()
	id, err := ID(dir)
	if err != nil || len(id) != 32 {
		t.Fatalf("ID of a new journal: %q, %v", id, err)
	}
	if again, err := ID(dir); err != nil || again != id {
		t.Fatalf("ID changed: %q then %q (%v)", id, again, err)
	}
	j, err := Load(testJournal)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "site")
	must(t, os.MkdirAll(out, 0o755))
	must(t, os.WriteFile(filepath.Join(out, SiteMarker), []byte(`{"generator":"hiro journal build","base_url":""}`+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(out, "index.html"), []byte("old"), 0o644))
	if _, err := Build(j, out, BuildOptions{}); err != nil {
		t.Fatalf("a site without a journal id is refused: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, SiteMarker)); !bytes.Contains(b, []byte(`"journal_id":"0123456789abcdef0123456789abcdef"`)) {
		t.Errorf("marker after the build: %s", b)
	}
	bad := t.TempDir()
	must(t, os.WriteFile(filepath.Join(bad, IDFile), []byte("not an id\n"), 0o644))
	if _, err := ID(bad); err == nil || !strings.Contains(err.Error(), filepath.Join(bad, IDFile)) || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a bad id file: %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// On a narrow screen a wide table scrolls sideways inside its own box
// (the page never gets wider than the screen) and keeps readable
// columns: headers on one line, cells at least 5.5em wide (issue 26: the
// measures table squeezed its columns into rows ten lines tall and read
// as clipped at the box's edge).
func TestTablesScrollInsideTheirBox(t *testing.T) {
	_, css := templates()
	rules := map[string]string{}
	for _, r := range regexp.MustCompile(`([^{}]+)\{([^}]*)\}`).FindAllStringSubmatch(string(css), -1) {
		for _, sel := range strings.Split(r[1], ",") {
			rules[strings.TrimSpace(sel)] += r[2] + ";"
		}
	}
	for sel, want := range map[string][]string{
		".table":       {"overflow-x:auto", "max-width:100%"},
		".work table":  {"display:block", "overflow-x:auto", "max-width:100%"},
		".prose table": {"display:block", "overflow-x:auto", "max-width:100%"},
		".work th":     {"white-space:nowrap"},
		".prose th":    {"white-space:nowrap"},
		".table th":    {"white-space:nowrap"},
		".work td":     {"min-width:5.5em"},
		".prose td":    {"min-width:5.5em"},
		".table td":    {"min-width:5.5em"},
	} {
		for _, d := range want {
			if !strings.Contains(rules[sel], d) {
				t.Errorf("style.css: %s has no %s (it has %q)", sel, d, rules[sel])
			}
		}
	}
}
