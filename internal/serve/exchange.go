package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/hiro-dev/hiro/internal/ramp"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shadow"
)

// exchange is one request on a proxied route as the router records it:
// what it answered (status, body bytes, time to first body byte, the
// body's tail where "usage" is) and what it holds (in-flight counts, the
// watch on its client, its upstream request's context). finish records it
// once: when the handler returns for an answer the router makes, when the
// backend's body has been passed on (or cut) for a proxied one.
type exchange struct {
	s     *Server
	route string // RouteChat, RouteCompletions, RouteEmbeddings
	start time.Time
	e     accessEntry
	rt    *route // the backend; nil when refused before routing

	status   int
	bytes    int64
	ttfb     time.Duration
	tail     []byte
	wantTail bool
	errClass string // the upstream error's class; "cut" for a body cut mid-way, "stopped" for one cut by the router's stop

	proxied bool   // s.inFlight and the in-flight gauge count this request
	counted *route // the production route whose inFlight counts it
	cancel  context.CancelCauseFunc
	watch   *clientWatch
	done    bool

	// mirror is the shadow run this production request was sampled for
	// (nil: not mirrored); mirrorJob holds the request and the reply.
	mirror    *shadow.Mirror
	mirrorJob *shadow.Job

	// ramp is the progressive ramp this production request was routed
	// by (nil: none), rampSide the side it went to and rampJob its reply
	// kept for the check (nil: not a checkable request); ramp.go.
	ramp     *rampCtl
	rampSide int
	rampStep int
	rampJob  *shadow.Job
}

func (s *Server) newExchange(ctx *fasthttp.RequestCtx, route string) *exchange {
	return &exchange{s: s, route: route, start: time.Now(),
		e: accessEntry{Remote: ctx.RemoteAddr().String(), Method: string(ctx.Method()), Path: route}}
}

// fail answers an OpenAI-shaped error (see writeError) and records it.
func (x *exchange) fail(ctx *fasthttp.RequestCtx, status int, typ, msg string, retryAfter int) {
	x.e.Error = typ
	x.ttfb = time.Since(x.start)
	x.bytes = int64(writeError(ctx, status, typ, msg, retryAfter))
	x.status = status
}

// finish releases what the exchange holds and records it: the metrics
// (requests, latency, tokens from "usage") and the access log line.
func (x *exchange) finish() {
	if x.done {
		return
	}
	x.done = true
	s := x.s
	x.watch.stop()
	if x.cancel != nil {
		x.cancel(nil)
	}
	if x.proxied {
		s.metrics.inFlight.Dec()
		s.inFlight.Add(-1)
	}
	if x.counted != nil {
		x.counted.inFlight.Add(-1)
	}
	if x.status == 0 {
		x.status = 499
	}
	backend := ""
	if x.rt != nil {
		backend = x.rt.name
	}
	end := time.Since(x.start)
	s.procs.done(end)
	ttfb := x.ttfb
	if x.rt == nil {
		ttfb = 0 // refused before any backend: no latency series
	}
	m := s.metrics
	m.observe(x.route, backend, x.status, ttfb, end)
	if x.mirror != nil {
		x.offerShadow()
	}
	if x.proxied && s.inFlight.Load() == 0 {
		s.shadowIdle()
	}
	if x.ramp != nil {
		x.rampObserve(end)
	}
	if x.wantTail && x.status == http.StatusOK {
		if p, c, ok := usageOf(x.tail); ok {
			m.tokens.WithLabelValues(backend, "prompt").Add(float64(p))
			m.tokens.WithLabelValues(backend, "completion").Add(float64(c))
			x.e.Prompt, x.e.Completion = p, c
		}
	}
	if s.access != nil {
		e := &x.e
		e.Time = x.start.UTC()
		e.Backend, e.Status, e.Bytes = backend, x.status, x.bytes
		e.TTFBMS = float64(x.ttfb.Microseconds()) / 1000
		e.DurationMS = float64(end.Microseconds()) / 1000
		switch x.errClass {
		case "":
		case "cut":
			e.Error = "upstream cut mid-response"
		case "stopped":
			e.Error = "cut mid-response by hiro serve's stop (drain_timeout)"
		default:
			e.Error = "upstream " + x.errClass
		}
		s.access.log(e)
	}
	if x.status/100 == 2 && x.errClass == "" && x.rt != nil && x.rt == s.prod.current() {
		s.prod.served()
	}
}

// proxyRequest handles one OpenAI API request: key, model routing,
// production's state, then the backend. fasthttp has read the body
// (bounded by [serve] max_body_bytes and the body timeout: onReadError
// answers those).
func (s *Server) proxyRequest(ctx *fasthttp.RequestCtx, routeName string) {
	x := s.newExchange(ctx, routeName)
	if !s.forward(ctx, x) {
		x.finish()
	}
}

// forward runs the request's checks and sends it to its backend. It
// returns true when the backend's answer is streaming to the client
// (the exchange finishes when it ends), false when the request was
// answered here.
func (s *Server) forward(ctx *fasthttp.RequestCtx, x *exchange) bool {
	if s.refuseBeforeBody(ctx, x) {
		return false
	}
	body, tooLarge, err := readBody(ctx, s.sc.MaxBodyBytes)
	if tooLarge {
		ctx.SetConnectionClose()
		s.refuseTooLarge(ctx, x)
		return false
	}
	if err != nil {
		ctx.SetConnectionClose()
		switch {
		case isTimeout(err):
			s.refuseSlowBody(ctx, x)
		case errors.Is(err, fasthttp.ErrBodyTooLarge):
			s.refuseTooLarge(ctx, x)
		case clientLeft(err):
			x.clientLeftMidRequest(ctx)
		default:
			s.refuseMalformedBody(ctx, x)
		}
		return false
	}
	// gjson's validation recurses per level of nesting: a deep body is
	// refused by a linear scan first (a body no longer than the bound
	// cannot be deeper).
	if len(body) > MaxJSONDepth && nestedDeeper(body, MaxJSONDepth) {
		x.fail(ctx, http.StatusBadRequest, "invalid_request_error",
			fmt.Sprintf("request body nests arrays or objects more than %d levels deep; send a flatter body", MaxJSONDepth), 0)
		return false
	}
	if !gjson.ValidBytes(body) {
		x.fail(ctx, http.StatusBadRequest, "invalid_request_error", "request body is not valid JSON: "+jsonSyntaxError(body), 0)
		return false
	}
	mv, stream, dup := requestFields(body)
	if dup != "" {
		// Engines decode the last of two equal keys, a first-match
		// reader the first: "model" twice would route by one name and
		// run another (any model the backend holds).
		x.fail(ctx, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("request body names the key %q more than once; send each key once", boundQuoted(redact.Secrets(dup))), 0)
		return false
	}
	if mv.Type != gjson.String || mv.Str == "" {
		x.fail(ctx, http.StatusBadRequest, "invalid_request_error", "request has no \"model\" string; use one of: "+listModels(s.modelNames()), 0)
		return false
	}
	// The body is fasthttp's until the handler returns; the access log
	// line may be written after that.
	model := strings.Clone(mv.Str)
	x.e.Model, x.e.Stream = model, stream
	rt := s.lookup(model)
	if rt == nil {
		// Not a served name: whatever a client sent (a key pasted into
		// the wrong field) stays out of the access log and the answer.
		x.e.Model = echoModel(ctx, model)
		x.fail(ctx, http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not served here; served: %s", x.e.Model, listModels(s.modelNames())), 0)
		return false
	}
	x.rt = rt
	if rt != s.prod.current() && rt.watch.down() {
		x.fail(ctx, http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("backend %s is not answering its health check; retry in %d s", rt.name, retryAfterRestarting), retryAfterRestarting)
		return false
	}
	// From here the request may wait (for production, for the backend):
	// its client is watched, and leaving cancels it.
	rctx, cancel := context.WithCancelCause(s.reqBase)
	x.cancel = cancel
	x.watch = watchClient(ctx.Conn(), cancel)
	if rt == s.prod.current() {
		if ok, retry, why := s.prod.gate(rctx, s.sc.WaitForReady.Duration); !ok {
			x.fail(ctx, http.StatusServiceUnavailable, "unavailable", why, retry)
			return false
		}
		// The route may have switched while waiting. Counted on its route
		// before it is used, so that a switch can wait for the previous
		// production's requests before its caller stops that backend;
		// picked again if the route switched meanwhile.
		rt = s.prod.current()
		for {
			rt.inFlight.Add(1)
			cur := s.prod.current()
			if cur == rt {
				break
			}
			rt.inFlight.Add(-1)
			rt = cur
		}
		x.rt, x.counted = rt, rt
		if rc := s.ramp.run.Load(); rc != nil {
			rt = s.rampRoute(ctx, x, rc, body, stream, rt)
		}
	}
	owned := false // body is the router's own copy, not the client request's buffer
	if model != rt.prof.Model {
		var err error
		owned = true
		if body, err = withModel(body, rt.prof.Model); err != nil {
			x.fail(ctx, http.StatusBadRequest, "invalid_request_error", "cannot set the model field: "+err.Error(), 0)
			return false
		}
	}
	x.wantTail = true
	x.proxied = true
	if x.counted != nil && x.rampSide != ramp.SideCandidate {
		if m := s.sampleShadow(x.route); m != nil {
			// The mirror reads the body after production's answer, when
			// the client's request buffer is reused: a copy (in a lent
			// buffer), unless the model's rewrite made one already.
			x.mirror, x.mirrorJob = m, shadow.NewJob(x.route, body, stream, owned)
		}
	}
	s.inFlight.Add(1)
	s.metrics.inFlight.Inc()

	// The backend's answer must begin within [serve] response_timeout.
	timeout := s.sc.ResponseTimeout.Duration
	expire := time.AfterFunc(timeout, func() { cancel(errResponseTimeout) })
	resp, err := rt.tr.RoundTrip(rt.outgoing(ctx, rctx, x.route, body))
	if err != nil && rt == s.prod.current() && upstreamErrorClass(rctx, err) == "connect" && s.prod.awaitAfterRefusal(rctx, rt, s.sc.WaitForReady.Duration) {
		// Production refused the connection (nothing was sent) before
		// the watch saw it die, and was ready again within
		// wait_for_ready: sent once more.
		resp, err = rt.tr.RoundTrip(rt.outgoing(ctx, rctx, x.route, body))
	}
	var peek []byte
	var peekErr error
	if x.rampSide == ramp.SideCandidate {
		// The ramp's candidate failed before any byte of its reply could
		// reach the client: the request goes to production, the ramp is
		// told (rampResend). Its first bytes are read here, so that a
		// reply that breaks before them is resent too.
		var class string
		if class, peek, peekErr = candidateFailedBeforeReply(rctx, resp, err); class != "" {
			if rt, body, err = s.rampResend(x, body, class); err == nil {
				peek, peekErr = nil, nil
				resp, err = rt.tr.RoundTrip(rt.outgoing(ctx, rctx, x.route, body))
			}
		} else if len(peek) == 0 && peekErr != nil && peekErr != io.EOF {
			// Its first bytes never came (response_timeout, or the
			// client left): answered as a round trip that failed.
			resp.Body.Close()
			resp, err = nil, peekErr
		}
	}
	expire.Stop()
	if err != nil {
		class := upstreamErrorClass(rctx, err)
		timedOut := context.Cause(rctx) == errResponseTimeout
		if timedOut {
			class = "timeout"
		}
		x.errClass = class
		reason, retry := rt.onErr(rt, class)
		switch {
		case timedOut:
			ctx.SetConnectionClose()
			x.fail(ctx, http.StatusGatewayTimeout, "timeout", fmt.Sprintf("backend %s did not begin its answer within %s ([serve] response_timeout); retry, or raise the bound for long generations", rt.name, timeout), 0)
		case class == "canceled" && context.Cause(rctx) != errClientLeft && s.reqBase.Err() != nil:
			// Cut by the router's stop (the drain timed out): the client
			// is told, never an empty 200.
			ctx.SetConnectionClose()
			x.fail(ctx, http.StatusServiceUnavailable, "unavailable", "hiro serve stopped before the backend answered (drain_timeout); retry", retryAfterDraining)
		case class == "canceled":
			// The client went away: nobody reads an answer.
			x.status = 499
			ctx.SetStatusCode(499)
			ctx.SetConnectionClose()
		case reason != "":
			x.fail(ctx, http.StatusServiceUnavailable, "unavailable", reason, retry)
		default:
			// The class, not the error's text: it names internal addresses.
			x.fail(ctx, http.StatusBadGateway, "upstream_error", fmt.Sprintf("backend %s did not answer (%s)", rt.name, class), 0)
		}
		return false
	}
	if resp.StatusCode == http.StatusUnauthorized {
		// The backend refused the key hiro sends it (the profile's, never
		// the client's): an operator's fault the client cannot fix, and
		// must not read as its own key refused.
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		x.errClass = "auth"
		rt.onErr(rt, "auth")
		x.fail(ctx, http.StatusBadGateway, "upstream_error", fmt.Sprintf("backend %s refused the credentials hiro serve sends it (HTTP 401): the operator must fix its key (backends.%s, api_key_file or api_key_env); retry later", rt.name, rt.name), 0)
		return false
	}
	x.status = resp.StatusCode
	ctx.SetStatusCode(resp.StatusCode)
	h := &ctx.Response.Header
	// net/http's reader deletes a "Connection" header that says close,
	// with the other options it named: the headers they name can no
	// longer be told apart, and only known end-to-end ones pass then.
	connLost := resp.Close && resp.ProtoAtLeast(1, 1) && resp.Header["Connection"] == nil
	for k, vs := range resp.Header {
		if k == "Content-Length" || k == "Transfer-Encoding" || hopByHop(k, resp.Header) || (connLost && !endToEnd(k)) {
			continue
		}
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	// fasthttp writes the body after the handler returns, flushing after
	// every read when its length is unknown (SSE, chunked), once at the
	// end when it is known; upstreamBody finishes the exchange then.
	ctx.SetBodyStream(&upstreamBody{x: x, rc: resp.Body, ctx: rctx, peek: peek, peekErr: peekErr}, int(resp.ContentLength))
	return true
}

// echoModel is a model name the router does not serve as it may be
// quoted back (the 404's message, the access log): the router's keys
// and anything that looks like a secret redacted (redact.Secrets knows
// the keys), and the request's own bearer token, when that is what was
// sent as the model, replaced by redact.Placeholder; bounded to
// maxQuoted bytes (boundQuoted).
func echoModel(ctx *fasthttp.RequestCtx, model string) string {
	if auth := ctx.Request.Header.Peek("Authorization"); len(auth) > len("Bearer ") &&
		string(bytes.TrimSpace(auth[len("Bearer "):])) == strings.TrimSpace(model) {
		return redact.Placeholder
	}
	return boundQuoted(redact.Secrets(model))
}

// refuseBeforeBody runs the checks a request on a proxied route passes
// before its body is read: its key (401), its method (405), a router
// that drains (503) and a declared Content-Length over [serve]
// max_body_bytes (413). It answers and returns true when the request is
// refused. The handler calls it, and so does expectContinue, so that a
// request sent with "Expect: 100-continue" is refused before it is told
// to send its body.
func (s *Server) refuseBeforeBody(ctx *fasthttp.RequestCtx, x *exchange) bool {
	if !s.keyed(ctx, s.keys) {
		// keyed closes the connection after the answer (its body, if
		// any, is not read: headerReceived).
		x.unauthorized(ctx, len(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)) > 0)
		return true
	}
	if !ctx.IsPost() {
		ctx.Response.Header.Set("Allow", http.MethodPost)
		x.fail(ctx, http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("use POST %s (got %s)", x.route, ctx.Method()), 0)
		return true
	}
	if s.draining.Load() {
		if ok, retry, why := s.prod.gate(context.Background(), 0); !ok {
			x.fail(ctx, http.StatusServiceUnavailable, "unavailable", why, retry)
			return true
		}
		x.fail(ctx, http.StatusServiceUnavailable, "unavailable", "the router is draining (a hand-over or a stop); retry later", retryAfterDraining)
		return true
	}
	if cl := ctx.Request.Header.ContentLength(); int64(cl) > s.sc.MaxBodyBytes {
		ctx.SetConnectionClose()
		s.refuseTooLarge(ctx, x)
		return true
	}
	return false
}

// errResponseTimeout is the cause of a request's context cancelled
// because its backend did not begin answering within [serve]
// response_timeout.
var errResponseTimeout = errors.New("the backend did not begin its answer within response_timeout")

// unauthorized answers 401 to a request that sent no key (hadKey false)
// or a wrong one, and records it.
func (x *exchange) unauthorized(ctx *fasthttp.RequestCtx, hadKey bool) {
	x.e.Error = "invalid_api_key"
	x.ttfb = time.Since(x.start)
	x.bytes, x.status = int64(unauthorizedAnswer(ctx, hadKey)), http.StatusUnauthorized
}

// refuseTooLarge answers 413 to a body over [serve] max_body_bytes
// (read here, or refused by fasthttp: onReadError).
func (s *Server) refuseTooLarge(ctx *fasthttp.RequestCtx, x *exchange) {
	x.fail(ctx, http.StatusRequestEntityTooLarge, "request_too_large",
		fmt.Sprintf("request body is larger than %d bytes ([serve] max_body_bytes); send a smaller request or raise the bound", s.sc.MaxBodyBytes), 0)
}

// refuseSlowBody answers 400 to a body that did not arrive within the
// body timeout (read here, or by fasthttp: onReadError).
func (s *Server) refuseSlowBody(ctx *fasthttp.RequestCtx, x *exchange) {
	x.fail(ctx, http.StatusBadRequest, "invalid_request_error",
		fmt.Sprintf("reading the request body: it did not arrive within %s; send the whole body at once", s.bodyTimeout), 0)
}

// refuseMalformedBody answers 400 to a body fasthttp could not read as
// HTTP (broken chunked encoding); the error's own text is not quoted.
func (s *Server) refuseMalformedBody(ctx *fasthttp.RequestCtx, x *exchange) {
	x.fail(ctx, http.StatusBadRequest, "invalid_request_error",
		"malformed request body: its chunked encoding is not valid HTTP/1.1; send the body with a Content-Length, or as valid chunks", 0)
}

// clientLeftMidRequest records a request whose client closed the
// connection before its body was whole: 499, nothing answered (nobody
// reads it).
func (x *exchange) clientLeftMidRequest(ctx *fasthttp.RequestCtx) {
	x.status, x.e.Error = 499, "client left mid-request"
	ctx.SetStatusCode(499)
	ctx.SetConnectionClose()
}

// readBody reads the request's body as it arrives, at most limit bytes;
// tooLarge is true when there was more (the rest is not read). A
// declared Content-Length over limit was refused before
// (refuseBeforeBody).
func readBody(ctx *fasthttp.RequestCtx, limit int64) (body []byte, tooLarge bool, err error) {
	r := ctx.RequestBodyStream()
	if r == nil {
		return ctx.PostBody(), false, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return nil, true, nil
	}
	return b, false, nil
}

// upstreamBody is a backend's answer as fasthttp writes it to the
// client: it records the bytes, the time to the first and the tail, and
// finishes the exchange when fasthttp closes it (the end, a client that
// left, or a backend that cut the body).
type upstreamBody struct {
	x       *exchange
	rc      io.ReadCloser
	ctx     context.Context
	readErr error
	// peek holds the reply's first bytes, read before the answer began
	// (a ramp's candidate: candidateFailedBeforeReply), and peekErr the
	// error that read ended with; both are passed on first.
	peek    []byte
	peekErr error
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	var n int
	var err error
	switch {
	case len(b.peek) > 0:
		n = copy(p, b.peek)
		if b.peek = b.peek[n:]; len(b.peek) == 0 {
			err, b.peekErr = b.peekErr, nil
		}
	case b.peekErr != nil:
		err, b.peekErr = b.peekErr, nil
	default:
		n, err = b.rc.Read(p)
	}
	if n > 0 {
		x := b.x
		if x.ttfb == 0 {
			x.ttfb = time.Since(x.start)
		}
		x.bytes += int64(n)
		x.tail = keepTail(x.tail, p[:n])
		if x.mirrorJob != nil {
			x.mirrorJob.Capture(p[:n])
		}
		if x.rampJob != nil {
			x.rampJob.Capture(p[:n])
		}
	}
	if err != nil && err != io.EOF {
		b.readErr = err
	}
	return n, err
}

// Close does nothing: fasthttp calls CloseWithError right after it.
func (b *upstreamBody) Close() error { return nil }

// CloseWithError ends the exchange; werr is fasthttp's error writing the
// answer (nil when it was all written).
func (b *upstreamBody) CloseWithError(werr error) error {
	x := b.x
	if x.done {
		return nil
	}
	b.rc.Close()
	switch {
	case b.readErr != nil && b.ctx.Err() == nil:
		// The backend broke the body mid-way: the client got a cut answer.
		x.errClass = "cut"
		x.s.metrics.upErrors.WithLabelValues(x.rt.name, "cut").Inc()
	case (b.readErr != nil || werr != nil) && context.Cause(b.ctx) != errClientLeft && x.s.reqBase.Err() != nil:
		// The router's stop cut it (drain_timeout): the status stays the
		// one the client got, the log says who cut it.
		x.errClass = "stopped"
	case b.readErr != nil || werr != nil:
		x.status, x.e.Error = 499, "client left mid-response"
	}
	x.finish()
	return nil
}
