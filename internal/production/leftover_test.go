package production_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// TestKeeperEndsLeftoversOfStaleRecord: production runs as a wrapper
// whose child (same process group) serves; its leader is killed with
// SIGKILL. DropStale, and then Stop after a second such death, end the
// child: /proc shows nothing of the group left.
func TestKeeperEndsLeftoversOfStaleRecord(t *testing.T) {
	cfg := keeperConfig(t, false, "READY")
	prof := cfg.Backends["prod"]
	prof.Args = append([]string{"--wrapper"}, prof.Args...)
	k := production.Keeper{StateDir: cfg.StateDir}
	killLeader := func() int {
		t.Helper()
		res, err := k.StartDetached(context.Background(), prof, supervisor.Options{})
		if err != nil || res.State != supervisor.StateReady {
			t.Fatalf("start: %+v %v", res, err)
		}
		t.Cleanup(func() { syscall.Kill(-res.PGID, syscall.SIGKILL) })
		if n := len(procfs.GroupMembers(res.PGID)); n != 2 {
			t.Fatalf("group %d has %d processes, want the wrapper and its child", res.PGID, n)
		}
		syscall.Kill(res.PID, syscall.SIGKILL)
		for deadline := time.Now().Add(5 * time.Second); alive(res.PID) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		return res.PGID
	}
	pgid := killLeader()
	st, sr, ok, err := k.DropStale(prof)
	if !ok || err != nil || st.Status != supervisor.StatusStale || sr.Leftovers != 1 || sr.Leak != nil {
		t.Fatalf("DropStale: %+v %+v %v %v", st, sr, ok, err)
	}
	if left := procfs.GroupMembers(pgid); len(left) != 0 {
		t.Errorf("group %d still has %v after DropStale", pgid, left)
	}
	pgid = killLeader()
	if err := k.Stop(context.Background(), prof); err != nil {
		t.Fatal(err)
	}
	if left := procfs.GroupMembers(pgid); len(left) != 0 {
		t.Errorf("group %d still has %v after Stop", pgid, left)
	}
}
