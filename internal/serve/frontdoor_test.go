package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// rawConn is a plain TCP connection to a router, for requests an HTTP
// client library would not send.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, r *router) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(15 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) send(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatal(err)
	}
}

// read reads one response (a 1xx one too) and its body.
func (rc *rawConn) read() (*http.Response, string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// rawHead is the request line and headers of a request (method) on the
// chat route with a Content-Length, an Authorization header when auth is
// set, and extra ("Name: value\r\n" lines).
func rawHead(method string, length int, auth, extra string) string {
	h := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s", method, RouteChat, length, extra)
	if auth != "" {
		h += "Authorization: " + auth + "\r\n"
	}
	return h + "\r\n"
}

// refusal is a request (head, no body) the router should refuse with
// code, its message holding want.
type refusal struct {
	name, head string
	code       int
	want       string
}

// send sends the refusal's head on a new connection and returns the
// answer and how long it took.
func (c refusal) send(t *testing.T, r *router) (*http.Response, string, time.Duration) {
	t.Helper()
	rc := dialRaw(t, r)
	start := time.Now()
	rc.send(c.head)
	resp, b := rc.read()
	return resp, b, time.Since(start)
}

// metricsText returns the router's /metrics page.
func metricsText(t *testing.T, r *router) string {
	t.Helper()
	mr, err := http.Get(r.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer mr.Body.Close()
	b, _ := io.ReadAll(mr.Body)
	return string(b)
}

// waitAccess waits until the access log holds want (it is flushed every
// accessFlushEvery).
func waitAccess(t *testing.T, r *router, want string) {
	t.Helper()
	if !testsupport.WaitFor(5*time.Second, func() bool { return strings.Contains(r.access.String(), want) }) {
		t.Fatalf("the access log lacks %s:\n%s", want, r.access.String())
	}
}

// TestDeeplyNestedBodyIsRefused: a body nesting arrays or objects deeper
// than MaxJSONDepth is refused with a 400 that says so (before any
// recursive parse: 8 MB of "[" took about 930 MB); nesting up to the
// bound, and brackets inside strings, pass.
func TestDeeplyNestedBodyIsRefused(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	nested := func(levels int) string { // levels counts the body's own object
		return `{"model":"extraction","messages":[],"x":` + strings.Repeat("[", levels-1) + strings.Repeat("]", levels-1) + "}"
	}
	for _, c := range []struct {
		name, body string
		code       int
		want       string
	}{
		{"1 MB of [", strings.Repeat("[", 1<<20), 400, "more than 10000 levels deep"},
		{"objects one level too deep", `{"model":"extraction","x":` + strings.Repeat(`{"a":`, MaxJSONDepth) + "1" + strings.Repeat("}", MaxJSONDepth) + "}", 400, "more than 10000 levels deep"},
		{"arrays one level too deep", nested(MaxJSONDepth + 1), 400, "more than 10000 levels deep"},
		{"at the bound", nested(MaxJSONDepth), 200, "READY"},
		{"brackets in strings", `{"model":"extraction","messages":[],"x":"\"\\` + strings.Repeat("[", 3*MaxJSONDepth) + `"}`, 200, "READY"},
	} {
		code, _, body := post(t, r.url, RouteChat, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			if len(body) > 300 {
				body = body[:300]
			}
			t.Errorf("%s: %d %s; want %d with %q", c.name, code, body, c.code, c.want)
		}
	}
}

// TestExpectContinueAfterChecks: a request sent with "Expect:
// 100-continue" is refused on its headers (no key, a wrong key, a
// Content-Length over max_body_bytes, a wrong method) without being told
// to send its body; one that passes them gets 100 and then its answer.
func TestExpectContinueAfterChecks(t *testing.T) {
	const key = "sk-expect-key-0123456789"
	cfg := fakeConfig(t, nil, "max_body_bytes = 4096")
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) { return key, k == "HIRO_SERVE_API_KEYS" }
	})
	r.waitState(t, control.StateReady, 20*time.Second)
	body := chatBody("extraction", false)
	const expect = "Expect: 100-continue\r\n"
	head := func(method string, length int, auth string) string { return rawHead(method, length, auth, expect) }
	for _, c := range []refusal{
		{"no key", head("POST", len(body), ""), 401, "missing API key"},
		{"wrong key", head("POST", len(body), "Bearer sk-wrong-key-0123456789"), 401, "invalid API key"},
		{"too large", head("POST", 5000, "Bearer "+key), 413, "larger than 4096 bytes"},
		{"wrong method", head("PUT", len(body), "Bearer "+key), 405, "use POST"},
	} {
		if resp, b, _ := c.send(t, r); resp.StatusCode != c.code || !strings.Contains(b, c.want) {
			t.Errorf("%s: %d %s; want %d with %q and no 100 Continue", c.name, resp.StatusCode, b, c.code, c.want)
		}
	}
	rc := dialRaw(t, r)
	rc.send(head("POST", len(body), "Bearer "+key))
	if resp, b := rc.read(); resp.StatusCode != 100 {
		t.Fatalf("a request that passes the checks: %d %s; want 100 Continue", resp.StatusCode, b)
	}
	rc.send(body)
	if resp, b := rc.read(); resp.StatusCode != 200 || !strings.Contains(b, "READY") {
		t.Errorf("after 100 Continue: %d %s", resp.StatusCode, b)
	}
	waitAccess(t, r, `"status":413`)
}

// connectionOptionsBackend is a small real HTTP server that answers chat
// requests with the headers in answers, one per request in turn (the
// last repeats), written as they are on the wire; /health and /v1/models
// answer as llama-server's do.
func connectionOptionsBackend(t *testing.T, answers ...string) string {
	t.Helper()
	var n atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"status":"ok"}`) })
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"object":"list","data":[{"id":"other-model","object":"model"}]}`)
	})
	mux.HandleFunc(RouteChat, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		i := int(n.Add(1)) - 1
		if i >= len(answers) {
			i = len(answers) - 1
		}
		c, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		body := `{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":"READY"}}]}`
		fmt.Fprintf(bw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", answers[i], len(body), body)
		bw.Flush()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestConnectionOptionsStayOnTheirHop: response headers a backend's
// Connection header names are hop-by-hop and never reach the client,
// also when it says "close" as well (net/http's reader then drops the
// Connection header with the names in it).
func TestConnectionOptionsStayOnTheirHop(t *testing.T) {
	addr := connectionOptionsBackend(t,
		"Connection: close, X-Hop-Secret\r\nX-Hop-Secret: s3cret\r\nX-Request-Id: req-1\r\n",
		"Connection: X-Hop-Secret\r\nX-Hop-Secret: s3cret\r\nX-Other: kept\r\n")
	_, port, _ := net.SplitHostPort(addr)
	cfg := fakeConfig(t, nil, servedOther(mustAtoi(t, port)))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	for i, want := range []string{"X-Request-Id", "X-Other"} {
		code, h, body := post(t, r.url, RouteChat, chatBody("other-model", false))
		if code != 200 || !strings.Contains(body, "READY") {
			t.Fatalf("answer %d: %d %s", i+1, code, body)
		}
		if v := h.Get("X-Hop-Secret"); v != "" {
			t.Errorf("answer %d: X-Hop-Secret %q reached the client though the backend's Connection header names it", i+1, v)
		}
		if h.Get(want) == "" || h.Get("Content-Type") != "application/json" {
			t.Errorf("answer %d: an end-to-end header was dropped: %v", i+1, h)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRefusalsAreRecorded: requests refused before or while their body
// is read are access-logged and counted as what they were: the method
// sent (fasthttp resets the request before its error handler), the route
// as the handler routes it (normalized paths), a client that left
// mid-body as 499, and refusals before any route was read (431, 400)
// with route "". A malformed request's 400 says what was wrong in a
// user's words and never quotes the request.
func TestRefusalsAreRecorded(t *testing.T) {
	cfg := fakeConfig(t, nil, "max_body_bytes = 4096")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)

	// A chunked body over max_body_bytes, on a path fasthttp normalizes.
	chunk := strings.Repeat("a", 3000)
	rc := dialRaw(t, r)
	rc.send(fmt.Sprintf("POST //v1/./chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", len(chunk), chunk, len(chunk), chunk))
	if resp, b := rc.read(); resp.StatusCode != 413 {
		t.Errorf("chunked body over the bound: %d %s", resp.StatusCode, b)
	}
	// A client that leaves mid-body.
	rc = dialRaw(t, r)
	rc.send("POST " + RouteChat + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"model\":")
	time.Sleep(50 * time.Millisecond)
	rc.c.Close()
	// Headers over the bound.
	rc = dialRaw(t, r)
	rc.send("POST " + RouteChat + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 20<<10) + "\r\n\r\n")
	if resp, b := rc.read(); resp.StatusCode != 431 {
		t.Errorf("20 KiB header: %d %s", resp.StatusCode, b)
	}
	// Malformed requests: the answer names no fasthttp internals and
	// quotes nothing of the request.
	for _, req := range []string{
		"GET /zz-request-bytes\r\nHost: x\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-zz-request-bytes-0123\r\nZZ request bytes\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz-request-bytes\r\n",
	} {
		rc = dialRaw(t, r)
		rc.send(req)
		resp, b := rc.read()
		msg := errorMessage(t, b)
		if resp.StatusCode != 400 || !strings.Contains(msg, "malformed") || !strings.Contains(msg, "send ") ||
			strings.Contains(strings.ToLower(b), "zz") || strings.Contains(b, "fasthttp") || strings.Contains(b, "buffer size") {
			t.Errorf("%q: %d %s; want a 400 in the router's words, quoting nothing", req, resp.StatusCode, b)
		}
	}
	for _, want := range []string{
		`"method":"POST","path":"/v1/chat/completions","status":413`,
		`"method":"POST","path":"/v1/chat/completions","status":499,`,
		`"error":"client left mid-request"`,
		`"method":"","path":"","status":431`,
		`"method":"","path":"","status":400`,
	} {
		waitAccess(t, r, want)
	}
	mb := metricsText(t, r)
	for _, want := range []string{
		`hiro_serve_requests_total{backend="",route="/v1/chat/completions",status="413"} 1`,
		`hiro_serve_requests_total{backend="",route="/v1/chat/completions",status="499"} 1`,
		`hiro_serve_requests_total{backend="",route="",status="431"} 1`,
	} {
		if !strings.Contains(mb, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestStopCutIsLoggedAsTheRouters: a stream the router's stop cuts
// (drain_timeout passed) is logged as cut by the stop, not as a client
// that left.
func TestStopCutIsLoggedAsTheRouters(t *testing.T) {
	cfg := fakeConfig(t, []string{"--token-delay", "100ms", "--reply", strings.Repeat("word ", 60)}, `drain_timeout = "300ms"`)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("extraction", true)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stopped := make(chan error, 1)
	go func() { stopped <- r.stop(t) }()
	io.ReadAll(resp.Body)
	<-stopped
	log := r.access.String()
	if !strings.Contains(log, `"error":"cut mid-response by hiro serve's stop (drain_timeout)"`) || strings.Contains(log, "client left") {
		t.Errorf("the stream the stop cut is not logged as cut by the stop:\n%s", log)
	}
}

// TestRequestLineVersionsAndHead: a request line whose version is
// neither HTTP/1.1 nor HTTP/1.0 is answered 505 (fasthttp reads any
// "HTTP/x.y"); HTTP/1.0 is served; HEAD /v1/models is answered as GET is,
// without the body. (And a router without keys does not quote a client's
// own bearer token sent as the model.)
func TestRequestLineVersionsAndHead(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	body := chatBody("extraction", false)
	for _, c := range []struct {
		version string
		code    int
		want    string
	}{{"HTTP/9.9", 505, "send HTTP/1.1"}, {"HTTP/2.0", 505, "send HTTP/1.1"}, {"HTTP/1.0", 200, "READY"}} {
		rc := dialRaw(t, r)
		rc.send(fmt.Sprintf("POST %s %s\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", RouteChat, c.version, len(body), body))
		if resp, b := rc.read(); resp.StatusCode != c.code || !strings.Contains(b, c.want) {
			t.Errorf("%s: %d %s; want %d with %q", c.version, resp.StatusCode, b, c.code, c.want)
		}
	}
	get, err := http.Get(r.url + RouteModels)
	if err != nil {
		t.Fatal(err)
	}
	get.Body.Close()
	head, err := http.Head(r.url + RouteModels)
	if err != nil {
		t.Fatal(err)
	}
	head.Body.Close()
	if head.StatusCode != 200 || head.ContentLength != get.ContentLength || head.Header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD %s: %d, %d bytes declared, %q; GET declares %d", RouteModels, head.StatusCode, head.ContentLength, head.Header.Get("Content-Type"), get.ContentLength)
	}
	// With no router keys, a client's own token sent as the model is not
	// quoted back either (TestKeyAsModelIsNotEchoed has the keys).
	const own = "my-own-token-for-another-service"
	if code, _, body := post(t, r.url, RouteChat, chatBody(own, false), "Authorization", "Bearer "+own); code != 404 || strings.Contains(body, own) {
		t.Errorf("the client's own token as the model: %d %s", code, body)
	}
	waitAccess(t, r, `"method":"POST","path":"/v1/chat/completions","status":505`)
	waitAccess(t, r, `"method":"HEAD","path":"/v1/models","status":200,"bytes":0,`)
}

// TestKeyAsModelIsNotEchoed: a model name that is one of the router's
// keys, or the request's own bearer token, or that looks like a secret,
// is not quoted back in the 404 (nor logged); an ordinary unknown name is.
func TestKeyAsModelIsNotEchoed(t *testing.T) {
	const key = "hiro-router-key-0123456789abcdef"
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) { return key, k == "HIRO_SERVE_API_KEYS" }
	})
	r.waitState(t, control.StateReady, 20*time.Second)
	for _, c := range []struct{ model, auth, secret string }{
		{key, key, key},
		{" " + key, key, key},
		{"sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", key, "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"},
	} {
		code, _, body := post(t, r.url, RouteChat, chatBody(c.model, false), "Authorization", "Bearer "+c.auth)
		if code != 404 || strings.Contains(body, c.secret) || !strings.Contains(errorMessage(t, body), "is not served here") {
			t.Errorf("model %q: %d %s; want a 404 that does not quote it", c.model, code, body)
		}
	}
	if code, _, body := post(t, r.url, RouteChat, chatBody("gpt-4", false), "Authorization", "Bearer "+key); code != 404 || !strings.Contains(body, `\"gpt-4\" is not served here`) {
		t.Errorf("unknown model gpt-4: %d %s", code, body)
	}
	r.stop(t)
	if strings.Contains(r.access.String(), key) {
		t.Errorf("the key sent as a model was logged:\n%s", r.access.String())
	}
}

// TestRefusedOnItsHeaders: a request whose headers already refuse it (no
// key, a wrong key, a Content-Length over max_body_bytes) is answered at
// once, before any of its body arrives, and its connection closed: a
// client without a key cannot hold a connection for the body timeout by
// announcing a body it never sends. A request that passes the checks
// still waits for its body.
func TestRefusedOnItsHeaders(t *testing.T) {
	const key = "sk-header-key-0123456789"
	cfg := fakeConfig(t, nil, "max_body_bytes = 4096\naccess_log = \"-\"")
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) { return key, k == "HIRO_SERVE_API_KEYS" }
	})
	r.waitState(t, control.StateReady, 20*time.Second)
	body := chatBody("extraction", false)
	head := func(length int, auth string) string { return rawHead("POST", length, auth, "") }
	for _, c := range []refusal{
		{"no key", head(len(body), ""), 401, "missing API key"},
		{"wrong key", head(len(body), "Bearer sk-wrong-key-0123456789"), 401, "invalid API key"},
		{"too large", head(5000, "Bearer "+key), 413, "larger than 4096 bytes"},
	} {
		resp, b, took := c.send(t, r)
		if resp.StatusCode != c.code || !strings.Contains(b, c.want) || took > 5*time.Second {
			t.Errorf("%s, body not sent: %d %s after %s; want %d with %q at once", c.name, resp.StatusCode, b, took, c.code, c.want)
		}
		if !resp.Close {
			t.Errorf("%s: the connection stays open after a refusal whose body was never read", c.name)
		}
	}
	// The same refusals when the body comes with the headers.
	for _, auth := range []string{"", "Bearer sk-wrong-key-0123456789"} {
		rc := dialRaw(t, r)
		rc.send(head(len(body), auth) + body)
		if resp, b := rc.read(); resp.StatusCode != 401 {
			t.Errorf("key %q with its body: %d %s", auth, resp.StatusCode, b)
		}
	}
	// A request that passes: its body is waited for, then answered.
	rc := dialRaw(t, r)
	rc.send(head(len(body), "Bearer "+key))
	rc.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := rc.br.Peek(1); err == nil {
		t.Fatal("a request with a valid key was answered before its body came")
	}
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	rc.send(body)
	if resp, b := rc.read(); resp.StatusCode != 200 || !strings.Contains(b, "READY") {
		t.Errorf("a valid request whose body came late: %d %s", resp.StatusCode, b)
	}
	waitAccess(t, r, `"status":413`)
	if a := r.access.String(); strings.Count(a, `"status":401`) != 4 || strings.Contains(a, key) {
		t.Errorf("the access log should hold 4 refusals (401) and no key:\n%s", a)
	}
}

// TestConnectionCap: past MaxConnections open client connections, all
// authenticated (with no key configured, by a request), one more is
// answered 503 and closed, and the ones open still serve.
func TestConnectionCap(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, func(o *Options) { o.MaxConnections = 3 })
	r.waitState(t, control.StateReady, 20*time.Second)
	body := chatBody("extraction", false)
	var held []*rawConn
	for i := 0; i < 3; i++ {
		rc := dialRaw(t, r)
		rc.send(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", RouteChat, len(body), body))
		if resp, b := rc.read(); resp.StatusCode != 200 {
			t.Fatalf("connection %d: %d %s", i, resp.StatusCode, b)
		}
		held = append(held, rc)
	}
	extra := dialRaw(t, r)
	extra.send(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", RouteChat))
	if resp, b := extra.read(); resp.StatusCode != 503 {
		t.Errorf("a connection past the cap: %d %s; want 503", resp.StatusCode, b)
	}
	held[0].send(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", RouteChat, len(body), body))
	if resp, b := held[0].read(); resp.StatusCode != 200 {
		t.Errorf("a connection within the cap: %d %s", resp.StatusCode, b)
	}
}

// TestUnknownRoutesNeedTheKey: with keys set, a path the router does not
// serve is 401 without a valid key (its 404 lists the routes), 404 with
// one.
func TestUnknownRoutesNeedTheKey(t *testing.T) {
	const key = "sk-unknown-route-0123456789"
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) { return key, k == "HIRO_SERVE_API_KEYS" }
	})
	r.waitState(t, control.StateReady, 20*time.Second)
	for _, c := range []struct {
		auth string
		code int
	}{{"", 401}, {"Bearer sk-wrong-key-0123456789", 401}, {"Bearer " + key, 404}} {
		code, _, body := post(t, r.url, "/v1/foo", "{}", "Authorization", c.auth)
		if code != c.code || (c.code == 401 && strings.Contains(body, RouteChat)) {
			t.Errorf("/v1/foo with %q: %d %s; want %d", c.auth, code, body, c.code)
		}
	}
}
