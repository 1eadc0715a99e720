package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/artifact"
)

const artifactTestRev = "49ec31ec0975e46a1aeef24186a45f11be3042b8"

// runArtifactCLI runs hiro with args and returns the exit code, stdout and stderr.
func runArtifactCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// artifactTestDir makes a small model directory.
func artifactTestDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for rel, c := range map[string]string{
		"config.json":       `{"architectures":["MistralForCausalLM"]}`,
		"model.safetensors": strings.Repeat("weights", 1000),
		"tokenizer.json":    `{"version":"1.0"}`,
	} {
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestArtifactPinAndVerifyExitCodes(t *testing.T) {
	dir := artifactTestDir(t)
	out := filepath.Join(t.TempDir(), "m.json")
	code, stdout, stderr := runArtifactCLI(t, "artifact", "pin", "--dir", dir, "--repo", "acme/tiny", "--revision", artifactTestRev, "--out", out)
	if code != ExitOK || stderr != "" || !strings.Contains(stdout, "pinned acme/tiny@"+artifactTestRev+": 3 files") {
		t.Fatalf("pin: %d %q %q", code, stdout, stderr)
	}
	m, err := artifact.Load(out)
	if err != nil {
		t.Fatal(err)
	}

	code, stdout, stderr = runArtifactCLI(t, "artifact", "verify", out)
	if code != ExitOK || stderr != "" || !strings.Contains(stdout, "artifact ok in ") || !strings.Contains(stdout, ": 3 files") || !strings.Contains(stdout, m.Digest) {
		t.Fatalf("verify clean: %d %q %q", code, stdout, stderr)
	}

	// Drift of every kind: exit 1, one line each.
	os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644)
	os.Remove(filepath.Join(dir, "tokenizer.json"))
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644)
	code, stdout, _ = runArtifactCLI(t, "artifact", "verify", out, "--dir", dir)
	for _, want := range []string{"missing   tokenizer.json", "changed   config.json  (size 40 -> 2 bytes)", "extra     notes.txt", "1 missing, 1 changed, 1 extra"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("drift output lacks %q:\n%s", want, stdout)
		}
	}
	if code != ExitFailed {
		t.Errorf("drift: exit %d, want %d", code, ExitFailed)
	}

	// --json: one report object on stdout, same exit code.
	code, stdout, stderr = runArtifactCLI(t, "artifact", "verify", out, "--json", "--fast")
	var r artifact.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("--json output is not a report: %v\n%s", err, stdout)
	}
	if code != ExitFailed || stderr != "" || r.OK || !r.Fast || len(r.Missing) != 1 || len(r.Changed) != 1 || len(r.Extra) != 1 || r.Digest != m.Digest {
		t.Errorf("--json drift: %d %+v %q", code, r, stderr)
	}
}

func TestArtifactPinToStdout(t *testing.T) {
	dir := artifactTestDir(t)
	code, stdout, stderr := runArtifactCLI(t, "artifact", "pin", "--dir", dir, "--repo", "acme/tiny", "--revision", artifactTestRev)
	if code != ExitOK || stderr != "" {
		t.Fatalf("%d %q", code, stderr)
	}
	p := filepath.Join(t.TempDir(), "m.json")
	os.WriteFile(p, []byte(stdout), 0o644)
	if m, err := artifact.Load(p); err != nil || len(m.Files) != 3 {
		t.Errorf("stdout is not a valid manifest: %v\n%s", err, stdout)
	}
}

func TestArtifactBadInputExitCodes(t *testing.T) {
	dir := artifactTestDir(t)
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("s"), 0o644)
	escaping := artifactTestDir(t)
	os.Symlink(outside, filepath.Join(escaping, "link.bin"))

	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"branch revision", []string{"pin", "--dir", dir, "--repo", "acme/tiny", "--revision", "main"}, ExitUsage, "branch or tag"},
		{"no revision", []string{"pin", "--dir", dir, "--repo", "acme/tiny"}, ExitUsage, "no revision"},
		{"no dir", []string{"pin", "--repo", "acme/tiny", "--revision", artifactTestRev}, ExitUsage, "--dir is required"},
		{"missing dir", []string{"pin", "--dir", filepath.Join(dir, "nope"), "--repo", "acme/tiny", "--revision", artifactTestRev}, ExitUsage, "does not exist"},
		{"escaping symlink", []string{"pin", "--dir", escaping, "--repo", "acme/tiny", "--revision", artifactTestRev}, ExitFailed, "link.bin"},
		{"unknown flag", []string{"pin", "--bogus"}, ExitUsage, "unknown flag"},
		{"verify no manifest", []string{"verify"}, ExitUsage, "exactly one manifest"},
		{"verify missing manifest", []string{"verify", filepath.Join(dir, "none.json")}, ExitUsage, "none.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			outDir := t.TempDir()
			args := append([]string{"artifact"}, c.args...)
			if c.args[0] == "pin" {
				args = append(args, "--out", filepath.Join(outDir, "m.json"))
			}
			code, _, stderr := runArtifactCLI(t, args...)
			if code != c.code || !strings.Contains(stderr, c.msg) {
				t.Errorf("exit %d stderr %q, want %d mentioning %q", code, stderr, c.code, c.msg)
			}
			if ents, _ := os.ReadDir(outDir); len(ents) != 0 {
				t.Errorf("a manifest or temp file was written on error: %v", ents)
			}
		})
	}

	// --json errors are JSON objects on stderr.
	code, _, stderr := runArtifactCLI(t, "artifact", "verify", filepath.Join(dir, "none.json"), "--json")
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(stderr), &e); err != nil || code != ExitUsage || e.ExitCode != ExitUsage || !strings.Contains(e.Error, "none.json") {
		t.Errorf("--json error: %d %q (%v)", code, stderr, err)
	}
}

func TestArtifactPinRefusesToReplaceAManifest(t *testing.T) {
	dir := artifactTestDir(t)
	out := filepath.Join(t.TempDir(), "manifest.json")
	rev := "49ec31ec0975e46a1aeef24186a45f11be3042b8"
	if code, _, stderr := runArtifactCLI(t, "artifact", "pin", "--dir", dir, "--repo", "org/model", "--revision", rev, "--out", out); code != 0 {
		t.Fatalf("first pin: exit %d: %s", code, stderr)
	}
	before, _ := os.ReadFile(out)
	code, _, stderr := runArtifactCLI(t, "artifact", "pin", "--dir", dir, "--repo", "org/model", "--revision", rev, "--out", out)
	if code != 2 || !strings.Contains(stderr, "--force") {
		t.Fatalf("second pin without --force: exit %d, stderr %q", code, stderr)
	}
	if after, _ := os.ReadFile(out); string(after) != string(before) {
		t.Fatal("the existing manifest was replaced without --force")
	}
	if code, _, stderr := runArtifactCLI(t, "artifact", "pin", "--dir", dir, "--repo", "org/model", "--revision", rev, "--out", out, "--force"); code != 0 {
		t.Fatalf("pin --force: exit %d: %s", code, stderr)
	}
}
