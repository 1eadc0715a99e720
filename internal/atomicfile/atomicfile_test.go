package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

func TestWriteFileReplacesAndLeavesNoTemp(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "e.json")
	if err := WriteJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
	if err := WriteFile(filepath.Join(p, "under-a-file"), []byte("x"), 0o644); err == nil {
		t.Fatal("writing under a regular file succeeded")
	}
}

// CreateExclusive never replaces what is there (a file, a symbolic link
// to elsewhere) and of many writers of one name exactly one wins.
func TestCreateExclusive(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "entry.json")
	if err := CreateExclusive(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CreateExclusive(p, []byte("two"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second write: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "one" {
		t.Fatalf("the first file was replaced: %q", b)
	}
	target := filepath.Join(dir, "target")
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
	if err := CreateExclusive(link, []byte("x"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("through a symbolic link: %v", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the symbolic link was followed")
	}
	var wg sync.WaitGroup
	var won atomic.Int32
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if CreateExclusive(filepath.Join(dir, "race"), []byte("r"), 0o644) == nil {
				won.Add(1)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Fatalf("%d writers won, want 1", won.Load())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Fatalf("left %d files, want 3 (no temporary ones)", len(ents))
	}
}
