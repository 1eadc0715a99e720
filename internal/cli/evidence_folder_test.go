package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// TestEvidenceFolderIsTakenLikeActivate: evidence verify and journal add
// take a campaign's evidence folder as activate does (evidence.File),
// naming the file inside they used; a folder without it is refused in
// hiro's words, not "read DIR: is a directory" (issue 26, T14).
func TestEvidenceFolderIsTakenLikeActivate(t *testing.T) {
	folder := filepath.Join(t.TempDir(), "20250612T140000Z-vllm")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(folder, evidence.PublicFile)
	writeTestEvidence(t, pub)

	code, out, errs := runHiro(t, "evidence", "verify", folder)
	if code != ExitOK || !strings.Contains(out, pub+": signature verifies") {
		t.Errorf("evidence verify FOLDER: exit %d, want 0 naming %s\n%s%s", code, pub, out, errs)
	}
	dir := filepath.Join(t.TempDir(), "journal")
	code, out, errs = runHiro(t, "journal", "add", "--journal", dir, folder+"/")
	if code != ExitOK || !strings.Contains(out, "from "+filepath.Join(folder, evidence.PublicFile)) {
		t.Errorf("journal add FOLDER: exit %d, want 0 naming %s\n%s%s", code, pub, out, errs)
	}

	empty := t.TempDir()
	for _, args := range [][]string{{"evidence", "verify", empty}, {"journal", "add", "--journal", dir, empty}} {
		code, _, errs := runHiro(t, args...)
		if code != ExitUsage || !strings.Contains(errs, empty+": a folder without evidence.json") || strings.Contains(errs, "is a directory") {
			t.Errorf("%s of a folder without evidence: exit %d, want %d naming evidence.json\n%s", strings.Join(args[:2], " "), code, ExitUsage, errs)
		}
	}
}
