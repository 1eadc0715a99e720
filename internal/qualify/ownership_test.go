package qualify_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// raceProcesses is how many real hiro processes TestOneOwnerOfProductionUnderRace starts at once.
const raceProcesses = 8

// TestOneOwnerOfProductionUnderRace starts raceProcesses real 'hiro
// qualify' processes at once, each with its own configuration file in its
// own folder, naming the same production server (as 127.0.0.1 or as
// localhost) and exclusive candidates: one campaign at a time may take
// production (windows never overlap); every other one is refused with exit 6
// (busy) naming the holder, and starts or stops nothing (no evidence folder).
func TestOneOwnerOfProductionUnderRace(t *testing.T) {
	e := newEnv(t, []string{"--load-time", "1500ms"}, "", nil)
	e.startProduction()
	base, err := os.ReadFile(e.cfgPath)
	must(t, err)
	stateDir := e.cfg.StateDir
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	var plans []string
	for i := 0; i < raceProcesses; i++ {
		dir := filepath.Join(e.dir, fmt.Sprintf("team-%d", i))
		must(t, os.MkdirAll(dir, 0o755))
		cfg := strings.Replace(string(base), `state_dir = "state"`, fmt.Sprintf("state_dir = %q", stateDir), 1)
		if i > 0 {
			// A candidate port of its own (testsupport's claim, as every
			// test's port): with one port for all, a loser's check saw the
			// winner's candidate bind or just close it and was refused as
			// port_in_use, not busy (trial 11 R1).
			cp := strconv.Itoa(e.candPort)
			if n := strings.Count(cfg, cp); n != 2 {
				t.Fatalf("the configuration names the candidate port %s %d times, want 2 (args and port):\n%s", cp, n, cfg)
			}
			cfg = strings.ReplaceAll(cfg, cp, strconv.Itoa(freePort(t)))
		}
		if i%2 == 1 {
			// Same server, named another way.
			cfg = strings.Replace(cfg, "[backends.prod]\n", "[backends.prod]\nhost = \"localhost\"\n", 1)
		}
		cfgPath := filepath.Join(dir, "hiro.toml")
		must(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "prod-launcher.sh"), []byte("#!/bin/sh\n"), 0o755))
		plan := filepath.Join(dir, "plan.toml")
		must(t, os.WriteFile(plan, []byte("title = \"race\"\nconfig = \"hiro.toml\"\ncandidate = \"cand\"\nevidence_dir = \"evidence\"\n[[gates]]\nkind = \"launch\"\n"), 0o644))
		plans = append(plans, plan)
		cmd := exec.Command(hiroBin, "--config", cfgPath, "qualify", plan)
		cmd.Env = append(os.Environ(), "HIRO_LEASE_DIR="+e.leaseDir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmds = append(cmds, cmd)
		outs = append(outs, &out)
	}
	// Start them all at once.
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for _, c := range cmds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			must(t, c.Start())
		}()
	}
	close(gate)
	wg.Wait()
	codes := make([]int, len(cmds))
	for i, c := range cmds {
		err := c.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			codes[i] = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
	}
	// A process that starts only after the winner has finished (a loaded
	// machine can delay a start by seconds) may take production in turn:
	// what must never happen is two campaigns owning it at the same time,
	// so the winners' campaign windows must not overlap.
	type window struct{ from, to time.Time }
	var winners []window
	refused := 0
	for i := range cmds {
		ev, _ := filepath.Glob(filepath.Join(filepath.Dir(plans[i]), "evidence", "*", evidence.PrivateFile))
		out := outs[i].String()
		switch {
		case codes[i] == 0 && len(ev) == 1:
			doc, err := evidence.Load(ev[0])
			if err != nil || doc.FinishedAt == nil {
				t.Fatalf("process %d: evidence %s unreadable or unfinished: %v", i, ev[0], err)
			}
			winners = append(winners, window{doc.StartedAt, *doc.FinishedAt})
		case codes[i] == qualify.ExitBusy && len(ev) == 0 && (strings.Contains(out, "is held by campaign") || strings.Contains(out, "in use by another hiro")):
			refused++
		default:
			t.Errorf("process %d: exit %d, %d evidence files:\n%s", i, codes[i], len(ev), out)
		}
	}
	if len(winners) < 1 || len(winners)+refused != raceProcesses {
		t.Fatalf("%d campaigns took production and %d were refused, want at least 1 and the rest refused (%d in all)", len(winners), refused, raceProcesses)
	}
	for a := range winners {
		for b := a + 1; b < len(winners); b++ {
			if winners[a].from.Before(winners[b].to) && winners[b].from.Before(winners[a].to) {
				t.Fatalf("two campaigns owned production at once: %v-%v and %v-%v", winners[a].from, winners[a].to, winners[b].from, winners[b].to)
			}
		}
	}
	if len(winners) > 1 {
		t.Logf("%d campaigns took production one after another (a loaded machine started some late)", len(winners))
	}
	if !e.productionReady() {
		t.Error("production is not serving after the race")
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Errorf("leases left: %+v", ls)
	}
}

// TestBackendStartRefusedDuringCampaign: while a campaign holds
// production (stopped for an exclusive candidate), 'hiro backend start
// prod' and 'hiro backend stop prod' are refused with exit 1 naming the
// campaign, and start nothing beside the candidate.
func TestBackendStartRefusedDuringCampaign(t *testing.T) {
	e := newEnv(t, []string{"--load-time", "4s"}, "", nil)
	e.startProduction()
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n")
	cmd, lines := startHiro(t, e, plan)
	var seen []string
	waitLine(t, lines, "[launch] attempt 1/1 base", &seen)
	ls, _ := qualify.Leases(e.leaseDir)
	if len(ls) != 1 {
		t.Fatalf("want the campaign's lease, got %d", len(ls))
	}
	for _, verb := range []string{"start", "stop"} {
		code, stdout, stderr := runHiro(t, e, "backend", verb, "prod")
		if code != qualify.ExitBusy || !strings.Contains(stderr, "held by campaign "+ls[0].Campaign) {
			t.Errorf("backend %s prod during the campaign: exit %d, want 6 (busy) naming campaign %s\n%s%s", verb, code, ls[0].Campaign, stdout, stderr)
		}
	}
	if e.productionReady() {
		t.Error("production serves beside the exclusive candidate")
	}
	if code := exitCode(t, cmd, lines, &seen); code != 0 {
		t.Fatalf("campaign exit %d:\n%s", code, strings.Join(seen, "\n"))
	}
	if !e.productionReady() {
		t.Error("production not restored after the campaign")
	}
}

// TestRestoreCutShortIsResumed: hiro is SIGKILLed while it restores
// production (production started, still loading); the next command finds
// production's record (pid, process group and start time match), waits
// for it and adopts it instead of failing with port_in_use, and records
// the adoption.
func TestRestoreCutShortIsResumed(t *testing.T) {
	e := newEnv(t, []string{"--exit", "1"}, "", nil)
	// Production loads for 4 s (health 503, then 200).
	b, err := os.ReadFile(e.cfgPath)
	must(t, err)
	must(t, os.WriteFile(e.cfgPath, bytes.Replace(b, []byte(`"--reply", "READY"]`), []byte(`"--reply", "READY", "--load-time", "4s"]`), 1), 0o644))
	e.reload()
	e.startProduction()
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n")
	cmd, lines := startHiro(t, e, plan)
	var seen []string
	waitLine(t, lines, "restoring production prod (attempt 1/2)", &seen)
	// Wait until the restore has started production and recorded it.
	var started supervisor.RecordStatus
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if st, err := supervisor.Status(e.cfg.StateDir, "prod"); err == nil && st.Status == supervisor.StatusRunning {
			started = st
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if started.PID == 0 {
		t.Fatalf("the restore never recorded production:\n%s", strings.Join(seen, "\n"))
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if e.productionReady() {
		t.Fatal("production was already ready when hiro was killed: the test kills too late")
	}
	code, stdout, stderr := runHiro(t, e, "backend", "status")
	if code != 0 || !strings.Contains(stderr, "adopted") || strings.Contains(stderr+stdout, "port_in_use") {
		t.Fatalf("next command: exit %d\n%s\n%s", code, stdout, stderr)
	}
	st, err := supervisor.Status(e.cfg.StateDir, "prod")
	if err != nil || st.Status != supervisor.StatusRunning || st.PID != started.PID || st.StartTicks != started.StartTicks {
		t.Fatalf("production after recovery: %+v %v; want the process the killed restore started (pid %d)", st, err, started.PID)
	}
	if !e.productionReady() {
		t.Fatal("production not ready after the recovery")
	}
	ev := latestEvidence(t, e)
	if ev.Verdict != evidence.VerdictAborted || ev.Production.Restored == nil || !ev.Production.Restored.OK || !ev.Production.Restored.Adopted {
		t.Errorf("evidence: verdict %s restored %+v", ev.Verdict, ev.Production.Restored)
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Errorf("lease left after recovery: %+v", ls[0])
	}
	supervisor.StopRecorded(context.Background(), e.cfg.StateDir, "prod", time.Second)
	_ = strconv.Itoa
}

// TestBackendStartKilledLeavesProvenRecord: 'hiro backend start' killed
// (SIGKILL) while production loads leaves a record from launch (pid,
// process group, start time), so the next command can stop the engine it
// started instead of meeting a port held by a process it cannot prove.
func TestBackendStartKilledLeavesProvenRecord(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	b, err := os.ReadFile(e.cfgPath)
	must(t, err)
	must(t, os.WriteFile(e.cfgPath, bytes.Replace(b, []byte(`"--reply", "READY"]`), []byte(`"--reply", "READY", "--load-time", "10s"]`), 1), 0o644))
	e.reload()
	cmd := exec.Command(hiroBin, "--config", e.cfgPath, "backend", "start", "prod")
	cmd.Env = append(os.Environ(), "HIRO_LEASE_DIR="+e.leaseDir)
	must(t, cmd.Start())
	var st supervisor.RecordStatus
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s, err := supervisor.Status(e.cfg.StateDir, "prod"); err == nil && s.Status == supervisor.StatusRunning {
			st = s
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	if st.PID == 0 {
		t.Fatal("no record of the starting engine")
	}
	code, stdout, stderr := runHiro(t, e, "backend", "stop", "prod")
	if code != 0 || !strings.Contains(stdout, "stopped") {
		t.Fatalf("stop after the killed start: exit %d\n%s%s", code, stdout, stderr)
	}
	if alive(st.PID) {
		t.Errorf("engine %d still alive", st.PID)
	}
}

// TestCandidateOwnedByCampaign: a campaign's candidate is the campaign's
// for its whole length, exclusive or not: 'hiro backend start|stop cand'
// meanwhile, through a second configuration file naming the same
// endpoint, is refused with exit 1 naming the campaign (no advice to stop
// it by hand), and the campaign finishes qualified with its candidate
// untouched. An exclusive campaign started meanwhile is refused naming
// the running one as the accelerator's holder.
func TestCandidateOwnedByCampaign(t *testing.T) {
	for _, exclusive := range []bool{false, true} {
		t.Run(fmt.Sprintf("exclusive=%v", exclusive), func(t *testing.T) {
			e := newEnv(t, []string{"--load-time", "3s"}, "", nil)
			if !exclusive {
				// A candidate beside production: only its endpoint can
				// refuse the commands.
				b, err := os.ReadFile(e.cfgPath)
				must(t, err)
				must(t, os.WriteFile(e.cfgPath, []byte(strings.Replace(string(b), "exclusive_accelerator = true\n", "", 1)), 0o644))
			}
			e.startProduction()
			// Another configuration file naming the same candidate endpoint.
			b, err := os.ReadFile(e.cfgPath)
			must(t, err)
			other := filepath.Join(e.dir, "other")
			must(t, os.MkdirAll(other, 0o755))
			must(t, os.WriteFile(filepath.Join(other, "prod-launcher.sh"), []byte("#!/bin/sh\n"), 0o755))
			otherCfg := filepath.Join(other, "hiro.toml")
			must(t, os.WriteFile(otherCfg, []byte(strings.Replace(string(b), `state_dir = "state"`, fmt.Sprintf("state_dir = %q", e.cfg.StateDir), 1)), 0o644))
			plan := e.writePlan(fmt.Sprintf("exclusive = %v\n[[gates]]\nkind = \"launch\"\n", exclusive))
			cmd, lines := startHiro(t, e, plan)
			var seen []string
			waitLine(t, lines, "[launch] attempt 1/1 base", &seen)
			ls, _ := qualify.Leases(e.leaseDir)
			if len(ls) != 1 {
				t.Fatalf("want the campaign's lease, got %d", len(ls))
			}
			for _, cfgPath := range []string{e.cfgPath, otherCfg} {
				for _, verb := range []string{"stop", "start"} {
					c := exec.Command(hiroBin, "--config", cfgPath, "backend", verb, "cand")
					c.Env = append(os.Environ(), "HIRO_LEASE_DIR="+e.leaseDir)
					out, _ := c.CombinedOutput()
					code := c.ProcessState.ExitCode()
					if code != qualify.ExitBusy || !strings.Contains(string(out), "held by campaign "+ls[0].Campaign) || strings.Contains(string(out), "hiro backend stop cand") {
						t.Errorf("backend %s cand (%s) during the campaign: exit %d, want 6 (busy) naming campaign %s and no advice to stop it\n%s", verb, cfgPath, code, ls[0].Campaign, out)
					}
				}
			}
			if !exclusive {
				// An exclusive campaign meanwhile: refused, the holder named.
				p2 := filepath.Join(other, "plan.toml")
				must(t, os.WriteFile(p2, []byte("title = \"second\"\nconfig = \"hiro.toml\"\ncandidate = \"cand\"\nexclusive = true\nevidence_dir = \"evidence\"\n[[gates]]\nkind = \"launch\"\n"), 0o644))
				c := exec.Command(hiroBin, "--config", otherCfg, "qualify", p2)
				c.Env = append(os.Environ(), "HIRO_LEASE_DIR="+e.leaseDir)
				out, _ := c.CombinedOutput()
				if c.ProcessState.ExitCode() != qualify.ExitBusy || !strings.Contains(string(out), "held by campaign "+ls[0].Campaign) {
					t.Errorf("an exclusive campaign beside a running one: exit %d, want 6 (busy) naming campaign %s:\n%s", c.ProcessState.ExitCode(), ls[0].Campaign, out)
				}
			}
			if code := exitCode(t, cmd, lines, &seen); code != 0 {
				t.Fatalf("campaign exit %d (its candidate was disturbed?):\n%s", code, strings.Join(seen, "\n"))
			}
			if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
				t.Errorf("leases left: %+v", ls)
			}
		})
	}
}

// TestBackendStartRefusedUnderAnotherStateHome (issue 26 F6): a campaign
// run under one HIRO_STATE_HOME holds production's endpoint; 'hiro
// backend start prod' of the same configuration under another state home
// is refused naming it, as under the same one (each state home had its
// own lease folder, and the second command started production beside
// the exclusive candidate). HIRO_LEASE_DIR is unset: the leases are the
// user's (HOME).
func TestBackendStartRefusedUnderAnotherStateHome(t *testing.T) {
	e := newEnv(t, []string{"--load-time", "4s"}, "", nil)
	e.startProduction()
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n")
	home := filepath.Join(e.dir, "home")
	env := func(stateHome string) []string {
		return append(os.Environ(), "HIRO_LEASE_DIR=", "XDG_STATE_HOME=", "HOME="+home, "HIRO_STATE_HOME="+filepath.Join(e.dir, stateHome))
	}
	cmd := exec.Command(hiroBin, "--config", e.cfgPath, "qualify", plan)
	cmd.Env = env("state-a")
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); killByArg(fmt.Sprintf("%d", e.candPort)) })
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	waitLine(t, lines, "[launch] attempt 1/1 base", &seen)
	leases := filepath.Join(home, ".local", "state", "hiro", "leases")
	holder := "held by campaign"
	if ls, _ := qualify.Leases(leases); len(ls) != 1 {
		t.Errorf("want the campaign's lease in %s, got %d", leases, len(ls))
	} else {
		holder += " " + ls[0].Campaign
	}
	start := exec.Command(hiroBin, "--config", e.cfgPath, "backend", "start", "prod")
	start.Env = env("state-b")
	out, err := start.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != qualify.ExitBusy || !strings.Contains(string(out), holder) {
		t.Errorf("backend start prod under another state home during the campaign: exit %d, want 6 (busy), %q\n%s", code, holder, out)
	}
	if e.productionReady() {
		t.Error("production serves beside the exclusive candidate")
	}
	if code := exitCode(t, cmd, lines, &seen); code != 0 {
		t.Fatalf("campaign exit %d:\n%s", code, strings.Join(seen, "\n"))
	}
}

// Issue 26 (F5): a second campaign with the same configuration started
// under another HOME (here another HIRO_LEASE_DIR: the lease folder moves
// with HOME) shares the state_dir but not the leases. While the first
// campaign's candidate loads, the second is refused as busy (exit 6, by
// --check and by the run) naming the first campaign, its hiro pid and
// how to wait or stop it, and writes no evidence; it was told (exit 2) to
// stop the live candidate with 'hiro backend stop' as if it were a
// leftover. A record whose candidate process is gone, its owner alive, is
// stale: not refused, and 'hiro backend status' says stale.
func TestCampaignUnderAnotherHomeIsBusy(t *testing.T) {
	e := newEnv(t, []string{"--load-time", "4s"}, "", nil)
	e.startProduction()
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n")
	cmd, lines := startHiro(t, e, plan)
	var seen []string
	waitLine(t, lines, "[launch] attempt 1/1 base", &seen)
	ls, _ := qualify.Leases(e.leaseDir)
	if len(ls) != 1 {
		t.Fatalf("want the campaign's lease, got %d", len(ls))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := supervisor.Status(e.cfg.StateDir, "cand")
		if err == nil && st.Status == supervisor.StatusRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the candidate was never recorded running: %+v %v\n%s", st, err, strings.Join(seen, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	otherHome := filepath.Join(e.dir, "other-home-leases")
	other := func(args ...string) (int, string) {
		c := exec.Command(hiroBin, append([]string{"--config", e.cfgPath}, args...)...)
		c.Env = append(os.Environ(), "HIRO_LEASE_DIR="+otherHome)
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	for _, args := range [][]string{{"qualify", "--check", plan}, {"qualify", plan}} {
		code, out := other(args...)
		want := fmt.Sprintf("candidate cand is in use by campaign %s (hiro pid %d)", ls[0].Campaign, cmd.Process.Pid)
		if code != qualify.ExitBusy || !strings.Contains(out, want) || !strings.Contains(out, fmt.Sprintf("kill -TERM %d", cmd.Process.Pid)) || strings.Contains(out, "hiro backend stop") {
			t.Errorf("hiro %s under another HOME: exit %d, want 6 (busy) saying %q and how to stop it, not to stop the candidate\n%s", strings.Join(args, " "), code, want, out)
		}
	}
	if ev, _ := filepath.Glob(filepath.Join(e.dir, "evidence", "*")); len(ev) != 1 {
		t.Errorf("evidence folders %v; want the first campaign's alone", ev)
	}
	if code := exitCode(t, cmd, lines, &seen); code != 0 {
		t.Fatalf("first campaign exit %d:\n%s", code, strings.Join(seen, "\n"))
	}

	// The candidate's process gone, its recorded owner alive: stale.
	sleeper := exec.Command("sleep", "60")
	must(t, sleeper.Start())
	t.Cleanup(func() { sleeper.Process.Kill(); sleeper.Wait() })
	dead := exec.Command("true")
	must(t, dead.Run())
	ownerTicks, _ := procfs.StartTicks(sleeper.Process.Pid)
	must(t, supervisor.WriteRecord(e.cfg.StateDir, supervisor.Record{Schema: supervisor.RecordSchema, Name: "cand", Engine: "vllm", PID: dead.Process.Pid, PGID: dead.Process.Pid,
		StartTicks: 1, Port: e.candPort, StartedAt: time.Now(), Owner: &supervisor.Owner{PID: sleeper.Process.Pid, StartTicks: ownerTicks, What: "campaign gone"}}))
	if code, out := other("qualify", "--check", plan); code != 0 {
		t.Errorf("qualify --check beside a stale candidate record: exit %d, want 0\n%s", code, out)
	}
	if code, out := other("backend", "status", "cand"); !strings.Contains(out, "stale") {
		t.Errorf("backend status cand of a dead pid: exit %d, does not say stale\n%s", code, out)
	}
	must(t, supervisor.RemoveRecord(e.cfg.StateDir, "cand"))
}
