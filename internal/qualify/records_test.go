package qualify_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// unrelated starts a process hiro did not start, in a process group of
// its own (so pid == pgid, like an engine's), and returns it.
func unrelated(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func alive(pid int) bool {
	st, ok := procfs.StartTicks(pid)
	return ok && st > 0
}

// TestRecordWithoutStartTimeIsNeverSignalled: a state record naming an
// unrelated process, without a start time (or with another one), is not
// trusted: 'hiro backend stop' signals nothing.
func TestRecordWithoutStartTimeIsNeverSignalled(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	victim := unrelated(t)
	pid := victim.Process.Pid
	ticks, _ := procfs.StartTicks(pid)
	for _, tc := range []struct {
		name  string
		ticks uint64
	}{{"no start time", 0}, {"another start time", ticks + 1}} {
		rec := supervisor.Record{Schema: supervisor.RecordSchema, Name: "prod", Engine: "llamacpp", PID: pid, PGID: pid, StartTicks: tc.ticks,
			Port: e.prodPort, StopGraceMS: 100, StartedAt: time.Now()}
		must(t, supervisor.WriteRecord(e.cfg.StateDir, rec))
		code, stdout, stderr := runHiro(t, e, "backend", "stop", "prod")
		if code != 1 || !strings.Contains(stdout+stderr, "nothing was signalled") {
			t.Errorf("%s: backend stop exit %d, want 1 'nothing was signalled'\n%s%s", tc.name, code, stdout, stderr)
		}
		time.Sleep(200 * time.Millisecond)
		if !alive(pid) {
			t.Fatalf("%s: the unrelated process %d was signalled", tc.name, pid)
		}
	}
}

// TestForeignOrWritableFilesRefused: a state record or a lease that others
// may write is refused with a clear message and not acted on; a lease
// naming a configuration that others may write is not run.
func TestForeignOrWritableFilesRefused(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	victim := unrelated(t)
	pid := victim.Process.Pid
	ticks, _ := procfs.StartTicks(pid)
	rec := supervisor.Record{Schema: supervisor.RecordSchema, Name: "prod", Engine: "llamacpp", PID: pid, PGID: pid, StartTicks: ticks, Port: e.prodPort, StopGraceMS: 100}
	must(t, supervisor.WriteRecord(e.cfg.StateDir, rec))
	recPath := filepath.Join(e.cfg.StateDir, "backends", "prod.json")
	must(t, os.Chmod(recPath, 0o666))
	code, stdout, stderr := runHiro(t, e, "backend", "stop", "prod")
	if code == 0 || !strings.Contains(stdout+stderr, "may be written by others") {
		t.Errorf("world-writable record: exit %d\n%s%s", code, stdout, stderr)
	}
	if !alive(pid) {
		t.Fatal("a world-writable record's process was signalled")
	}
	os.Remove(recPath)

	// A dead campaign's lease naming a configuration others may write.
	plantDeadLease(t, e, e.cfgPath)
	must(t, os.Chmod(e.cfgPath, 0o666))
	code, stdout, stderr = runHiro(t, e, "recover")
	if code != 4 || !strings.Contains(stderr, "may be written by others") {
		t.Errorf("lease naming a writable configuration: exit %d\n%s%s", code, stdout, stderr)
	}
	must(t, os.Chmod(e.cfgPath, 0o644))
	os.RemoveAll(e.leaseDir)

	if os.Getuid() == 0 {
		// As root: a lease file owned by another user is refused.
		plantDeadLease(t, e, e.cfgPath)
		m, _ := filepath.Glob(filepath.Join(e.leaseDir, "*.lease"))
		for _, p := range m {
			must(t, os.Chown(p, 65534, 65534))
		}
		code, stdout, stderr = runHiro(t, e, "recover")
		if !strings.Contains(stderr, "owned by uid 65534") {
			t.Errorf("foreign lease: exit %d\n%s%s", code, stdout, stderr)
		}
		if e.productionReady() {
			t.Error("a foreign lease was acted on")
		}
	}
}

// plantDeadLease writes the lease files a campaign killed with production
// stopped leaves behind (its holder, a pid that is gone).
func plantDeadLease(t *testing.T, e *env, cfgPath string) {
	t.Helper()
	must(t, os.MkdirAll(e.leaseDir, 0o700))
	dead := exec.Command("true")
	must(t, dead.Run())
	l := qualify.Lease{Schema: "hiro.lease/v1", Kind: "campaign", Campaign: "20261130T000000Z-dead", Config: cfgPath, Production: "prod",
		Candidate: "cand", ProductionStopped: true, PID: dead.Process.Pid, UID: os.Getuid(), Created: time.Now().UTC(),
		Keys: []string{"production-127.0.0.1-x"}}
	b, _ := json.Marshal(l)
	must(t, os.WriteFile(filepath.Join(e.leaseDir, "production-dead.lease"), b, 0o600))
}

// TestGarbageLeaseSetAsideOthersRecovered: one unreadable lease beside a
// valid one is reported and set aside; the valid one is recovered and
// production restored.
func TestGarbageLeaseSetAsideOthersRecovered(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	plantDeadLease(t, e, e.cfgPath)
	must(t, os.WriteFile(filepath.Join(e.leaseDir, "aaa-garbage.lease"), []byte("{not json"), 0o600))
	if e.productionReady() {
		t.Fatal("production serves before the recovery")
	}
	code, stdout, stderr := runHiro(t, e, "backend", "status")
	if code != 0 || !strings.Contains(stderr, "cannot be read") || !strings.Contains(stderr, "restored and verified") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if !e.productionReady() {
		t.Fatal("the valid lease was not recovered")
	}
	if m, _ := filepath.Glob(filepath.Join(e.leaseDir, "set-aside", "aaa-garbage.lease.*")); len(m) != 1 {
		t.Errorf("garbage lease not set aside: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(e.leaseDir, "*.lease")); len(m) != 0 {
		t.Errorf("lease files left: %v", m)
	}
}

// TestFinishedEvidenceIsFinal: a campaign ends with exit 4 (production
// could not be restored); the launcher is fixed and any hiro command
// restores production from the lease. The finished evidence and report
// are not rewritten: the restore is a new event file that refers to the
// campaign.
func TestFinishedEvidenceIsFinal(t *testing.T) {
	e := launcherEnv(t)
	marker := filepath.Join(filepath.Dir(e.cfg.Backends["prod"].Command), "fail-always")
	must(t, os.WriteFile(marker, nil, 0o644))
	code, stdout, _ := runHiro(t, e, "qualify", e.writePlan("[[gates]]\nkind = \"launch\"\n"))
	if code != qualify.ExitCritical {
		t.Fatalf("exit %d, want 4; %s", code, stdout)
	}
	m, _ := filepath.Glob(filepath.Join(e.dir, "evidence", "*"))
	if len(m) != 1 {
		t.Fatalf("campaigns: %v", m)
	}
	dir := m[0]
	before := map[string][]byte{}
	for _, f := range []string{evidence.PrivateFile, evidence.PublicFile, evidence.ReportFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		must(t, err)
		before[f] = b
	}
	// Fix the launcher; the next command restores production.
	must(t, os.Remove(marker))
	code, out, stderr := runHiro(t, e, "backend", "status")
	if code != 0 || !strings.Contains(stderr, "restored and verified") {
		t.Fatalf("after the fix: exit %d\n%s%s", code, out, stderr)
	}
	for f, b := range before {
		now, err := os.ReadFile(filepath.Join(dir, f))
		must(t, err)
		if !bytes.Equal(now, b) {
			t.Errorf("%s of the finished campaign was rewritten", f)
		}
	}
	evs, _ := filepath.Glob(filepath.Join(dir, evidence.EventsDir, "*.json"))
	if len(evs) != 1 {
		t.Fatalf("events: %v", evs)
	}
	var ev evidence.Event
	b, _ := os.ReadFile(evs[0])
	must(t, json.Unmarshal(b, &ev))
	if ev.Campaign != filepath.Base(dir) || ev.Kind != evidence.EventProductionRestored || ev.Restored == nil || !ev.Restored.OK || !ev.ConfigUnchanged {
		t.Errorf("event: %s", b)
	}
	if !e.productionReady() {
		t.Error("production not serving")
	}
}
