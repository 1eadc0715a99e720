package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// directTransport is the router's upstream transport for plain-HTTP
// backends on the same machine: each request is written and its answer
// read on the caller's goroutine over a pooled keep-alive connection
// (http.Request.Write and http.ReadResponse do the HTTP), instead of
// net/http.Transport's reader and writer goroutines per connection. On a
// small shared machine those hand-offs are most of a proxy's added
// latency (bench: BenchmarkRouterOverhead). Anything else (https) goes to
// fallback.
//
// A connection returns to the pool only after its response body was read
// to the end and neither side asked to close it. The request's context
// closes the connection when it ends (a client that left), which cancels
// the upstream request. A request that fails on a reused connection
// before any answer (most likely the server closed it while idle; the
// error types of a write on such a connection are not all exported) is
// retried once on a new one when its body can be replayed
// (Request.GetBody).
type directTransport struct {
	dialer   *net.Dialer
	fallback http.RoundTripper
	maxIdle  int
	idleFor  time.Duration

	mu   sync.Mutex
	idle map[string][]*pconn
}

type pconn struct {
	c      net.Conn
	w      io.Writer // c, or its raw I/O
	br     *bufio.Reader
	addr   string
	reused bool
	idleAt time.Time
}

func newDirectTransport(fallback http.RoundTripper) *directTransport {
	return &directTransport{dialer: &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second},
		fallback: fallback, maxIdle: 256, idleFor: 90 * time.Second, idle: map[string][]*pconn{}}
}

func (t *directTransport) get(ctx context.Context, addr string) (*pconn, error) {
	now := time.Now()
	t.mu.Lock()
	for l := t.idle[addr]; len(l) > 0; l = t.idle[addr] {
		pc := l[len(l)-1]
		t.idle[addr] = l[:len(l)-1]
		if now.Sub(pc.idleAt) < t.idleFor {
			t.mu.Unlock()
			pc.reused = true
			return pc, nil
		}
		pc.c.Close()
	}
	t.mu.Unlock()
	c, err := t.dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	pc := &pconn{c: c, w: c, addr: addr}
	var r io.Reader = c
	if raw := newRawIO(c); raw != nil {
		r, pc.w = raw, raw
	}
	pc.br = bufio.NewReaderSize(r, 4<<10)
	return pc, nil
}

func (t *directTransport) put(pc *pconn) {
	pc.idleAt = time.Now()
	t.mu.Lock()
	if l := t.idle[pc.addr]; len(l) < t.maxIdle {
		t.idle[pc.addr] = append(l, pc)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	pc.c.Close()
}

func (t *directTransport) closeIdle(addr string) {
	t.mu.Lock()
	l := t.idle[addr]
	delete(t.idle, addr)
	t.mu.Unlock()
	for _, pc := range l {
		pc.c.Close()
	}
}

// CloseIdleConnections closes the pooled connections.
func (t *directTransport) CloseIdleConnections() {
	t.mu.Lock()
	for a, l := range t.idle {
		for _, pc := range l {
			pc.c.Close()
		}
		delete(t.idle, a)
	}
	t.mu.Unlock()
}

// RoundTrip implements http.RoundTripper.
func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "http" {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	for attempt := 0; ; attempt++ {
		pc, err := t.get(ctx, addr)
		if err != nil {
			if req.Body != nil {
				req.Body.Close()
			}
			return nil, err
		}
		var canceled atomic.Bool
		stop := context.AfterFunc(ctx, func() {
			canceled.Store(true)
			pc.c.Close()
		})
		resp, err := pc.roundTrip(req)
		if err != nil {
			stop()
			pc.c.Close()
			if canceled.Load() || ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			if pc.reused && attempt == 0 && req.GetBody != nil {
				// The server closed its idle connections (it may have
				// restarted): the others in the pool are likely dead too.
				t.closeIdle(addr)
				if req.Body, err = req.GetBody(); err == nil {
					continue
				}
			}
			return nil, err
		}
		resp.Body = &pbody{rc: resp.Body, pc: pc, t: t, stop: stop, reuse: !resp.Close && !req.Close}
		return resp, nil
	}
}

// writers lends the buffered writer a request is written through: held
// only while the request is written, not for as long as its answer
// streams back (256 open streams: 1 MiB less).
var writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 4<<10) }}

func (pc *pconn) roundTrip(req *http.Request) (*http.Response, error) {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(pc.w)
	err := req.Write(bw)
	if err == nil {
		err = bw.Flush()
	}
	bw.Reset(nil)
	writers.Put(bw)
	if err != nil {
		// A backend may answer and close before it has read the whole
		// body (a size limit of its own): the rest cannot be written, but
		// the answer may already be here. It is passed on if it comes
		// within earlyAnswerWait; the connection is not reused.
		pc.c.SetReadDeadline(time.Now().Add(earlyAnswerWait))
		resp, rerr := readFinalResponse(pc.br, req)
		pc.c.SetReadDeadline(time.Time{})
		if rerr != nil {
			return nil, err
		}
		resp.Close = true
		return resp, nil
	}
	return readFinalResponse(pc.br, req)
}

// earlyAnswerWait bounds the wait for an answer after a request's body
// could not be written (net/http's transport waits 50 ms, too).
const earlyAnswerWait = 50 * time.Millisecond

// readFinalResponse reads the answer to req, skipping informational ones.
func readFinalResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, err
		}
		// Informational answers (103 Early Hints) precede the real one.
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		return resp, nil
	}
}

// pbody is a response body that gives its connection back to the pool
// once read to the end.
type pbody struct {
	rc    io.ReadCloser
	pc    *pconn
	t     *directTransport
	stop  func() bool
	reuse bool
	done  bool
}

func (b *pbody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.finish(true)
	} else if err != nil {
		b.finish(false)
	}
	return n, err
}

func (b *pbody) Close() error {
	if !b.done {
		b.finish(false)
	}
	return nil
}

// finish releases the connection: back to the pool when the body ended
// cleanly and the context did not close it, else closed.
func (b *pbody) finish(atEOF bool) {
	b.done = true
	stopped := b.stop()
	if atEOF && b.reuse && stopped && b.pc.br.Buffered() == 0 {
		b.t.put(b.pc)
		return
	}
	b.pc.c.Close()
}
