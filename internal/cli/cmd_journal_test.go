package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
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

func writeTestEvidence(t *testing.T, path string) {
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
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
