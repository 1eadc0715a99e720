package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// TestProxyRoutesAndRefusesBadInput: the alias and the model id reach the
// fake engine (JSON and SSE), other routes answer, and every bad input
// gets a clear error while production stays up.
func TestProxyRoutesAndRefusesBadInput(t *testing.T) {
	cfg := fakeConfig(t, nil, "max_body_bytes = 4096")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)

	code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	if code != 200 || !strings.Contains(body, `"READY"`) || !strings.Contains(body, `"model":"fake-model"`) {
		t.Fatalf("alias: %d %s", code, body)
	}
	code, _, body = post(t, r.url, RouteChat, chatBody("fake-model", false))
	if code != 200 || !strings.Contains(body, `"READY"`) {
		t.Fatalf("model id: %d %s", code, body)
	}
	for _, route := range []string{RouteCompletions, RouteEmbeddings} {
		if code, _, body := post(t, r.url, route, `{"model":"extraction","input":"x","prompt":"x"}`); code != 200 || !strings.Contains(body, `"usage"`) {
			t.Errorf("%s: %d %s", route, code, body)
		}
	}

	// Streaming: chunks arrive as SSE events, ending in [DONE].
	resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("extraction", true)))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("stream content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var events []string
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "data: ") {
			events = append(events, l)
		}
	}
	resp.Body.Close()
	if len(events) < 4 || events[len(events)-1] != "data: [DONE]" {
		t.Errorf("stream events: %q", events)
	}

	// GET /v1/models lists what is served.
	mresp, err := http.Get(r.url + RouteModels)
	if err != nil {
		t.Fatal(err)
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.NewDecoder(mresp.Body).Decode(&models)
	mresp.Body.Close()
	if len(models.Data) != 2 || models.Data[0].ID != "extraction" || models.Data[1].ID != "fake-model" {
		t.Errorf("models: %+v", models)
	}
	// ... and has its access log line (flushed within 200 ms), with the
	// bytes it sent.
	wantLine := fmt.Sprintf(`"method":"GET","path":"/v1/models","status":200,"bytes":%d,`, mresp.ContentLength)
	testsupport.WaitFor(3*time.Second, func() bool { return strings.Contains(r.access.String(), wantLine) })
	if mresp.ContentLength <= 0 || !strings.Contains(r.access.String(), wantLine) {
		t.Errorf("no access line for GET /v1/models:\n%s", r.access.String())
	}

	bad := []struct {
		name, body string
		code       int
		want       string
	}{
		{"malformed JSON", `{"model": "extraction", "messages": [`, 400, "not valid JSON"},
		{"no model", `{"messages": []}`, 400, `no "model"`},
		{"unknown model", chatBody("gpt-4", false), 404, `"gpt-4" is not served here; served: "extraction", "fake-model"`},
		{"huge body", `{"model":"extraction","x":"` + strings.Repeat("a", 8192) + `"}`, 413, "larger than 4096 bytes"},
		// Two "model" keys: engines keep the last, so the second would
		// run a model the router does not serve.
		{"model twice", `{"model":"extraction","model":"other-model","messages":[]}`, 400, `names the key "model" more than once`},
		{"model twice, other case", `{"model":"extraction","Model":"other-model","messages":[]}`, 400, `names the key "Model" more than once`},
		{"model twice, escaped", `{"model":"extraction","mod\u0065l":"other-model","messages":[]}`, 400, `more than once`},
	}
	for _, c := range bad {
		code, _, body := post(t, r.url, RouteChat, c.body)
		if code != c.code || !strings.Contains(errorMessage(t, body), c.want) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, code, body, c.code, c.want)
		}
	}
	// A wrong method says which one to use (405 with Allow).
	for _, c := range []struct{ method, path, allow string }{{"GET", RouteChat, "POST"}, {"POST", RouteModels, "GET, HEAD"}} {
		req, _ := http.NewRequest(c.method, r.url+c.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow || !strings.Contains(errorMessage(t, string(b)), "use "+strings.Split(c.allow, ",")[0]) {
			t.Errorf("%s %s: %d Allow %q %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), b)
		}
	}
	if code, _, body := post(t, r.url, "/v1/other", "{}"); code != 404 || !strings.Contains(errorMessage(t, body), "no route") {
		t.Errorf("unknown route: %d %s", code, body)
	}
	// Production is still up and serving after all that.
	if code, _, _ := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("after bad input: %d", code)
	}
	st := r.waitState(t, control.StateReady, time.Second)
	if st.Production.Restarts != 0 || st.Production.LastFailure != nil {
		t.Errorf("bad input touched production: %+v", st.Production)
	}

	// Metrics count requests by route, backend and status, and tokens.
	mb := metricsText(t, r)
	for _, want := range []string{
		`hiro_serve_requests_total{backend="prod",route="/v1/chat/completions",status="200"} 4`,
		`hiro_serve_requests_total{backend="",route="/v1/chat/completions",status="404"} 1`,
		`hiro_serve_requests_total{backend="",route="/v1/chat/completions",status="413"} 1`,
		`hiro_serve_requests_total{backend="",route="/v1/chat/completions",status="400"} 5`,
		`hiro_serve_requests_total{backend="",route="/v1/models",status="200"} 1`,
		`hiro_serve_requests_total{backend="",route="/v1/models",status="405"} 1`,
		`hiro_serve_tokens_total{backend="prod",kind="completion"}`,
		`hiro_serve_ttfb_seconds_count{backend="prod",route="/v1/chat/completions"} 4`,
		`hiro_serve_active_backend_info{backend="prod",engine="llamacpp",model="fake-model",state="ready"} 1`,
	} {
		if !strings.Contains(mb, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestAuthKeys: with keys set, a missing or wrong key is 401 and the key
// never reaches the access log or the backend.
func TestAuthKeys(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(keyFile, []byte("# keys\nsk-first-key-1a2b3c4d\n\nsk-second-key-5e6f7a8b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fakeConfig(t, nil, "api_keys_file = "+`"`+keyFile+`"`+"\nmetrics_key_env = \"TEST_METRICS_KEY\"")
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			switch k {
			case "HIRO_SERVE_API_KEYS":
				return "sk-env-key-9c0d1e2f", true
			case "TEST_METRICS_KEY":
				return "sk-metrics-3a4b5c6d", true
			}
			return "", false
		}
	})
	r.waitState(t, control.StateReady, 20*time.Second)
	for _, c := range []struct {
		key  string
		code int
	}{{"", 401}, {"Bearer sk-wrong", 401}, {"sk-first-key-1a2b3c4d", 401}, {"Bearer sk-first-key-1a2b3c4d", 200}, {"Bearer sk-second-key-5e6f7a8b", 200}, {"Bearer sk-env-key-9c0d1e2f", 200}} {
		code, h, body := post(t, r.url, RouteChat, chatBody("extraction", false), "Authorization", c.key)
		if code != c.code {
			t.Errorf("key %q: %d %s, want %d", c.key, code, body, c.code)
		}
		if code == 401 && h.Get("WWW-Authenticate") == "" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
	req, _ := http.NewRequest("GET", r.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer sk-first-key-1a2b3c4d")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
		t.Errorf("/metrics with an API key instead of its own: %v %v", resp.StatusCode, err)
	}
	req.Header.Set("Authorization", "Bearer sk-metrics-3a4b5c6d")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("/metrics with its key: %v %v", resp.StatusCode, err)
	}
	r.stop(t)
	all := r.access.String() + r.events.String()
	for _, k := range []string{"sk-first-key-1a2b3c4d", "sk-second-key-5e6f7a8b", "sk-env-key-9c0d1e2f", "sk-wrong", "sk-metrics-3a4b5c6d"} {
		if strings.Contains(all, k) {
			t.Errorf("key %s was logged", k)
		}
	}
	if !strings.Contains(r.access.String(), `"status":401`) {
		t.Errorf("access log lacks the 401s: %s", r.access.String())
	}
}

// TestDeathAfterReadyRestarts: a SIGKILLed production is classified,
// requests get 503 with Retry-After meanwhile, and it is restarted.
func TestDeathAfterReadyRestarts(t *testing.T) {
	cfg := fakeConfig(t, []string{"--load-time", "300ms"}, "")
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateReady, 20*time.Second)
	pid := st.Production.PID
	if pid == 0 {
		t.Fatal("no pid in status")
	}
	syscall.Kill(pid, syscall.SIGKILL)
	// Within the restart, production is not ready: 503 + Retry-After.
	deadline := time.Now().Add(5 * time.Second)
	saw503 := false
	for time.Now().Before(deadline) && !saw503 {
		code, h, body := post(t, r.url, RouteChat, chatBody("extraction", false))
		if code == 503 {
			saw503 = true
			if h.Get("Retry-After") == "" || !strings.Contains(errorMessage(t, body), "production prod is") {
				t.Errorf("503 without Retry-After or reason: %v %s", h, body)
			}
		}
	}
	if !saw503 {
		t.Error("no 503 while production restarted")
	}
	// The first 503 may come from the request that found production dead
	// before the watcher did: wait for the restart itself.
	r.waitRestarts(t, 1, 20*time.Second)
	st = r.waitState(t, control.StateReady, 20*time.Second)
	p := st.Production
	if p.Restarts != 1 || p.PID == pid || p.PID == 0 {
		t.Errorf("restarts %d pid %d (was %d)", p.Restarts, p.PID, pid)
	}
	if p.LastFailure == nil || p.LastFailure.Class != failure.ClassEngineDied || p.LastFailure.Signal != "KILL" || p.LastFailure.Phase != failure.PhaseReady {
		t.Errorf("last failure %+v", p.LastFailure)
	}
	if strings.Contains(p.LastFailure.RootCause, "before ready") {
		t.Errorf("a death after ready says %q", p.LastFailure.RootCause)
	}
	if code, _, _ := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("after restart: %d", code)
	}
	ev, _ := os.ReadFile(filepath.Join(cfg.StateDir, "serve", "events.jsonl"))
	if !strings.Contains(string(ev), `"event":"restart"`) || !strings.Contains(string(ev), `"class":"engine_died"`) {
		t.Errorf("events.jsonl lacks the death and restart:\n%s", ev)
	}
}

// TestHandoverTakeback: a hand-over drains and stops production (its
// port is free), requests get 503 + Retry-After, take back starts and
// verifies it; a dead lease owner makes the router take it back alone.
func TestHandoverTakeback(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	ctx := context.Background()

	owner := exec1(t)
	res, err := r.ctl.Handover(ctx, "camp-1", owner.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stopped || res.Stop == nil || !res.Stop.PortFree || !res.Drain.Drained {
		t.Errorf("handover %+v", res)
	}
	if _, err := supervisor.ReadRecord(cfg.StateDir, "prod"); err == nil {
		t.Error("the stopped production's record is still there")
	}
	code, h, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(body, "camp-1") {
		t.Errorf("during hand-over: %d %v %s", code, h, body)
	}
	if _, err := r.ctl.Handover(ctx, "camp-2", owner.Process.Pid); err == nil || err.(*control.Error).StatusCode != 409 {
		t.Errorf("a second campaign's hand-over: %v", err)
	}
	if _, err := r.ctl.Takeback(ctx, "camp-2"); err == nil {
		t.Error("take back by another campaign was accepted")
	}
	v, err := r.ctl.Takeback(ctx, "camp-1")
	if err != nil || !v.OK || v.Reply != "READY" || v.PID == 0 {
		t.Fatalf("takeback %+v %v", v, err)
	}
	if code, _, _ := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("after take back: %d", code)
	}

	// The lease owner dies during a hand-over: the router takes back.
	if _, err := r.ctl.Handover(ctx, "camp-3", owner.Process.Pid); err != nil {
		t.Fatal(err)
	}
	r.waitState(t, control.StateHandedOver, time.Second)
	owner.Process.Kill()
	owner.Wait()
	st := r.waitState(t, control.StateReady, 20*time.Second)
	if st.Handover != nil || st.Draining {
		t.Errorf("after the owner died: %+v", st)
	}
	if !strings.Contains(r.events.String(), `"event":"lease_owner_died"`) {
		t.Error("no lease_owner_died event")
	}
}

// exec1 starts a process that stands for a campaign's hiro.
func exec1(t *testing.T) *exec.Cmd {
	t.Helper()
	c := exec.Command("sleep", "300")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	return c
}

// TestServedProfiles: a profile [serve] served names is reached by its own
// model id and listed; a profile not named (a candidate) is not
// reachable; when the served backend is down its requests get 503 with
// Retry-After naming the backend and the error's class but no internal
// address, and production is untouched.
func TestServedProfiles(t *testing.T) {
	port := freePort(t)
	other := startOther(t, port)
	cfg := fakeConfig(t, nil, servedOther(port)+`[backends.cand]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:`+itoa(port)+`"
model = "cand-model"
`)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	code, _, body := post(t, r.url, RouteChat, chatBody("other-model", false))
	if code != 200 || !strings.Contains(body, "other-model") {
		t.Fatalf("served profile: %d %s", code, body)
	}
	resp, err := http.Get(r.url + RouteModels)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"other-model"`) || strings.Contains(string(b), "cand-model") {
		t.Errorf("models: %s", b)
	}
	if code, _, body := post(t, r.url, RouteChat, chatBody("cand-model", false)); code != 404 {
		t.Errorf("a profile not served was reached: %d %s", code, body)
	}
	servedState := func() control.BackendStatus {
		st, err := r.ctl.Status(context.Background())
		if err != nil || len(st.Served) != 1 {
			t.Fatalf("status: %+v %v", st, err)
		}
		return st.Served[0]
	}
	waitServed := func(want control.State) control.BackendStatus {
		var b control.BackendStatus
		if !testsupport.WaitFor(10*time.Second, func() bool { b = servedState(); return b.State == want }) {
			t.Fatalf("served backend: %+v, want %s", b, want)
		}
		return b
	}
	if b := waitServed(control.StateReady); b.LastHealth == nil || !b.LastHealth.OK {
		t.Errorf("served backend while up: %+v", b)
	}
	other.Process.Kill()
	other.Wait()
	// Before the watch notices, as once it has: 503 + Retry-After naming
	// the backend and the class, no address; then the status says down.
	code, hdr, body := post(t, r.url, RouteChat, chatBody("other-model", false))
	if msg := errorMessage(t, body); code != 503 || hdr.Get("Retry-After") == "" || !strings.Contains(msg, "backend other") || strings.Contains(msg, "127.0.0.1") {
		t.Errorf("served backend down: %d %q", code, msg)
	}
	waitServed(control.StateDown)
	code, h, body := post(t, r.url, RouteChat, chatBody("other-model", false))
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(errorMessage(t, body), "backend other is not answering") {
		t.Errorf("served backend known down: %d %v %s", code, h, body)
	}
	if code, _, _ := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("production after the served backend died: %d", code)
	}
	// Its owner starts it again: served again.
	startOther(t, port)
	waitServed(control.StateReady)
	if code, _, body := post(t, r.url, RouteChat, chatBody("other-model", false)); code != 200 {
		t.Errorf("served backend back: %d %s", code, body)
	}
	if !strings.Contains(r.events.String(), `"event":"served_state"`) {
		t.Errorf("no served_state events:\n%s", r.events.String())
	}
}

// TestSlowBodyIsCut: a client that sends its body a byte at a time holds
// its connection no longer than the body read timeout: it gets 400 and the
// connection ends; production is untouched.
func TestSlowBodyIsCut(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, func(o *Options) { o.BodyReadTimeout = 300 * time.Millisecond })
	r.waitState(t, control.StateReady, 20*time.Second)
	c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", RouteChat)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body within 10 s: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	if took := time.Since(start); resp.StatusCode != 400 || took > 5*time.Second || !strings.Contains(string(b), "did not arrive within 300ms") {
		t.Errorf("stalled body: %d after %s: %s", resp.StatusCode, took, b)
	}
	if code, _, _ := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("after the stalled body: %d", code)
	}
}

// TestOneRouterPerProduction: a second router for the same production,
// from another state folder (so its control socket does not meet the
// first's), is refused before it listens, naming the first; once the
// first stops, it may start.
func TestOneRouterPerProduction(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r1 := startRouter(t, cfg, nil)
	r1.waitState(t, control.StateReady, 20*time.Second)
	s2, err := New(Options{Config: cfg, ControlDir: shortDir(t), Events: io.Discard, AccessLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s2.Run(context.Background()) }()
	select {
	case err := <-done:
		// errors.Is lease.ErrHeld: hiro serve exits 6 (busy), trial 10 Q8.
		if err == nil || !strings.Contains(err.Error(), "already served by hiro serve pid "+itoa(os.Getpid())) || !errors.Is(err, lease.ErrHeld) {
			t.Errorf("second router: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a second router for the same production runs")
	}
	if code, _, _ := post(t, r1.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("first router after the refusal: %d", code)
	}
	r1.stop(t)
	r2 := startRouter(t, cfg, nil)
	r2.waitState(t, control.StateReady, 20*time.Second)
}

// startOther starts the fake engine serving "other-model" on port (with
// extra flags), a server the router serves as is; it is killed at the
// test's end.
func startOther(t *testing.T, port int, extra ...string) *exec.Cmd {
	t.Helper()
	other := exec.Command(fakeEngine, append([]string{"--port", itoa(port), "--model", "other-model"}, extra...)...)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	return other
}

// servedOther is the [serve] served line and the unmanaged profile
// "other" for the server startOther starts on port.
func servedOther(port int) string {
	return `served = ["other"]
[backends.other]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:` + itoa(port) + `"
model = "other-model"
`
}

// TestServedProfileNamesTheKeySetting: a served profile whose server
// refuses hiro (it requires a key the profile does not send) is down in
// the status, and the status says which setting to fix, in the words
// every command uses (llm.Advice).
func TestServedProfileNamesTheKeySetting(t *testing.T) {
	port := freePort(t)
	startOther(t, port, "--api-key", "sk-served-only-1234", "--require-api-key")
	cfg := fakeConfig(t, nil, servedOther(port))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	down401 := func(st *control.Status) bool {
		if len(st.Served) != 1 {
			t.Fatalf("status: %+v", st)
		}
		return st.Served[0].State == control.StateDown && strings.Contains(st.Served[0].Message, "401")
	}
	st := r.waitStatus(t, 10*time.Second, down401)
	b := st.Served[0]
	if !down401(st) {
		t.Fatalf("served backend never down with 401: %+v", b)
	}
	if !strings.Contains(b.Message, "api_key_env") || !strings.Contains(b.Message, "backends.other") {
		t.Errorf("the served backend's status does not name the key setting: %q", b.Message)
	}
	if strings.Contains(b.Message, "sk-served-only-1234") {
		t.Errorf("the status holds the server's key: %q", b.Message)
	}
}

// TestBackendRefusingTheRoutersKey: a backend that answers 401 to the
// key hiro sends it (the profile's) is the operator's fault: the client
// gets 502 naming the profile to fix, not a 401 it would read as its own
// key refused, and the metrics count an "auth" upstream error.
func TestBackendRefusingTheRoutersKey(t *testing.T) {
	port := freePort(t)
	startOther(t, port, "--api-key", "sk-served-only-5678", "--require-api-key", "--key-public-paths", "/health,/v1/models")
	cfg := fakeConfig(t, nil, servedOther(port))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	code, hdr, body := post(t, r.url, RouteChat, chatBody("other-model", false))
	if code != http.StatusBadGateway || !strings.Contains(body, "backends.other") || hdr.Get("WWW-Authenticate") != "" {
		t.Errorf("a backend refusing the router's key: %d %s (WWW-Authenticate %q); want 502 naming backends.other", code, body, hdr.Get("WWW-Authenticate"))
	}
	m := metricsText(t, r)
	if !strings.Contains(m, `hiro_serve_upstream_errors_total{backend="other",class="auth"} 1`) {
		t.Errorf("metrics lack the auth error:\n%s", m)
	}
}
