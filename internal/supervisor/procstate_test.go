package supervisor

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestProcessState: a sleeping process, the same process stopped, and
// after it is reaped, as ProcessState words them.
func TestProcessState(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Kill()
	waitState := func(prefix string) string {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, alive := ProcessState(pid)
			if strings.HasPrefix(st, prefix) && alive {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("pid %d: state %q alive %v, want %s…", pid, st, alive, prefix)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitState("S (sleeping)")
	syscall.Kill(pid, syscall.SIGSTOP)
	waitState("T (stopped)")
	cmd.Process.Kill()
	cmd.Wait()
	if st, alive := ProcessState(pid); alive || st != "" {
		t.Errorf("a reaped process: %q alive %v", st, alive)
	}
	if _, alive := ProcessState(0); alive {
		t.Error("pid 0 alive")
	}
}
