package journal

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// copyJournal copies testdata/journal into a temporary directory.
func copyJournal(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "journal")
	for _, f := range listFiles(t, testJournal) {
		data, err := os.ReadFile(filepath.Join(testJournal, f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// editEntry rewrites one entry file of the journal at dir through f.
func editEntry(t *testing.T, dir, file string, f func(s string) string) {
	t.Helper()
	p := filepath.Join(dir, EntriesDir, file)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out := f(string(data))
	if out == string(data) {
		t.Fatalf("edit of %s changed nothing", file)
	}
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkDir(t *testing.T, dir, site string) *Report {
	t.Helper()
	j, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(j, site)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func problemText(r *Report) string {
	var lines []string
	for _, p := range r.Problems {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

const (
	fileStorage = "20250610T070000Z_storage-relocation.json"
	fileTrial   = "20250612T163000Z_vllm-trial.json"
	fileScript  = "20250613T080000Z_script-title.json"
)

func TestCheckCleanJournal(t *testing.T) {
	r := checkDir(t, testJournal, "")
	if len(r.Problems) > 0 {
		t.Fatalf("problems in the test journal:\n%s", problemText(r))
	}
	if r.Entries != 3 || r.Aliases != 2 || r.Pages != 6 || r.Links < 30 {
		t.Fatalf("report %+v: want 3 entries, 2 aliases, 6 pages, ≥30 links", r)
	}
}

func TestCheckFindsProblems(t *testing.T) {
	cases := []struct {
		name, file string
		edit       func(string) string
		want       string
	}{
		{"same instant", fileScript, func(s string) string {
			return strings.Replace(s, `"2025-06-13T08:00:00Z"`, `"2025-06-12T16:30:00Z"`, 1)
		}, "names the same instant as entries/" + fileScript},
		{"duplicate slug", fileScript, func(s string) string {
			return strings.Replace(s, `"slug": "script-title"`, `"slug": "vllm-trial"`, 1)
		}, `slug "vllm-trial" is also the slug of`},
		{"alias is a slug", fileTrial, func(s string) string {
			return strings.Replace(s, `"vllm-wsl2"`, `"storage-relocation"`, 1)
		}, `alias "storage-relocation" is the slug of entries/` + fileStorage},
		{"alias twice", fileStorage, func(s string) string {
			return strings.Replace(s, `"slug": "storage-relocation",`, `"slug": "storage-relocation", "aliases": ["vllm-wsl2"],`, 1)
		}, `alias "vllm-wsl2" is also an alias of`},
		{"broken markdown link", fileStorage, func(s string) string {
			return strings.Replace(s, "(vllm-trial.html#validation)", "(no-such-entry.html)", 1)
		}, `entries/` + fileStorage + ` (page entries/storage-relocation.html): link "no-such-entry.html": no such file entries/no-such-entry.html`},
		{"broken fragment", fileStorage, func(s string) string {
			return strings.Replace(s, "#validation", "#nowhere", 1)
		}, `has no element with id "nowhere"`},
		{"missing evidence file", fileTrial, func(s string) string {
			return strings.Replace(s, `"evidence/vllm-trial.json"`, `"evidence/gone.json"`, 1)
		}, `no such file evidence/gone.json`},
		{"status outside the enum", fileTrial, func(s string) string {
			return strings.Replace(s, `"status": "not_run"`, `"status": "maybe"`, 1)
		}, `.status: "maybe" is not one of passed, failed, inconclusive, not_run`},
		{"timestamp without zone", fileScript, func(s string) string {
			return strings.Replace(s, `"2025-06-13T08:00:00Z"`, `"2025-06-13T08:00:00"`, 1)
		}, "does not validate against the entry schema"},
		{"unknown field", fileScript, func(s string) string {
			return strings.Replace(s, `"slug":`, `"colour": "red", "slug":`, 1)
		}, `unknown field "colour"`},
		{"bad slug", fileScript, func(s string) string {
			return strings.Replace(s, `"slug": "script-title"`, `"slug": "Script Title"`, 1)
		}, `slug: "Script Title" is not a slug`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyJournal(t)
			editEntry(t, dir, c.file, c.edit)
			r := checkDir(t, dir, "")
			if !strings.Contains(problemText(r), c.want) {
				t.Fatalf("problems do not mention %q:\n%s", c.want, problemText(r))
			}
		})
	}
}

func TestCheckUnrevisedChange(t *testing.T) {
	dir := copyJournal(t)
	j, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := ReadPublished(dir)
	if !pub.Record(j.Entries) {
		t.Fatal("Record of a new journal changed nothing")
	}
	if err := WritePublished(dir, pub); err != nil {
		t.Fatal(err)
	}
	if r := checkDir(t, dir, ""); len(r.Problems) > 0 {
		t.Fatalf("fresh publication has problems:\n%s", problemText(r))
	}

	// A whitespace-only change to the file is not a change to the entry.
	editEntry(t, dir, fileStorage, func(s string) string { return strings.ReplaceAll(s, "\n  ", "\n    ") })
	if r := checkDir(t, dir, ""); len(r.Problems) > 0 {
		t.Fatalf("reformatting was reported:\n%s", problemText(r))
	}

	editEntry(t, dir, fileStorage, func(s string) string {
		return strings.Replace(s, "Moving the WSL2", "Relocating the WSL2", 1)
	})
	r := checkDir(t, dir, "")
	if !strings.Contains(problemText(r), "entries/"+fileStorage+": published entry changed without a revision note") {
		t.Fatalf("the changed title was not reported:\n%s", problemText(r))
	}

	editEntry(t, dir, fileStorage, func(s string) string {
		return strings.Replace(s, `"slug":`, `"revisions": [{"timestamp": "2025-07-01T10:00:00+02:00", "note": "Clearer title."}], "slug":`, 1)
	})
	if r := checkDir(t, dir, ""); len(r.Problems) > 0 {
		t.Fatalf("a change with a revision note was reported:\n%s", problemText(r))
	}
	// Publishing records the revision; a further change needs another note.
	j, _ = Load(dir)
	pub, _ = ReadPublished(dir)
	if !pub.Record(j.Entries) {
		t.Fatal("Record ignored a revised entry")
	}
	WritePublished(dir, pub)
	editEntry(t, dir, fileStorage, func(s string) string { return strings.Replace(s, "Relocating", "Moving", 1) })
	if r := checkDir(t, dir, ""); !strings.Contains(problemText(r), "without a revision note") {
		t.Fatalf("second unrevised change not reported:\n%s", problemText(r))
	}

	os.Remove(filepath.Join(dir, EntriesDir, fileScript))
	if r := checkDir(t, dir, ""); !strings.Contains(problemText(r), `published entry 2025-06-13T08:00:00Z (slug "script-title") is gone`) {
		t.Fatalf("a removed published entry was not reported:\n%s", problemText(r))
	}
}

func TestCheckBuiltSite(t *testing.T) {
	site := buildTestSite(t)
	if r := checkDir(t, testJournal, site); len(r.Problems) > 0 {
		t.Fatalf("problems in a fresh site:\n%s", problemText(r))
	}
	os.WriteFile(filepath.Join(site, "entries", "script-title.json"), []byte(`{"slug": "script-title"}`), 0o644)
	os.Remove(filepath.Join(site, "entries", "vllm-wsl2.html"))
	os.Remove(filepath.Join(site, "entries", "vllm-trial.html"))
	txt := problemText(checkDir(t, testJournal, site))
	for _, want := range []string{
		"the site has no alias page entries/vllm-wsl2.html",
		filepath.Join(site, "entries", "script-title.json") + ": does not validate against the entry schema",
		"the site has no entries/vllm-trial.html",
		filepath.Join(site, "index.html") + `: link "entries/vllm-trial.html": no such file`,
		filepath.Join(site, "entries", "alternate-backend.html") + `: link "vllm-trial.html": no such file`,
	} {
		if !strings.Contains(txt, want) {
			t.Errorf("problems do not mention %q:\n%s", want, txt)
		}
	}
}

func TestCreateAndSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Alternate vLLM backend stops before inference": "alternate-vllm-backend-stops-before-inference",
		"Vérification: <script> & 5090!":                "verification-script-5090",
		"***":                                           "",
		strings.Repeat("word ", 30):                     strings.TrimSuffix(strings.Repeat("word-", 16), "-"),
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
	}

	dir := filepath.Join(t.TempDir(), "j")
	os.Mkdir(dir, 0o755)
	j, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2025, 7, 1, 9, 30, 0, 0, time.FixedZone("", 2*3600))
	e := &Entry{Timestamp: ts, Slug: "first", Title: "First <entry>", Body: "Hello *world*"}
	rel, err := j.Create(e)
	if err != nil {
		t.Fatal(err)
	}
	if rel != "entries/20250701T073000Z_first.json" {
		t.Errorf("Create wrote %s", rel)
	}
	data, _ := os.ReadFile(filepath.Join(dir, rel))
	if !strings.Contains(string(data), `"timestamp": "2025-07-01T09:30:00+02:00"`) || !strings.Contains(string(data), `"title": "First <entry>"`) {
		t.Errorf("entry file:\n%s", data)
	}
	if _, err := j.Create(&Entry{Timestamp: ts.Add(time.Second), Slug: "first", Title: "x"}); err == nil || !strings.Contains(err.Error(), `slug "first"`) {
		t.Errorf("duplicate slug: err %v", err)
	}
	if _, err := j.Create(&Entry{Timestamp: ts.UTC(), Slug: "second", Title: "x"}); err == nil || !strings.Contains(err.Error(), "timestamp") {
		t.Errorf("same instant in another zone: err %v", err)
	}
	j2, err := Load(dir)
	if err != nil || len(j2.Entries) != 1 || len(j2.Problems) > 0 || j2.Entries[0].Hash() != e.Hash() {
		t.Fatalf("reload: %v, %+v", err, j2)
	}
}

// TestCheckSaysEachProblemOnce (issue 26 F13): an entry with a bad slug
// and an empty title is two problems, each said once in hiro's words (the
// schema validator's lines for the same keys are not repeated), and,
// with or without a site folder, no advice to rebuild a site that
// 'hiro journal build' refuses to build. A schema failure at a key
// hiro's own checks do not name is still reported.
func TestCheckSaysEachProblemOnce(t *testing.T) {
	for _, site := range []string{"", "given"} {
		dir := copyJournal(t)
		editEntry(t, dir, fileScript, func(s string) string {
			var m map[string]any
			if err := json.Unmarshal([]byte(s), &m); err != nil {
				t.Fatal(err)
			}
			m["slug"], m["title"] = "Bad Slug", ""
			b, _ := json.Marshal(m)
			return string(b)
		})
		out := ""
		if site != "" {
			out = t.TempDir()
		}
		r := checkDir(t, dir, out)
		text := problemText(r)
		var mine []string
		for _, p := range r.Problems {
			if strings.HasPrefix(p.Where, "entries/"+fileScript) {
				mine = append(mine, p.String())
			}
		}
		if len(mine) != 2 || !strings.Contains(text, `slug: "Bad Slug" is not a slug`) || !strings.Contains(text, "title: empty") {
			t.Errorf("site %q: want the slug and the title, once each; got %d:\n%s", site, len(mine), text)
		}
		for _, bad := range []string{"does not validate against the entry schema", "rebuild", "the site has no"} {
			if strings.Contains(text, bad) {
				t.Errorf("site %q: says %q:\n%s", site, bad, text)
			}
		}
	}
	// A key the schema refuses and hiro's checks do not name.
	p := schemaProblems(errors.New("jsonschema validation failed with 'x#'\n- at '/slug': does not match\n- at '/extra/0': wrong type"), []string{`slug: "Bad Slug" is not a slug`})
	if len(p) != 1 || !strings.Contains(p[0], "/extra/0") || strings.Contains(p[0], "/slug") {
		t.Errorf("schema problems left: %q", p)
	}
}
