package serve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
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

// waitAccess waits until the access log holds want (it is flushed every
// accessFlushEvery).
func waitAccess(t *testing.T, r *router, want string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); !strings.Contains(r.access.String(), want); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the access log lacks %s:\n%s", want, r.access.String())
		}
	}
}

// TestDeeplyNestedBodyIsRefused: a body nesting arrays or objects deeper
// than MaxJSONDepth is refused with a 400 that says so (before any
// recursive parse: 8 MB of "[" took about 930 MB); nesting up to the
// bound, and brackets inside strings, pass.
func TestDeeplyNestedBodyIsRefused(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, nil)
	r.waitState(t, StateReady, 20*time.Second)
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
	r.waitState(t, StateReady, 20*time.Second)
	body := chatBody("extraction", false)
	head := func(method string, length int, auth string) string {
		h := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n", method, RouteChat, length)
		if auth != "" {
			h += "Authorization: " + auth + "\r\n"
		}
		return h + "\r\n"
	}
	for _, c := range []struct {
		name, head string
		code       int
		want       string
	}{
		{"no key", head("POST", len(body), ""), 401, "missing API key"},
		{"wrong key", head("POST", len(body), "Bearer sk-wrong-key-0123456789"), 401, "invalid API key"},
		{"too large", head("POST", 5000, "Bearer "+key), 413, "larger than 4096 bytes"},
		{"wrong method", head("PUT", len(body), "Bearer "+key), 405, "use POST"},
	} {
		rc := dialRaw(t, r)
		rc.send(c.head)
		resp, b := rc.read()
		if resp.StatusCode != c.code || !strings.Contains(b, c.want) {
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
