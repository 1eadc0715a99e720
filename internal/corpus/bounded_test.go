package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadPathsBounded: a document is read up to the limit (so a reject
// for its size still sees it over the bound); a FIFO or a device is an
// error naming it, not a read that never ends.
func TestLoadPathsBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, []byte(strings.Repeat("a", 1000)), 0o644)
	docs, err := LoadPathsBounded([]string{big}, 101)
	if err != nil || len(docs) != 1 || len(docs[0].Text) != 101 {
		t.Fatalf("bounded read: %v, %d docs", err, len(docs))
	}
	if docs, err := LoadPaths([]string{big}); err != nil || len(docs[0].Text) != 1000 {
		t.Fatalf("unbounded read: %v", err)
	}
	fifo := filepath.Join(dir, "pipe.txt")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		if _, err := LoadPathsBounded([]string{p}, 101); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v", p, err)
		}
	}
}
