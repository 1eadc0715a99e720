package qualify_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// slowCandidate never becomes ready within the test (vLLM-style: nothing
// listens until its 60 s load is over).
var slowCandidate = []string{"--health-style", "vllm", "--load-time", "60s", "--progress-every", "200ms"}

// startHiro starts 'hiro qualify plan' and returns it with a channel of
// its stderr lines.
func startHiro(t *testing.T, e *env, plan string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(hiroBin, "--config", e.cfgPath, "qualify", plan)
	cmd.Env = append(os.Environ(), "HIRO_LEASE_DIR="+e.leaseDir)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	cmd.Stdout = io.Discard
	must(t, cmd.Start())
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() { cmd.Process.Kill(); killByArg(fmt.Sprintf("%d", e.candPort)) })
	return cmd, lines
}

// waitLine waits for a stderr line containing s.
func waitLine(t *testing.T, lines <-chan string, s string, seen *[]string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("hiro ended before printing %q:\n%s", s, strings.Join(*seen, "\n"))
			}
			*seen = append(*seen, l)
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no line %q within 30 s:\n%s", s, strings.Join(*seen, "\n"))
		}
	}
}

func exitCode(t *testing.T, cmd *exec.Cmd, lines <-chan string, seen *[]string) int {
	t.Helper()
	for l := range lines {
		*seen = append(*seen, l)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// killByArg kills processes whose command line holds "--port <port>"
// (a candidate orphaned by a killed hiro).
func killByArg(port string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(b), "--port\x00"+port+"\x00") {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func latestEvidence(t *testing.T, e *env) *evidence.Evidence {
	t.Helper()
	ev, err := evidence.Load(latestEvidencePath(t, e))
	must(t, err)
	return ev
}

// latestEvidencePath is the newest campaign's private evidence file.
func latestEvidencePath(t *testing.T, e *env) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(e.dir, "evidence", "*", evidence.PrivateFile))
	if len(m) == 0 {
		t.Fatal("no evidence written")
	}
	return m[len(m)-1]
}

func TestInterruptsAbortAndRestoreProduction(t *testing.T) {
	cases := []struct {
		name   string
		sig    syscall.Signal
		cand   []string
		gates  string
		waitOn string
	}{
		{"SIGINT during launch", syscall.SIGINT, slowCandidate, "[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n", "[launch] launch gate: started"},
		{"SIGTERM during launch", syscall.SIGTERM, slowCandidate, "[[gates]]\nkind = \"launch\"\n", "[launch] launch gate: started"},
		// The terminal closed or the ssh session dropped.
		{"SIGHUP during launch", syscall.SIGHUP, slowCandidate, "[[gates]]\nkind = \"launch\"\n", "[launch] launch gate: started"},
		{"SIGINT during sequential", syscall.SIGINT, []string{"--reply", "READY"}, "[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"sequential\"\nrequests = 10000\n", "[sequential] sequential gate: started"},
		{"SIGTERM during sequential", syscall.SIGTERM, []string{"--reply", "READY"}, "[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"sequential\"\nrequests = 10000\n", "[sequential] sequential gate: started"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cand, "", nil)
			plan := e.writePlan(tc.gates)
			e.startProduction()
			cmd, lines := startHiro(t, e, plan)
			var seen []string
			waitLine(t, lines, tc.waitOn, &seen)
			time.Sleep(300 * time.Millisecond)
			must(t, cmd.Process.Signal(tc.sig))
			code := exitCode(t, cmd, lines, &seen)
			if code != qualify.ExitAborted {
				t.Fatalf("exit %d, want 3:\n%s", code, strings.Join(seen, "\n"))
			}
			ev := latestEvidence(t, e)
			sigName := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[tc.sig]
			if ev.Verdict != evidence.VerdictAborted || !strings.Contains(ev.TerminationReason, sigName) {
				t.Errorf("verdict %s, reason %q", ev.Verdict, ev.TerminationReason)
			}
			if ev.Production.Restored == nil || !ev.Production.Restored.OK || !e.productionReady() {
				t.Errorf("production not restored: %+v", ev.Production.Restored)
			}
			if !ev.Production.Stopped {
				t.Error("the campaign never stopped production: the case tests nothing of the guard")
			}
			if st, err := supervisor.Status(e.cfg.StateDir, "cand"); err == nil {
				t.Errorf("candidate left recorded after the abort: %+v", st)
			}
			if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
				t.Error("lease left behind after a clean abort")
			}
		})
	}
}

// TestClosedStderrPipeDoesNotEndTheCampaign: 'hiro qualify plan 2>&1
// >/dev/null | head' — the reader of stderr goes away early; hiro's later
// progress writes fail (EPIPE, SIGPIPE) and the campaign still finishes
// with its verdict, production restored.
func TestClosedStderrPipeDoesNotEndTheCampaign(t *testing.T) {
	e := newEnv(t, []string{"--reply", "READY"}, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates]]\nkind = \"ready_control\"\n[[gates]]\nkind = \"sequential\"\nrequests = 20\n")
	e.startProduction()
	r, w, err := os.Pipe()
	must(t, err)
	cmd := exec.Command(hiroBin, "--config", e.cfgPath, "qualify", plan)
	cmd.Env = append(os.Environ(), "HIRO_LEASE_DIR="+e.leaseDir)
	cmd.Stdout, cmd.Stderr = io.Discard, w
	must(t, cmd.Start())
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); killByArg(fmt.Sprintf("%d", e.candPort)) })
	// Read like head: a few lines, then go away.
	sc := bufio.NewScanner(r)
	for sc.Scan() && !strings.Contains(sc.Text(), "[launch] launch gate: started") {
	}
	r.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("hiro did not finish within 60 s")
	}
	if ee, ok := werr.(*exec.ExitError); ok {
		t.Fatalf("hiro ended with %v (want exit 0: the campaign goes on without its reader)", ee.ProcessState)
	} else if werr != nil {
		t.Fatal(werr)
	}
	ev := latestEvidence(t, e)
	if ev.Verdict != evidence.VerdictQualified || ev.ExitCode != qualify.ExitQualified {
		t.Errorf("verdict %s exit %d (%s), want qualified", ev.Verdict, ev.ExitCode, ev.TerminationReason)
	}
	if !ev.Production.Stopped || ev.Production.Restored == nil || !ev.Production.Restored.OK || !e.productionReady() {
		t.Errorf("production not restored: %+v", ev.Production.Restored)
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Error("lease left behind")
	}
}

// killMidLaunch starts 'hiro qualify plan', SIGKILLs it once its launch
// gate's candidate attempt runs and is recorded (and after), and returns
// the killed hiro's pid.
func killMidLaunch(t *testing.T, e *env, plan string, after time.Duration) int {
	t.Helper()
	cmd, lines := startHiro(t, e, plan)
	var seen []string
	waitLine(t, lines, "[launch] attempt 1/1 base", &seen)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := supervisor.Status(e.cfg.StateDir, "cand"); err == nil && st.Status == supervisor.StatusRunning {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(after)
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	return cmd.Process.Pid
}

func TestSIGKILLedHiroIsRecoveredByNextCommand(t *testing.T) {
	e := newEnv(t, slowCandidate, "", nil)
	const summary = "Tests that the slow candidate launches beside production's model"
	plan := e.writePlan("summary = \"" + summary + "\"\n[[gates]]\nkind = \"launch\"\n")
	e.startProduction()
	killMidLaunch(t, e, plan, 300*time.Millisecond) // a duration that shows
	// The killed campaign's candidate attempt is still running, recorded.
	if st, err := supervisor.Status(e.cfg.StateDir, "cand"); err != nil || st.Status != supervisor.StatusRunning {
		t.Fatalf("candidate attempt not recorded as running after hiro's SIGKILL: %+v %v", st, err)
	}
	if e.productionReady() {
		t.Fatal("production is serving although the campaign stopped it")
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 1 {
		t.Fatalf("want the campaign's lease, found %d", len(ls))
	}
	// Any next command restores production first.
	log := filepath.Join(e.dir, "x.log")
	must(t, os.WriteFile(log, []byte("main: loading model\n"), 0o644))
	code, _, stderr := runHiro(t, e, "diagnose", log, "--engine", "llamacpp")
	if code != 0 || !strings.Contains(stderr, "restoring it first") || !strings.Contains(stderr, "restored and verified") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !e.productionReady() {
		t.Fatal("production not serving after recovery")
	}
	if !strings.Contains(stderr, "stopping candidate cand") {
		t.Errorf("recovery did not stop the orphaned candidate:\n%s", stderr)
	}
	if _, err := supervisor.Status(e.cfg.StateDir, "cand"); err == nil {
		t.Error("the candidate's record is still there after recovery")
	}
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", e.candPort)); err != nil {
		t.Errorf("candidate port %d still held after recovery: %v", e.candPort, err)
	} else {
		l.Close()
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Error("lease not removed after recovery")
	}
	ev := latestEvidence(t, e)
	if ev.Verdict != evidence.VerdictAborted || ev.Production.Restored == nil || !ev.Production.Restored.OK {
		t.Errorf("evidence after recovery: verdict %s restored %+v", ev.Verdict, ev.Production.Restored)
	}
	// The evidence recovery finalized keeps the plan's summary and times
	// the campaign from its start to its settling.
	if ev.Intent == nil || ev.Intent.Summary != summary {
		t.Errorf("the plan's summary is lost from the recovered evidence: intent %+v", ev.Intent)
	}
	if ev.FinishedAt == nil || ev.DurationMS < 300 || ev.DurationMS != ev.FinishedAt.Sub(ev.StartedAt).Milliseconds() {
		t.Errorf("duration_ms %d, started %s, finished %v: want finished_at - started_at", ev.DurationMS, ev.StartedAt, ev.FinishedAt)
	}
	md, err := os.ReadFile(filepath.Join(filepath.Dir(latestEvidencePath(t, e)), evidence.ReportFile))
	must(t, err)
	if !strings.Contains(string(md), summary) {
		t.Errorf("report.md after recovery lacks the plan's summary:\n%s", md)
	}
	// Nothing left to do now.
	code, out, _ := runHiro(t, e, "recover")
	if code != 0 || !strings.Contains(out, "no lease") {
		t.Errorf("recover: exit %d %q", code, out)
	}
}

// launcherEnv makes production a launcher script that fails while
// marker files say so.
func launcherEnv(t *testing.T) *env {
	dir := t.TempDir()
	script := filepath.Join(dir, "launch-prod.sh")
	port := freePort(t)
	text := fmt.Sprintf("#!/bin/sh\nif [ -f %[1]s/fail-always ]; then echo 'launcher: GPU busy (fail-always)'; exit 1; fi\nif [ -f %[1]s/fail-next ]; then rm -f %[1]s/fail-next; echo 'launcher: failing once'; exit 1; fi\nexec %[2]s --port %[3]d --model prod-model --reply READY\n", dir, fakeEngine, port)
	must(t, os.WriteFile(script, []byte(text), 0o755))
	e := newEnv(t, []string{"--exit", "1"}, "", []string{script})
	if e.prodPort != port {
		// newEnv picked its own port for the profile: rewrite the script to it.
		text = strings.ReplaceAll(text, fmt.Sprintf("--port %d", port), fmt.Sprintf("--port %d", e.prodPort))
		must(t, os.WriteFile(script, []byte(text), 0o755))
	}
	e.startProduction()
	return e
}

func TestRestoreRetriedWithinBound(t *testing.T) {
	e := launcherEnv(t)
	must(t, os.WriteFile(filepath.Join(filepath.Dir(e.cfg.Backends["prod"].Command), "fail-next"), nil, 0o644))
	out := runPlan(t, e, e.writePlan("[[gates]]\nkind = \"launch\"\n"))
	r := out.Evidence.Production.Restored
	if out.ExitCode != qualify.ExitNotQualified || r == nil || !r.OK || r.Attempts != 2 {
		t.Fatalf("exit %d restored %+v", out.ExitCode, r)
	}
	if !e.productionReady() {
		t.Error("production not serving")
	}
}

func TestRestoreNeverSucceedsExits4(t *testing.T) {
	e := launcherEnv(t)
	must(t, os.WriteFile(filepath.Join(filepath.Dir(e.cfg.Backends["prod"].Command), "fail-always"), nil, 0o644))
	code, stdout, _ := runHiro(t, e, "qualify", e.writePlan("[[gates]]\nkind = \"launch\"\n"))
	if code != qualify.ExitCritical {
		t.Fatalf("exit %d, want 4; stdout %s", code, stdout)
	}
	if !strings.Contains(stdout, "PRODUCTION IS DOWN") || !strings.Contains(stdout, "backend start prod") {
		t.Errorf("no instruction for the person: %s", stdout)
	}
	ev := latestEvidence(t, e)
	if ev.ExitCode != 4 || ev.Production.Restored == nil || ev.Production.Restored.OK || ev.Production.Restored.Attempts != 2 {
		t.Errorf("evidence: exit %d restored %+v", ev.ExitCode, ev.Production.Restored)
	}
	// The lease stays: production is still down and the next hiro tries again.
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 1 {
		t.Errorf("leases %d, want the one left for recovery", len(ls))
	}
	os.RemoveAll(e.leaseDir)
}
