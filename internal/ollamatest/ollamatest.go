package ollamatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// StartTimeout bounds how long Start waits for `GET /` to answer 200.
const StartTimeout = 30 * time.Second

// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
const StopGrace = 10 * time.Second

// FindBinary returns the ollama binary: $HIRO_OLLAMA if set (it must exist),
// else `ollama` on PATH, else $(go env GOPATH)/bin/ollama. The error says
// how to install it.
func FindBinary() (string, error) {
	if p := os.Getenv("HIRO_OLLAMA"); p != "" {
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			return "", fmt.Errorf("$HIRO_OLLAMA=%s is not a file: set it to the ollama binary or unset it", p)
		}
		return p, nil
	}
	if p, err := exec.LookPath("ollama"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	if gopath != "" {
		p := filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "bin", "ollama")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("ollama not found ($HIRO_OLLAMA, PATH, $(go env GOPATH)/bin/ollama): run scripts/install-ollama.sh")
}

// Binary returns the ollama binary or skips the test with the reason.
func Binary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping under -short: a real-Ollama test (scripts/test.sh without -short runs it)")
	}
	p, err := FindBinary()
	if err != nil {
		t.Skipf("skipping: needs the reference engine: %v", err)
	}
	return p
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago:
// testsupport.FreePort, the one free-port helper of hiro's tests.
func FreePort(t testing.TB) int {
	t.Helper()
	return testsupport.FreePort(t)
}

// Server is a running `ollama serve` started by Start.
type Server struct {
	Bin    string // the ollama binary
	Host   string // 127.0.0.1:PORT, as OLLAMA_HOST
	URL    string // http://127.0.0.1:PORT
	Models string // OLLAMA_MODELS
	Home   string // HOME of the process (Ollama writes its key there)
	Log    string // file holding the server's stdout and stderr
	Env    []string

	cmd  *exec.Cmd
	done chan struct{}
	t    testing.TB
}

// Start runs `ollama serve` on a free loopback port with OLLAMA_MODELS set to
// modelsDir (created if missing), HOME set to a fresh temporary directory and
// the extra environment entries env ("KEY=VALUE"; the defaults are
// OLLAMA_NUM_PARALLEL=1 and OLLAMA_KEEP_ALIVE=-1 so one model stays loaded
// with a single 4k context), and waits until `GET /` answers 200. The server
// is stopped by t.Cleanup; a test may call Stop earlier. It skips when the
// binary is missing and fails when the server does not come up within
// StartTimeout (the error holds the log's tail).
func Start(t testing.TB, modelsDir string, env ...string) *Server {
	t.Helper()
	bin := Binary(t)
	if err := os.MkdirAll(modelsDir, 0o755); err != nil {
		t.Fatalf("ollamatest: models directory: %v", err)
	}
	home := t.TempDir()
	port := FreePort(t)
	s := &Server{Bin: bin, Host: fmt.Sprintf("127.0.0.1:%d", port), Models: modelsDir, Home: home,
		Log: filepath.Join(home, "serve.log"), done: make(chan struct{}), t: t}
	s.URL = "http://" + s.Host
	s.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"OLLAMA_HOST=" + s.Host,
		"OLLAMA_MODELS=" + modelsDir,
		"OLLAMA_NUM_PARALLEL=1",
		"OLLAMA_KEEP_ALIVE=-1",
	}, env...)
	logf, err := os.Create(s.Log)
	if err != nil {
		t.Fatalf("ollamatest: %v", err)
	}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = s.Env
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("ollamatest: start %s serve: %v", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	t.Cleanup(s.Stop)
	t.Cleanup(func() { // runs before Stop and before home is removed
		if t.Failed() {
			t.Logf("ollamatest: the failed test's ollama serve on %s: its requests and errors (log %s):\n%s", s.Host, s.Log, s.Requests(40))
		}
	})
	deadline := time.Now().Add(StartTimeout)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(s.URL + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("ollamatest: ollama serve on %s exited before answering; log %s:\n%s", s.Host, s.Log, s.tail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ollamatest: ollama serve on %s did not answer GET / within %s; log %s:\n%s", s.Host, StartTimeout, s.Log, s.tail())
		}
	}
}

// Stop ends the server: SIGTERM to its process group, SIGKILL to the group
// after StopGrace. Safe to call more than once.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(StopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.done
	}
	// the runner subprocess is in the same group; make sure nothing is left
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Create registers model name from the Modelfile at modelfile with
// `ollama create` against this server (the Modelfile's FROM path is relative
// to the Modelfile). It fails the test with the command's output on error.
func (s *Server) Create(t testing.TB, name, modelfile string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Bin, "create", name, "-f", modelfile)
	cmd.Env = s.Env
	cmd.Dir = filepath.Dir(modelfile)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("ollamatest: ollama create %s -f %s: %v\n%s", name, modelfile, err, lastLines(out.String(), 20))
	}
}

// PrepareModels registers models (name → Modelfile path) in modelsDir: it
// starts a temporary server on modelsDir, runs `ollama create` for each
// model, and stops the server. A later Start (or the supervisor) on the same
// modelsDir then serves them without creating anything.
func PrepareModels(t testing.TB, modelsDir string, models map[string]string) {
	t.Helper()
	s := Start(t, modelsDir)
	for name, mf := range models {
		s.Create(t, name, mf)
	}
	s.Stop()
}

// RepoRoot returns the directory holding go.mod, searched upwards from the
// working directory (a package's directory under go test).
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("ollamatest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Shipped model names, as `ollama create` registers them from models/ (and
// as /v1/models then lists them, with ":latest").
const (
	TinyModel   = "hiro-tiny"           // random weights, ~250 KB: loads, answers something
	StrongModel = "hiro-fixture-strong" // trained: READY and claim extraction
	WeakModel   = "hiro-fixture-weak"   // the same training stopped early: worse grounding
)

// ShippedModels maps the shipped model names to their Modelfiles under the
// repository's models/ directory, ready for PrepareModels.
func ShippedModels(t testing.TB) map[string]string {
	root := RepoRoot(t)
	return map[string]string{
		TinyModel:   filepath.Join(root, "models", "tiny", "Modelfile"),
		StrongModel: filepath.Join(root, "models", "fixture-strong", "Modelfile"),
		WeakModel:   filepath.Join(root, "models", "fixture-weak", "Modelfile"),
	}
}

// Requests returns the last n lines of the server's log that record a
// request (Ollama's "[GIN]" lines: status, duration, method, path) or a
// warning or error (level=WARN, level=ERROR): what a failed test needs to
// tell a slow reply (a 200 after minutes, a client that gave up: 499) from
// a refused or failed one (5xx, the runner's error). The warnings every
// load of a shipped model logs (msg="key not found": GGUF keys the
// fixture models do not set) are left out.
func (s *Server) Requests(n int) string {
	b, _ := os.ReadFile(s.Log)
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "[GIN] ") || strings.Contains(l, "level=ERROR") ||
			(strings.Contains(l, "level=WARN") && !strings.Contains(l, `msg="key not found"`)) {
			keep = append(keep, l)
		}
	}
	if len(keep) == 0 {
		return "(no request or error recorded)"
	}
	return lastLines(strings.Join(keep, "\n"), n)
}

func (s *Server) tail() string {
	b, _ := os.ReadFile(s.Log)
	return lastLines(string(b), 30)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// ProfileTOML returns a hiro backend profile, [backends.NAME] with its
// env table, that launches the Ollama binary bin as `ollama serve` on
// 127.0.0.1:port with the models of modelsDir and HOME home, expecting
// model, with the bounds the project's Ollama tests use (ready in 2 min,
// a 4-token probe); OLLAMA_NUM_PARALLEL is "1" unless env sets it, and env
// adds or overrides environment entries (OLLAMA_KEEP_ALIVE...).
func ProfileTOML(name, bin string, port int, model, modelsDir, home string, env map[string]string) string {
	all := map[string]string{"OLLAMA_HOST": fmt.Sprintf("127.0.0.1:%d", port), "OLLAMA_MODELS": modelsDir, "HOME": home, "OLLAMA_NUM_PARALLEL": "1"}
	for k, v := range env {
		all[k] = v
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, `[backends.%s]
engine = "ollama"
command = %q
args = ["serve"]
port = %d
model = %q
ready_timeout = "2m"
stall_timeout = "1m"
stop_grace = "10s"
ready_probe = { max_tokens = 4 }
[backends.%s.env]
`, name, bin, port, model, name)
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %q\n", k, all[k])
	}
	return b.String()
}
