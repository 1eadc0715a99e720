package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// fakeEngine is cmd/hiro-fake-engine, built once by TestMain.
var fakeEngine string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hiro-serve-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Activation records are read from a private folder of this run.
	os.Setenv("HIRO_PRODUCTION_DIR", filepath.Join(dir, "production"))
	os.Setenv("HIRO_LEASE_DIR", filepath.Join(dir, "leases"))
	fakeEngine = testsupport.MustBuild(testsupport.FakeEnginePkg)
	code := m.Run()
	os.RemoveAll(dir)
	if err := testsupport.Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// freePort is testsupport.FreePort, the one free-port helper of hiro's tests.
var freePort = testsupport.FreePort

// shortDir is a temporary folder with a short path (a Unix socket path
// must fit in 108 bytes).
func shortDir(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "hs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// fakeConfig writes a configuration whose production "prod" runs the fake
// engine with args on a free port; serveExtra is more TOML for [serve].
func fakeConfig(t testing.TB, args []string, serveExtra string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	all := append([]string{"--port", strconv.Itoa(port), "--model", "fake-model"}, args...)
	q := make([]string, len(all))
	for i, a := range all {
		q[i] = strconv.Quote(a)
	}
	// serveExtra may set one of the [serve] keys below: the default line
	// goes, so that TOML sees each key once.
	serveDefaults := ""
	for _, d := range []string{`listen = "127.0.0.1:0"`, `alias = "extraction"`, `health_interval = "200ms"`,
		`restart_backoff = "100ms"`, `access_log = "off"`, `on_exit = "stop"`} {
		if !strings.Contains(serveExtra, strings.SplitN(d, " ", 2)[0]+" ") {
			serveDefaults += d + "\n"
		}
	}
	toml := fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = %q
args = [%s]
port = %d
model = "fake-model"
ready_timeout = "20s"
stall_timeout = "10s"
stop_grace = "2s"
[serve]
%s%s
`, fakeEngine, strings.Join(q, ", "), port, serveDefaults, serveExtra)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// router is a running Server for a test.
type router struct {
	s      *Server
	url    string
	ctl    *control.Client
	ctlDir string
	events *syncBuffer
	access *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startRouter runs a router on cfg until the test ends (or stop).
func startRouter(t testing.TB, cfg *config.Config, mod func(*Options)) *router {
	t.Helper()
	r := &router{ctlDir: shortDir(t), events: &syncBuffer{}, access: &syncBuffer{}, done: make(chan error, 1)}
	ready := make(chan string, 1)
	opts := Options{Config: cfg, ControlDir: r.ctlDir, Events: r.events, AccessLog: r.access,
		Ready: func(addr string) { ready <- addr }}
	if mod != nil {
		mod(&opts)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- s.Run(ctx) }()
	select {
	case r.url = <-ready:
	case err := <-r.done:
		t.Fatalf("router stopped at once: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("router did not listen within 10s")
	}
	if r.ctl, err = control.Dial(r.ctlDir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.stop(t)
		if t.Failed() {
			t.Logf("router events:\n%s", r.events.String())
		}
	})
	return r
}

// stop stops the router gracefully and returns Run's error.
func (r *router) stop(t testing.TB) error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
		}
		return err
	case <-time.After(40 * time.Second):
		t.Error("router did not stop within 40s")
		return nil
	}
}

// waitState waits until production is in state want.
func (r *router) waitState(t testing.TB, want control.State, within time.Duration) *control.Status {
	t.Helper()
	st := r.waitStatus(t, within, func(st *control.Status) bool {
		return st.Production.State == want && (want != control.StateReady || !st.Draining)
	})
	if st.Production.State != want || (want == control.StateReady && st.Draining) {
		t.Fatalf("production is %s (%s), not %s, after %s", st.Production.State, st.Production.Message, want, within)
	}
	return st
}

// waitRestarts waits until production has been restarted at least n
// times and returns that status.
func (r *router) waitRestarts(t testing.TB, n int, within time.Duration) *control.Status {
	t.Helper()
	st := r.waitStatus(t, within, func(st *control.Status) bool { return st.Production.Restarts >= n })
	if st.Production.Restarts < n {
		t.Fatalf("not restarted %d times within %s: %+v", n, within, st.Production)
	}
	return st
}

// waitStatus asks the router's status until ok says it is the one
// waited for, for at most within, and returns the last one.
func (r *router) waitStatus(t testing.TB, within time.Duration, ok func(*control.Status) bool) *control.Status {
	t.Helper()
	var st *control.Status
	testsupport.WaitFor(within, func() bool {
		var err error
		if st, err = r.ctl.Status(context.Background()); err != nil {
			t.Fatal(err)
		}
		return ok(st)
	})
	return st
}

// recordedFailure says a status has production's last failure.
func recordedFailure(st *control.Status) bool { return st.Production.LastFailure != nil }

// waitLooks waits until the watch has looked at production n more times
// (health ticks, deaths: prodCtl.lookedAt), so that a test asserting
// that something does not happen gives the watch its chances to do it,
// not a span of time.
func (r *router) waitLooks(t testing.TB, n int, within time.Duration) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for i := 0; i < n; i++ {
		p := r.s.prod
		p.mu.Lock()
		looked := p.checked
		p.mu.Unlock()
		select {
		case <-looked:
		case <-deadline.C:
			t.Fatalf("the watch looked at production %d times within %s, not %d", i, within, n)
		}
	}
}

// waitGone waits until pid is no longer a running process (gone or a
// zombie) and none of its threads runs either, and fails t after within.
// The threads matter: a killed multithreaded process (the fake engine,
// every engine in Go or C++) shows its first thread a zombie while the
// others are still exiting and hold its files, the listening socket
// among them; a connection made then is accepted by the kernel and reset
// (TestWaitForReadyAfterUnseenDeath failed so, 5 runs in 20 on a loaded
// machine: "not answering (reset)", where it means to find production
// refusing connections). Once the last thread is gone, so are its sockets.
func waitGone(t testing.TB, pid int, within time.Duration) {
	t.Helper()
	if !testsupport.WaitFor(within, func() bool { return !aliveProcess(pid) && !anyThreadRuns(pid) }) {
		t.Fatalf("pid %d still runs after %s", pid, within)
	}
}

// anyThreadRuns reports whether a thread of process pid other than its
// first is still running (/proc/PID/task; a reaped process has none).
func anyThreadRuns(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return false
	}
	for _, e := range tasks {
		if tid, err := strconv.Atoi(e.Name()); err == nil && tid != pid && aliveProcess(tid) {
			return true
		}
	}
	return false
}

// post sends a JSON body to path and returns status, headers and body.
func post(t testing.TB, url, path, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func chatBody(model string, stream bool) string {
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream, "max_tokens": 16,
		"messages": []any{map[string]any{"role": "user", "content": "Reply with exactly the word READY."}}})
	return string(b)
}

// errorMessage reads an OpenAI-shaped error's message.
func errorMessage(t testing.TB, body string) string {
	t.Helper()
	var e errorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not an OpenAI-shaped error: %q", body)
	}
	return e.Error.Message
}

func itoa(n int) string { return strconv.Itoa(n) }

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
