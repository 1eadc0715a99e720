package serve

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/testsupport"
	"github.com/hiro-dev/hiro/internal/tlstest"
)

// TestPipelinedThenLeaving: a client that sends its next request while
// the first is generated (pipelining) and then closes its connection is
// seen leaving: the first request ends as 499 long before its answer
// would come (nothing is written to the client meanwhile to find it gone).
func TestPipelinedThenLeaving(t *testing.T) {
	port := freePort(t)
	notes := filepath.Join(t.TempDir(), "other.out")
	startOther(t, port, "--chat", "hang", "--notes", notes)
	cfg := fakeConfig(t, nil, "access_log = \"-\"\n"+servedOther(port))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	req := func(body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", RouteChat, len(body), body)
	}
	io.WriteString(c, req(chatBody("other-model", false)))
	time.Sleep(100 * time.Millisecond) // the backend holds it, nothing sent back: its client is watched
	io.WriteString(c, req(chatBody("extraction", false)))
	time.Sleep(100 * time.Millisecond)
	c.Close()
	waitUpstreamCancelled(t, notes)
	waitAccess(t, r, `"status":499`)
}

// TestPipelinedAfterSlowRequest: a client that sends its next request
// while the router still streams the answer to the first (HTTP/1.1
// pipelining) gets both answers in order: what the router read from the
// connection to watch the client is not lost.
func TestPipelinedAfterSlowRequest(t *testing.T) {
	cfg := fakeConfig(t, []string{"--token-delay", "20ms", "--reply", "one two three four five"}, "")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	req := func(body string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", RouteChat, len(body), body)
	}
	if _, err := io.WriteString(c, req(chatBody("extraction", true))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the first answer is streaming: its client is watched
	if _, err := io.WriteString(c, req(chatBody("extraction", false))); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i, want := range []string{"data: [DONE]", `"object":"chat.completion"`} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("answer %d: %d %v %s", i+1, resp.StatusCode, err, b)
		}
	}
}

// TestTLSFrontDoor: with tls_cert and tls_key the router serves https
// only: JSON and streamed answers, a slow stream (its client watched
// over TLS) and the next request on the same kept-alive connection.
func TestTLSFrontDoor(t *testing.T) {
	certs := tlstest.Generate(t, t.TempDir(), "router")
	cfg := fakeConfig(t, []string{"--token-delay", "30ms", "--reply", "one two three"},
		fmt.Sprintf("tls_cert = %q\ntls_key = %q\n", certs.Cert, certs.Key))
	r := startRouter(t, cfg, nil)
	if !strings.HasPrefix(r.url, "https://") {
		t.Fatalf("router address %s: want https", r.url)
	}
	r.waitState(t, control.StateReady, 20*time.Second)
	ca, err := os.ReadFile(certs.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	var conns atomic.Int32
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 1}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i, c := range []struct {
		stream bool
		want   string
	}{{true, "data: [DONE]"}, {false, `"object":"chat.completion"`}, {true, "data: [DONE]"}} {
		resp, err := hc.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("extraction", c.stream)))
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
			t.Fatalf("request %d: %d %s", i+1, resp.StatusCode, b)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 requests: the kept-alive TLS connection was not reused", n)
	}
	plain := strings.Replace(r.url, "https://", "http://", 1)
	if resp, err := http.Post(plain+RouteChat, "application/json", strings.NewReader(chatBody("extraction", false))); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS port was answered 200")
		}
	}
}

// TestRequestsTheServerRefuses: requests refused before any handler (too
// large headers, a body over max_body_bytes without Content-Length) get
// the router's OpenAI-shaped errors, and the router stays up.
func TestRequestsTheServerRefuses(t *testing.T) {
	cfg := fakeConfig(t, nil, "max_body_bytes = 4096")
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	raw := func(req string) (*http.Response, string) {
		t.Helper()
		c, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, req)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, body := raw("POST " + RouteChat + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 20<<10) + "\r\nContent-Length: 2\r\n\r\n{}")
	if resp.StatusCode != 431 || !strings.Contains(body, "larger than 16384 bytes") {
		t.Errorf("20 KiB header: %d %s", resp.StatusCode, body)
	}
	chunk := strings.Repeat("a", 3000)
	resp, body = raw(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n%x\r\n%s\r\n0\r\n\r\n", RouteChat, len(chunk), chunk, len(chunk), chunk))
	if resp.StatusCode != 413 || !strings.Contains(body, "max_body_bytes") {
		t.Errorf("6000-byte chunked body: %d %s", resp.StatusCode, body)
	}
	if s := resp.Header.Get("Server"); s != "" {
		t.Errorf("Server header %q: the router names no server software", s)
	}
	if code, _, _ := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("after the refusals: %d", code)
	}
	// The access log is flushed every flushEvery: wait for it.
	waitAccess(t, r, `"status":413`)
}

// TestResponseTimeout: a backend that takes the request and never
// answers holds its client for [serve] response_timeout, then the client
// gets 504 naming the setting, the backend's request is cancelled, and
// the access log and the metrics say timeout.
func TestResponseTimeout(t *testing.T) {
	port := freePort(t)
	notes := filepath.Join(t.TempDir(), "other.out")
	startOther(t, port, "--chat", "hang", "--notes", notes)
	cfg := fakeConfig(t, nil, `response_timeout = "300ms"
access_log = "-"
`+servedOther(port))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	start := time.Now()
	code, _, body := post(t, r.url, RouteChat, chatBody("other-model", false))
	if took := time.Since(start); code != http.StatusGatewayTimeout || took < 300*time.Millisecond || took > 10*time.Second {
		t.Fatalf("a backend that never answers: %d after %s: %s; want 504 after about 300 ms", code, took, body)
	}
	if !strings.Contains(body, "response_timeout") || !strings.Contains(body, "other") {
		t.Errorf("the 504 should name the backend and the setting: %s", body)
	}
	waitUpstreamCancelled(t, notes)
	m := metricsText(t, r)
	if !strings.Contains(m, `hiro_serve_upstream_errors_total{backend="other",class="timeout"} 1`) {
		t.Errorf("metrics lack the timeout:\n%s", m)
	}
	r.stop(t)
	if a := r.access.String(); !strings.Contains(a, `"status":504`) || !strings.Contains(a, `"error":"upstream timeout"`) {
		t.Errorf("access log:\n%s", a)
	}
}

// waitUpstreamCancelled waits until the fake engine started with
// "--chat hang --notes notes" has seen its hung request end.
func waitUpstreamCancelled(t *testing.T, notes string) {
	t.Helper()
	var b []byte
	if !testsupport.WaitFor(5*time.Second, func() bool {
		b, _ = os.ReadFile(notes)
		return strings.Contains(string(b), "client went away while its request hung")
	}) {
		t.Fatalf("the backend's request was not cancelled within 5 s; engine notes:\n%s", b)
	}
}

// TestClientLeavingCancelsUpstream: a client that gives up on a request
// its backend has not answered (no byte sent back yet) cancels the
// backend's request: the engine sees it end, the access log says 499.
func TestClientLeavingCancelsUpstream(t *testing.T) {
	port := freePort(t)
	notes := filepath.Join(t.TempDir(), "other.out")
	startOther(t, port, "--chat", "hang", "--notes", notes)
	cfg := fakeConfig(t, nil, servedOther(port))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	hc := &http.Client{Timeout: 300 * time.Millisecond}
	if resp, err := hc.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("other-model", false))); err == nil {
		resp.Body.Close()
		t.Fatalf("a hanging backend answered %d", resp.StatusCode)
	}
	waitUpstreamCancelled(t, notes)
	waitAccess(t, r, `"status":499`)
	if code, _, _ := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("production after a client left: %d", code)
	}
}
