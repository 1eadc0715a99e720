package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// Counts of 1 agree with their noun in what the commands print (issue 26,
// T2): a one-file model (a GGUF) is "1 file", a shadow run of one pair
// "1 pair scored".
func TestCountsOfOneAgreeWithTheirNoun(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.gguf"), []byte(strings.Repeat("w", 1000)), 0o644)
	out := filepath.Join(t.TempDir(), "m.json")
	code, stdout, stderr := runArtifactCLI(t, "artifact", "pin", "--dir", dir, "--repo", "acme/one", "--revision", artifactTestRev, "--out", out)
	if code != ExitOK || !strings.Contains(stdout, ": 1 file, ") {
		t.Errorf("pin of one file: %d %q %q, want \"1 file\"", code, stdout, stderr)
	}
	code, stdout, stderr = runArtifactCLI(t, "artifact", "verify", out)
	if code != ExitOK || !strings.Contains(stdout, ": 1 file, ") {
		t.Errorf("verify of one file: %d %q %q, want \"1 file\"", code, stdout, stderr)
	}

	var b bytes.Buffer
	printShadow(&b, &control.ShadowStatus{Result: &evidence.ShadowResult{Production: "prod", Candidate: "cand", Share: 1,
		Ended: "max_pairs", MaxPairs: 1, Seen: 1, Sampled: 1, Mirrored: 1, Pairs: 1, Outcome: evidence.StatusInconclusive,
		Extraction: evidence.ShadowExtraction{Pairs: 1}}})
	text := b.String()
	for _, want := range []string{"(1 pair scored)", "ended at max_pairs, 1 pair scored", "extraction  1 pair: "} {
		if !strings.Contains(text, want) {
			t.Errorf("shadow account lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text+stdout, "1 pairs") || strings.Contains(stdout, "1 files") {
		t.Errorf("a count of 1 with a plural noun:\n%s%s", text, stdout)
	}
}
