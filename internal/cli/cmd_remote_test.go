package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/tlstest"
)

// remoteKey is the test's API key: it must reach the fake engine on every
// request and never appear in what hiro prints.
const remoteKey = "sk-hiro-test-4f9a1c"

// TestKeyAndTLSEveryCommand starts a real fake engine that serves https
// with a generated certificate and refuses any request without the API key
// (health, model list and completions alike), then drives it with
// 'backend start' (readiness: health, /v1/models, probe) and 'extract'.
func TestKeyAndTLSEveryCommand(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	certs := tlstest.Generate(t, dir, "server")
	other := tlstest.Generate(t, dir, "other")
	port := cliFreePort(t)
	t.Setenv("HIRO_LEASE_DIR", t.TempDir())
	t.Setenv("HIRO_TEST_ENGINE_KEY", remoteKey)
	cfg := filepath.Join(dir, "hiro.toml")
	writeCfg := func(ca, keyEnv string) {
		os.WriteFile(cfg, []byte(fmt.Sprintf(`
state_dir = "state"
[backends.secure]
engine = "llamacpp"
command = %q
args = ["--port", "%d", "--api-key", %q, "--require-api-key", "--tls-cert", %q, "--tls-key", %q, "--chat", "claims", "--load-time", "200ms"]
base_url = "https://127.0.0.1:%d"
model = "fake-model"
api_key_env = %q
ca_file = %q
[backends.secure.ready_probe]
expect = "READY"
`, fake, port, remoteKey, certs.Cert, certs.Key, port, keyEnv, ca)), 0o644)
	}
	writeCfg(certs.CA, "HIRO_TEST_ENGINE_KEY")
	code, out, errs := runHiro(t, "--config", cfg, "backend", "start", "secure", "--json")
	var res struct {
		State   string `json:"state"`
		PID     int    `json:"pid"`
		Failure any    `json:"failure"`
	}
	json.Unmarshal([]byte(out), &res)
	if res.PID != 0 {
		t.Cleanup(func() { syscall.Kill(-res.PID, syscall.SIGKILL) })
	}
	if code != ExitOK || res.State != "ready" {
		t.Fatalf("backend start over https with a key: exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(out+errs, remoteKey) {
		t.Fatalf("the key was printed:\n%s%s", out, errs)
	}
	outDir := filepath.Join(dir, "out")
	code, out, errs = runHiro(t, "--config", cfg, "extract", "--backend", "secure", "--corpus", claimsMiniCorpus, "--out", outDir, "--concurrency", "4", "--json")
	var sum extract.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != ExitOK || sum.Done != 5 || sum.Claims == 0 {
		t.Fatalf("extract over https with a key: exit %d %+v\n%s\n%s", code, sum, out, errs)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "state", "logs", "secure-*.log"))
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if strings.Contains(string(b), "fake: 401") {
			t.Fatalf("a request went without the key:\n%s", b)
		}
	}
	if len(logs) == 0 {
		t.Fatal("no engine log to check")
	}

	// The wrong authority: extract cannot reach the server, and says why,
	// once, before any request (its check that the backend is up).
	writeCfg(other.CA, "HIRO_TEST_ENGINE_KEY")
	code, out, errs = runHiro(t, "--config", cfg, "extract", "--backend", "secure", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "out-wrong-ca"), "--json")
	if code != ExitFailed || !strings.Contains(errs, "backend is not up") || !strings.Contains(errs, "certificate") ||
		!strings.Contains(errs, `hiro test CA server`) || !strings.Contains(errs, "ca_file "+other.CA) || !strings.Contains(errs, "backends.secure.ca_file") {
		t.Fatalf("wrong CA (the advice must name the CA seen and ca_file): exit %d\n%s%s", code, out, errs)
	}
	// A missing key variable is a configuration error naming the key path.
	writeCfg(certs.CA, "HIRO_TEST_ENGINE_KEY_UNSET")
	code, _, errs = runHiro(t, "--config", cfg, "extract", "--backend", "secure", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "out-no-key"))
	if code != ExitUsage || !strings.Contains(errs, "backends.secure.api_key_env") {
		t.Fatalf("unset key variable: exit %d\n%s", code, errs)
	}
	// A wrong key: the server answers 401 and the requests are rejected.
	t.Setenv("HIRO_TEST_ENGINE_KEY_UNSET", "sk-wrong")
	code, out, errs = runHiro(t, "--config", cfg, "extract", "--backend", "secure", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "out-wrong-key"), "--json")
	if code != ExitFailed || !strings.Contains(errs, "backend is not up") || !strings.Contains(errs, "401") || strings.Contains(out+errs, "sk-wrong") ||
		!strings.Contains(errs, "environment variable HIRO_TEST_ENGINE_KEY_UNSET (backends.secure.api_key_env) and may be wrong or missing") {
		t.Fatalf("wrong key: exit %d\n%s%s", code, out, errs)
	}
}

// TestBackendStartWithoutKeyFails: the same engine started by a profile
// that has no key never becomes ready (its health check is refused), so
// readiness really carries the key.
func TestBackendStartWithoutKeyFails(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	port := cliFreePort(t)
	t.Setenv("HIRO_LEASE_DIR", t.TempDir())
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
state_dir = "state"
[backends.nokey]
engine = "llamacpp"
command = %q
args = ["--port", "%d", "--api-key", %q, "--require-api-key"]
port = %d
model = "fake-model"
ready_timeout = "3s"
stall_timeout = "2s"
`, fake, port, remoteKey, port)), 0o644)
	code, out, errs := runHiro(t, "--config", cfg, "backend", "start", "nokey", "--json")
	if code != ExitFailed || !strings.Contains(out, `"failed"`) {
		t.Fatalf("start without the key: exit %d\n%s\n%s", code, out, errs)
	}
	// The failure's next step says what is wrong: the key, not the engine.
	var res struct {
		Failure struct {
			NextStep string `json:"next_step"`
		} `json:"failure"`
	}
	json.Unmarshal([]byte(out), &res)
	if !strings.Contains(res.Failure.NextStep, "HTTP 401") || !strings.Contains(res.Failure.NextStep, "profile nokey sends no API key: set api_key_env") {
		t.Fatalf("start without the key: next step %q\n%s", res.Failure.NextStep, out)
	}
}

// TestExtractOverloadRetried runs extract against a real fake engine that
// answers 429 (with Retry-After: 0) to its first requests and 503 (no
// Retry-After) to every 7th: every document finishes, nothing is
// rejected, and the retries are counted apart from failures. With a bound
// of one retry against an engine that is always busy, the requests become
// rejects that say the bound was reached.
func TestExtractOverloadRetried(t *testing.T) {
	fake := buildFakeEngine(t)
	for _, tc := range []struct {
		name, args, policy string
		wantOK             bool
	}{
		{"429-retry-after", `"--overload-status", "429", "--overload-first", "6", "--retry-after", "0"`, `max_retries = 8`, true},
		{"503-every-7th", `"--overload-status", "503", "--overload-every", "7"`, `max_retries = 8`, true},
		{"bound-reached", `"--overload-status", "503", "--overload-every", "1"`, `max_retries = 1`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			port := cliFreePort(t)
			t.Setenv("HIRO_LEASE_DIR", t.TempDir())
			cfg := filepath.Join(dir, "hiro.toml")
			startFakeDirect(t, fake, port, tc.args)
			os.WriteFile(cfg, []byte(fmt.Sprintf(`
[backends.busy]
engine = "openai"
unmanaged = true
base_url = "http://127.0.0.1:%d"
model = "fake-model"
[backends.busy.overload]
%s
initial_interval = "1ms"
max_interval = "10ms"
`, port, tc.policy)), 0o644)
			code, out, errs := runHiro(t, "--config", cfg, "extract", "--backend", "busy", "--corpus", claimsMiniCorpus, "--out", filepath.Join(dir, "out"), "--concurrency", "3", "--json")
			var sum extract.Summary
			if err := json.Unmarshal([]byte(out), &sum); err != nil {
				t.Fatalf("exit %d: %v\n%s\n%s", code, err, out, errs)
			}
			if tc.wantOK {
				if code != ExitOK || sum.Done != 5 || sum.Rejects != sum.Stats.AddressesModel || sum.OverloadRetries == 0 || sum.Client == nil || sum.Client.SucceededAfterRetry == 0 || sum.Stats.OverloadRetries != sum.OverloadRetries {
					t.Fatalf("exit %d, summary %s", code, out)
				}
				return
			}
			if d := firstRejectDetail(t, filepath.Join(dir, "out")); code != ExitFailed || !strings.Contains(d, "overload bound was reached") || sum.Client.OverloadGaveUp == 0 {
				t.Fatalf("exit %d, first reject %q, summary %s", code, d, out)
			}
		})
	}
}

// startFakeDirect runs the fake engine on port with the extra flags (a
// comma-separated list of quoted arguments, as in a TOML array) and waits
// until it listens.
func startFakeDirect(t *testing.T, fake string, port int, flags string) {
	t.Helper()
	var extra []string
	if err := json.Unmarshal([]byte("["+flags+"]"), &extra); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fake, append([]string{"--port", strconv.Itoa(port), "--chat", "claims"}, extra...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the fake engine did not listen within 5s")
}

// firstRejectDetail returns the first reason's detail in dir's rejects.
func firstRejectDetail(t *testing.T, dir string) string {
	t.Helper()
	rs, err := extract.ReadRejects(filepath.Join(dir, extract.RejectsFile))
	if err != nil || len(rs) == 0 || len(rs[0].Reasons) == 0 {
		t.Fatalf("no reject in %s: %v", dir, err)
	}
	return rs[0].Reasons[0].Detail
}
