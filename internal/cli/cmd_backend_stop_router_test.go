package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

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
