package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/production"
)

// routerConfig writes, in dir, a configuration named name whose
// production prod is the fake engine (on_exit = "stop") and whose side
// profile nothing starts; it returns the file's path.
func routerConfig(t *testing.T, dir, name string, prodPort, sidePort, listen int) string {
	t.Helper()
	fake := buildFakeEngine(t)
	cfg := filepath.Join(dir, name)
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = %q
args = ["--port", "%d"]
port = %d
model = "fake-model"
ready_timeout = "20s"
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
`, fake, prodPort, prodPort, fake, sidePort, listen)), 0o644))
	return cfg
}

// startRouter runs 'hiro --config cfg serve' in this process until the
// test ends, and waits until its status answers; it returns the router's
// status and its stderr so far (read after the router stopped: stop).
func startRouter(t *testing.T, cfg string) (st *control.Status, stop func() string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() { done <- Run(ctx, []string{"--config", cfg, "serve"}, &bytes.Buffer{}, &serveErr) }()
	stopped := false
	stop = func() string {
		if !stopped {
			stopped = true
			cancel()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Error("serve did not stop")
			}
		}
		return serveErr.String()
	}
	t.Cleanup(func() { stop() })
	for deadline := time.Now().Add(30 * time.Second); ; {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), []string{"--config", cfg, "status", "--json"}, &out, &errb); code == ExitOK {
			var s control.Status
			must(t, json.Unmarshal(out.Bytes(), &s))
			return &s, stop
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before serving:\n%s", code, serveErr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router never said production ready:\n%s%s", out.String(), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestServeResolvesProductionOnce (issue 26 leftover 5): 'hiro serve'
// resolves production once, says which it resumes and serves that one. A
// switch recorded right after that resolution (another hiro's activation
// landing between the two reads 'hiro serve' made) made the start line
// say prod while serve.New, resolving again, served side.
func TestServeResolvesProductionOnce(t *testing.T) {
	dir := serveTestState(t)
	cfgPath := routerConfig(t, dir, "hiro.toml", cliFreePort(t), cliFreePort(t), cliFreePort(t))
	calls := 0
	old := resolveProduction
	t.Cleanup(func() { resolveProduction = old })
	resolveProduction = func(cfg *config.Config) (*production.Active, error) {
		calls++
		a, err := production.Resolve(cfg)
		if err != nil || calls > 1 {
			return a, err
		}
		sw := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: cfg.Path,
			From: &a.Snapshot, To: production.Snap(cfg.Backends["side"], "base", "activation"), StartedAt: time.Now(), FinishedAt: time.Now()}
		must(t, production.Append(sw))
		return a, nil
	}
	st, stop := startRouter(t, cfgPath)
	if st.Production.Name != "prod" {
		t.Errorf("the router serves %s, want prod: the production its start line named", st.Production.Name)
	}
	serveErr := stop()
	if calls != 1 || !strings.Contains(serveErr, "hiro: serve: production prod at http://127.0.0.1:") {
		t.Errorf("production resolved %d times (want 1); start line:\n%s", calls, serveErr)
	}
}
