package serve

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/ramp"
	"github.com/hiro-dev/hiro/internal/shadow"
)

// A progressive ramp (docs/shadow.md "Progressive activation"): the
// candidate is a second backend beside production; a share of
// production's requests goes to it, sticky per client key (the OpenAI
// "user" field, else the SessionHeader header; a request with neither is
// drawn at random). One goroutine (rampCtl.run) owns the ramp: it counts
// both sides' answered requests, checks the candidate's health with its
// own watch state (the watch's step, an unmanaged backend: hiro does not
// restart it mid-ramp) and applies package ramp's decisions each health
// interval, or at once when a request found the candidate failing. A
// request the candidate failed before any byte of its reply reached the
// client is resent to production (rampResend; docs/shadow.md,
// "Progressive activation"). A reversal is the router's own: the share drops to 0
// before anyone is asked. While no ramp runs the front door pays one
// atomic load.

// SessionHeader is the request header a client without the OpenAI
// "user" field names its session with, so that a ramp keeps its
// conversation on one backend.
const SessionHeader = "X-Hiro-Session"

// rampObsQueue bounds the answered requests waiting to be counted; one
// that finds the queue full is counted without its reply's check.
// rampCheckers count them (checking the replies: the extraction
// validators), apart from the goroutine that decides, so that a burst of
// checks never delays a reversal.
const (
	rampObsQueue = 1024
	rampCheckers = 2
)

// rampState holds the ramp routing now (run: nil when none, read on
// every production request) and the last one, for status.
type rampState struct {
	run  atomic.Pointer[rampCtl]
	mu   sync.Mutex
	last *rampCtl
}

// rampObs is one answered request of a ramp.
type rampObs struct {
	step    int // the step it was routed in
	side    int
	failed  bool
	latency time.Duration
	job     *shadow.Job // the reply to check; nil: none
}

// rampCtl is one ramp.
type rampCtl struct {
	s       *Server
	cand    *route
	owner   int
	share   atomic.Uint64 // math.Float64bits of the candidate's share
	step    atomic.Int64  // the step serving (ramp.Ramp.Step)
	salt    string
	checker *shadow.Checker
	obs     chan rampObs
	refused chan string   // a request found the candidate refusing connections
	kick    chan struct{} // the candidate failed a request: decide now
	stopReq chan rampStopReq
	done    chan struct{} // closed when run returned

	mu sync.Mutex // guards r and ws for status readers
	r  *ramp.Ramp
	ws watchState // the candidate's watch
}

type rampStopReq struct {
	reason  string
	reverse bool // end a completed ramp too, as reversed
	done    chan struct{}
}

func (rc *rampCtl) shareNow() float64 { return math.Float64frombits(rc.share.Load()) }

// toCandidate reports whether this request goes to the candidate.
func (rc *rampCtl) toCandidate(ctx *fasthttp.RequestCtx, body []byte) bool {
	share := rc.shareNow()
	switch {
	case share <= 0:
		return false
	case share >= 1:
		return true
	}
	key := gjson.GetBytes(body, "user").Str
	if key == "" {
		key = string(ctx.Request.Header.Peek(SessionHeader))
	}
	if key == "" {
		return rand.Float64() < share
	}
	return ramp.ToCandidate(rc.salt, key, share)
}

// rampRoute picks the side of a production request (prod: production's
// route, counted) during a ramp and returns the route to send it to.
func (s *Server) rampRoute(ctx *fasthttp.RequestCtx, x *exchange, rc *rampCtl, body []byte, stream bool, prod *route) *route {
	x.ramp, x.rampSide, x.rampStep = rc, ramp.SideProduction, int(rc.step.Load())
	if shadow.Checkable(body) {
		x.rampJob = &shadow.Job{Route: x.route, Body: bytes.Clone(body), Stream: stream}
	}
	if !rc.toCandidate(ctx, body) {
		return prod
	}
	rc.cand.inFlight.Add(1)
	prod.inFlight.Add(-1)
	x.rt, x.counted, x.rampSide = rc.cand, rc.cand, ramp.SideCandidate
	return rc.cand
}

// peekSize bounds the first bytes of a candidate's reply read before
// the answer begins (candidateFailedBeforeReply).
const peekSize = 16 << 10

// candidateFailedBeforeReply reads what a ramp's candidate answered
// (resp, err from its round trip) and returns the class of a failure
// that left nothing for the client yet ("" for a reply to pass on):
// a transport error (refused, reset, the connection closed before the
// headers), an answer that says the backend failed rather than the
// request (candidateStatusFailed: any 5xx, 429, 401), or a reply whose
// body broke before its first byte ("reset"). A reply passed on has its
// first bytes read already (peek, with the error that read ended with).
// A request the client left, or past response_timeout, is never resent
// (its context is done).
func candidateFailedBeforeReply(rctx context.Context, resp *http.Response, err error) (class string, peek []byte, peekErr error) {
	if rctx.Err() != nil {
		return "", nil, nil
	}
	if err != nil {
		return upstreamErrorClass(rctx, err), nil, nil
	}
	if candidateStatusFailed(resp.StatusCode) {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		return "http_" + strconv.Itoa(resp.StatusCode), nil, nil
	}
	if resp.ContentLength == 0 {
		return "", nil, nil
	}
	buf := make([]byte, peekSize)
	n, perr := resp.Body.Read(buf)
	if n == 0 && perr != nil && rctx.Err() == nil && !(perr == io.EOF && resp.ContentLength < 0) {
		resp.Body.Close()
		return "reset", nil, nil
	}
	return "", buf[:n], perr
}

// candidateStatusFailed says whether a ramp's candidate answering code
// failed the request itself, so that production answers it instead: any
// 5xx (500 a decode error, 502/503 a server with no slot or no model,
// 504 its own upstream's timeout), 429 (overloaded: production, which
// was serving this client before the ramp, has room) and 401 (the
// candidate refused hiro's key: the operator's fault, never the
// client's). The other 4xx are the request's own fault, which production
// would answer the same: passed on.
func candidateStatusFailed(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusUnauthorized
}

// rampResend moves a request the ramp's candidate failed before any
// byte of its reply reached the client (class: see
// candidateFailedBeforeReply) to production: counted as the candidate's
// error in its step and as resent, the ramp told at once; it returns
// production's route and the body for it. The body is the one the
// handler holds already (fasthttp keeps it until the handler returns,
// [serve] max_body_bytes bounds it): nothing is copied to resend it.
func (s *Server) rampResend(x *exchange, body []byte, class string) (*route, []byte, error) {
	rc := x.ramp
	s.metrics.upErrors.WithLabelValues(rc.cand.name, class).Inc()
	// Counted here, before the ramp is told: a reversal's account
	// includes it.
	rc.tally(func(r *ramp.Ramp) { r.Resent() })
	rc.observe(rampObs{step: x.rampStep, side: ramp.SideCandidate, failed: true, latency: time.Since(x.start)})
	why := "connection " + class
	switch {
	case class == "connect":
		why = "it refused a connection"
	case strings.HasPrefix(class, "http_"):
		why = "it answered HTTP " + strings.TrimPrefix(class, "http_")
	}
	if !strings.HasPrefix(class, "http_") {
		// A broken connection is the watch's failure; an answered 5xx
		// (or 429, 401) is the error rate's.
		select {
		case rc.refused <- why:
		default:
		}
	}
	prod := s.prod.current()
	prod.inFlight.Add(1)
	rc.cand.inFlight.Add(-1)
	x.rt, x.counted, x.rampSide = prod, prod, ramp.SideProduction
	x.rampJob = nil // its reply is production's: not the candidate's check
	if gjson.GetBytes(body, "model").Str == prod.prof.Model {
		return prod, body, nil
	}
	b, err := withModel(body, prod.prof.Model)
	return prod, b, err
}

// rampObserve counts a finished exchange of a ramp (from finish): a
// client that left is no sample.
func (x *exchange) rampObserve(end time.Duration) {
	if x.status == 499 || x.errClass == "stopped" {
		return
	}
	o := rampObs{step: x.rampStep, side: x.rampSide, failed: x.status/100 != 2 || x.errClass != "", latency: end}
	if o.side == ramp.SideCandidate && x.errClass == "cut" {
		x.ramp.tally(func(r *ramp.Ramp) { r.CutMidReply() })
	}
	if x.rampJob != nil && !o.failed {
		x.rampJob.Done(x.status, x.ttfb, end)
		o.job = x.rampJob
	}
	x.ramp.send(o)
}

// send hands o to the counters without waiting; a full queue counts it
// here, without its reply's check.
func (rc *rampCtl) send(o rampObs) {
	select {
	case rc.obs <- o:
	default:
		o.job = nil
		rc.observe(o)
	}
}

// tally applies f to the ramp's account now (under its lock).
func (rc *rampCtl) tally(f func(*ramp.Ramp)) {
	rc.mu.Lock()
	f(rc.r)
	rc.mu.Unlock()
}

// observe counts o (checking its reply when it has one).
func (rc *rampCtl) observe(o rampObs) {
	checked, invalid := false, false
	if o.job != nil {
		checked, invalid = rc.checker.Check(o.job)
	}
	rc.mu.Lock()
	rc.r.Observe(o.step, o.side, o.failed, o.latency, checked, invalid)
	rc.mu.Unlock()
	if o.side == ramp.SideCandidate && (o.failed || invalid) {
		select {
		case rc.kick <- struct{}{}:
		default:
		}
	}
}

// startRamp checks and starts a ramp (see control.RampStartRequest).
func (s *Server) startRamp(ctx context.Context, req control.RampStartRequest) (*control.RampStatus, int, error) {
	prof, code, err := s.besideProduction(req.Candidate, req.Effective, "a ramp moves production's requests to another backend")
	if err != nil {
		return nil, code, err
	}
	prod := s.prod.current()
	if prof.ExclusiveAccelerator && !shadow.Remote(prof) {
		return nil, http.StatusConflict, fmt.Errorf("backend %s needs the accelerator alone (exclusive_accelerator): it cannot serve beside production on this machine, so a progressive ramp is impossible here; activate it at once (hiro activate without --progressive) after a frozen-corpus semantic gate, or serve it on a second machine and ramp to that endpoint", prof.Name)
	}
	if st := s.prod.state(); st != control.StateReady {
		return nil, http.StatusConflict, fmt.Errorf("production %s is %s: a ramp compares the candidate with a production that serves; retry once it is ready", prod.name, st)
	}
	pol := req.Policy
	if err := pol.Fill(); err != nil {
		return nil, http.StatusBadRequest, err
	}
	if err := s.candidateAnswers(ctx, prof); err != nil {
		return nil, http.StatusConflict, err
	}
	chk, err := shadow.NewChecker()
	if err != nil {
		return nil, http.StatusInternalServerError, err
	}
	rc := &rampCtl{s: s, owner: req.OwnerPID, checker: chk, obs: make(chan rampObs, rampObsQueue), refused: make(chan string, 1), kick: make(chan struct{}, 1),
		stopReq: make(chan rampStopReq), done: make(chan struct{}), ws: watchState{State: control.StateReady, Unmanaged: true}}
	if rc.cand, err = newRoute(prof, s.tr, rc.upstreamError); err != nil {
		return nil, http.StatusBadRequest, err
	}
	s.ramp.mu.Lock()
	defer s.ramp.mu.Unlock()
	if cur := s.ramp.run.Load(); cur != nil {
		return nil, http.StatusConflict, fmt.Errorf("a ramp to %s is routing requests; stop it first (hiro rollback, or the activation's end)", cur.cand.name)
	}
	now := time.Now()
	rc.r = ramp.New(pol, prof.Name, prod.name, now)
	rc.salt = rc.r.Salt()
	rc.share.Store(math.Float64bits(rc.r.Share()))
	s.ramp.last = rc
	s.ramp.run.Store(rc)
	s.event("ramp_start", map[string]any{"candidate": prof.Name, "production": prod.name, "steps": pol.Steps, "soak": pol.Soak.Duration.String(), "min_requests": pol.MinRequests})
	go rc.run()
	for range rampCheckers {
		go rc.count()
	}
	return rc.status(), 0, nil
}

// upstreamError is the candidate route's: counted; a refused or broken
// connection tells the ramp.
func (rc *rampCtl) upstreamError(rt *route, class string) (string, int) {
	rc.s.metrics.upErrors.WithLabelValues(rt.name, class).Inc()
	if class == "connect" || class == "reset" {
		select {
		case rc.refused <- "connection " + class:
		default:
		}
	}
	return "", 0
}

// count counts answered requests until the ramp's decisions end.
func (rc *rampCtl) count() {
	for {
		select {
		case o := <-rc.obs:
			rc.observe(o)
		case <-rc.done:
			return
		}
	}
}

// run owns the ramp until it ends (reversed, stopped; a completed ramp
// routes until the activation stops it).
func (rc *rampCtl) run() {
	defer close(rc.done)
	tick := time.NewTicker(rc.s.sc.HealthInterval.Duration)
	defer tick.Stop()
	for {
		select {
		case why := <-rc.refused:
			rc.decide(rc.candidateFailed(why))
		case <-rc.kick:
			rc.decide("")
		case <-tick.C:
			down := rc.checkHealth()
			if down == "" && rc.owner > 0 && !aliveProcess(rc.owner) {
				rc.end(evidence.RampReversed, fmt.Sprintf("the activation that owned the ramp (pid %d) is gone: every request is back on production", rc.owner))
			} else {
				rc.decide(down)
			}
		case sr := <-rc.stopReq:
			if sr.reverse {
				rc.reverse(sr.reason)
			} else {
				rc.end(evidence.RampStopped, sr.reason)
			}
			close(sr.done)
			return
		}
		rc.mu.Lock()
		active := rc.r.Active()
		rc.mu.Unlock()
		if !active {
			rc.s.ramp.run.CompareAndSwap(rc, nil)
			return
		}
	}
}

// checkHealth checks the candidate (its health endpoint) and applies
// the watch's step to a failure; it returns what made it down, or "".
func (rc *rampCtl) checkHealth() string {
	prof := rc.cand.prof
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	h := rc.cand.eng.CheckHealth(ctx, rc.cand.hc, prof.BaseURL, prof.Model)
	cancel()
	if h.State == engine.HealthReady {
		return ""
	}
	return rc.candidateFailed("health: " + h.Message)
}

// candidateFailed feeds a failure of the candidate to its watch (step)
// and returns why it is down ("" when the watch does not say down).
func (rc *rampCtl) candidateFailed(why string) string {
	f := &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseInference, RootCause: why}
	rc.mu.Lock()
	ws, effs := step(rc.ws, event{Kind: evFailure, Failure: f, Now: time.Now()}, watchPolicy{})
	rc.ws = ws
	rc.mu.Unlock()
	for _, e := range effs {
		if e.Kind == effState && e.State == control.StateDown {
			return "backend " + rc.cand.name + ": " + why
		}
	}
	return ""
}

// decide applies package ramp's decision now; down: see ramp.Input. A
// completed ramp whose candidate is down (the activation has not
// switched yet) is reversed: no request waits on a dead backend.
func (rc *rampCtl) decide(down string) {
	rc.mu.Lock()
	if down != "" && rc.r.Result().State == evidence.RampCompleted {
		rc.mu.Unlock()
		rc.reverse("the candidate went down before the switch: " + down)
		return
	}
	before := rc.r.Result()
	d := rc.r.Tick(time.Now(), down)
	res := rc.r.Result()
	rc.mu.Unlock()
	rc.step.Store(int64(res.Step))
	rc.share.Store(math.Float64bits(res.Share))
	switch d.Action {
	case evidence.RampAdvance:
		rc.s.event("ramp_step", map[string]any{"candidate": res.Candidate, "from": before.Share, "share": res.Share, "reason": d.Reason})
	case evidence.RampComplete:
		rc.s.event("ramp_complete", map[string]any{"candidate": res.Candidate, "reason": d.Reason})
	case evidence.RampReverse:
		rc.s.event("ramp_reversed", map[string]any{"candidate": res.Candidate, "production": res.Production, "at": before.Share, "reason": res.Reason})
	}
}

// end ends the ramp with state and reason: every request back on
// production.
func (rc *rampCtl) end(state, reason string) {
	rc.mu.Lock()
	rc.r.Stop(time.Now(), state, reason)
	res := rc.r.Result()
	rc.mu.Unlock()
	rc.share.Store(math.Float64bits(res.Share))
	rc.s.ramp.run.CompareAndSwap(rc, nil)
	rc.s.event("ramp_end", map[string]any{"candidate": res.Candidate, "state": res.State, "reason": reason})
}

// reverse ends the ramp, completed or not, as reversed with reason:
// every request back on production.
func (rc *rampCtl) reverse(reason string) {
	rc.mu.Lock()
	did := rc.r.Reverse(time.Now(), reason)
	res := rc.r.Result()
	rc.mu.Unlock()
	rc.share.Store(math.Float64bits(res.Share))
	rc.s.ramp.run.CompareAndSwap(rc, nil)
	if did {
		rc.s.event("ramp_reversed", map[string]any{"candidate": res.Candidate, "production": res.Production, "reason": reason})
	}
}

// status is the ramp's account now.
func (rc *rampCtl) status() *control.RampStatus {
	rc.mu.Lock()
	res := rc.r.ResultAt(time.Now())
	rc.mu.Unlock()
	return &control.RampStatus{Active: rc.s.ramp.run.Load() == rc, Result: &res}
}

// rampStatus is the routing ramp's account, else the last one's; nil
// when none ran since the router started.
func (s *Server) rampStatus() *control.RampStatus {
	s.ramp.mu.Lock()
	rc := s.ramp.last
	s.ramp.mu.Unlock()
	if rc == nil {
		return nil
	}
	return rc.status()
}

// stopRamp ends the ramp (a completed one keeps its state: the
// activation switched) and waits up to drain_timeout for the candidate's
// requests in flight to finish there; 404 when none ran.
func (s *Server) stopRamp(ctx context.Context, reason string, reverse bool) (*control.RampStatus, int, error) {
	s.ramp.mu.Lock()
	rc := s.ramp.last
	s.ramp.mu.Unlock()
	if rc == nil {
		return nil, http.StatusNotFound, fmt.Errorf("no ramp since this router started; start one with hiro activate EVIDENCE --progressive")
	}
	if reason == "" {
		reason = "stopped by command"
	}
	sr := rampStopReq{reason: reason, reverse: reverse, done: make(chan struct{})}
	select {
	case rc.stopReq <- sr:
		<-sr.done
	case <-rc.done:
	}
	rc.s.ramp.run.CompareAndSwap(rc, nil)
	waitIdle(ctx, rc.cand, s.sc.DrainTimeout.Duration)
	return rc.status(), 0, nil
}

// rampRoutes adds the control socket's ramp routes:
//
//	POST /v1/ramp/start control.RampStartRequest → RampStatus
//	POST /v1/ramp/stop  control.RampStopRequest  → RampStatus (the account)
//	GET  /v1/ramp/status                         → RampStatus
func (s *Server) rampRoutes(mux *http.ServeMux, c controlFuncs) {
	mux.HandleFunc("POST /v1/ramp/start", jsonRoute(c, s.startRamp))
	mux.HandleFunc("POST /v1/ramp/stop", jsonRoute(c, func(ctx context.Context, req control.RampStopRequest) (*control.RampStatus, int, error) {
		return s.stopRamp(ctx, req.Reason, req.Reverse)
	}))
	mux.HandleFunc("GET /v1/ramp/status", func(w http.ResponseWriter, r *http.Request) {
		st := s.rampStatus()
		if st == nil {
			st = &control.RampStatus{}
		}
		c.reply(w, 200, st)
	})
}
