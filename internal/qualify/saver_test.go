package qualify

import (
	"path/filepath"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
)

func TestSaverWritesNewestSnapshot(t *testing.T) {
	dir := t.TempDir()
	s := newSaver(dir, nil)
	e := &evidence.Evidence{Schema: evidence.SchemaID, Gates: []evidence.Gate{}}
	for _, v := range []string{"running", "not_qualified", "qualified"} {
		e.Verdict = v
		if err := s.save(e); err != nil {
			t.Fatal(err)
		}
	}
	e.Verdict = "changed after the last save"
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	got, err := evidence.Load(filepath.Join(dir, evidence.PrivateFile))
	if err != nil {
		t.Fatal(err)
	}
	if got.Verdict != "qualified" {
		t.Fatalf("on disk: %q, want the newest snapshot %q", got.Verdict, "qualified")
	}
	// A save after close is never written, and flush must not hang on it.
	if err := s.save(e); err != nil {
		t.Fatal(err)
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
}
