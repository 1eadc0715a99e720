package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/extract"
)

// outboundIPv4 returns an IPv4 address of this machine that is not
// loopback, or skips: hiro must take it for another host.
func outboundIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skipf("no interface addresses: %v", err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address to reach the fake engine through")
	return ""
}

// TestPlainHTTPKeyWarned runs extract and doctor against a real fake engine
// that requires a key, reached through this machine's non-loopback address
// over plain http, with a key file of mode 0644: both faults are warned
// about (extract: on stderr, once each per run, the run still works;
// doctor: as warnings naming the key path), never with the key; with
// allow_plain_http = true and chmod 600 nothing is warned.
func TestPlainHTTPKeyWarned(t *testing.T) {
	fake := buildFakeEngine(t)
	ip := outboundIPv4(t)
	dir := t.TempDir()
	port := cliFreePort(t)
	t.Setenv("HIRO_LEASE_DIR", t.TempDir())
	startFakeDirect(t, fake, port, fmt.Sprintf(`"--host", "0.0.0.0", "--api-key", %q, "--require-api-key"`, remoteKey))
	keyFile := filepath.Join(dir, "engine.key")
	if err := os.WriteFile(keyFile, []byte(remoteKey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(keyFile, 0o644) // whatever the umask
	cfg := filepath.Join(dir, "hiro.toml")
	hostPort := net.JoinHostPort(ip, strconv.Itoa(port))
	writeCfg := func(extra string) {
		os.WriteFile(cfg, []byte(fmt.Sprintf(`
state_dir = "state"
[backends.remote]
engine = "openai"
unmanaged = true
base_url = "http://%s"
model = "fake-model"
api_key_file = "engine.key"
%s
`, hostPort, extra)), 0o600)
	}
	writeCfg("")
	code, out, errs := runHiro(t, "--config", cfg, "extract", "--backend", "remote", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "out"), "--concurrency", "4")
	if code != ExitOK {
		t.Fatalf("extract: exit %d\n%s\n%s", code, out, errs)
	}
	if n := strings.Count(errs, "hiro: warning: "); n != 2 {
		t.Fatalf("want 2 warnings (plain http, key file mode) once each, got %d:\n%s", n, errs)
	}
	for _, want := range []string{
		"profile remote sends its API key over plain http to " + hostPort, "https", "ca_file", "ssh -N -L", "allow_plain_http = true", "(backends.remote.base_url)",
		"key file " + keyFile, "mode 0644", "chmod 600 " + keyFile, "(backends.remote.api_key_file)",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(out+errs, remoteKey) {
		t.Fatalf("the key was printed:\n%s%s", out, errs)
	}

	// Under --json the warnings are JSON lines on stderr, like errors (and
	// the per-document progress lines).
	code, out, errs = runHiro(t, "--config", cfg, "extract", "--backend", "remote", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "out-json"), "--json")
	var keys []string
	progress := 0
	for _, l := range strings.Split(strings.TrimSpace(errs), "\n") {
		var w struct{ Warning, Key, Progress string }
		if err := json.Unmarshal([]byte(l), &w); err != nil || (w.Warning == "") == (w.Progress == "") {
			t.Fatalf("--json: stderr line %q is not a JSON warning or progress line: %v", l, err)
		}
		if w.Progress != "" {
			progress++
			continue
		}
		keys = append(keys, w.Key)
	}
	if progress == 0 {
		t.Errorf("--json: no progress line on stderr:\n%s", errs)
	}
	if code != ExitOK || strings.Join(keys, ",") != "backends.remote.base_url,backends.remote.api_key_file" || strings.Contains(out+errs, remoteKey) {
		t.Fatalf("--json: exit %d, warnings %v\n%s", code, keys, errs)
	}

	// doctor: the same two, as warnings with their key paths; no request.
	code, out, errs = runHiro(t, "--config", cfg, "doctor")
	if code != ExitOK || strings.Count(out, "warning: ") != 2 || !strings.Contains(out, "(backends.remote.base_url)") || !strings.Contains(out, "(backends.remote.api_key_file)") {
		t.Fatalf("doctor: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = runHiro(t, "--config", cfg, "doctor", "--json")
	var rep struct {
		Warnings []struct{ Key, Message string } `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitOK || len(rep.Warnings) != 2 ||
		rep.Warnings[0].Key != "backends.remote.base_url" || rep.Warnings[1].Key != "backends.remote.api_key_file" {
		t.Fatalf("doctor --json: exit %d %v %+v\n%s", code, err, rep, out)
	}
	if strings.Contains(out, remoteKey) {
		t.Fatal("doctor printed the key")
	}

	// Silenced the documented ways: nothing is warned, the run works.
	writeCfg("allow_plain_http = true")
	os.Chmod(keyFile, 0o600)
	code, out, errs = runHiro(t, "--config", cfg, "extract", "--backend", "remote", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "out2"))
	if code != ExitOK || strings.Contains(errs, "warning") {
		t.Fatalf("allow_plain_http and 0600: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, _ = runHiro(t, "--config", cfg, "doctor")
	if code != ExitOK || strings.Contains(out, "warning") {
		t.Fatalf("doctor after the fixes:\n%s", out)
	}
}

// TestServeStatusNamesTheKeySetting runs the router (hiro serve) in front
// of an unmanaged production, a real fake engine that requires a key the
// profile's variable does not hold: hiro status says production is down
// and its next step names the variable and the key path, never the key.
func TestServeStatusNamesTheKeySetting(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := serveTestState(t)
	t.Setenv("HIRO_TEST_SERVE_KEY", "sk-not-the-engines-key-1234")
	port := cliFreePort(t)
	startFakeDirect(t, fake, port, fmt.Sprintf(`"--api-key", %q, "--require-api-key"`, remoteKey))
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "openai"
unmanaged = true
base_url = "http://127.0.0.1:%d"
model = "fake-model"
api_key_env = "HIRO_TEST_SERVE_KEY"
[serve]
listen = "127.0.0.1:%d"
access_log = "off"
health_interval = "200ms"
`, port, cliFreePort(t))), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() { done <- Run(ctx, []string{"--config", cfg, "serve"}, &bytes.Buffer{}, &serveErr) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	}
	defer stop()
	want := "next step   the server refused the request (HTTP 401: no valid key): the API key profile prod sends comes from the environment variable HIRO_TEST_SERVE_KEY (backends.prod.api_key_env) and may be wrong or missing"
	deadline := time.Now().Add(20 * time.Second)
	var out, errb bytes.Buffer
	for {
		out.Reset()
		errb.Reset()
		Run(context.Background(), []string{"--config", cfg, "status"}, &out, &errb)
		if strings.Contains(out.String(), want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never named the key setting:\n%s%s", out.String(), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The router writes its events to serveErr until it stops: read it
	// after.
	stop()
	if s := out.String() + errb.String() + serveErr.String(); strings.Contains(s, "sk-not-the-engines-key-1234") || strings.Contains(s, remoteKey) {
		t.Fatalf("a key was printed:\n%s", s)
	}
	// Loopback: no plain-http warning from the router.
	if strings.Contains(serveErr.String(), "warning") {
		t.Fatalf("warning for a loopback endpoint:\n%s", serveErr.String())
	}
}

// TestExtractRejectsNameTheKeySetting: a real fake engine that, like
// llama-server with --api-key, answers /health and /v1/models to anyone
// but refuses completions without its key. extract's check that the
// backend is up passes; every request is refused with 401, and each
// reject says which setting holds the key and that it may be wrong.
func TestExtractRejectsNameTheKeySetting(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	port := cliFreePort(t)
	t.Setenv("HIRO_LEASE_DIR", t.TempDir())
	startFakeDirect(t, fake, port, fmt.Sprintf(`"--api-key", %q, "--require-api-key", "--key-public-paths", "/health,/v1/models"`, remoteKey))
	keyFile := filepath.Join(dir, "engine.key")
	os.WriteFile(keyFile, []byte("sk-an-old-key-000000000\n"), 0o600)
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[backends.lcpp]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:%d"
model = "fake-model"
api_key_file = "engine.key"
`, port)), 0o600)
	out := filepath.Join(dir, "out")
	code, stdout, errs := runHiro(t, "--config", cfg, "extract", "--backend", "lcpp", "--corpus", claimsMiniCorpus, "--out", out)
	if code != ExitFailed {
		t.Fatalf("extract with a wrong key: exit %d\n%s%s", code, stdout, errs)
	}
	d := firstRejectDetail(t, out)
	if !strings.Contains(d, "HTTP 401") || !strings.Contains(d, "the file "+keyFile+" (backends.lcpp.api_key_file) and may be wrong or missing") {
		t.Fatalf("reject detail lacks the key setting: %q", d)
	}
	b, err := os.ReadFile(filepath.Join(out, extract.RejectsFile))
	if err != nil {
		t.Fatal(err)
	}
	if s := stdout + errs + string(b); strings.Contains(s, "sk-an-old-key-000000000") || strings.Contains(s, remoteKey) {
		t.Fatalf("a key was printed or stored:\n%s", s)
	}
}
