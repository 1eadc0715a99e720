package procfs

import (
	"net"
	"os"
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

func TestParseProcStatCommWithSpaces(t *testing.T) {
	s, err := ParseStat([]byte("123 (a b) c)) S 1 120 120 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 98765 0 0"))
	if err != nil || s.PID != 123 || s.Comm != "a b) c)" || s.State != 'S' || s.PGID != 120 || s.StartTicks != 98765 {
		t.Errorf("%+v %v", s, err)
	}
}

func TestParseSocketInodes(t *testing.T) {
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0000000000000000
   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4343 1 0000000000000000 100 0 0 10 0
`
	got := ParseSocketInodes([]byte(tcp), 8080)
	if len(got) != 1 || got[0] != "4242" {
		t.Errorf("inodes %v, want [4242]", got)
	}
}

// Listeners names the process listening on a port (this test), and
// nothing once it stops listening.
func TestListeners(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	hs, unseen := Listeners(port)
	if len(hs) != 1 || hs[0].PID != os.Getpid() || unseen != 0 {
		t.Errorf("listening on %d: %+v, %d unseen; want this process", port, hs, unseen)
	}
	ln.Close()
	if hs, unseen := Listeners(port); len(hs) != 0 || unseen != 0 {
		t.Errorf("after close: %+v, %d unseen", hs, unseen)
	}
}

// TestUnseenHolderAsRootIsNotAnotherUsers: run as root, hiro sees every
// process, so a port with no visible holder is not blamed on another user
// (trial 11 R1 said "another user's?" as root); as another user it is.
func TestUnseenHolderAsRootIsNotAnotherUsers(t *testing.T) {
	got := UnseenHolder()
	if os.Geteuid() == 0 {
		if strings.Contains(got, "another user") || !strings.Contains(got, "runs as root") {
			t.Errorf("as root: %q", got)
		}
		return
	}
	if !strings.Contains(got, "another user's?") {
		t.Errorf("as uid %d: %q", os.Geteuid(), got)
	}
}
