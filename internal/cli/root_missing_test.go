package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingInputsAreNamedNotFound runs commands that read a path the
// user typed wrong: each must say "PATH: not found" in hiro's words, and
// none may print the system call's raw "open PATH: no such file".
func TestMissingInputsAreNamedNotFound(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nosuch.json")
	for _, args := range [][]string{
		{"evidence", "verify", missing},
		{"journal", "add", "--journal", filepath.Join(dir, "j"), missing},
		{"journal", "new", "--journal", filepath.Join(dir, "j"), "--title", "T", "--body-file", missing},
		{"--config", switchTestConfig(t), "activate", missing, "--check"},
	} {
		_, _, errs := runHiro(t, args...)
		if !strings.Contains(errs, missing+": not found (no such file or folder)") {
			t.Errorf("hiro %s: stderr lacks %q\n%s", strings.Join(args, " "), missing+": not found", errs)
		}
		for _, raw := range []string{"open " + missing, "stat " + missing, "no such file or directory"} {
			if strings.Contains(errs, raw) {
				t.Errorf("hiro %s: stderr still says %q\n%s", strings.Join(args, " "), raw, errs)
			}
		}
	}
}
