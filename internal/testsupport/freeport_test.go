package testsupport

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFreePortNeverRepeats: ports taken before either is bound (a
// production's and a candidate's) are distinct; drawn at random from
// 12,000 they met by chance about once in 12,000 pairs before.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 2000; i++ {
		p := FreePort(t)
		if seen[p] {
			t.Fatalf("FreePort returned %d twice (call %d)", p, i+1)
		}
		seen[p] = true
	}
}

// TestFreePortClaimsAcrossProcesses: a port given is claimed for other
// test binaries: a second flock on its claim file (as another process's
// FreePort takes it) is refused while this binary runs.
func TestFreePortClaimsAcrossProcesses(t *testing.T) {
	p := FreePort(t)
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "hiro-test-ports", strconv.Itoa(p)), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("port %d has no claim file: %v", p, err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err == nil {
		t.Fatalf("port %d's claim could be taken a second time: another test binary could be given it", p)
	}
}
