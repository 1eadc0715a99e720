package serve

import (
	"container/list"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The front door's connections are of two kinds. A connection is
// unauthenticated from its opening until a request on it passes the key
// check (an API key, or the metrics key on /metrics; with no API key
// configured, its first request); it is authenticated from then on.
//
// An unauthenticated connection carries one request: its answer (a 401
// for a missing or wrong key, /health's) closes it, so a client that
// cannot authenticate never keeps a connection idle. Until its request's
// headers arrive it is bounded by the header timeout (headerTimeout from
// the opening). Unauthenticated connections are capped apart from
// authenticated ones, per client address (MaxUnauthenticatedPerAddress;
// an IPv6 address by its /64) and in all (MaxUnauthenticated): past
// either cap, or when the connections in all (MaxConnections) are used
// up, the oldest idle unauthenticated connection (of the same address,
// for the per-address cap) is closed to make room for the new one. Idle
// means open for more than unauthGrace with nothing of a request waiting
// unread in its socket: a client that connected a moment ago, or whose
// request is about to be read, is not cut (a burst of keyed clients from
// one address, or a reverse proxy's, stays served); when the connections
// in all are used up, the grace does not apply. So the two caps are
// passed (never MaxConnections) only by connections younger than the
// grace or with a request waiting, which are served or closed within the
// header timeout. Only when no open
// connection is an idle unauthenticated one is a new one refused (503).
// So clients that cannot authenticate, however many and from wherever,
// never use up the connections keyed clients need: a keyed client's new
// connection is admitted, and it is cut only if it sends nothing while
// the router is full.
const (
	// DefaultMaxUnauthenticated bounds the unauthenticated connections
	// open at once, a quarter of DefaultMaxConnections.
	DefaultMaxUnauthenticated = DefaultMaxConnections / 4
	// DefaultMaxUnauthenticatedPerAddress bounds the unauthenticated
	// connections of one client address (an IPv6 /64). A keyed client is
	// unauthenticated for the moment between its connection's opening and
	// its first request's headers.
	DefaultMaxUnauthenticatedPerAddress = 64
	// unauthGrace is how long a new connection is not cut for the caps
	// while it sends nothing: a client that connects and has not written
	// its request yet (on a loaded machine, a burst of 256 clients from
	// one address took longer than the moment an accept takes).
	unauthGrace = 2 * time.Second
	// maxScan bounds the oldest connections looked at for an idle one
	// (a system call each) when a cap is reached.
	maxScan = 16
)

// connGate admits and counts the front door's connections (see above).
// Its lock is taken when a connection opens, when it becomes
// authenticated and when it closes, never per request.
type connGate struct {
	max, maxUnauth, maxPerAddr int

	mu     sync.Mutex
	open   int       // connections admitted and not closed
	unauth list.List // *clientConn, oldest first
	byAddr map[netip.Prefix]*list.List

	// cut counts connections closed or refused by the gate, by reason
	// (connCut*).
	cut *prometheus.CounterVec
}

// Reasons a connection is closed or refused by the gate (the
// hiro_serve_connections_cut_total "reason" label).
const (
	connCutAddress = "unauthenticated_per_address" // an address's oldest, past MaxUnauthenticatedPerAddress
	connCutUnauth  = "unauthenticated"             // the oldest, past MaxUnauthenticated or MaxConnections
	connCutRefused = "refused"                     // a new one, every open connection authenticated (503)
)

func newConnGate(max, maxUnauth, maxPerAddr int, cut *prometheus.CounterVec) *connGate {
	return &connGate{max: max, maxUnauth: min(maxUnauth, max), maxPerAddr: maxPerAddr,
		byAddr: map[netip.Prefix]*list.List{}, cut: cut}
}

// addrKey is the per-address cap's key of a remote address: the IPv4
// address, or an IPv6 address's /64 (what one host is usually given).
func addrKey(a net.Addr) netip.Prefix {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Prefix{}
	}
	ip := ta.AddrPort().Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// admit counts c in, as unauthenticated, closing the connections that
// make room for it. It returns false when c must be refused (every open
// connection is authenticated).
func (g *connGate) admit(c *clientConn) bool {
	now := time.Now()
	c.opened = now
	var evict []*clientConn
	g.mu.Lock()
	if al := g.byAddr[c.addr]; al != nil && al.Len() >= g.maxPerAddr {
		if v := idleIn(al, now, false); v != nil {
			evict = append(evict, g.dropLocked(v, connCutAddress))
		}
	}
	if g.unauth.Len() >= g.maxUnauth {
		if v := idleIn(&g.unauth, now, false); v != nil {
			evict = append(evict, g.dropLocked(v, connCutUnauth))
		}
	}
	if g.open >= g.max {
		if v := idleIn(&g.unauth, now, true); v != nil {
			evict = append(evict, g.dropLocked(v, connCutUnauth))
		}
	}
	ok := g.open < g.max
	if ok {
		g.open++
		c.counted = true
		c.elem = g.unauth.PushBack(c)
		al := g.byAddr[c.addr]
		if al == nil {
			al = list.New()
			g.byAddr[c.addr] = al
		}
		c.addrElem = al.PushBack(c)
	}
	g.mu.Unlock()
	for _, e := range evict {
		e.cutNow()
	}
	if !ok {
		g.cut.WithLabelValues(connCutRefused).Inc()
	}
	return ok
}

// idleIn returns the oldest idle connection among the first maxScan of
// l (oldest first): nothing waiting unread in its socket and, unless
// anyAge, open longer than unauthGrace; nil when none.
func idleIn(l *list.List, now time.Time, anyAge bool) *clientConn {
	n := 0
	for e := l.Front(); e != nil && n < maxScan; e, n = e.Next(), n+1 {
		c := e.Value.(*clientConn)
		if !anyAge && now.Sub(c.opened) < unauthGrace {
			return nil // the later ones are younger
		}
		if pendingBytes(c.Conn) == 0 {
			return c
		}
	}
	return nil
}

// dropLocked removes c from the counts because the gate closes it
// (reason); the caller closes it (cutNow) once the lock is released.
func (g *connGate) dropLocked(c *clientConn, reason string) *clientConn {
	g.removeLocked(c)
	g.open--
	c.counted = false
	g.cut.WithLabelValues(reason).Inc()
	return c
}

// removeLocked takes c off the unauthenticated lists.
func (g *connGate) removeLocked(c *clientConn) {
	if c.elem == nil {
		return
	}
	g.unauth.Remove(c.elem)
	c.elem = nil
	if al := g.byAddr[c.addr]; al != nil {
		al.Remove(c.addrElem)
		if al.Len() == 0 {
			delete(g.byAddr, c.addr)
		}
	}
	c.addrElem = nil
}

// authenticate makes c an authenticated connection; the first call
// takes the gate's lock, later ones cost an atomic load.
func (g *connGate) authenticate(c *clientConn) {
	if c.authed.Load() {
		return
	}
	g.mu.Lock()
	if c.counted {
		g.removeLocked(c)
		c.authed.Store(true)
	}
	g.mu.Unlock()
}

// release counts c out when it closes (once).
func (g *connGate) release(c *clientConn) {
	g.mu.Lock()
	if c.counted {
		g.removeLocked(c)
		g.open--
		c.counted = false
	}
	g.mu.Unlock()
}

// counts returns the open connections and the unauthenticated ones
// among them (tests).
func (g *connGate) counts() (open, unauth int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.unauth.Len()
}

// clientListener hands the front door its connections as clientConns,
// admitted by gate; a connection the gate refuses is answered 503 and
// closed here.
type clientListener struct {
	net.Listener
	gate *connGate
}

// refusedAnswer is what a connection past the cap reads: a 503 in the
// OpenAI error shape, and the connection closes.
var refusedAnswer = func() []byte {
	body := `{"error":{"message":"hiro serve has no connection free (every open one is in use); retry","type":"unavailable"}}` + "\n"
	return []byte(fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: application/json\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
}()

func (l *clientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &clientConn{Conn: c, raw: newRawIO(c), gateState: gateState{gate: l.gate, addr: addrKey(c.RemoteAddr())}}
		if l.gate.admit(cc) {
			return cc, nil
		}
		// A fresh socket's send buffer takes the answer at once; the
		// deadline is for a TLS handshake (its write) that cannot end.
		c.SetWriteDeadline(time.Now().Add(time.Second))
		c.Write(refusedAnswer)
		cc.cutNow()
	}
}

// cutNow closes the connection's socket without a TLS close_notify
// (which could wait on a client that reads nothing); the server's own
// Close follows when its read fails.
func (c *clientConn) cutNow() {
	if tc, ok := c.Conn.(*tls.Conn); ok {
		tc.NetConn().Close()
		return
	}
	c.Conn.Close()
}

func (c *clientConn) Close() error {
	if c.gate != nil && c.closed.CompareAndSwap(false, true) {
		c.gate.release(c)
	}
	return c.Conn.Close()
}

// connOf returns the front door's connection a request came on, nil
// when it is not one (a test's own server).
func connOf(c net.Conn) *clientConn {
	cc, _ := c.(*clientConn)
	return cc
}

// gateState is what the gate keeps on a clientConn (guarded by the
// gate's lock, but authed and closed).
type gateState struct {
	gate     *connGate
	addr     netip.Prefix
	authed   atomic.Bool
	closed   atomic.Bool
	counted  bool
	opened   time.Time // admitted at
	elem     *list.Element
	addrElem *list.Element
}
