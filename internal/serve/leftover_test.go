package serve

import (
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/procfs"
)

// TestRestartAfterDeathEndsLeftovers: production runs as a wrapper whose
// child (same process group) serves, as 'ollama serve' runs 'ollama
// runner'. Its leader is killed with SIGKILL, once while the router's
// own and once adopted: before the restart the child is stopped, and
// /proc shows nothing of the old group left.
func TestRestartAfterDeathEndsLeftovers(t *testing.T) {
	cfg := fakeConfig(t, []string{"--wrapper"}, `on_exit = "leave"`)
	killEngines(t, cfg.Backends["prod"].Port)
	members := func(pgid int) []procfs.Stat {
		var out []procfs.Stat
		for _, s := range procfs.GroupMembers(pgid) {
			if s.PID != pgid {
				out = append(out, s)
			}
		}
		return out
	}
	check := func(r *router, adopted bool) {
		t.Helper()
		st := r.waitState(t, control.StateReady, 20*time.Second)
		pid := st.Production.PID
		if len(members(pid)) != 1 {
			t.Fatalf("the wrapped engine is not in group %d: %v", pid, procfs.GroupMembers(pid))
		}
		syscall.Kill(pid, syscall.SIGKILL)
		r.waitRestarts(t, st.Production.Restarts+1, 20*time.Second)
		if left := members(pid); len(left) != 0 {
			t.Errorf("adopted %v: group %d of the dead leader still has %v after the restart\n%s", adopted, pid, left, r.events.String())
		}
		if adopted && len(eventsOf(r, "leftovers_stopped")) != 1 {
			t.Errorf("no leftovers_stopped event:\n%s", r.events.String())
		}
	}
	r1 := startRouter(t, cfg, nil)
	check(r1, false)
	r1.waitState(t, control.StateReady, 20*time.Second)
	r1.stop(t)
	r2 := startRouter(t, cfg, nil)
	check(r2, true)
	r2.stop(t)
}
