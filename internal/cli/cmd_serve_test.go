package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveTestState gives a router test its folder, and sets HIRO_LEASE_DIR
// inside it and HIRO_STATE_HOME to a private state home (short: the
// control socket's path must fit a Unix socket address).
func serveTestState(t *testing.T) (dir string) {
	t.Helper()
	dir = t.TempDir()
	stateHome, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(stateHome) })
	t.Setenv("HIRO_STATE_HOME", stateHome)
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(dir, "leases"))
	return dir
}

// TestServeAndStatus runs `hiro serve` in front of the fake engine, reads
// it with `hiro status`, and stops it as SIGTERM would (the root context):
// exit 0, production stopped as on_exit says.
func TestServeAndStatus(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := serveTestState(t)
	port := cliFreePort(t)
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = %q
args = ["--port", "%d"]
port = %d
model = "fake-model"
ready_timeout = "20s"
stall_timeout = "10s"
stop_grace = "2s"
[backends.side]
engine = "llamacpp"
command = %q
port = %d
model = "side-model"
[serve]
listen = "127.0.0.1:%d"
on_exit = "stop"
access_log = "off"
served = ["side"]
`, fake, port, port, fake, cliFreePort(t), cliFreePort(t))), 0o644)

	// No router yet: status says so and exits 1.
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"--config", cfg, "status"}, &out, &errb); code != ExitFailed || !strings.Contains(errb.String(), "no hiro serve is running") {
		t.Fatalf("status without a router: exit %d, %s", code, errb.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() { done <- Run(ctx, []string{"--config", cfg, "serve"}, &bytes.Buffer{}, &serveErr) }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out.Reset()
		errb.Reset()
		code := Run(context.Background(), []string{"--config", cfg, "status"}, &out, &errb)
		if code == ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never said ready: exit %d\n%s%s", code, out.String(), errb.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, want := range []string{"production  prod (llamacpp, managed", "state       ready"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, out.String())
		}
	}
	// The served profile nobody started is down: the text status says so
	// and why, as --json does (it said only its name and address).
	for deadline := time.Now().Add(10 * time.Second); ; {
		if strings.Contains(out.String(), "state down since") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed the served profile down:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
		out.Reset()
		Run(context.Background(), []string{"--config", cfg, "status"}, &out, &errb)
	}
	for _, want := range []string{"served      side (llamacpp, http://127.0.0.1:", "health: ", "health FAILED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status lacks %q for the served profile:\n%s", want, out.String())
		}
	}
	out.Reset()
	errb.Reset()
	// The router serves prod: 'backend stop' refuses (the router would
	// start it again at once) and prod keeps serving.
	out.Reset()
	errb.Reset()
	if code := Run(context.Background(), []string{"--config", cfg, "backend", "stop", "prod"}, &out, &errb); code != ExitFailed ||
		!strings.Contains(errb.String(), "hiro serve (pid "+strconv.Itoa(os.Getpid())+") serves prod") {
		t.Errorf("backend stop under the router: exit %d: %s%s", code, out.String(), errb.String())
	}
	// 'backend start' finds it running and names the router, not the
	// refused 'backend stop', as the way to stop it.
	out.Reset()
	if code := Run(context.Background(), []string{"--config", cfg, "backend", "start", "prod"}, &out, &errb); code != ExitOK ||
		!strings.Contains(out.String(), "hiro serve (pid "+strconv.Itoa(os.Getpid())+") serves it") || strings.Contains(out.String(), "hiro backend stop") {
		t.Errorf("backend start under the router: exit %d: %s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"--config", cfg, "status"}, &out, &errb); code != ExitOK || !strings.Contains(out.String(), "state       ready") {
		t.Errorf("after the refused stop: exit %d\n%s", code, out.String())
	}
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("serve exited %d after the interrupt: %s", code, serveErr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(serveErr.String(), `"event":"production_stopped"`) {
		t.Errorf("production not stopped at exit:\n%s", serveErr.String())
	}
}

// unstartedProduction is the production of configurations that `hiro
// serve` must refuse before starting anything (its command does not
// exist).
const unstartedProduction = `[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = "x"
port = 1
model = "m"
`

// TestServeBadConfig: a bad [serve] section is a usage error naming the key.
func TestServeBadConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(unstartedProduction+`[serve]
listen = "0.0.0.0:8400"
on_exit = "sometimes"
procs = -2
`), 0o644)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "serve"}, &out, &errb)
	if code != ExitUsage || !strings.Contains(errb.String(), "serve.listen") || !strings.Contains(errb.String(), "serve.on_exit") ||
		!strings.Contains(errb.String(), "serve.procs") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}

// TestServeShortKeyRefused: a router key under 16 characters (from the
// variable or the key file) stops `hiro serve` with exit 2 naming the
// source and the length, never the key: a short key redacted from the
// logs as a substring blanked parts of ordinary words.
func TestServeShortKeyRefused(t *testing.T) {
	dir := serveTestState(t)
	keyFile := filepath.Join(dir, "router.keys")
	os.WriteFile(keyFile, []byte("# router keys\n0123456789abcdef0123\n\nzq9x\n"), 0o600)
	base := `state_dir = "state"
` + unstartedProduction + `[serve]
listen = "127.0.0.1:0"
access_log = "off"
api_keys_env = "HIRO_TEST_SHORT_KEYS"
`
	for _, c := range []struct {
		name, extra, env string
		want             []string
	}{
		{"env", "", "0123456789abcdef0123, zq9x", []string{"$HIRO_TEST_SHORT_KEYS: key 2", "is 4 characters", "at least 16", "openssl rand -hex 16"}},
		{"file", fmt.Sprintf("api_keys_file = %q\n", keyFile), "", []string{"serve.api_keys_file", "line 4 of " + keyFile, "is 4 characters", "openssl rand -hex 16"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := filepath.Join(dir, c.name+".toml")
			os.WriteFile(cfg, []byte(base+c.extra), 0o644)
			t.Setenv("HIRO_TEST_SHORT_KEYS", c.env)
			var out, errb bytes.Buffer
			code := Run(context.Background(), []string{"--config", cfg, "serve"}, &out, &errb)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d: %s", code, ExitUsage, errb.String())
			}
			for _, w := range c.want {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("message lacks %q: %s", w, errb.String())
				}
			}
			if strings.Contains(errb.String(), "zq9x") {
				t.Errorf("message reveals the key: %s", errb.String())
			}
		})
	}
}

// TestServeAccessLogFolderMissing: an access_log in a folder that does
// not exist is a configuration error (exit 2, nothing started) naming the
// configuration file, serve.access_log and what to do; it was exit 1
// from the running router.
func TestServeAccessLogFolderMissing(t *testing.T) {
	dir := serveTestState(t)
	cfg := filepath.Join(dir, "hiro.toml")
	missing := filepath.Join(dir, "nonexistent", "dir")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state_dir = "state"
`+unstartedProduction+`[serve]
listen = "127.0.0.1:0"
access_log = %q
`, filepath.Join(missing, "x.log"))), 0o644)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "serve"}, &out, &errb)
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d: %s", code, ExitUsage, errb.String())
	}
	for _, w := range []string{cfg + ": serve.access_log", "does not exist", "mkdir -p " + missing, "change the path"} {
		if !strings.Contains(errb.String(), w) {
			t.Errorf("message lacks %q: %s", w, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "serve", "events.jsonl")); err == nil {
		t.Error("the router started (its event log exists) before the configuration error")
	}
}
