package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/redact"
)

// The front door's HTTP/1.1 server is fasthttp's: on a small machine
// net/http's server costs a proxy most of its added latency (a goroutine
// and a read started per request to see the client leave, and the wake-ups
// that go with them; bench/serve-proxy.sh measured 95-105 µs added at p50
// through net/http against 65-75 µs through fasthttp with the same
// upstream transport). What net/http gave for free is built here:
// a client that leaves is seen by clientWatch, panics are recovered per
// request, and the limits below.
const (
	// headerTimeout bounds the arrival of a request's headers (from the
	// connection's opening, or from a kept-alive connection's first byte):
	// the default of Options.HeaderTimeout.
	headerTimeout = 10 * time.Second
	// idleTimeout closes a kept-alive connection with no request.
	idleTimeout = 2 * time.Minute
	// maxHeaderBytes bounds a request's line and headers (fasthttp's read
	// buffer per connection); more is answered 431.
	maxHeaderBytes = 16 << 10
)

// newFront returns the router's HTTP server: s.handle for requests,
// s.onReadError for requests that could not be read (too large, too slow,
// malformed).
func (s *Server) newFront() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:      s.handle,
		ErrorHandler: s.onReadError,
		// A body has bodyTimeout to arrive once its headers did; a
		// request its headers refuse is answered without it.
		HeaderReceived: s.headerReceived,
		// A request sent with "Expect: 100-continue" is told to send its
		// body only once it passed the checks its headers allow.
		ExpectHandler: s.expectContinue,
		// Bodies are read by the handler, after the key check, as they
		// arrive: a Content-Length alone reserves no memory.
		StreamRequestBody: true,
		// The connections are counted by the listener's gate
		// (conns.go); fasthttp's own bound leaves room for those the
		// gate closed whose goroutines have not returned yet.
		Concurrency:                  s.maxConns + s.conns.maxUnauth,
		ReadTimeout:                  s.headerTimeout,
		IdleTimeout:                  idleTimeout,
		ReadBufferSize:               maxHeaderBytes,
		MaxRequestBodySize:           int(s.sc.MaxBodyBytes),
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		DisablePreParseMultipartForm: true,
		// Errors about a request never quote it (its Authorization header).
		SecureErrorLogMessage: true,
		CloseOnShutdown:       true,
		Logger:                discardLogger{},
	}
}

// discardLogger silences fasthttp's own log lines (a client that left
// mid-response); the access log and the metrics record what happened.
type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// handle is the router's front door.
func (s *Server) handle(ctx *fasthttp.RequestCtx) {
	s.bodyPending.Delete(&ctx.Request.Header)
	defer s.settleConn(ctx)
	defer func() {
		// net/http recovers a handler's panic and closes the connection; so
		// does the router, and says so, rather than stop serving.
		if v := recover(); v != nil {
			s.event("panic", map[string]any{"error": redact.Secrets(fmt.Sprint(v)), "stack": string(debug.Stack())})
			ctx.ResetBody()
			ctx.SetConnectionClose()
			writeError(ctx, fasthttp.StatusInternalServerError, "internal_error", "hiro serve failed on this request (its event log has the details); retry", 0)
		}
	}()
	if h := &ctx.Request.Header; !h.IsHTTP11() && string(h.Protocol()) != "HTTP/1.0" {
		s.refuseVersion(ctx)
		return
	}
	switch string(ctx.Path()) {
	case RouteChat:
		s.proxyRequest(ctx, RouteChat)
	case RouteCompletions:
		s.proxyRequest(ctx, RouteCompletions)
	case RouteEmbeddings:
		s.proxyRequest(ctx, RouteEmbeddings)
	case RouteModels:
		s.answerLocally(ctx, RouteModels, func() {
			if !s.keyed(ctx, s.keys) {
				s.unauthorized(ctx)
				return
			}
			s.models(ctx)
		})
	case "/metrics":
		if !s.keyed(ctx, s.metKeys) {
			s.answerLocally(ctx, "/metrics", func() { s.unauthorized(ctx) })
			return
		}
		s.metricsHandler(ctx)
	case "/health":
		// For load balancers and systemd: production's state, no detail.
		st := s.prod.state()
		code := fasthttp.StatusOK
		if st != control.StateReady || s.draining.Load() {
			code = fasthttp.StatusServiceUnavailable
		}
		ctx.SetStatusCode(code)
		ctx.SetContentType("application/json")
		fmt.Fprintf(ctx, "{\"status\":%q}\n", st)
	default:
		s.answerLocally(ctx, RouteOther, func() {
			// A client without a key learns nothing of the routes.
			if !s.keyed(ctx, s.keys) {
				s.unauthorized(ctx)
				return
			}
			writeError(ctx, fasthttp.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s: the router serves POST %s, %s, %s and GET %s",
				boundQuoted(string(ctx.Method())), boundQuoted(redact.Secrets(string(ctx.Path()))), RouteChat, RouteCompletions, RouteEmbeddings, RouteModels), 0)
		})
	}
}

// keyed reports whether the request's "Authorization" passes ks, and
// settles its connection: one whose request passes is authenticated
// (conns.go); one whose request is refused is closed after the answer,
// so a client retrying keys opens a connection per try.
func (s *Server) keyed(ctx *fasthttp.RequestCtx, ks *keySet) bool {
	if !ks.check(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)) {
		ctx.SetConnectionClose()
		return false
	}
	if c := connOf(ctx.Conn()); c != nil && c.gate != nil {
		c.gate.authenticate(c)
	}
	return true
}

// settleConn closes, after its answer, a connection still
// unauthenticated once its request was handled (/health's, a refusal):
// an unauthenticated connection carries one request. With no API key
// configured every request authenticates its connection.
func (s *Server) settleConn(ctx *fasthttp.RequestCtx) {
	c := connOf(ctx.Conn())
	if c == nil || c.gate == nil || c.authed.Load() {
		return
	}
	if s.keys.empty() {
		c.gate.authenticate(c)
		return
	}
	ctx.SetConnectionClose()
}

// refuseVersion answers 505 to a request whose version is neither
// HTTP/1.1 nor HTTP/1.0 (fasthttp reads any "HTTP/x.y"), without reading
// its body, and closes the connection. It is counted and logged under
// its route when it names a proxied one, else route "".
func (s *Server) refuseVersion(ctx *fasthttp.RequestCtx) {
	x := s.newExchange(ctx, proxiedRoute(ctx.Path()))
	ctx.SetConnectionClose()
	x.fail(ctx, fasthttp.StatusHTTPVersionNotSupported, "invalid_request_error",
		"the request's HTTP version is not supported here; send HTTP/1.1 (or HTTP/1.0)", 0)
	x.finish()
}

// onReadError answers a request fasthttp could not read: a body over
// [serve] max_body_bytes (413), a body or headers that did not arrive in
// time (400, 408), headers over maxHeaderBytes (431), anything else
// malformed (400: what was wrong in a user's words, never fasthttp's
// text, which may quote the request), plain HTTP sent to the TLS
// listener (a plain-HTTP 400, refusePlainHTTP), a client that left before its
// request was whole (499, nothing answered). The connection closes after
// the answer. Every one is counted and access-logged: with its route
// and method when its headers had arrived (bodyPending), else with route
// and method "" (hiro_serve_requests_total keeps one route="" series per
// status).
func (s *Server) onReadError(ctx *fasthttp.RequestCtx, err error) {
	// fasthttp resets a request whose body it could not read: what
	// HeaderReceived kept says whether the headers had arrived, the route
	// and the method.
	v, inBody := s.bodyPending.LoadAndDelete(&ctx.Request.Header)
	p, _ := v.(*pendingReq)
	if p == nil {
		p = &noRequestLine
	}
	x := s.newExchange(ctx, p.route)
	x.e.Method = p.method
	var ne net.Error
	switch {
	case p.refusal == refuseNoKey || p.refusal == refuseBadKey:
		// Refused on its headers (headerReceived): the body was not
		// waited for.
		ctx.SetConnectionClose()
		x.unauthorized(ctx, p.refusal == refuseBadKey)
	case p.refusal == refuseTooLarge || errors.Is(err, fasthttp.ErrBodyTooLarge):
		s.refuseTooLarge(ctx, x)
	case plainHTTPToTLS(err) != nil:
		s.refusePlainHTTP(x, plainHTTPToTLS(err))
	case clientLeft(err):
		x.clientLeftMidRequest(ctx)
	case errors.As(err, &ne) && ne.Timeout() && inBody:
		s.refuseSlowBody(ctx, x)
	case errors.As(err, &ne) && ne.Timeout():
		x.fail(ctx, fasthttp.StatusRequestTimeout, "invalid_request_error",
			fmt.Sprintf("the request's line and headers did not arrive within %s; send them at once, each line ending in CRLF and the headers in an empty line (a bare LF does not end a line here)", s.headerTimeout), 0)
	case errors.As(err, new(*fasthttp.ErrSmallBuffer)) || strings.Contains(err.Error(), "small read buffer"):
		x.fail(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "invalid_request_error",
			fmt.Sprintf("the request's line and headers are larger than %d bytes; send fewer or shorter headers", maxHeaderBytes), 0)
	case inBody:
		s.refuseMalformedBody(ctx, x)
	default:
		x.fail(ctx, fasthttp.StatusBadRequest, "invalid_request_error",
			"malformed HTTP request: its request line or headers are not HTTP/1.1 (method, path and version on the first line, \"Name: value\" headers, a Host header, CRLF line endings); send a well-formed request", 0)
	}
	x.finish()
}

// clientLeft reports whether err, from reading a request, says its
// client closed the connection (or reset it) before the request was whole.
func clientLeft(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// headerReceived runs when a request's headers have arrived, before its
// body. A request with a body has bodyTimeout for it to arrive, and is
// remembered in bodyPending (see pendingReq). fasthttp reads up to 8 KiB
// of a body before the handler runs; a request on a proxied route that
// its headers already refuse (no key or a wrong one: 401; a
// Content-Length over max_body_bytes: 413) is not given that wait: its
// read deadline is now, so what of the body came with the headers is
// read and the handler refuses it, and a body not sent yet ends the read
// at once and onReadError answers the refusal. Either way the client
// gets its answer at once and the connection closes: announcing a body
// and never sending it holds no connection for the body timeout.
func (s *Server) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	cl := h.ContentLength()
	if cl == 0 {
		return fasthttp.RequestConfig{ReadTimeout: s.bodyTimeout}
	}
	route := routeOf(h.RequestURI())
	p := pendingFor(route, h.Method())
	if route != "" && len(h.Peek(fasthttp.HeaderExpect)) == 0 { // expectContinue refuses those
		refusal := refuseNone
		auth := h.Peek(fasthttp.HeaderAuthorization)
		switch keyOK := s.keys.check(auth); {
		case !keyOK && len(auth) == 0:
			refusal = refuseNoKey
		case !keyOK:
			refusal = refuseBadKey
		case int64(cl) > s.sc.MaxBodyBytes:
			refusal = refuseTooLarge
		}
		if refusal != refuseNone {
			s.bodyPending.Store(h, &pendingReq{route: p.route, method: p.method, refusal: refusal})
			return fasthttp.RequestConfig{ReadTimeout: time.Nanosecond, MaxRequestBodySize: 1}
		}
	}
	s.bodyPending.Store(h, p)
	return fasthttp.RequestConfig{ReadTimeout: s.bodyTimeout}
}

// Refusals a request's headers decide (pendingReq.refusal).
const (
	refuseNone = iota
	refuseNoKey
	refuseBadKey
	refuseTooLarge
)

// pendingReq is what HeaderReceived keeps of a request whose body is
// still to be read (the key is its header): fasthttp resets the request
// before onReadError runs. The common ones are shared values
// (pendingFor), so keeping them allocates nothing.
type pendingReq struct {
	route, method string
	refusal       int // refuseNone, or what headerReceived refused the request for
}

// noRequestLine stands for a request refused before its headers were
// read: no route, no method.
var noRequestLine pendingReq

var (
	pendingRoutes  = [...]string{"", RouteChat, RouteCompletions, RouteEmbeddings}
	pendingMethods = [...]string{fasthttp.MethodPost, fasthttp.MethodGet, fasthttp.MethodPut, fasthttp.MethodPatch,
		fasthttp.MethodDelete, fasthttp.MethodHead, fasthttp.MethodOptions}
	pendingTable = func() (t [len(pendingRoutes)][len(pendingMethods)]pendingReq) {
		for i, r := range pendingRoutes {
			for j, m := range pendingMethods {
				t[i][j] = pendingReq{route: r, method: m}
			}
		}
		return t
	}()
)

// pendingFor returns the pendingReq of route (routeOf's) and method.
func pendingFor(route string, method []byte) *pendingReq {
	i := 0
	for i < len(pendingRoutes) && pendingRoutes[i] != route {
		i++
	}
	for j, m := range pendingMethods {
		if string(method) == m && i < len(pendingRoutes) {
			return &pendingTable[i][j]
		}
	}
	return &pendingReq{route: route, method: string(method)}
}

// expectContinue is the front door's answer to a request's "Expect:
// 100-continue": 100 (send the body) unless a request on a proxied route
// is refused by what its headers say (refuseBeforeBody: key, method,
// draining, a Content-Length over max_body_bytes); that one gets its
// refusal at once, without a 100, and is recorded (fasthttp closes the
// connection after it: the client may be sending its body already).
func (s *Server) expectContinue(ctx *fasthttp.RequestCtx) int {
	route := routeOf(ctx.Request.Header.RequestURI())
	if route == "" {
		return fasthttp.StatusContinue
	}
	x := s.newExchange(ctx, route)
	if !s.refuseBeforeBody(ctx, x) {
		return fasthttp.StatusContinue
	}
	s.bodyPending.Delete(&ctx.Request.Header)
	x.finish()
	return x.status
}

// routeOf returns the proxied route a request URI names, "" for others,
// as the handler routes it: by the path fasthttp normalizes (duplicate
// slashes, dot segments, percent-encoding, an absolute URI's host part
// removed), so that routing and the accounting of a request refused
// before the handler agree. The common exact path costs a comparison.
func routeOf(uri []byte) string {
	p := uri
	if i := bytes.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	if r := proxiedRoute(p); r != "" || (bytes.IndexByte(p, '%') < 0 && bytes.IndexByte(p, '.') < 0 &&
		!bytes.Contains(p, []byte("//")) && len(p) > 0 && p[0] == '/') {
		return r
	}
	u := fasthttp.AcquireURI()
	defer fasthttp.ReleaseURI(u)
	if u.Parse(nil, uri) != nil {
		return ""
	}
	return proxiedRoute(u.Path())
}

// proxiedRoute returns the proxied route path is, "" for others.
func proxiedRoute(path []byte) string {
	switch string(path) {
	case RouteChat:
		return RouteChat
	case RouteCompletions:
		return RouteCompletions
	case RouteEmbeddings:
		return RouteEmbeddings
	}
	return ""
}

// unauthorized answers 401 to a request without a valid key.
func (s *Server) unauthorized(ctx *fasthttp.RequestCtx) int {
	return unauthorizedAnswer(ctx, len(ctx.Request.Header.Peek("Authorization")) > 0)
}

// unauthorizedAnswer writes the 401 for a request that sent no key
// (hadKey false) or a wrong one.
func unauthorizedAnswer(ctx *fasthttp.RequestCtx, hadKey bool) int {
	msg := "missing API key: send \"Authorization: Bearer KEY\""
	if hadKey {
		msg = "invalid API key"
	}
	ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="hiro"`)
	return writeError(ctx, fasthttp.StatusUnauthorized, "invalid_api_key", msg, 0)
}

// answerLocally runs f, an answer the router makes itself (GET
// /v1/models, a key refused on /metrics), and records it as a proxied
// request is: hiro_serve_requests_total by route and status (no backend,
// no latency series) and an access log line with the bytes sent.
// /metrics scrapes and /health polls that pass are not recorded: they
// come every few seconds from machines, not clients. A request to a path
// the router does not serve is recorded under route RouteOther (one
// bounded series), its path logged redacted and bounded; an error's
// access log "error" is the type of the OpenAI-shaped error answered.
func (s *Server) answerLocally(ctx *fasthttp.RequestCtx, route string, f func()) {
	start := time.Now()
	f()
	status := ctx.Response.StatusCode()
	s.metrics.observe(route, "", status, 0, 0)
	e := accessEntry{Time: start.UTC(), Remote: ctx.RemoteAddr().String(), Method: string(ctx.Method()), Path: route,
		Status: status, Bytes: int64(len(ctx.Response.Body())), DurationMS: float64(time.Since(start).Microseconds()) / 1000}
	if ctx.IsHead() {
		e.Bytes = 0 // fasthttp sends the headers only
	}
	if route == RouteOther {
		e.Method = boundQuoted(e.Method)
		e.Path = boundQuoted(redact.Secrets(string(ctx.Path())))
	}
	if status >= 400 {
		// The error's type, as a proxied route's refusals log it
		// (invalid_api_key for a missing or wrong key, everywhere).
		e.Error = gjson.GetBytes(ctx.Response.Body(), "error.type").String()
	}
	s.access.log(&e)
}

// models answers GET /v1/models: the names the router accepts; HEAD
// gets the same headers (Content-Length included) without the body.
func (s *Server) models(ctx *fasthttp.RequestCtx) {
	if !ctx.IsGet() && !ctx.IsHead() {
		ctx.Response.Header.Set("Allow", "GET, HEAD")
		writeError(ctx, fasthttp.StatusMethodNotAllowed, "invalid_request_error", "use GET "+RouteModels, 0)
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list"}
	for _, n := range s.modelNames() {
		out.Data = append(out.Data, model{ID: n, Object: "model", Created: s.started.Unix(), OwnedBy: "hiro"})
	}
	ctx.SetContentType("application/json")
	json.NewEncoder(ctx).Encode(out)
}

// newMetricsHandler serves the Prometheus registry through fasthttp.
func (s *Server) newMetricsHandler() fasthttp.RequestHandler {
	return fasthttpadaptor.NewFastHTTPHandler(s.metrics.handler())
}

// clientConn is a client's connection to the front door (accepted by
// clientListener, counted by its gate: conns.go). While a request
// waits on its backend a clientWatch may read it; what it read (the
// client's next request, sent early) is returned first by Read.
type clientConn struct {
	net.Conn
	raw   *rawIO // nil for TLS
	early []byte
	gateState
}

func (c *clientConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	if c.raw != nil {
		return c.raw.Read(p)
	}
	return c.Conn.Read(p)
}

func (c *clientConn) Write(p []byte) (int, error) {
	if c.raw != nil {
		return c.raw.Write(p)
	}
	return c.Conn.Write(p)
}

// watchAfter is how long a proxied request runs before its client's
// connection is watched. The server reads nothing from a connection
// while its request is answered, so a client that leaves would be seen
// only when its answer is written; an answer that takes longer (a long
// generation, a wait for production) has the connection read meanwhile,
// and a client that closes it cancels the upstream request. A fast answer
// pays for a timer, no read.
const watchAfter = 20 * time.Millisecond

// errClientLeft is the cause of a request's context cancelled because
// its client closed the connection.
var errClientLeft = errors.New("the client closed its connection")

// aLongTimeAgo is a read deadline that ends a pending read at once.
var aLongTimeAgo = time.Unix(1, 0)

// clientWatch watches one request's client connection (see watchAfter).
type clientWatch struct {
	c      *clientConn
	cancel func(error)
	t      *time.Timer

	mu      sync.Mutex
	stopped bool
	reading bool
	done    chan struct{}
}

// watchClient starts watching c (a *clientConn; nil otherwise) for the
// request whose context cancel cancels.
func watchClient(c net.Conn, cancel func(error)) *clientWatch {
	cc, ok := c.(*clientConn)
	if !ok {
		return nil
	}
	w := &clientWatch{c: cc, cancel: cancel}
	w.t = time.AfterFunc(watchAfter, w.run)
	return w
}

func (w *clientWatch) run() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	// Cleared under the lock, so that stop's deadline comes after it.
	w.c.Conn.SetReadDeadline(time.Time{})
	w.reading = true
	w.done = make(chan struct{})
	w.mu.Unlock()
	defer close(w.done)
	buf := make([]byte, 4<<10)
	for {
		n, err := w.c.Conn.Read(buf)
		if n > 0 {
			// The client sent more (its next request, pipelined): kept
			// for the server. The watch goes on, since a client may send
			// its next request and leave, until maxEarly bytes are kept
			// (then it is clearly there).
			w.c.early = append(w.c.early, buf[:n]...)
			if len(w.c.early) >= maxEarly {
				return
			}
		}
		if err != nil {
			// EOF cancels as net/http's server does: a client that half-
			// closes after its request is taken for one that left.
			if !isTimeout(err) {
				w.cancel(errClientLeft)
			}
			return
		}
	}
}

// maxEarly bounds what a watch reads ahead of the server on one
// connection (a pipelined request, its body).
const maxEarly = 64 << 10

// stop ends the watch; the connection is the server's again when it
// returns. A nil watch does nothing.
func (w *clientWatch) stop() {
	if w == nil {
		return
	}
	w.t.Stop()
	w.mu.Lock()
	w.stopped = true
	reading := w.reading
	w.mu.Unlock()
	if reading {
		w.c.Conn.SetReadDeadline(aLongTimeAgo)
		<-w.done
	}
}
