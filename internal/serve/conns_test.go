package serve

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
)

const connsKey = "sk-conns-test-0123456789"

// keyedRouter starts a router whose clients need connsKey.
func keyedRouter(t *testing.T, mod func(*Options)) *router {
	t.Helper()
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) { return connsKey, k == "HIRO_SERVE_API_KEYS" }
		if mod != nil {
			mod(o)
		}
	})
	r.waitState(t, control.StateReady, 20*time.Second)
	return r
}

// dialFrom opens a TCP connection to r from the loopback address src
// (any 127.x.y.z is this host's), so that a test has many client
// addresses.
func dialFrom(t *testing.T, r *router, src string) (*rawConn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}, nil
}

// closedByPeer reports whether the connection reads EOF (or a reset)
// within d: the router closed it.
func (rc *rawConn) closedByPeer(d time.Duration) bool {
	rc.c.SetReadDeadline(time.Now().Add(d))
	_, err := rc.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func chatRequest(auth string) string {
	body := chatBody("extraction", false)
	h := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", RouteChat, len(body))
	if auth != "" {
		h += "Authorization: " + auth + "\r\n"
	}
	return h + "\r\n" + body
}

// TestRefusedKeyClosesTheConnection: every request refused for its key
// (missing or wrong; proxied route, /v1/models, /metrics, an unknown
// path; with or without a body) is answered 401 and its connection
// closed, so retries cannot reuse it; /health on a connection no key
// authenticated closes it too. A keyed connection stays open for the
// next request, and a wrong key on it later closes it as well.
func TestRefusedKeyClosesTheConnection(t *testing.T) {
	r := keyedRouter(t, nil)
	for _, c := range []struct{ name, req string }{
		{"chat without key", chatRequest("")},
		{"chat with a wrong key", chatRequest("Bearer sk-wrong-key-0123456789")},
		{"chat without key nor body", fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", RouteChat)},
		{"models without key", "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"models with a wrong key", "GET /v1/models HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-wrong-key-0123456789\r\n\r\n"},
		{"metrics without key", "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"unknown path without key", "GET /v1/foo HTTP/1.1\r\nHost: x\r\n\r\n"},
		{"health without key", "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"},
	} {
		rc := dialRaw(t, r)
		rc.send(c.req)
		resp, body := rc.read()
		want := 401
		if strings.HasPrefix(c.name, "health") {
			want = 200
		}
		if resp.StatusCode != want || !resp.Close {
			t.Errorf("%s: %d close=%v %s; want %d and Connection: close", c.name, resp.StatusCode, resp.Close, body, want)
		}
		if !rc.closedByPeer(5 * time.Second) {
			t.Errorf("%s: the router kept the connection open after the answer", c.name)
		}
	}
	rc := dialRaw(t, r)
	for i := 0; i < 3; i++ {
		rc.send(chatRequest("Bearer " + connsKey))
		if resp, body := rc.read(); resp.StatusCode != 200 || resp.Close {
			t.Fatalf("keyed request %d: %d close=%v %s; want 200 on a kept-alive connection", i, resp.StatusCode, resp.Close, body)
		}
	}
	rc.send(chatRequest("Bearer sk-wrong-key-0123456789"))
	if resp, _ := rc.read(); resp.StatusCode != 401 || !resp.Close || !rc.closedByPeer(5*time.Second) {
		t.Errorf("a wrong key on a keyed connection: %d close=%v; want 401 and the connection closed", resp.StatusCode, resp.Close)
	}
}

// TestUnauthenticatedFloodLeavesKeyedClientsServed is the issue's
// attack with real connections, at the router's default limits: 4,200
// connections without a key from 70 addresses, half sending one
// request (401, closed) and half sending nothing and held open, while a
// keyed client, on its kept-alive connection and on new ones, is served
// every time. The connections refused for their key are closed, and the
// router never runs out of connections.
func TestUnauthenticatedFloodLeavesKeyedClientsServed(t *testing.T) {
	r := keyedRouter(t, nil)
	keyed := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	keyedPost := func(hc *http.Client) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, r.url+RouteChat, strings.NewReader(chatBody("extraction", false)))
		req.Header.Set("Authorization", "Bearer "+connsKey)
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := keyedPost(keyed); code != 200 {
		t.Fatalf("keyed request before the flood: %d %s", code, body)
	}

	const addrs, perAddr = 70, 60 // 4,200 connections
	var refused, dialErrs atomic.Int64
	var maxUnauth atomic.Int64
	var mu sync.Mutex
	var answered []*rawConn // refused with 401: each must be closed
	flood := make(chan struct{})
	var wg sync.WaitGroup
	for a := 0; a < addrs; a++ {
		wg.Add(1)
		go func(a int) {
			defer wg.Done()
			src := fmt.Sprintf("127.0.1.%d", a+1)
			for i := 0; i < perAddr; i++ {
				rc, err := dialFrom(t, r, src)
				if err != nil {
					dialErrs.Add(1)
					continue
				}
				if i%2 == 1 {
					continue // sends nothing: held until the router cuts it
				}
				rc.send(fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n", RouteChat))
				resp, err := http.ReadResponse(rc.br, nil)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 401 {
					refused.Add(1)
					mu.Lock()
					answered = append(answered, rc)
					mu.Unlock()
				}
			}
		}(a)
	}
	go func() { wg.Wait(); close(flood) }()

	var served, failed int
	var failures []string
	for done := false; !done; {
		select {
		case <-flood:
			done = true
		default:
		}
		_, unauth := r.s.conns.counts()
		if int64(unauth) > maxUnauth.Load() {
			maxUnauth.Store(int64(unauth))
		}
		for _, hc := range []*http.Client{keyed, fresh} {
			if code, body := keyedPost(hc); code == 200 {
				served++
			} else {
				failed++
				if len(failures) < 5 {
					failures = append(failures, fmt.Sprintf("%d %s", code, body))
				}
			}
		}
	}
	if failed > 0 || served == 0 {
		t.Errorf("keyed requests during the flood: %d served, %d failed (%v)", served, failed, failures)
	}
	if n := refused.Load(); n < addrs*perAddr/2-dialErrs.Load() {
		t.Errorf("%d of %d requests without a key answered 401 (%d dials failed)", n, addrs*perAddr/2, dialErrs.Load())
	}
	var keptOpen atomic.Int64
	var cwg sync.WaitGroup
	for _, rc := range answered {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			if !rc.closedByPeer(3 * time.Second) {
				keptOpen.Add(1)
			}
		}()
	}
	cwg.Wait()
	if n := keptOpen.Load(); n > 0 {
		t.Errorf("%d connections refused for their key were kept open", n)
	}
	if m := maxUnauth.Load(); m >= DefaultMaxConnections {
		t.Errorf("%d unauthenticated connections were open at once: the router was full", m)
	}
	if open, unauth := r.s.conns.counts(); open >= DefaultMaxConnections || open-unauth > 4 {
		t.Errorf("after the flood: %d connections open, %d unauthenticated", open, unauth)
	}
	if code, body := keyedPost(fresh); code != 200 {
		t.Errorf("keyed request after the flood: %d %s", code, body)
	}
	t.Logf("flood: %d refused with 401, %d dials failed; keyed: %d served; unauthenticated open at most %d",
		refused.Load(), dialErrs.Load(), served, maxUnauth.Load())
}

// TestUnauthenticatedConnectionCaps: past MaxUnauthenticatedPerAddress
// connections without a request from one address, a new one from it
// closes that address's oldest idle one (open past the grace, nothing
// sent), and another address's stay; past MaxUnauthenticated in all, a
// new one closes the oldest idle one of any address. A connection a key
// authenticated is never closed for them, nor are connections younger
// than the grace: a burst of keyed clients from one address, four times
// its cap, is served whole.
func TestUnauthenticatedConnectionCaps(t *testing.T) {
	r := keyedRouter(t, func(o *Options) {
		o.MaxUnauthenticated, o.MaxUnauthenticatedPerAddress = 5, 3
		o.HeaderTimeout = time.Minute // the idle connections stay until the caps cut them
	})
	dial := func(src string) *rawConn {
		rc, err := dialFrom(t, r, src)
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	waitCounts := func(wantOpen, wantUnauth int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			open, unauth := r.s.conns.counts()
			if open == wantOpen && unauth == wantUnauth {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d connections open, %d unauthenticated; want %d and %d", open, unauth, wantOpen, wantUnauth)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	keyedConn := dial("127.0.0.9")
	keyedConn.send(chatRequest("Bearer " + connsKey))
	if resp, b := keyedConn.read(); resp.StatusCode != 200 {
		t.Fatalf("keyed request: %d %s", resp.StatusCode, b)
	}
	waitCounts(1, 0)
	// A burst from one address: connections opened at once, each sending
	// its keyed request only once all are open.
	var burst []*rawConn
	for i := 0; i < 12; i++ {
		burst = append(burst, dial("127.0.0.7"))
	}
	for i, rc := range burst {
		rc.send(chatRequest("Bearer " + connsKey))
		if resp, body := rc.read(); resp.StatusCode != 200 {
			t.Fatalf("burst connection %d of 12 (cap 3 per address): %d %s", i, resp.StatusCode, body)
		}
	}
	for _, rc := range burst {
		rc.c.Close()
	}
	waitCounts(1, 0)
	a := []*rawConn{dial("127.0.0.2"), dial("127.0.0.2"), dial("127.0.0.2")}
	b := dial("127.0.0.3")
	waitCounts(5, 4)
	time.Sleep(unauthGrace + 200*time.Millisecond) // idle past the grace
	a = append(a, dial("127.0.0.2"))               // the 4th of 127.0.0.2: its 1st goes
	if !a[0].closedByPeer(5 * time.Second) {
		t.Error("past the per-address cap, the address's oldest connection stayed open")
	}
	if b.closedByPeer(200 * time.Millisecond) {
		t.Error("another address's connection was closed for 127.0.0.2's")
	}
	waitCounts(5, 4)
	c := dial("127.0.0.4") // the 5th unauthenticated: at the cap
	waitCounts(6, 5)
	d := dial("127.0.0.5") // past it: the oldest of any address (a[1]) goes
	if !a[1].closedByPeer(5 * time.Second) {
		t.Error("past MaxUnauthenticated, the oldest connection stayed open")
	}
	waitCounts(6, 5)
	for _, rc := range []*rawConn{a[3], c, d} {
		rc.send(chatRequest("Bearer " + connsKey))
		if resp, body := rc.read(); resp.StatusCode != 200 {
			t.Errorf("a connection admitted last: %d %s", resp.StatusCode, body)
		}
	}
	keyedConn.send(chatRequest("Bearer " + connsKey))
	if resp, body := keyedConn.read(); resp.StatusCode != 200 {
		t.Errorf("the keyed connection after the cuts: %d %s", resp.StatusCode, body)
	}
	waitCounts(6, 2)
}

// drainedBy reports whether the router closed the connection within d,
// whatever it sent before (an answer to a request cut short).
func (rc *rawConn) drainedBy(d time.Duration) bool {
	rc.c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, rc.br)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// TestSlowUnauthenticatedClientIsCut: a client that sends part of its
// request line and headers, or nothing, is answered 408 (or closed) at
// the header timeout.
func TestSlowUnauthenticatedClientIsCut(t *testing.T) {
	r := keyedRouter(t, func(o *Options) { o.HeaderTimeout = 500 * time.Millisecond })
	slow := dialRaw(t, r)
	idle := dialRaw(t, r)
	start := time.Now()
	slow.send("POST " + RouteChat + " HTTP/1.1\r\nHost: x\r\n")
	resp, body := slow.read()
	if took := time.Since(start); resp.StatusCode != 408 || took > 5*time.Second {
		t.Errorf("headers never finished: %d after %s %s; want 408 at the 500ms header timeout", resp.StatusCode, took, body)
	}
	if !slow.closedByPeer(5 * time.Second) {
		t.Error("the slow client's connection stayed open after its 408")
	}
	if !idle.drainedBy(5*time.Second) || time.Since(start) > 6*time.Second {
		t.Error("a connection that sent nothing stayed open past the header timeout")
	}
}

// TestFullRouterCutsAnIdleConnectionForANewOne: with every connection
// open, the keyed ones serving and one connection without a request
// (however young), a new connection closes the idle one and is served.
func TestFullRouterCutsAnIdleConnectionForANewOne(t *testing.T) {
	r := keyedRouter(t, func(o *Options) { o.MaxConnections = 3 })
	var keyed []*rawConn
	for i := 0; i < 2; i++ {
		rc := dialRaw(t, r)
		rc.send(chatRequest("Bearer " + connsKey))
		if resp, b := rc.read(); resp.StatusCode != 200 {
			t.Fatalf("keyed connection %d: %d %s", i, resp.StatusCode, b)
		}
		keyed = append(keyed, rc)
	}
	idle := dialRaw(t, r)
	deadline := time.Now().Add(5 * time.Second)
	for open, _ := r.s.conns.counts(); open < 3 && time.Now().Before(deadline); open, _ = r.s.conns.counts() {
		time.Sleep(10 * time.Millisecond)
	}
	fresh := dialRaw(t, r)
	fresh.send(chatRequest("Bearer " + connsKey))
	if resp, b := fresh.read(); resp.StatusCode != 200 {
		t.Errorf("a new keyed connection to a full router: %d %s; want it served in the idle one's place", resp.StatusCode, b)
	}
	if !idle.closedByPeer(5 * time.Second) {
		t.Error("the idle connection stayed open")
	}
	for i, rc := range keyed {
		rc.send(chatRequest("Bearer " + connsKey))
		if resp, b := rc.read(); resp.StatusCode != 200 {
			t.Errorf("keyed connection %d after: %d %s", i, resp.StatusCode, b)
		}
	}
}
