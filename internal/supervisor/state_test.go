package supervisor

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

func TestDetachStatusStopRecorded(t *testing.T) {
	port := freePort(t)
	p, state := fakeProfile(t, "llamacpp", port, []string{"--port", strconv.Itoa(port)}, "")
	proc, res := startFake(t, p, state)
	if res.State != StateReady {
		t.Fatalf("state %s: %+v", res.State, res.Failure)
	}
	rec, err := proc.Detach()
	if err != nil {
		t.Fatal(err)
	}
	if rec.PID != res.PID || rec.PGID != res.PID || rec.Port != port || rec.LogPath != res.LogPath || rec.ProfileHash != p.Hash() || rec.StartTicks == 0 {
		t.Errorf("record %+v", rec)
	}
	// The record on disk is the one returned.
	b, err := os.ReadFile(recordPath(state, "fake"))
	if err != nil {
		t.Fatal(err)
	}
	var onDisk Record
	if err := json.Unmarshal(b, &onDisk); err != nil || onDisk.PID != rec.PID || onDisk.Schema != RecordSchema {
		t.Fatalf("record file %s: %v", b, err)
	}
	st, err := Status(state, "fake")
	if err != nil || st.Status != StatusRunning || st.ProcessesInGroup != 1 {
		t.Fatalf("status %+v %v", st, err)
	}
	all, err := StatusAll(state)
	if err != nil || len(all) != 1 || all[0].Name != "fake" {
		t.Fatalf("status all %+v %v", all, err)
	}
	st, sr, err := StopRecorded(context.Background(), state, "fake", 0)
	if err != nil || st.Status != StatusRunning || !sr.Graceful || !sr.PortFree || sr.Leak != nil {
		t.Fatalf("stop recorded: %+v %+v %v", st, sr, err)
	}
	if alive(res.PID) {
		t.Errorf("pid %d alive after StopRecorded", res.PID)
	}
	if _, err := os.Stat(recordPath(state, "fake")); !os.IsNotExist(err) {
		t.Errorf("record left after stop: %v", err)
	}
	if _, err := Status(state, "fake"); err == nil || !strings.Contains(err.Error(), "no record") {
		t.Errorf("status after stop: %v", err)
	}
}

func TestStaleRecords(t *testing.T) {
	state := t.TempDir()
	// A process that is gone.
	gone := Record{Schema: RecordSchema, Name: "gone", PID: 1 << 22, PGID: 1 << 22, Port: 1, StartedAt: time.Now()}
	// A pid that now belongs to another process: this test's own pid with
	// another start time.
	self, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	reused := Record{Schema: RecordSchema, Name: "reused", PID: os.Getpid(), PGID: self.PGID, StartTicks: self.StartTicks + 1, Port: 1}
	for _, r := range []Record{gone, reused} {
		if err := WriteRecord(state, r); err != nil {
			t.Fatal(err)
		}
	}
	all, err := StatusAll(state)
	if err != nil || len(all) != 2 {
		t.Fatalf("%+v %v", all, err)
	}
	for _, st := range all {
		if st.Status != StatusStale {
			t.Errorf("%s: status %s, want stale", st.Name, st.Status)
		}
	}
	if !strings.Contains(all[0].Reason, "is gone") || !strings.Contains(all[1].Reason, "another process") {
		t.Errorf("reasons %q / %q", all[0].Reason, all[1].Reason)
	}
	// Stopping a stale record sends no signal (this test is still alive)
	// and removes the record.
	st, sr, err := StopRecorded(context.Background(), state, "reused", time.Millisecond)
	if err != nil || st.Status != StatusStale || sr.Killed || sr.Graceful {
		t.Errorf("stop of a stale record: %+v %+v %v", st, sr, err)
	}
	if _, err := os.Stat(recordPath(state, "reused")); !os.IsNotExist(err) {
		t.Errorf("stale record kept")
	}
}

// A state_dir whose record folder another user owns, or its group may
// write, is refused: a record there could have been planted to make hiro
// signal a process it never started. The planted record names a live
// process (this test) exactly, so without the folder check it reads as
// running.
func TestRecordFolderOfAnotherUserIsRefused(t *testing.T) {
	state := t.TempDir()
	self, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	r := Record{Schema: RecordSchema, Name: "planted", PID: os.Getpid(), PGID: self.PGID, StartTicks: self.StartTicks, Port: 1}
	if err := WriteRecord(state, r); err != nil {
		t.Fatal(err)
	}
	if st, err := Status(state, "planted"); err != nil || st.Status != StatusRunning {
		t.Fatalf("own record: %+v %v", st, err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(recordDir(state), 0o770))
	for _, f := range []func() error{
		func() error { _, err := Status(state, "planted"); return err },
		func() error { _, err := StatusAll(state); return err },
	} {
		if err := f(); err == nil || !strings.Contains(err.Error(), recordDir(state)) || !strings.Contains(err.Error(), "state_dir") {
			t.Errorf("group-writable record folder: %v; want it refused, named", err)
		}
	}
	must(os.Chmod(recordDir(state), 0o700))
	testsupport.GiveToNobody(t, recordDir(state))
	if _, err := Status(state, "planted"); err == nil || !strings.Contains(err.Error(), "uid 65534") {
		t.Errorf("record folder owned by nobody: %v; want it refused", err)
	}
	if err := WriteRecord(state, r); err == nil {
		t.Errorf("a record was written into a folder owned by nobody")
	}
}
