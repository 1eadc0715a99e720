package supervisor

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/procfs"
)

// The engine's leader is killed with SIGKILL (kill -9 of 'ollama serve'):
// its child, in the same process group, keeps the port. The record reads
// stale but counts the leftover; StopRecorded ends it (the child ignores
// SIGTERM here, so SIGKILL after the grace) and /proc shows nothing of the
// group left, the port free.
func TestStopRecordedEndsLeftoversOfDeadLeader(t *testing.T) {
	port := freePort(t)
	p, state := fakeProfile(t, "llamacpp", port, []string{"--wrapper", "--port", strconv.Itoa(port), "--ignore-sigterm"}, `stop_grace = "300ms"`)
	proc, res := startFake(t, p, state)
	if res.State != StateReady {
		t.Fatalf("state %s: %+v", res.State, res.Failure)
	}
	pids := logPIDs(t, res.LogPath)
	if len(pids) != 1 {
		t.Fatalf("wrapped engine pid not logged: %v", pids)
	}
	child := pids[0]
	killLater(t, child)
	rec, err := proc.Detach()
	if err != nil {
		t.Fatal(err)
	}
	// The engine joins hiro's session (a new process group, not a new
	// session). /proc writes 0 when that session's leader lives outside
	// this PID namespace (a container's runner), so compare with ours.
	own, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rec.SID != own.SID {
		t.Errorf("record's session id %d, hiro's %d: %+v", rec.SID, own.SID, rec)
	}
	if err := syscall.Kill(rec.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-proc.Exited()
	st, err := Status(state, "fake")
	if err != nil || st.Status != StatusStale || st.ProcessesInGroup != 1 || !strings.Contains(st.Reason, "1 process of its process group") {
		t.Fatalf("status after kill -9 of the leader: %+v %v", st, err)
	}
	if !alive(child) {
		t.Fatalf("the child %d died with its leader: the test proves nothing", child)
	}
	st, sr, err := StopRecorded(context.Background(), state, "fake", 0)
	if err != nil || st.Status != StatusStale || sr.Leftovers != 1 || !sr.Killed || !sr.PortFree || sr.Leak != nil || sr.Err != "" {
		t.Fatalf("stop of the stale record: %+v %+v %v", st, sr, err)
	}
	if alive(child) || len(procfs.GroupMembers(rec.PGID)) != 0 {
		t.Errorf("child %d alive %v; group %d members %v", child, alive(child), rec.PGID, procfs.GroupMembers(rec.PGID))
	}
	if _, err := os.Stat(recordPath(state, "fake")); !os.IsNotExist(err) {
		t.Errorf("stale record kept: %v", err)
	}
}

// orphanGroup starts a shell leading its own process group with a sleep
// in it, kills the shell, and returns the shell's pid (the group's id)
// and the sleep's stat: a group whose leader is dead and whose member
// lives, as a dead engine leaves it.
func orphanGroup(t *testing.T) (int, procfs.Stat) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	var m procfs.Stat
	if !waitFor(5*time.Second, func() bool {
		for _, s := range procfs.GroupMembers(pgid) {
			if s.PID != pgid {
				m = s
				return true
			}
		}
		return false
	}) {
		t.Fatal("the sleep did not start")
	}
	killLater(t, m.PID)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return pgid, m
}

// A process whose pgid or start time does not prove it hiro's is never
// signalled: a member that started before the recorded leader, one of
// another session, and the group of a pid now held by another process.
func TestLeftoversNeverSignalsAnotherGroup(t *testing.T) {
	pgid, m := orphanGroup(t)
	self, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	cases := map[string]Record{
		// The recorded leader started after the survivor: the survivor
		// cannot have been forked into the group that leader made.
		"started-before-leader": {PID: pgid, PGID: pgid, StartTicks: m.StartTicks + 1, SID: m.SID},
		// The survivor's session is not the recorded leader's.
		"other-session": {PID: pgid, PGID: pgid, StartTicks: m.StartTicks, SID: m.SID + 1},
		// The recorded pid is alive with another start time (reused): the
		// recorded group had vanished; this test's group is not it.
		"pid-reused": {PID: os.Getpid(), PGID: self.PGID, StartTicks: self.StartTicks + 1},
		// Not led by its pid: hiro never records such a group.
		"not-a-leader": {PID: 1<<22 - 1, PGID: pgid, StartTicks: m.StartTicks},
	}
	for name, r := range cases {
		r.Schema, r.Name, r.StopGraceMS = RecordSchema, name, 10
		if got := Leftovers(r); len(got) != 0 {
			t.Errorf("%s: leftovers %v; want none proven", name, got)
		}
		if err := WriteRecord(state, r); err != nil {
			t.Fatal(err)
		}
		st, sr, err := StopRecorded(context.Background(), state, name, 0)
		if err != nil || st.Status != StatusStale || sr.Leftovers != 0 || sr.Killed || sr.Graceful {
			t.Errorf("%s: stop %+v %+v %v; want stale, nothing signalled", name, st, sr, err)
		}
	}
	if !stillProven(m) {
		t.Fatalf("the sleep %d of another group was signalled", m.PID)
	}
	// The control: a record that does prove it ends it.
	r := Record{Schema: RecordSchema, Name: "proven", PID: pgid, PGID: pgid, StartTicks: m.StartTicks, SID: m.SID, StopGraceMS: 1000}
	if got := Leftovers(r); len(got) != 1 || got[0].PID != m.PID {
		t.Fatalf("leftovers of the proving record: %v; want the sleep %d", got, m.PID)
	}
	_, sr := StopRecord(context.Background(), state, r, 0)
	if sr.Leftovers != 1 || !sr.Graceful || sr.Leak != nil || stillProven(m) {
		t.Errorf("stop of the proving record: %+v; sleep alive %v", sr, stillProven(m))
	}
}
