package activation_test

import (
	"bytes"
	"context"
	"time"

	"encoding/json"
	"github.com/hiro-dev/hiro/internal/activation"
	"github.com/hiro-dev/hiro/internal/config"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/signing"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// The attacks on activation's evidence, each through the hiro command
// ('activate --check': every check, nothing started): evidence edited by
// hand, consistently (a not_qualified campaign made to read qualified);
// a genuine copy owned by another user and writable by others; evidence
// with its signature removed (accepted only with --trust-unsigned); and
// evidence signed by a key the user does not trust (accepted once 'hiro
// trust add' names it). Before, only the consistency checks stood, and
// the first two were activated.
func TestForgedOrForeignEvidenceRefused(t *testing.T) {
	w := newWorld(t, false)
	w.startProduction()
	evPath := w.qualify()
	genuine, err := os.ReadFile(evPath)
	must(t, err)
	if code, out := w.hiro("activate", "--check", evPath); code != 0 {
		t.Fatalf("the genuine evidence: exit %d\n%s", code, out)
	}
	dir := t.TempDir()
	at := func(name string, b []byte, mode os.FileMode) string {
		d := filepath.Join(dir, name)
		must(t, os.Mkdir(d, 0o700))
		p := filepath.Join(d, evidence.PrivateFile)
		must(t, os.WriteFile(p, b, mode))
		must(t, os.Chmod(p, mode))
		return p
	}
	expect := func(what, path string, code int, wants ...string) {
		t.Helper()
		got, out := w.hiro(append([]string{"activate", "--check"}, path)...)
		if got != code {
			t.Fatalf("%s: exit %d, want %d\n%s", what, got, code, out)
		}
		for _, want := range wants {
			if !strings.Contains(out, want) {
				t.Fatalf("%s: output lacks %q\n%s", what, want, out)
			}
		}
	}

	// Edited consistently: the verdict, exit code and gates still agree,
	// only the words changed (as a hand-made qualified would).
	var ev evidence.Evidence
	must(t, json.Unmarshal(genuine, &ev))
	ev.TerminationReason = "all gates passed (edited)"
	edited, _ := json.MarshalIndent(&ev, "", "  ")
	expect("edited", at("edited", edited, 0o600), 1, "signature", "does not verify", "changed after it was signed")

	// A genuine copy, writable by others; then owned by nobody.
	p := at("open", genuine, 0o666)
	expect("writable by others", p, 1, "may be written by others", p)
	must(t, os.Chmod(p, 0o644))
	testsupport.GiveToNobody(t, p)
	expect("owned by nobody", p, 1, "owned by uid 65534", p)

	// Unsigned: refused, then accepted with --trust-unsigned.
	var m map[string]json.RawMessage
	must(t, json.Unmarshal(genuine, &m))
	delete(m, signing.Field)
	unsigned, _ := json.MarshalIndent(m, "", "  ")
	up := at("unsigned", unsigned, 0o600)
	expect("unsigned", up, 1, "unsigned", "--trust-unsigned")
	if code, out := w.hiro("activate", "--check", "--trust-unsigned", up); code != 0 {
		t.Fatalf("unsigned with --trust-unsigned: exit %d\n%s", code, out)
	}

	// Signed by another hiro's key: refused until trusted.
	foreign, err := signing.Generate()
	must(t, err)
	ev = evidence.Evidence{}
	must(t, json.Unmarshal(genuine, &ev))
	priv, _, err := evidence.Encode(&ev, foreign)
	must(t, err)
	fp := at("foreign", priv, 0o600)
	pub := foreign.Public().String()
	expect("foreign key", fp, 1, "do not trust", foreign.Public().ID(), "hiro trust add "+pub)
	if code, out := w.hiro("trust", "add", pub, "--name", "the ci runner"); code != 0 {
		t.Fatalf("trust add: exit %d\n%s", code, out)
	}
	if code, out := w.hiro("trust"); code != 0 || !strings.Contains(out, foreign.Public().ID()) || !strings.Contains(out, "the ci runner") {
		t.Fatalf("trust list: exit %d\n%s", code, out)
	}
	expect("foreign key once trusted", fp, 0)
	if code, out := w.hiro("trust", "remove", foreign.Public().ID()); code != 0 {
		t.Fatalf("trust remove: exit %d\n%s", code, out)
	}
	expect("foreign key removed again", fp, 1, "do not trust")

	// An aborted campaign signed by that untrusted key: the verdict, which
	// no key changes, is the refusal (the signature named beside it), so
	// the user is not told to trust a key for nothing. Before, only the
	// signature was named, and trusting the key led to the verdict.
	ev = evidence.Evidence{}
	must(t, json.Unmarshal(genuine, &ev))
	ev.Verdict, ev.ExitCode = evidence.VerdictAborted, 3
	ev.TerminationReason = "harness error: semantic: production extraction incomplete"
	priv, _, err = evidence.Encode(&ev, foreign)
	must(t, err)
	ap := at("aborted-foreign", priv, 0o600)
	expect("aborted, foreign key", ap, 1, "refused: verdict:", `is "aborted", not "qualified"`, "also, signature:", "do not trust", "would not change the verdict")

	if !bytes.Equal(genuine, mustRead(t, evPath)) {
		t.Fatal("the genuine evidence changed")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return b
}

// A file that is not JSON given as the evidence (the campaign's
// report.md, trial 10's Q19) is refused naming the file and what to
// give, not with the JSON decoder's words.
func TestCheckRefusesAFileThatIsNotEvidence(t *testing.T) {
	md := filepath.Join(t.TempDir(), "report.md")
	if err := os.WriteFile(md, []byte("# Campaign report\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := activation.Check(context.Background(), &config.Config{}, md, time.Now(), activation.Accept{})
	if err == nil || !strings.Contains(err.Error(), md+" is not an evidence document") || !strings.Contains(err.Error(), "evidence.json") ||
		strings.Contains(err.Error(), "invalid character") {
		t.Errorf("report.md as evidence: %v", err)
	}
}
