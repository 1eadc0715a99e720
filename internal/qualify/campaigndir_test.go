package qualify

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// Campaigns of one candidate started in the same second get folders of
// their own: before, the id was the second and the candidate alone, and
// the second campaign wrote into the first one's folder (6 campaigns, 3
// folders). Each is 0700 and made exclusively.
func TestCampaignFoldersUniqueInOneSecond(t *testing.T) {
	root := filepath.Join(t.TempDir(), "evidence")
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for i := 0; i < 64; i++ {
		id, dir, err := createCampaignDir(root, start, "Cand A")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(id, "20261201T100000Z-cand-a-") || filepath.Base(dir) != id || seen[id] {
			t.Fatalf("campaign %d: id %s dir %s (seen before: %v)", i, id, dir, seen[id])
		}
		seen[id] = true
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			t.Fatalf("folder %s: %v %v", dir, fi.Mode(), err)
		}
	}
	ents, _ := os.ReadDir(root)
	if len(ents) != 64 {
		t.Fatalf("%d folders for 64 campaigns", len(ents))
	}
}

// A later hiro settling a dead campaign writes into its folder only when
// it is a real folder of this user's: not one another user owns, not a
// symbolic link planted in its place.
func TestSettleEvidenceOnlyInOwnFolder(t *testing.T) {
	running := func(dir string) []byte {
		t.Helper()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		e := &evidence.Evidence{Schema: evidence.SchemaID, ID: "20261201T100000Z-cand-abcdef", Candidate: "cand",
			Verdict: evidence.VerdictRunning, StartedAt: time.Now().Add(-time.Minute)}
		if err := evidence.WriteBoth(dir, e, nil); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(dir, evidence.PrivateFile))
		return b
	}
	base := t.TempDir()
	own := filepath.Join(base, "own")
	running(own)
	settleEvidence(&Lease{EvidenceDir: own}, 1<<22, nil, nil)
	if e, err := evidence.Load(filepath.Join(own, evidence.PrivateFile)); err != nil || e.Verdict != evidence.VerdictAborted {
		t.Fatalf("own folder not settled: %+v %v", e, err)
	}

	target := filepath.Join(base, "target")
	before := running(target)
	link := filepath.Join(base, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	settleEvidence(&Lease{EvidenceDir: link}, 1<<22, nil, nil)
	if after, _ := os.ReadFile(filepath.Join(target, evidence.PrivateFile)); !bytes.Equal(before, after) {
		t.Fatal("evidence written through a symbolic link")
	}

	foreign := filepath.Join(base, "foreign")
	before = running(foreign)
	testsupport.GiveToNobody(t, foreign)
	settleEvidence(&Lease{EvidenceDir: foreign}, 1<<22, nil, nil)
	if after, _ := os.ReadFile(filepath.Join(foreign, evidence.PrivateFile)); !bytes.Equal(before, after) {
		t.Fatal("evidence written into a folder owned by nobody")
	}
}

// The semantic gate's candidate folder does not stutter: a gate whose id
// is its kind gets no folder of its own, and a profile named candidate-...
// is not prefixed again (issue 26, T20).
func TestSemanticCandidateDirDoesNotStutter(t *testing.T) {
	for _, c := range []struct{ id, profile, want string }{
		{"semantic", "candidate-weak", "ev/semantic/candidate-weak"},
		{"semantic", "vllm", "ev/semantic/candidate-vllm"},
		{"quality", "candidate-weak", "ev/semantic/quality/candidate-weak"},
		{"quality", "a/b", "ev/semantic/quality/candidate-a_b"},
	} {
		if got := semanticCandidateDir("ev", c.id, c.profile); got != filepath.FromSlash(c.want) {
			t.Errorf("semanticCandidateDir(ev, %q, %q) = %q, want %q", c.id, c.profile, got, c.want)
		}
	}
}
