package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/tlstest"
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
	// The router serves prod: 'backend stop' refuses, busy (exit 6),
	// naming the router, its socket and the ways out, and prod keeps
	// serving; from a shell under another state home too, the router
	// found through its lease (issue 26 G15: that stop went through).
	router := "hiro serve pid " + strconv.Itoa(os.Getpid()) + " (configuration " + cfg + ", control socket " + filepath.Join(os.Getenv("HIRO_STATE_HOME"), "serve", "control.sock") + ")"
	home0 := os.Getenv("HIRO_STATE_HOME")
	for _, home := range []string{home0, t.TempDir()} {
		out.Reset()
		errb.Reset()
		t.Setenv("HIRO_STATE_HOME", home)
		if code := Run(context.Background(), []string{"--config", cfg, "backend", "stop", "prod"}, &out, &errb); code != ExitBusy ||
			!strings.Contains(errb.String(), "prod is the production "+router+" serves to clients") ||
			!strings.Contains(errb.String(), "'hiro rollback'") || !strings.Contains(errb.String(), "--force") {
			t.Errorf("backend stop under the router (state home %s): exit %d: %s%s", home, code, out.String(), errb.String())
		}
	}
	// 'hiro status' under that other state home says where it looked
	// and names the router's own, with the variable that reaches it.
	errb.Reset()
	if code := Run(context.Background(), []string{"--config", cfg, "status"}, &out, &errb); code != ExitFailed ||
		!strings.Contains(errb.String(), "looked in state home "+os.Getenv("HIRO_STATE_HOME")) ||
		!strings.Contains(errb.String(), "runs under state home "+home0+": HIRO_STATE_HOME="+home0+" hiro status") {
		t.Errorf("status under another state home: exit %d: %s", code, errb.String())
	}
	t.Setenv("HIRO_STATE_HOME", home0)
	// --force stops it; the router takes the stop for this command's
	// hand-over, not a death: no failure, no restart spent, and it
	// serves prod again.
	out.Reset()
	errb.Reset()
	if code := Run(context.Background(), []string{"--config", cfg, "backend", "stop", "prod", "--force"}, &out, &errb); code != ExitOK ||
		!strings.Contains(out.String(), "prod: "+router+" serves it as production and starts it again") {
		t.Errorf("backend stop --force under the router: exit %d: %s%s", code, out.String(), errb.String())
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		out.Reset()
		errb.Reset()
		code := Run(context.Background(), []string{"--config", cfg, "status", "--json"}, &out, &errb)
		if code == ExitOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router did not serve prod again after the forced stop: exit %d\n%s%s", code, out.String(), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var st control.Status
	if err := json.Unmarshal(out.Bytes(), &st); err != nil || st.Production.LastFailure != nil || st.Production.Restarts != 0 {
		t.Errorf("the forced stop was recorded as a failure (%v):\n%s", err, out.String())
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
	// Another configuration, in another folder, whose production is also
	// named prod (on another port): the router's status is not its
	// status, and a second router is refused naming the running one.
	other := filepath.Join(t.TempDir(), "hiro.toml")
	op := cliFreePort(t)
	must(t, os.WriteFile(other, []byte(fmt.Sprintf("state_dir = \"state\"\n[production]\nbackend = \"prod\"\n[backends.prod]\nengine = \"llamacpp\"\ncommand = %q\nargs = [\"--port\", \"%d\"]\nport = %d\nmodel = \"fake-model\"\n[serve]\nlisten = \"127.0.0.1:%d\"\naccess_log = \"off\"\n", fake, op, op, cliFreePort(t))), 0o644))
	out.Reset()
	errb.Reset()
	if code := Run(context.Background(), []string{"--config", other, "status"}, &out, &errb); code != ExitFailed ||
		!strings.Contains(errb.String(), "no hiro serve runs for "+other) || !strings.Contains(errb.String(), "serves "+cfg) || out.Len() != 0 {
		t.Errorf("status of another configuration: exit %d\n%s%s", code, out.String(), errb.String())
	}
	errb.Reset()
	// Exit 6 (busy), as under another HOME (trial 10 Q8: it was exit 1).
	if code := Run(context.Background(), []string{"--config", other, "serve"}, &bytes.Buffer{}, &errb); code != ExitBusy ||
		!strings.Contains(errb.String(), "hiro serve pid "+strconv.Itoa(os.Getpid())+" (configuration "+cfg) || !strings.Contains(errb.String(), "one router runs per user") ||
		!strings.Contains(errb.String(), "give this router a state home of its own (its own control socket and production records): HIRO_STATE_HOME=DIR hiro serve") {
		// The way out for a trial beside a running router (issue 26 F14).
		t.Errorf("a second router for another configuration: exit %d\n%s", code, errb.String())
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
	if !strings.Contains(serveErr.String(), "hiro: serve: production prod at http://127.0.0.1:"+strconv.Itoa(port)+" (the configuration's [production]: no switch is recorded for "+cfg+")") {
		t.Errorf("the router does not say which production it resumes and why:\n%s", serveErr.String())
	}
	if !strings.Contains(serveErr.String(), "hiro backend stop prod") {
		t.Errorf("the router's events do not name the forced stop:\n%s", serveErr.String())
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

// runServeBriefly runs `hiro serve` on the configuration text cfgText
// (written to name.toml in dir) with a bound: a router that starts is
// stopped after 5 s (exit 0), which is what a configuration error must
// not do. It returns the exit status and stderr.
func runServeBriefly(t *testing.T, dir, name, cfgText string) (string, int, string) {
	t.Helper()
	cfg := filepath.Join(dir, name+".toml")
	if err := os.WriteFile(cfg, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := Run(ctx, []string{"--config", cfg, "serve"}, &out, &errb)
	return cfg, code, errb.String()
}

// TestServeTLSMistakesExit2: a TLS pair that cannot serve is a
// configuration error (exit 2, nothing started: no event log) naming the
// configuration file and the key holding the wrong file, with what to
// do; it was exit 1 from the running router with Go's bare message, a
// certificate given as the key was reported under tls_cert, and a key
// others can read was accepted (an api_keys_file like it is refused).
func TestServeTLSMistakesExit2(t *testing.T) {
	dir := serveTestState(t)
	a := tlstest.Generate(t, dir, "a")
	b := tlstest.Generate(t, dir, "b")
	garbage := filepath.Join(dir, "garbage.pem")
	os.WriteFile(garbage, []byte("not a pem file\n"), 0o600)
	openKey := filepath.Join(dir, "open-key.pem")
	kb, _ := os.ReadFile(a.Key)
	os.WriteFile(openKey, kb, 0o644)
	os.Chmod(openKey, 0o644)
	missing := filepath.Join(dir, "missing.pem")
	openCert := filepath.Join(dir, "open-cert.pem")
	cb, _ := os.ReadFile(a.Cert)
	os.WriteFile(openCert, cb, 0o644)
	os.Chmod(openCert, 0o644)
	for _, c := range []struct {
		name, cert, key, wantKey string
		want                     []string
	}{
		{"key of another certificate", a.Cert, b.Key, "serve.tls_key", []string{"is not the one of the certificate in " + a.Cert, "openssl"}},
		{"certificate as the key", a.Cert, a.Cert, "serve.tls_key", []string{a.Cert + " holds a certificate, not a private key"}},
		{"swapped", a.Key, a.Cert, "serve.tls_cert", []string{"holds a private key, not a certificate", "swapped"}},
		{"missing certificate", missing, a.Key, "serve.tls_cert", []string{missing + " does not exist"}},
		{"garbage key", a.Cert, garbage, "serve.tls_key", []string{"holds no PEM private key"}},
		{"key others can read", a.Cert, openKey, "serve.tls_key", []string{"readable by group or others (mode 644)", "chmod 600"}},
		{"swapped, the certificate readable by all", openKey, openCert, "serve.tls_cert", []string{"holds a private key, not a certificate", "swapped"}},
		{"a folder as the key", a.Cert, dir, "serve.tls_key", []string{dir + " is a folder"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := strings.ReplaceAll(c.name, " ", "-")
			cfg, code, stderr := runServeBriefly(t, dir, name, fmt.Sprintf(`state_dir = %q
`+unstartedProduction+`[serve]
listen = "127.0.0.1:0"
access_log = "off"
tls_cert = %q
tls_key = %q
`, "state-"+name, c.cert, c.key))
			if code != ExitUsage {
				t.Errorf("exit %d, want %d: %s", code, ExitUsage, stderr)
			}
			for _, w := range append([]string{cfg + ": " + c.wantKey + ": "}, c.want...) {
				if !strings.Contains(stderr, w) {
					t.Errorf("message lacks %q: %s", w, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "state-"+name, "serve", "events.jsonl")); err == nil {
				t.Error("the router started (its event log exists) before the TLS error")
			}
		})
	}
}

// TestServeKeyVariableUnset: a key variable the configuration names
// (metrics_key_env; api_keys_env other than HIRO_SERVE_API_KEYS) that is
// unset or empty stops `hiro serve` with exit 2 naming the key and the
// variable: /metrics silently took the API keys, and the router ran
// without keys. The default HIRO_SERVE_API_KEYS may be unset.
func TestServeKeyVariableUnset(t *testing.T) {
	dir := serveTestState(t)
	t.Setenv("HIRO_SERVE_API_KEYS", "")
	t.Setenv("HIRO_TEST_EMPTY_KEYS", " , ")
	for _, c := range []struct {
		name, extra, wantKey, variable string
	}{
		{"metrics key unset", `metrics_key_env = "HIRO_TEST_UNSET_METRICS_KEY"`, "serve.metrics_key_env", "HIRO_TEST_UNSET_METRICS_KEY"},
		{"api keys empty", `api_keys_env = "HIRO_TEST_EMPTY_KEYS"`, "serve.api_keys_env", "HIRO_TEST_EMPTY_KEYS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := strings.ReplaceAll(c.name, " ", "-")
			cfg, code, stderr := runServeBriefly(t, dir, name, `state_dir = "state-`+name+`"
`+unstartedProduction+`[serve]
listen = "127.0.0.1:0"
access_log = "off"
`+c.extra+"\n")
			if code != ExitUsage {
				t.Errorf("exit %d, want %d: %s", code, ExitUsage, stderr)
			}
			for _, w := range []string{cfg + ": " + c.wantKey + ": ", "$" + c.variable + ", which is unset or empty", "export " + c.variable + "="} {
				if !strings.Contains(stderr, w) {
					t.Errorf("message lacks %q: %s", w, stderr)
				}
			}
		})
	}
}
