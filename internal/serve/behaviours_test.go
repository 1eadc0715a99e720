package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// TestCanaryCatchesDeadEngine: the engine stops answering completions
// while /health stays 200; the canary catches it, the failure is recorded
// as a canary failure, and production is restarted.
func TestCanaryCatchesDeadEngine(t *testing.T) {
	cfg := fakeConfig(t, []string{"--chat-hang-after", "3s"}, `canary_interval = "300ms"
restart_budget = 1`)
	cfg.Backends["prod"].ReadyProbe.Timeout.Duration = 500 * time.Millisecond
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateReady, 20*time.Second)
	first := st.Production.PID
	st = r.waitRestarts(t, 1, 20*time.Second)
	ev := r.events.String()
	if !strings.Contains(ev, `"what":"canary"`) {
		t.Fatalf("the failure was not caught by the canary:\n%s", ev)
	}
	// Health answered 200 all along: no health failure was recorded first.
	if strings.Contains(ev, `"what":"health"`) {
		t.Errorf("a health failure was recorded; the engine's /health stays 200:\n%s", ev)
	}
	f := st.Production.LastFailure
	if f == nil || !strings.Contains(f.RootCause, "no answer") {
		t.Errorf("last failure %+v", f)
	}
	if st.Production.PID == first && st.Production.State == control.StateReady {
		t.Errorf("the hung engine (pid %d) still serves", first)
	}
}

// TestCanaryDoesNotBlockWatch: while a canary waits on an engine whose
// completions hang (/health stays 200), production is still watched:
// health polls keep their interval and the control socket's commands,
// which run on the owning goroutine, are answered. The hang is still
// caught by the canary at its timeout, and production is restarted.
func TestCanaryDoesNotBlockWatch(t *testing.T) {
	cfg := fakeConfig(t, []string{"--chat-hang-after", "3s"}, `canary_interval = "300ms"
restart_budget = 1`)
	cfg.Backends["prod"].ReadyProbe.Timeout.Duration = 5 * time.Second
	// A backend that is never started: a switch to it is refused on the
	// owning goroutine (a control command that changes nothing).
	cfg.Backends["next"] = cfg.Backends["prod"].Clone()
	next := cfg.Backends["next"]
	port := freePort(t)
	for i, a := range next.Args { // its --port too: a port its flag contradicts is refused first
		if a == itoa(next.Port) {
			next.Args[i] = itoa(port)
		}
	}
	next.Name, next.Port = "next", port
	next.BaseURL = "http://127.0.0.1:" + itoa(port)
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateReady, 20*time.Second)
	ready, first := time.Now(), st.Production.PID
	// Completions hang from at most 3 s after ready; a canary is sent
	// within 300 ms of that and waits 5 s: it is in flight all through
	// [ready+3.5s, ready+6.5s].
	time.Sleep(time.Until(ready.Add(3500 * time.Millisecond)))
	const bound = 1500 * time.Millisecond
	for time.Since(ready) < 6500*time.Millisecond {
		st, err := r.ctl.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p := st.Production
		if p.PID != first || p.State != control.StateReady {
			t.Fatalf("the hang was acted on before the canary's timeout (%.1f s after ready): %+v", time.Since(ready).Seconds(), p)
		}
		if p.LastHealth == nil || time.Since(p.LastHealth.At) > bound {
			t.Fatalf("%.1f s after ready, with a canary in flight, the last health check is %+v: health polls wait for the canary", time.Since(ready).Seconds(), p.LastHealth)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		start := time.Now()
		_, err = r.ctl.Switch(ctx, "next", nil)
		took := time.Since(start)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "not running") {
			t.Fatalf("switch to a backend that is not running: %v", err)
		}
		if took > bound {
			t.Fatalf("%.1f s after ready, with a canary in flight, a control command took %s", time.Since(ready).Seconds(), took)
		}
		time.Sleep(100 * time.Millisecond)
	}
	st = r.waitRestarts(t, 1, 20*time.Second)
	ev := r.events.String()
	if !strings.Contains(ev, `"what":"canary"`) || strings.Contains(ev, `"what":"health"`) {
		t.Fatalf("the hang was not caught by the canary alone:\n%s", ev)
	}
	if f := st.Production.LastFailure; f == nil || !strings.Contains(f.RootCause, "no answer") {
		t.Errorf("last failure %+v", f)
	}
}

// TestRestartStormStopsAtBudget: an engine that dies after every start is
// restarted restart_budget times, then stays down and says so; requests
// get 503 with Retry-After naming the reason.
func TestRestartStormStopsAtBudget(t *testing.T) {
	cfg := fakeConfig(t, []string{"--exit", "3", "--exit-after", "400ms"}, `restart_budget = 2
restart_window = "1m"`)
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateDown, 30*time.Second)
	p := st.Production
	if p.Restarts != 2 || p.RestartsInWindow != 2 || !strings.Contains(p.Message, "restart budget spent") {
		t.Errorf("after the storm: %+v", p)
	}
	if p.LastFailure == nil || p.LastFailure.ExitCode == nil || *p.LastFailure.ExitCode != 3 {
		t.Errorf("last failure %+v", p.LastFailure)
	}
	code, h, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	// The client learns the state and the failure's class, not the
	// operator's detail (pids, exit codes, addresses are in hiro status).
	if msg := errorMessage(t, body); code != 503 || h.Get("Retry-After") == "" ||
		!strings.Contains(msg, "production prod is down after a failure (engine_died)") ||
		strings.Contains(msg, "restart budget") || strings.Contains(msg, "pid") || strings.Contains(msg, "exit") {
		t.Errorf("request while down: %d %v %s", code, h, body)
	}
	// It stays down: no further restart, none pending, however often the
	// watch looks (step's rule: TestWatchRestartBudgetHolds).
	r.waitLooks(t, 3, 10*time.Second)
	if st, _ := r.ctl.Status(context.Background()); st.Production.Restarts != 2 || st.Production.State != control.StateDown {
		t.Errorf("restarted past the budget: %+v", st.Production)
	}
	r.s.prod.mu.Lock()
	due := r.s.prod.restartAt
	r.s.prod.mu.Unlock()
	if due.After(time.Now()) {
		t.Errorf("a restart past the budget is due at %s", due)
	}
}

// TestSlowStreamAndClientDisconnect: a slow stream reaches the client
// token by token (not buffered to the end), and a client that leaves
// mid-stream cancels the upstream request.
func TestSlowStreamAndClientDisconnect(t *testing.T) {
	cfg := fakeConfig(t, []string{"--token-delay", "100ms", "--reply", "one two three four five six seven eight nine ten"}, "")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)

	body := `{"model":"extraction","stream":true,"messages":[{"role":"user","content":"count"}]}`
	start := time.Now()
	resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	var firstContent, end time.Duration
	for {
		line, err := br.ReadString('\n')
		if strings.Contains(line, `"content":"one `) && firstContent == 0 {
			firstContent = time.Since(start)
		}
		if err != nil {
			break
		}
	}
	end = time.Since(start)
	resp.Body.Close()
	if firstContent == 0 || end < 900*time.Millisecond || firstContent > end/2 {
		t.Errorf("first token after %s, stream ended after %s: the stream was buffered", firstContent, end)
	}

	// Disconnect after the first chunk: the engine sees the request end.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.url+RouteChat, strings.NewReader(body))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	logs, _ := filepath.Glob(filepath.Join(cfg.StateDir, "logs", "prod-*.log"))
	var all string
	if !testsupport.WaitFor(5*time.Second, func() bool {
		all = ""
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			all += string(b)
		}
		return strings.Contains(all, "client went away mid-stream")
	}) {
		t.Fatalf("the engine did not see the client leave; logs %v:\n%s", logs, all)
	}
	if !testsupport.WaitFor(2*time.Second, func() bool { return r.s.inFlight.Load() == 0 }) {
		t.Fatalf("%d requests still in flight", r.s.inFlight.Load())
	}
	st, _ := r.ctl.Status(context.Background())
	if st.Production.State != control.StateReady || st.Production.Restarts != 0 {
		t.Errorf("production after a disconnect: %+v", st.Production)
	}

	// The engine dies mid-stream: the client's stream ends early.
	resp, err = http.Post(r.url+RouteChat, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	br = bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(st.Production.PID, syscall.SIGKILL)
	rest, _ := io.ReadAll(br)
	resp.Body.Close()
	if strings.Contains(string(rest), "[DONE]") {
		t.Errorf("a stream cut by the engine's death ended with [DONE]")
	}
	// Neither cut stream is logged as a clean answer.
	r.stop(t)
	var lines []accessEntry
	for _, l := range strings.Split(strings.TrimSpace(r.access.String()), "\n") {
		var e accessEntry
		if json.Unmarshal([]byte(l), &e) == nil && e.Stream {
			lines = append(lines, e)
		}
	}
	if len(lines) != 3 || lines[0].Error != "" || lines[0].Status != 200 ||
		lines[1].Status != 499 || lines[1].Error != "client left mid-response" ||
		lines[2].Error != "upstream cut mid-response" {
		t.Errorf("access log of the three streams (whole, client left, engine died): %+v", lines)
	}
}

// TestUpstreamKey: the backend requires its own API key (api_key_env);
// the router sends it, never the client's key.
func TestUpstreamKey(t *testing.T) {
	cfg := fakeConfig(t, []string{"--require-api-key", "--api-key", "sk-upstream-secret"}, "")
	cfg.Backends["prod"].APIKeyEnv = "HIRO_TEST_UPSTREAM_KEY"
	t.Setenv("HIRO_TEST_UPSTREAM_KEY", "sk-upstream-secret")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false), "Authorization", "Bearer sk-client-key")
	if code != 200 || !strings.Contains(body, "READY") {
		t.Fatalf("through the router to a keyed backend: %d %s", code, body)
	}
}

// TestRetryAfterFollowsBackoff: while a restart waits for its backoff,
// a refused request's Retry-After (and the message's "retry in") is no
// sooner than the restart, not a fixed few seconds.
func TestRetryAfterFollowsBackoff(t *testing.T) {
	cfg := fakeConfig(t, nil, `restart_backoff = "20s"
restart_backoff_max = "1m"`)
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateReady, 20*time.Second)
	killPID(st.Production.PID)
	r.waitState(t, control.StateRestarting, 10*time.Second)
	code, h, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	retry, err := strconv.Atoi(h.Get("Retry-After"))
	if code != 503 || err != nil || retry < 15 || retry > 21 || !strings.Contains(errorMessage(t, body), "retry in "+h.Get("Retry-After")+" s") {
		t.Errorf("request during a 20 s backoff: %d Retry-After %q %s", code, h.Get("Retry-After"), body)
	}
}

// TestWaitForReady: with wait_for_ready set, a request that arrives while
// production restarts waits for it and succeeds instead of a 503.
func TestWaitForReady(t *testing.T) {
	cfg := fakeConfig(t, []string{"--load-time", "300ms"}, `wait_for_ready = "15s"`)
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateReady, 20*time.Second)
	killPID(st.Production.PID)
	// Wait until the router has seen the death.
	notReady := func(st *control.Status) bool { return st.Production.State != control.StateReady }
	if st = r.waitStatus(t, 10*time.Second, notReady); !notReady(st) {
		t.Fatal("the death was not noticed")
	}
	code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	if code != 200 || !strings.Contains(body, "READY") {
		t.Fatalf("a request during the restart with wait_for_ready: %d %s", code, body)
	}
}

// TestGracefulStopDrains: a stop (SIGTERM's root context) lets an
// in-flight stream finish, refuses new connections, and returns nil.
func TestGracefulStopDrains(t *testing.T) {
	cfg := fakeConfig(t, []string{"--token-delay", "100ms", "--reply", "one two three four five six seven eight"}, "")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(`{"model":"extraction","stream":true,"messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop(t) }()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(b)), "data: [DONE]") {
		t.Fatalf("the in-flight stream was cut by the stop: %v\n%s", err, b)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Run returned %v after a graceful stop", err)
	}
	if _, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("extraction", false))); err == nil {
		t.Error("the router still accepts requests after the stop")
	}
}

// TestSecretsStayOutOfLogs: the engine prints its key (as vLLM prints its
// non-default arguments); when it dies, the failure in the event log, on
// stderr and in the status quotes that line with the key redacted. A
// client that sends a key as the model name (the router's own key, or the
// backend's) finds it redacted in the access log.
func TestSecretsStayOutOfLogs(t *testing.T) {
	const backendKey, routerKey = "backendsecretCCC333", "sk-routerkeyAAA111zz"
	cfg := fakeConfig(t, []string{"--api-key", backendKey}, `api_keys_env = "HIRO_TEST_ROUTER_KEYS"`)
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == "HIRO_TEST_ROUTER_KEYS" {
				return routerKey, true
			}
			return "", false
		}
	})
	st := r.waitState(t, control.StateReady, 20*time.Second)
	for _, model := range []string{routerKey, backendKey} {
		if code, _, body := post(t, r.url, RouteChat, chatBody(model, false), "Authorization", "Bearer "+routerKey); code != 404 {
			t.Errorf("model %q: %d %s", model, code, body)
		}
	}
	syscall.Kill(st.Production.PID, syscall.SIGKILL)
	if st = r.waitStatus(t, 20*time.Second, recordedFailure); !recordedFailure(st) {
		t.Fatal("the death was not recorded")
	}
	status, _ := json.Marshal(st)
	r.stop(t) // flushes the access log
	evFile, _ := os.ReadFile(filepath.Join(cfg.StateDir, "serve", "events.jsonl"))
	for name, text := range map[string]string{"events (stderr)": r.events.String(), "events.jsonl": string(evFile),
		"status": string(status), "access log": r.access.String()} {
		for _, key := range []string{backendKey, routerKey} {
			if strings.Contains(text, key) {
				t.Errorf("%s holds a key:\n%s", name, text)
			}
		}
	}
	if !strings.Contains(string(status), "non-default args") || !strings.Contains(string(status), `\u003credacted\u003e`) {
		t.Errorf("the status's log tail should quote the key line, redacted:\n%s", status)
	}
	if !strings.Contains(r.access.String(), `"status":404`) {
		t.Errorf("access log lacks the refused requests:\n%s", r.access.String())
	}
}

// TestHungEngineIsSaidHung: an engine whose process is alive but does
// not answer (stopped with SIGSTOP) is recorded with its process state
// and said hung, not dead, with a next step for a hang; production is
// restarted (the stopped process killed).
func TestHungEngineIsSaidHung(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, nil)
	pid := r.waitState(t, control.StateReady, 20*time.Second).Production.PID
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	syscall.Kill(pid, syscall.SIGSTOP)
	st := r.waitRestarts(t, 1, 30*time.Second)
	f := st.Production.LastFailure
	if f == nil {
		t.Fatalf("no failure recorded: %+v", st.Production)
	}
	if !strings.Contains(f.RootCause, "hung, not dead") || !strings.Contains(f.RootCause, "T (stopped)") || !strings.Contains(f.RootCause, itoa(pid)) {
		t.Errorf("root cause %q should say the process %d is alive, stopped, hung", f.RootCause, pid)
	}
	if f.Detail["process_state"] != "T (stopped)" || !strings.Contains(f.NextStep, "hung") {
		t.Errorf("detail %v, next step %q", f.Detail, f.NextStep)
	}
	st = r.waitState(t, control.StateReady, 30*time.Second)
	if st.Production.PID == pid {
		t.Errorf("the hung engine (pid %d) still serves", pid)
	}
	if state, alive := procfs.ProcessState(pid); alive {
		t.Errorf("the hung engine was left running (state %s)", state)
	}
}
