// Package doctortest is test support for code that reads the host through
// package doctor: a fake nvidia-smi, a real executable put first on PATH,
// that prints outputs captured on a real machine. It must not be imported
// by code a user runs.
package doctortest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SMI names the captured outputs the fake nvidia-smi prints: QueryGPU for
// --query-gpu=..., QueryApps for --query-compute-apps=..., Plain for a
// call without arguments. Each is a file path; empty prints nothing and
// succeeds (QueryApps: no process holds memory), except Plain, which then
// fails as nvidia-smi does without a driver.
type SMI struct {
	QueryGPU  string
	QueryApps string
	Plain     string
}

// FakeNvidiaSMI writes an nvidia-smi shell script into a temporary folder
// and puts that folder first on PATH for the rest of t (t.Setenv, so t
// and its parents must not be parallel). Any other arguments make the
// script fail with exit 2, so a test notices a query it did not expect.
func FakeNvidiaSMI(t testing.TB, s SMI) {
	t.Helper()
	abs := func(p string) string {
		if p == "" {
			return ""
		}
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(a); err != nil {
			t.Fatalf("fake nvidia-smi: %v", err)
		}
		return a
	}
	cat := func(p string) string {
		if p == "" {
			return "true"
		}
		return "exec cat " + shellQuote(abs(p))
	}
	plain := cat(s.Plain)
	if s.Plain == "" {
		plain = `echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9`
	}
	script := fmt.Sprintf(`#!/bin/sh
# fake nvidia-smi (package doctortest): prints outputs captured on a real GPU machine
case "$1" in
--query-gpu=*) %s ;;
--query-compute-apps=*) %s ;;
"") %s ;;
esac
echo "fake nvidia-smi: unexpected arguments: $*" >&2
exit 2
`, cat(s.QueryGPU), cat(s.QueryApps), plain)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
