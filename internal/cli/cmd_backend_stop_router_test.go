package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// TestStopNamesARouterOfAnotherHome (issue 26, trial 11 leftover):
// 'hiro backend stop prod' under another HOME (another lease folder and
// state home) found the router only through production's state record
// and called its configuration "unknown". It now names the router's
// configuration and state home, read from the router's environment and
// its control socket, with the HIRO_STATE_HOME that reaches it.
func TestStopNamesARouterOfAnotherHome(t *testing.T) {
	fake := buildFakeEngine(t)
	hiro := testsupport.Hiro(t)
	dir := t.TempDir()
	homeA, err := os.MkdirTemp("", "hsa")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(homeA) })
	port := cliFreePort(t)
	cfg := filepath.Join(dir, "hiro.toml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf("state_dir = \"state\"\n[production]\nbackend = \"prod\"\n[backends.prod]\nengine = \"llamacpp\"\ncommand = %q\nargs = [\"--port\", \"%d\"]\nport = %d\nmodel = \"fake-model\"\nready_timeout = \"20s\"\nstop_grace = \"2s\"\n[serve]\nlisten = \"127.0.0.1:%d\"\non_exit = \"stop\"\naccess_log = \"off\"\n",
		fake, port, port, cliFreePort(t))), 0o644))
	serve := exec.Command(hiro, "--config", cfg, "serve")
	serve.Env = append(os.Environ(), "HIRO_STATE_HOME="+homeA, "HIRO_LEASE_DIR="+filepath.Join(homeA, "leases"))
	var serveErr bytes.Buffer
	serve.Stderr = &serveErr
	must(t, serve.Start())
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
	})
	t.Setenv("HIRO_STATE_HOME", homeA)
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(homeA, "leases"))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code := Run(context.Background(), []string{"--config", cfg, "status"}, &bytes.Buffer{}, &bytes.Buffer{}); code == ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router never served prod:\n%s", serveErr.String())
		}
	}
	homeB := t.TempDir()
	t.Setenv("HIRO_STATE_HOME", homeB)
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(homeB, "leases"))
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "backend", "stop", "prod"}, &out, &errb)
	want := "prod is the production hiro serve pid " + strconv.Itoa(serve.Process.Pid) + " (configuration " + cfg + ", state home " + homeA + ": run hiro with HIRO_STATE_HOME=" + homeA + " to reach it, control socket " + filepath.Join(homeA, "serve", "control.sock") + ") serves to clients"
	if code != ExitBusy || !strings.Contains(errb.String(), want) || strings.Contains(errb.String(), "unknown") {
		t.Errorf("backend stop under another HOME: exit %d\n%s%s\nwant %q", code, out.String(), errb.String(), want)
	}
}

// TestStopRefusesProductionOfAnotherHomesCampaign (trial 12, S17): under
// another HOME, 'backend stop prod' stopped the production a running
// campaign extracted through beside its candidate (under the campaign's
// HOME it is refused). The campaign is found through the state_dir: its
// candidate's record names it as owner, its process's environment names
// its lease folder, and its lease there says it uses prod. Refused, exit
// 6, naming the campaign; prod keeps running.
func TestStopRefusesProductionOfAnotherHomesCampaign(t *testing.T) {
	fake := buildFakeEngine(t)
	pp, cp := cliFreePort(t), cliFreePort(t)
	cfg := filepath.Join(t.TempDir(), "hiro.toml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf("[production]\nbackend = \"prod\"\n[backends.prod]\nengine = \"llamacpp\"\ncommand = %q\nargs = [\"--port\", \"%d\"]\nport = %d\nmodel = \"fake-model\"\n[backends.cand]\nengine = \"llamacpp\"\ncommand = %q\nargs = [\"--port\", \"%d\", \"--model\", \"cand-model\"]\nport = %d\nmodel = \"cand-model\"\n",
		fake, pp, pp, fake, cp, cp)), 0o644))
	pids := map[string]int{}
	for _, name := range []string{"prod", "cand"} {
		code, out, errs := runHiro(t, "--config", cfg, "backend", "start", name, "--json")
		var res struct {
			PID int `json:"pid"`
		}
		if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil || res.PID == 0 {
			t.Fatalf("start %s: exit %d\n%s\n%s", name, code, out, errs)
		}
		pids[name] = res.PID
		t.Cleanup(func() { syscall.Kill(-res.PID, syscall.SIGKILL) })
	}
	// The other HOME's campaign: a process whose environment names its
	// lease folder, its lease there using prod, and cand's record naming
	// it as owner.
	otherLeases := t.TempDir()
	owner := exec.Command("sleep", "60")
	owner.Env = append(os.Environ(), "HIRO_LEASE_DIR="+otherLeases)
	must(t, owner.Start())
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	ticks, ok := procfs.StartTicks(owner.Process.Pid)
	if !ok {
		t.Fatal("no start time of the owner")
	}
	c, err := config.Load(cfg)
	must(t, err)
	prod, err := c.Backend("prod")
	must(t, err)
	hold, err := lease.Acquire(otherLeases, &lease.Lease{Kind: lease.KindCampaign, Campaign: "20261203T182709Z-cand-bfbb8e", Config: cfg, Candidate: "cand", UsesProduction: prod.BaseURL}, "campaign-test-key")
	must(t, err)
	t.Cleanup(func() { hold.Release() })
	rec, err := supervisor.ReadRecord(c.StateDir, "cand")
	must(t, err)
	rec.Owner = &supervisor.Owner{PID: owner.Process.Pid, StartTicks: ticks, What: "campaign 20261203T182709Z-cand-bfbb8e"}
	must(t, supervisor.WriteRecord(c.StateDir, rec))

	t.Setenv("HIRO_LEASE_DIR", t.TempDir()) // this shell's HOME: another lease folder
	code, _, errs := runHiro(t, "--config", cfg, "backend", "stop", "prod")
	if code != ExitBusy || !strings.Contains(errs, "backend stop refused: prod is in use by campaign 20261203T182709Z-cand-bfbb8e") {
		t.Errorf("stop of the production another HOME's campaign uses: exit %d, stderr %q; want 6 naming the campaign", code, errs)
	}
	if err := syscall.Kill(pids["prod"], 0); err != nil {
		t.Fatalf("prod was stopped although the stop was refused: %v", err)
	}
}
