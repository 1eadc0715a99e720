package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/signing"
)

// runHiro runs the hiro command in this process (Run, as cmd/hiro does)
// with args and returns its exit code, stdout and stderr: the one "run
// hiro" helper of this package's tests.
func runHiro(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestJournalCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	site := filepath.Join(t.TempDir(), "site")
	body := filepath.Join(t.TempDir(), "body.md")
	os.WriteFile(body, []byte("# Notes\n\n<script>alert(1)</script>\n\nSee [nowhere](missing.html).\n"), 0o644)

	code, out, errs := runHiro(t, "journal", "new", "--journal", dir, "--title", "Moving <the> drive", "--time", "2025-06-10T09:00:00+02:00", "--body-file", body)
	if code != ExitOK || !strings.Contains(out, "entries/20250610T070000Z_moving-the-drive.json") {
		t.Fatalf("new: %d %q %q", code, out, errs)
	}
	if code, _, errs = runHiro(t, "journal", "new", "--journal", dir, "--title", "Moving the drive"); code != ExitUsage || !strings.Contains(errs, `slug "moving-the-drive"`) {
		t.Errorf("new with a taken slug: %d %q", code, errs)
	}
	if code, _, errs = runHiro(t, "journal", "new", "--journal", dir); code != ExitUsage || !strings.Contains(errs, "--title is required") {
		t.Errorf("new without a title: %d %q", code, errs)
	}
	if code, _, _ = runHiro(t, "journal", "new", "--journal", dir, "--title", "x", "--time", "yesterday"); code != ExitUsage {
		t.Errorf("new with a bad time: exit %d", code)
	}

	// The broken link in the body makes check fail with the page named.
	code, out, errs = runHiro(t, "journal", "check", "--journal", dir)
	if code != ExitFailed || !strings.Contains(out, `(page entries/moving-the-drive.html): link "missing.html"`) || !strings.Contains(errs, "1 problem(s)") {
		t.Fatalf("check with a broken link: %d %q %q", code, out, errs)
	}
	p := filepath.Join(dir, "entries", "20250610T070000Z_moving-the-drive.json")
	data, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte("missing.html"), []byte("#notes"), 1), 0o644)

	ev := filepath.Join(t.TempDir(), evidence.PublicFile)
	writeTestEvidence(t, ev)
	code, out, errs = runHiro(t, "journal", "add", "--journal", dir, ev)
	if code != ExitOK || !strings.Contains(out, "_vllm-trial.json from") {
		t.Fatalf("add: %d %q %q", code, out, errs)
	}
	if code, _, errs = runHiro(t, "journal", "add", "--journal", dir, ev); code != ExitUsage || !strings.Contains(errs, "already in the journal") {
		t.Errorf("add twice: %d %q", code, errs)
	}
	if code, _, _ = runHiro(t, "journal", "add", "--journal", dir); code != ExitUsage {
		t.Errorf("add without EVIDENCE: exit %d", code)
	}

	code, out, errs = runHiro(t, "journal", "build", "--journal", dir, "--out", site)
	if code != ExitOK || !strings.Contains(out, "built 2 entries and 0 aliases") {
		t.Fatalf("build: %d %q %q", code, out, errs)
	}
	for _, f := range []string{"index.html", "feed.atom", "entries/vllm-trial.html", "entries/vllm-trial.json", "entries/moving-the-drive.html"} {
		if _, err := os.Stat(filepath.Join(site, f)); err != nil {
			t.Errorf("site lacks %s", f)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "published.json")); err != nil {
		t.Error("build did not record published.json")
	}
	if code, out, errs = runHiro(t, "journal", "check", "--journal", dir, "--out", site); code != ExitOK || !strings.Contains(out, "journal OK: 2 entries") {
		t.Fatalf("check after build: %d %q %q", code, out, errs)
	}

	// Changing a published entry without a revision note is reported.
	data, _ = os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(data, []byte("Moving <the> drive"), []byte("Moving the disk"), 1), 0o644)
	code, out, _ = runHiro(t, "journal", "check", "--journal", dir, "--out", site)
	if code != ExitFailed || !strings.Contains(out, "published entry changed without a revision note") {
		t.Fatalf("check after an unrevised change: %d %q", code, out)
	}
	// build refuses it too, and builds nothing (it built, with a warning).
	before, _ := os.ReadFile(filepath.Join(site, "entries", "moving-the-drive.html"))
	code, _, errs = runHiro(t, "journal", "build", "--journal", dir, "--out", site)
	after, _ := os.ReadFile(filepath.Join(site, "entries", "moving-the-drive.html"))
	if code != ExitFailed || !strings.Contains(errs, "published entry changed without a revision note") || !strings.Contains(errs, "nothing was built") || !bytes.Equal(before, after) {
		t.Fatalf("build after an unrevised change: %d %q (page changed: %v)", code, errs, !bytes.Equal(before, after))
	}
	// A published entry removed: build refuses and keeps the entry's page.
	os.WriteFile(p, data, 0o644)
	os.Rename(p, p+".away")
	code, _, errs = runHiro(t, "journal", "build", "--journal", dir, "--out", site)
	if _, err := os.Stat(filepath.Join(site, "entries", "moving-the-drive.html")); code != ExitFailed || !strings.Contains(errs, "is gone") || err != nil {
		t.Fatalf("build after a published entry was removed: %d %q (page: %v)", code, errs, err)
	}
	os.Rename(p+".away", p)

	if code, _, errs = runHiro(t, "journal", "build", "--journal", dir, "--out", t.TempDir()+"/x", "--base-url", "example.org"); code != ExitUsage {
		t.Errorf("build with a relative base URL: %d %q", code, errs)
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "keep.txt"), []byte("x"), 0o644)
	if code, _, errs = runHiro(t, "journal", "build", "--journal", dir, "--out", foreign); code != ExitUsage || !strings.Contains(errs, "not a journal site") {
		t.Errorf("build into a foreign directory: %d %q", code, errs)
	}
	if code, _, errs = runHiro(t, "journal", "check", "--journal", filepath.Join(dir, "nope")); code != ExitUsage || !strings.Contains(errs, "does not exist") {
		t.Errorf("check of a missing journal: %d %q", code, errs)
	}
}

func writeTestEvidence(t *testing.T, path string, edits ...func(*evidence.Evidence)) {
	t.Helper()
	start := time.Date(2025, 6, 12, 14, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	ev := &evidence.Evidence{
		Schema: evidence.SchemaID, ID: "20250612T140000Z-vllm", Title: "vLLM trial", Candidate: "vllm",
		Verdict: evidence.VerdictNotQualified, ExitCode: 1, TerminationReason: "gate launch failed",
		StartedAt: start, FinishedAt: &end,
		Gates: []evidence.Gate{{ID: "launch", Kind: "launch", Status: evidence.StatusFailed,
			Attempts: []evidence.Attempt{{Name: "base", Failure: &failure.Failure{Class: failure.ClassHostCapability, Phase: failure.PhaseKVInit, RootCause: "UVA is not available"}}}}},
		Fingerprints: evidence.Fingerprints{Plan: strings.Repeat("0", 64)},
		Report:       evidence.Report{Sections: []evidence.Section{}, Validation: []evidence.Validation{}},
	}
	for _, edit := range edits {
		edit(ev)
	}
	// Signed with this user's key, as a campaign writes it.
	key, err := signing.LoadOrCreate()
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := evidence.Encode(ev, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestJournalPageShowsPlaceholders: an entry body is stored redacted
// (<redacted>, <home>/...), and the built page shows every placeholder of
// package redact as text, inline, opening a line alone and in code; raw
// HTML that is no placeholder is shown as text too (it was omitted).
func TestJournalPageShowsPlaceholders(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	site := filepath.Join(t.TempDir(), "site")
	body := filepath.Join(t.TempDir(), "body.md")
	src := "Key: sk-ABCDEFGHIJKLMNOPQRSTUVWX1234 and Bearer abcdefghijklmnop0123456789 and <home>/secret/path\n\n" +
		"<project>/models and <state>/runs and <path> and *<redacted>*\n\n" +
		"<redacted>\n\n" +
		"In code: `<redacted>`\n\n" +
		"Bold <b>raw</b>.\n"
	if err := os.WriteFile(body, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runHiro(t, "journal", "new", "--journal", dir, "--title", "T", "--time", "2025-06-10T09:00:00Z", "--body-file", body); code != ExitOK {
		t.Fatalf("new: %d %q %q", code, out, errs)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "entries", "20250610T090000Z_t.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stored), "Key: <redacted> and Bearer <redacted>") {
		t.Fatalf("the stored body is not redacted as expected: %s", stored)
	}
	if code, out, errs := runHiro(t, "journal", "build", "--journal", dir, "--out", site); code != ExitOK {
		t.Fatalf("build: %d %q %q", code, out, errs)
	}
	page, err := os.ReadFile(filepath.Join(site, "entries", "t.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Key: &lt;redacted&gt; and Bearer &lt;redacted&gt; and &lt;home&gt;/secret/path",
		"&lt;project&gt;/models and &lt;state&gt;/runs and &lt;path&gt; and <em>&lt;redacted&gt;</em>",
		"<p>&lt;redacted&gt;</p>",
		"<code>&lt;redacted&gt;</code>",
		"Bold &lt;b&gt;raw&lt;/b&gt;.",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q\n%s", want, page)
		}
	}
	if strings.Contains(string(page), "raw HTML omitted") {
		t.Errorf("the page omits raw HTML\n%s", page)
	}
}

// A new user's report (issue 26 P7): raw HTML in a hand-written body (a
// <script> line, prose about <details>) vanished from the page, build and
// check saying nothing. It is shown as the text it is, escaped (never
// run, never rendered as markup), line breaks kept; only an HTML comment,
// a note the writer hid, stays out of the page.
func TestJournalPageShowsRawHTMLAsText(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "j2")
	site := filepath.Join(t.TempDir(), "site")
	body := filepath.Join(t.TempDir(), "notes.md")
	src := "We moved the models.\n\n<script>alert(1)</script>\n\n" +
		"<details>\n<summary>Why</summary>\n</details>\n\n" +
		"Wrap it in <kbd>Ctrl</kbd>-C.\n\n<!-- todo: the second drive's name -->\n\nThe end <!-- note-to-self -->.\n"
	os.WriteFile(body, []byte(src), 0o644)
	if code, out, errs := runHiro(t, "journal", "new", "--journal", dir, "--title", "Moved the models", "--time", "2025-06-10T09:00:00Z", "--body-file", body); code != ExitOK {
		t.Fatalf("new: %d %q %q", code, out, errs)
	}
	if code, out, errs := runHiro(t, "journal", "build", "--journal", dir, "--out", site); code != ExitOK {
		t.Fatalf("build: %d %q %q", code, out, errs)
	}
	b, err := os.ReadFile(filepath.Join(site, "entries", "moved-the-models.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>",
		"<p>&lt;details&gt;<br>\n&lt;summary&gt;Why&lt;/summary&gt;<br>\n&lt;/details&gt;</p>",
		"Wrap it in &lt;kbd&gt;Ctrl&lt;/kbd&gt;-C.",
		"The end .",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, not := range []string{"<script>alert", "<details>", "<kbd>", "raw HTML omitted", "todo: the second drive", "note-to-self"} {
		if strings.Contains(page, not) {
			t.Errorf("page holds %q", not)
		}
	}
	if t.Failed() {
		t.Log(page)
	}
}

// TestJournalAddSaysNotEvidence: journal add of a file that is not hiro
// evidence (an artifact manifest hiro artifact pin wrote, JSON without a
// "schema" key, a file that is not JSON) says so, with the "schema" it
// found, the one expected and what to pass; no made-up schema path (was
// "jsonschema validation failed with 'file:///<cwd>/evidence.schema.json#'").
func TestJournalAddSaysNotEvidence(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	manifest := filepath.Join(t.TempDir(), "manifest.json")
	if code, out, errs := runHiro(t, "artifact", "pin", "--dir", artifactTestDir(t), "--repo", "acme/tiny", "--revision", artifactTestRev, "--out", manifest); code != ExitOK {
		t.Fatalf("pin: %d %q %q", code, out, errs)
	}
	noSchema := filepath.Join(t.TempDir(), "other.json")
	notJSON := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(noSchema, []byte(`{"a": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notJSON, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{
		manifest: `not hiro evidence: the document has "schema": "hiro.artifact/v1", want "hiro.evidence/v3"`,
		noSchema: `not hiro evidence: the document has no "schema" key, want "hiro.evidence/v3"`,
		notJSON:  `not hiro evidence: not a JSON object`,
	} {
		code, _, errs := runHiro(t, "journal", "add", "--journal", dir, f)
		if code != ExitUsage || !strings.Contains(errs, f+": "+want) || !strings.Contains(errs, "pass the evidence.json that hiro qualify wrote") || strings.Contains(errs, "file://") {
			t.Errorf("journal add %s: exit %d\n%s\nwant exit %d and %q", filepath.Base(f), code, errs, ExitUsage, want)
		}
	}
}

// A new user's report: the shipped example evidence (unsigned, its
// semantic gate failed) edited to read "qualified" was published by
// 'journal add --trust-unsigned' as "Every gate passed" and 'journal
// check' said OK. Now journal add and evidence verify refuse it naming
// exit_code, and journal check flags a published entry whose evidence
// copy was edited so.
func TestJournalAndEvidenceVerifyRefuseContradictoryEvidence(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	site := filepath.Join(t.TempDir(), "site")
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "gpu", "results", "campaign", "evidence.json"))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"verdict": "not_qualified"`), []byte(`"verdict": "qualified"`), 1)
	}
	if bytes.Equal(edit(example), example) {
		t.Fatal(`the example evidence has no "verdict": "not_qualified" to edit`)
	}
	edited := filepath.Join(t.TempDir(), "e2.json")
	os.WriteFile(edited, edit(example), 0o644)
	code, _, errs := runHiro(t, "journal", "add", "--journal", dir, "--trust-unsigned", edited)
	if code != ExitUsage || !strings.Contains(errs, "exit_code: 1 contradicts verdict \"qualified\"") {
		t.Fatalf("journal add of contradictory evidence: exit %d, want %d naming exit_code\n%s", code, ExitUsage, errs)
	}
	if code, _, errs = runHiro(t, "evidence", "verify", edited); code != ExitFailed || !strings.Contains(errs, "exit_code") {
		t.Fatalf("evidence verify of contradictory evidence: exit %d, want %d naming exit_code\n%s", code, ExitFailed, errs)
	}

	good := filepath.Join(t.TempDir(), "e1.json")
	os.WriteFile(good, example, 0o644)
	if code, out, errs := runHiro(t, "journal", "add", "--journal", dir, "--trust-unsigned", good); code != ExitOK {
		t.Fatalf("journal add of the example: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runHiro(t, "journal", "build", "--journal", dir, "--out", site); code != ExitOK {
		t.Fatalf("build: exit %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runHiro(t, "journal", "check", "--journal", dir, "--out", site); code != ExitOK {
		t.Fatalf("check of the consistent journal: exit %d\n%s", code, out)
	}
	copies, _ := filepath.Glob(filepath.Join(dir, "evidence", "*.json"))
	if len(copies) != 1 {
		t.Fatalf("journal evidence copies %q, want 1", copies)
	}
	b, _ := os.ReadFile(copies[0])
	os.WriteFile(copies[0], edit(b), 0o644)
	code, out, _ := runHiro(t, "journal", "check", "--journal", dir, "--out", site)
	if code != ExitFailed || !strings.Contains(out, "evidence/"+filepath.Base(copies[0])+": exit_code: 1 contradicts") {
		t.Fatalf("check with the published evidence edited: exit %d, want %d naming exit_code\n%s", code, ExitFailed, out)
	}
}

// Two journals in one folder share the default site folder (journal-site/
// beside them): the second build is refused, naming the journal whose
// site it is, and leaves that site as it was; --force replaces it
// (issue 26 F5: the second journal's build silently replaced the first's
// pages).
func TestJournalBuildRefusesAnotherJournalsSite(t *testing.T) {
	parent := t.TempDir()
	a, b := filepath.Join(parent, "journal-a"), filepath.Join(parent, "journal-b")
	for _, j := range []struct{ dir, title string }{{a, "Alpha notes"}, {b, "Beta notes"}} {
		if code, _, errs := runHiro(t, "journal", "new", "--journal", j.dir, "--title", j.title, "--time", "2025-06-10T09:00:00+02:00"); code != ExitOK {
			t.Fatalf("new %s: %d %q", j.dir, code, errs)
		}
	}
	site := filepath.Join(parent, "journal-site")
	if code, _, errs := runHiro(t, "journal", "build", "--journal", a); code != ExitOK {
		t.Fatalf("build a: %d %q", code, errs)
	}
	page := filepath.Join(site, "entries", "alpha-notes.html")
	before, err := os.ReadFile(page)
	if err != nil {
		t.Fatalf("journal-a's build wrote no page into the default site %s: %v", site, err)
	}
	code, _, errs := runHiro(t, "journal", "build", "--journal", b)
	if code != ExitUsage || !strings.Contains(errs, `the site of another journal: journal "journal-a"`) || !strings.Contains(errs, "--force") {
		t.Fatalf("build b into a's site: exit %d, stderr %q; want 2 naming journal-a and --force", code, errs)
	}
	if after, err := os.ReadFile(page); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the refused build changed journal-a's page (%v)", err)
	}
	// journal-a builds again into its own site.
	if code, _, errs := runHiro(t, "journal", "build", "--journal", a); code != ExitOK {
		t.Fatalf("build a again: %d %q", code, errs)
	}
	if code, _, errs := runHiro(t, "journal", "build", "--journal", b, "--force"); code != ExitOK {
		t.Fatalf("build b --force: %d %q", code, errs)
	}
	if _, err := os.Stat(page); err == nil {
		t.Error("after --force journal-a's page is still in the site")
	}
	if _, err := os.Stat(filepath.Join(site, "entries", "beta-notes.html")); err != nil {
		t.Errorf("after --force the site lacks journal-b's page: %v", err)
	}
	// Now it is journal-b's: journal-a is refused, naming journal-b.
	if code, _, errs := runHiro(t, "journal", "build", "--journal", a); code != ExitUsage || !strings.Contains(errs, `journal "journal-b"`) {
		t.Errorf("build a into b's site: %d %q", code, errs)
	}
}

// A new user's report (issue 26 P6): a refused 'journal add' of an
// aborted campaign's evidence (exit 2) left the journal folder behind,
// though docs/commands.md says nothing is written. Every refusal of add
// and new, into a journal that does not exist yet, now leaves no folder;
// the first accepted one makes it.
func TestJournalRefusalsCreateNothing(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "j1")
	aborted := filepath.Join(t.TempDir(), evidence.PublicFile)
	writeTestEvidence(t, aborted, func(ev *evidence.Evidence) {
		ev.Verdict, ev.ExitCode, ev.TerminationReason = evidence.VerdictAborted, 3, "aborted: interrupted by SIGINT"
		ev.Gates[0].Status, ev.Gates[0].Reason, ev.Gates[0].Attempts = evidence.StatusNotRun, "aborted: interrupted by SIGINT", nil
	})
	notEvidence := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notEvidence, []byte("hello\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", aborted}, "was aborted (exit 3"},
		{[]string{"add", notEvidence}, "not hiro evidence"},
		{[]string{"add", filepath.Join(parent, "missing.json")}, "no such file"},
		{[]string{"new", "--title", "Year zero", "--time", "0000-01-01T00:00:00Z"}, "year 0 is out of range"},
	} {
		args := append([]string{"journal", c.args[0], "--journal", dir}, c.args[1:]...)
		code, _, errs := runHiro(t, args...)
		if code != ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("journal %s: exit %d, want %d and %q\n%s", strings.Join(c.args, " "), code, ExitUsage, c.want, errs)
		}
		if _, err := os.Lstat(dir); err == nil {
			t.Fatalf("the refused 'journal %s' created %s", strings.Join(c.args, " "), dir)
		}
	}
	good := filepath.Join(t.TempDir(), evidence.PublicFile)
	writeTestEvidence(t, good)
	if code, out, errs := runHiro(t, "journal", "add", "--journal", dir, good); code != ExitOK {
		t.Fatalf("journal add into a new folder: exit %d\n%s%s", code, out, errs)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "entries", "*.json")); len(ents) != 1 {
		t.Errorf("entries after the first accepted add: %q, want 1", ents)
	}
}
