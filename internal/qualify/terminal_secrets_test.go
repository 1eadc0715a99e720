package qualify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// What a campaign prints on the terminal (what CI logs keep) passes
// through the same redaction as its public files: an engine whose failure
// line quotes a registered token and a bearer key fails the launch, and
// neither secret is in hiro's stdout or stderr, while the line itself is
// shown (redacted). Before, the failure line was printed in clear.
func TestTerminalOutputIsRedacted(t *testing.T) {
	const token = "hf_TerminalSecretZZZZ0009"
	const bearer = "sk-live-TerminalBearerKey1234567890"
	dir := t.TempDir()
	log := filepath.Join(dir, "fail.log")
	must(t, os.WriteFile(log, []byte("INFO starting engine\n"+
		"ERROR hub refused token "+token+": 401 Unauthorized (Authorization: Bearer "+bearer+")\n"), 0o644))
	e := newEnv(t, []string{"--replay", log, "--exit", "1"}, `[backends.cand.env]
HF_TOKEN = "`+token+`"
`, nil)
	e.startProduction()
	plan := e.writePlan(`
[[gates]]
id = "launch"
kind = "launch"
`)
	code, stdout, stderr := runHiro(t, e, "qualify", plan)
	if code != 1 {
		t.Fatalf("qualify exit %d, want 1\n%s\n%s", code, stdout, stderr)
	}
	out := stdout + stderr
	for what, s := range map[string]string{"registered token": token, "bearer key": bearer} {
		if strings.Contains(out, s) {
			t.Errorf("the terminal output holds the %s %q:\n%s", what, s, out)
		}
	}
	if !strings.Contains(out, "hub refused token") || !strings.Contains(out, "<redacted>") {
		t.Fatalf("the failure line is not shown redacted: the test checks nothing\n%s", out)
	}
}
