package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procmem"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/redact"
)

// Options tune a router. Config is required; the rest have defaults.
type Options struct {
	// Config is the loaded configuration ([serve], the profiles, state_dir).
	Config *config.Config
	// Listen overrides [serve].listen (the --listen flag).
	Listen string
	// ControlDir is where the control socket goes; default ControlDir().
	ControlDir string
	// Production, when set, is the production profile (an activated
	// one); default ProductionProfile(Config).
	Production *config.Profile
	// CampaignHolding reports the live hiro that holds production's
	// lease, or nil; default LeaseHolder (package lease). The router never
	// starts or restarts production while one does.
	CampaignHolding func(prod *config.Profile) *HandoverInfo
	// Events receives one JSON line per supervision event (deaths, failed
	// canaries, restarts, hand-overs); default os.Stderr. Events are also
	// appended to <state_dir>/serve/events.jsonl.
	Events io.Writer
	// AccessLog overrides [serve].access_log with a writer (tests).
	AccessLog io.Writer
	// LookupEnv reads the environment for keys; default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Ready, when set, is called once with the router's address when it
	// listens (tests).
	Ready func(addr string)
	// BodyReadTimeout bounds the reading of a request body; default
	// DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// OwnsProcess lets the router set the process's processors
	// (GOMAXPROCS, [serve] procs): true for `hiro serve`, false where one
	// process runs several routers or other work (tests).
	OwnsProcess bool
}

// Server is one router. Build it with New, run it with Run.
type Server struct {
	cfg      *config.Config
	sc       config.Serve
	opts     Options
	metrics  *metrics
	access   *accessLog
	keys     *keySet
	metKeys  *keySet
	tr       *directTransport
	pool     *bufferPool
	prod     *prodCtl
	served   []*route
	inFlight atomic.Int64
	procs    *procsPolicy // nil: the processors do not adapt
	// bodyTimeout is Options.BodyReadTimeout or its default.
	bodyTimeout time.Duration
	draining    atomic.Bool
	started     time.Time
	addr        string // scheme://host:port once listening
	ctlDir      string

	eventsMu sync.Mutex
	events   io.Writer
	evFile   *os.File
}

// ProductionProfile returns the profile the router serves as production:
// the active production as package production resolves it (the latest
// activation record's effective profile, else the configuration's
// [production]).
func ProductionProfile(cfg *config.Config) (*config.Profile, error) {
	a, err := production.Resolve(cfg)
	if err != nil {
		return nil, err
	}
	if a == nil || a.Profile == nil {
		return nil, &config.Error{File: cfg.Path, Key: "production.backend", Msg: "no production profile: hiro serve routes to production; set [production] backend = \"NAME\""}
	}
	p := a.Profile.Clone()
	p.Name = a.Name
	return p, nil
}

// New checks the configuration, reads the keys and prepares the router;
// it starts nothing. Errors say what to fix.
func New(opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("serve: Options.Config is nil")
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	s := &Server{cfg: opts.Config, sc: opts.Config.Serve, opts: opts, metrics: newMetrics(), tr: newDirectTransport(NewTransport()), pool: &bufferPool{},
		bodyTimeout: opts.BodyReadTimeout}
	if s.bodyTimeout <= 0 {
		s.bodyTimeout = DefaultBodyReadTimeout
	}
	if opts.Listen != "" {
		s.sc.Listen = opts.Listen
		c := *opts.Config
		c.Serve = s.sc
		if es := c.ValidateServe(); len(es) > 0 {
			// The listen address came from the flag: name the flag, not
			// the configuration's key the user never wrote.
			for i, e := range es {
				if e.Key == "serve.listen" {
					es[i] = &config.Error{Key: "--listen", Msg: e.Msg}
				}
			}
			return nil, es
		}
	}
	prod := opts.Production
	if prod == nil {
		p, err := ProductionProfile(opts.Config)
		if err != nil {
			return nil, err
		}
		prod = p
	}
	var err error
	if s.keys, err = loadKeys(s.sc.APIKeysFile, "serve.api_keys_file", s.sc.APIKeysEnv, opts.LookupEnv); err != nil {
		return nil, err
	}
	if s.metKeys, err = loadKeys(s.sc.MetricsKeyFile, "serve.metrics_key_file", s.sc.MetricsKeyEnv, opts.LookupEnv); err != nil {
		return nil, err
	}
	if s.metKeys.empty() {
		s.metKeys = s.keys
	}
	if opts.AccessLog == nil {
		if err := checkAccessLog(opts.Config); err != nil {
			return nil, err
		}
	}
	if host, _, _ := net.SplitHostPort(s.sc.Listen); !config.IsLoopbackHost(host) && s.keys.empty() {
		if opts.Listen != "" { // the value came from --listen, not the file
			return nil, fmt.Errorf("--listen %q is not a loopback address and no API key is set: set serve.api_keys_file in %s or $%s, or listen on 127.0.0.1", s.sc.Listen, s.cfg.Path, s.sc.APIKeysEnv)
		}
		return nil, &config.Error{File: s.cfg.Path, Key: "serve.listen", Msg: fmt.Sprintf("%q is not a loopback address and no API key is set: set api_keys_file or $%s", s.sc.Listen, s.sc.APIKeysEnv)}
	}
	for _, name := range s.sc.Served {
		if name == prod.Name {
			continue
		}
		rt, err := newRoute(s.cfg.Backends[name], s.tr, s.pool, s.upstreamError)
		if err != nil {
			return nil, err
		}
		s.served = append(s.served, rt)
	}
	if s.prod, err = newProdCtl(s, prod); err != nil {
		return nil, err
	}
	s.ctlDir = opts.ControlDir
	if s.ctlDir == "" {
		if s.ctlDir, err = ControlDir(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Run serves until ctx is cancelled, then stops gracefully: the listener
// closes, in-flight requests get up to [serve].drain_timeout, and a
// managed production is left running (recorded) or stopped as [serve].
// on_exit says. It returns nil after a graceful stop; errors are the
// listener's or the control socket's (nothing was started then).
func (s *Server) Run(ctx context.Context) error {
	s.started = time.Now()
	if err := s.openLogs(); err != nil {
		return err
	}
	defer s.closeLogs()

	// Who else serves comes first: another router on this state folder
	// (the control socket answers), then one on this production endpoint
	// from another folder (its lease), then the port.
	ctl, err := s.listenControl()
	if err != nil {
		return err
	}
	closeCtl := func() {
		ctl.Close()
		os.Remove(SocketPath(s.ctlDir))
	}
	hold, err := s.holdProduction()
	if err != nil {
		closeCtl()
		return err
	}
	defer hold.Release()
	ln, err := net.Listen("tcp", s.sc.Listen)
	if err != nil {
		closeCtl()
		return fmt.Errorf("serve: cannot listen on %s: %w; pick another port with --listen or [serve] listen", s.sc.Listen, err)
	}
	scheme := "http"
	if s.sc.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(s.sc.TLSCert, s.sc.TLSKey)
		if err != nil {
			ln.Close()
			closeCtl()
			return fmt.Errorf("serve.tls_cert: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		scheme = "https"
	}
	s.addr = scheme + "://" + listenAddr(s.sc.Listen, ln.Addr())

	// Production supervision runs until the end of Run.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		s.prod.run(pctx)
	}()

	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10, ErrorLog: nil}
	ctlSrv := &http.Server{Handler: s.controlHandler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	go func() { errc <- ctlSrv.Serve(ctl) }()
	s.event("listening", map[string]any{"listen": s.addr, "control_socket": SocketPath(s.ctlDir), "production": s.prod.name()})
	if s.opts.Ready != nil {
		s.opts.Ready(s.addr)
	}
	// A long-running router's resident memory is what it serves with,
	// not what start-up touched.
	procmem.Trim()
	if s.opts.OwnsProcess {
		s.procs = newProcsPolicy(s.sc.Procs, func(n int) { s.metrics.procs.Set(float64(n)) })
	}
	s.metrics.procs.Set(float64(runtime.GOMAXPROCS(0)))
	servedDone := make(chan struct{})
	go func() {
		defer close(servedDone)
		s.watchServed(pctx)
	}()
	procsDone := make(chan struct{})
	go func() {
		defer close(procsDone)
		s.procs.run(pctx, s.inFlight.Load)
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		runErr = fmt.Errorf("serve: %w", err)
	}
	// Graceful stop: no new connections, in-flight requests drain.
	s.event("stopping", map[string]any{"in_flight": s.inFlight.Load(), "drain_timeout": s.sc.DrainTimeout.String()})
	dctx, dcancel := context.WithTimeout(context.Background(), s.sc.DrainTimeout.Duration)
	if err := srv.Shutdown(dctx); err != nil {
		s.event("drain_timeout", map[string]any{"in_flight": s.inFlight.Load()})
		srv.Close()
	}
	dcancel()
	ctlSrv.Close()
	os.Remove(SocketPath(s.ctlDir))
	pcancel()
	<-prodDone
	<-procsDone
	<-servedDone
	s.prod.shutdown(s.sc.OnExit)
	// The drained requests' lines come before "stopped" (both may go to
	// stderr).
	s.access.Flush()
	s.event("stopped", nil)
	return runErr
}

// holdProduction takes the router lease of production's endpoint
// (lease.RouterKey): one router per production, whatever folder or
// configuration it runs from. A live holder is an error naming it.
func (s *Server) holdProduction() (*lease.Hold, error) {
	dir, err := lease.Dir()
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	prof := s.prod.prof()
	l := &lease.Lease{Kind: lease.KindCommand, Command: "hiro serve", Config: s.cfg.Path, Production: prof.Name}
	h, err := lease.Acquire(dir, l, lease.RouterKey(prof.BaseURL))
	if err != nil {
		var held *lease.HeldError
		if errors.As(err, &held) && held.Holder != nil {
			return nil, fmt.Errorf("serve: production %s (%s) is already served by hiro serve pid %d (configuration %s): one router per production; stop that one first, or use it",
				prof.Name, prof.BaseURL, held.Holder.PID, held.Holder.Config)
		}
		return nil, fmt.Errorf("serve: %w", err)
	}
	return h, nil
}

// listenAddr is the address the router says it listens on: the bound
// one (the port chosen for ":0"), with the configured host kept when the
// socket is bound to every address (Go binds "0.0.0.0" dual-stack and
// reports "[::]", which is not what the operator wrote). A listen
// without a host (":8400") says the bound address, one a client can use.
func listenAddr(configured string, bound net.Addr) string {
	ta, ok := bound.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return bound.String()
	}
	host, _, err := net.SplitHostPort(configured)
	if err != nil || host == "" {
		return bound.String()
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}

// Addr returns the router's address (scheme://host:port) once it listens.
func (s *Server) Addr() string { return s.addr }

func (s *Server) openLogs() error {
	s.events = s.opts.Events
	if s.events == nil {
		s.events = os.Stderr
	}
	dir := filepath.Join(s.cfg.StateDir, "serve")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("serve: creating %s: %w; check state_dir", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "events.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("serve: opening the event log: %w", err)
	}
	s.evFile = f
	switch {
	case s.opts.AccessLog != nil:
		s.access = newAccessLog(s.opts.AccessLog, nil)
	case s.sc.AccessLog == "off":
	case s.sc.AccessLog == "-":
		s.access = newAccessLog(os.Stderr, nil)
	default:
		af, err := os.OpenFile(s.sc.AccessLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			f.Close()
			return fmt.Errorf("serve.access_log: %w", err)
		}
		s.access = newAccessLog(af, af)
	}
	return nil
}

func (s *Server) closeLogs() {
	s.access.Close()
	if s.evFile != nil {
		s.evFile.Close()
	}
}

// event writes one supervision event as a JSON line.
func (s *Server) event(kind string, fields map[string]any) {
	m := map[string]any{"time": time.Now().UTC(), "event": kind}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	// Events quote engine logs and root causes: keys never reach stderr
	// (journald under systemd) or events.jsonl.
	b = append([]byte(redact.Secrets(string(b))), '\n')
	s.eventsMu.Lock()
	defer s.eventsMu.Unlock()
	if s.events != nil {
		s.events.Write(b)
	}
	if s.evFile != nil {
		s.evFile.Write(b)
	}
}

// upstreamError counts a proxied request's upstream failure and asks the
// watcher to look at production now. Production refusing or dropping the
// connection (connect, reset) most likely died: the client gets 503 with
// Retry-After, as it will once the watcher has seen the death, not 502.
func (s *Server) upstreamError(rt *route, class string) (reason string, retry int) {
	s.metrics.upErrors.WithLabelValues(rt.name, class).Inc()
	if class == "canceled" || rt != s.prod.current() {
		return "", 0
	}
	s.prod.poke()
	if class == "connect" || class == "reset" {
		return fmt.Sprintf("production %s is not answering (%s); hiro serve is checking it; retry in %d s", rt.name, class, retryAfterRestarting), retryAfterRestarting
	}
	return "", 0
}

// ServeHTTP is the router's front door.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case RouteChat, RouteCompletions, RouteEmbeddings:
		s.proxyRequest(w, r, r.URL.Path)
	case RouteModels:
		s.answerLocally(w, r, func(w http.ResponseWriter) {
			if !s.keys.check(r) {
				s.unauthorized(w, r)
				return
			}
			s.models(w, r)
		})
	case "/metrics":
		if !s.metKeys.check(r) {
			s.answerLocally(w, r, func(w http.ResponseWriter) { s.unauthorized(w, r) })
			return
		}
		s.metrics.handler().ServeHTTP(w, r)
	case "/health":
		// For load balancers and systemd: production's state, no detail.
		st := s.prod.state()
		code := http.StatusOK
		if st != StateReady || s.draining.Load() {
			code = http.StatusServiceUnavailable
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, "{\"status\":%q}\n", st)
	default:
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s: the router serves POST %s, %s, %s and GET %s",
			r.Method, r.URL.Path, RouteChat, RouteCompletions, RouteEmbeddings, RouteModels), 0)
	}
}

// unauthorized answers 401 to a request without a valid key.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	msg := "missing API key: send \"Authorization: Bearer KEY\""
	if r.Header.Get("Authorization") != "" {
		msg = "invalid API key"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="hiro"`)
	writeError(w, http.StatusUnauthorized, "invalid_api_key", msg, 0)
}

// answerLocally runs f, an answer the router makes itself (GET
// /v1/models, a key refused on /metrics), and records it as a proxied
// request is: hiro_serve_requests_total by route and status (no backend,
// no latency series) and an access log line with the bytes sent.
// /metrics scrapes and /health polls that pass are not recorded: they
// come every few seconds from machines, not clients.
func (s *Server) answerLocally(w http.ResponseWriter, r *http.Request, f func(w http.ResponseWriter)) {
	rw := &respWriter{ResponseWriter: w, start: time.Now()}
	f(rw)
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	s.metrics.observe(r.URL.Path, "", rw.status, 0, 0)
	e := accessEntry{Time: rw.start.UTC(), Remote: r.RemoteAddr, Method: r.Method, Path: r.URL.Path,
		Status: rw.status, Bytes: rw.bytes, DurationMS: float64(time.Since(rw.start).Microseconds()) / 1000}
	switch rw.status {
	case http.StatusUnauthorized:
		e.Error = "unauthorized"
	case http.StatusMethodNotAllowed:
		e.Error = "method_not_allowed"
	}
	s.access.log(&e)
}

// modelNames lists the model names the router accepts, production's first.
func (s *Server) modelNames() []string {
	p := s.prod.current()
	var names []string
	if s.sc.Alias != "" {
		names = append(names, s.sc.Alias)
	}
	names = append(names, p.prof.Model)
	var rest []string
	for _, rt := range s.served {
		rest = append(rest, rt.prof.Model)
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// lookup returns the backend a request for model goes to, nil when none.
func (s *Server) lookup(model string) *route {
	p := s.prod.current()
	if (s.sc.Alias != "" && model == s.sc.Alias) || p.matches(model) {
		return p
	}
	for _, rt := range s.served {
		if rt.matches(model) {
			return rt
		}
	}
	return nil
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use GET "+RouteModels, 0)
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
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// proxyRequest handles one OpenAI API request: key, bounded body, model
// routing, production's state, then the reverse proxy.
func (s *Server) proxyRequest(w http.ResponseWriter, r *http.Request, routeName string) {
	rw := &respWriter{ResponseWriter: w, start: time.Now()}
	e := accessEntry{Remote: r.RemoteAddr, Method: r.Method, Path: routeName}
	var rt *route
	defer func() {
		// ReverseProxy aborts a response cut mid-body (the client left,
		// or the upstream broke) by panicking with http.ErrAbortHandler:
		// record it as what it was, then let net/http abort.
		cut := recover()
		if cut != nil && cut != http.ErrAbortHandler {
			panic(cut)
		}
		if rw.status == 0 {
			rw.status = 499
		}
		backend := ""
		if rt != nil {
			backend = rt.name
		}
		if cut != nil {
			if r.Context().Err() != nil {
				rw.status, e.Error = 499, "client left mid-response"
			} else {
				rw.errClass = "cut"
				s.metrics.upErrors.WithLabelValues(backend, "cut").Inc()
			}
		}
		end := time.Since(rw.start)
		s.procs.done(end)
		m := s.metrics
		ttfb := rw.ttfb
		if rt == nil {
			ttfb = 0 // refused before any backend: no latency series
		}
		m.observe(routeName, backend, rw.status, ttfb, end)
		if rw.wantTail && rw.status == http.StatusOK {
			if p, c, ok := usageOf(rw.tail); ok {
				m.tokens.WithLabelValues(backend, "prompt").Add(float64(p))
				m.tokens.WithLabelValues(backend, "completion").Add(float64(c))
				e.Prompt, e.Completion = p, c
			}
		}
		if s.access != nil {
			e.Time = rw.start.UTC()
			e.Backend, e.Status, e.Bytes = backend, rw.status, rw.bytes
			e.TTFBMS = float64(rw.ttfb.Microseconds()) / 1000
			e.DurationMS = float64(end.Microseconds()) / 1000
			if rw.errClass == "cut" {
				e.Error = "upstream cut mid-response"
			} else if rw.errClass != "" {
				e.Error = "upstream " + rw.errClass
			}
			s.access.log(&e)
		}
		if cut != nil {
			panic(cut)
		}
	}()
	fail := func(status int, typ, msg string, retryAfter int) {
		e.Error = typ
		writeError(rw, status, typ, msg, retryAfter)
	}
	if !s.keys.check(r) {
		msg := "missing API key: send \"Authorization: Bearer KEY\""
		if r.Header.Get("Authorization") != "" {
			msg = "invalid API key"
		}
		rw.Header().Set("WWW-Authenticate", `Bearer realm="hiro"`)
		fail(http.StatusUnauthorized, "invalid_api_key", msg, 0)
		return
	}
	if r.Method != http.MethodPost {
		rw.Header().Set("Allow", http.MethodPost)
		fail(http.StatusMethodNotAllowed, "invalid_request_error", fmt.Sprintf("use POST %s (got %s)", routeName, r.Method), 0)
		return
	}
	if s.draining.Load() {
		if ok, retry, why := s.prod.gate(r.Context(), 0); !ok {
			fail(http.StatusServiceUnavailable, "unavailable", why, retry)
			return
		}
		fail(http.StatusServiceUnavailable, "unavailable", "the router is draining (a hand-over or a stop); retry later", retryAfterDraining)
		return
	}
	// The body has Options.BodyReadTimeout to arrive (the server's own timeout
	// covers the headers only: a read deadline left on the connection
	// would cancel a long answer streaming back). A body sent a byte at a
	// time holds a connection no longer than that.
	rc := http.NewResponseController(rw)
	rc.SetReadDeadline(time.Now().Add(s.bodyTimeout))
	body, tooLarge, err := readBody(r, s.sc.MaxBodyBytes)
	if err == nil && !tooLarge {
		rc.SetReadDeadline(time.Time{})
	}
	// Otherwise the deadline stays: the connection closes after the
	// answer, and net/http's attempt to read the rest of the body ends at
	// once instead of waiting on the client.
	switch {
	case tooLarge:
		rw.Header().Set("Connection", "close")
		fail(http.StatusRequestEntityTooLarge, "request_too_large",
			fmt.Sprintf("request body is larger than %d bytes ([serve] max_body_bytes); send a smaller request or raise the bound", s.sc.MaxBodyBytes), 0)
		return
	case err != nil:
		rw.Header().Set("Connection", "close")
		msg := "reading the request body: " + err.Error()
		if isTimeout(err) {
			msg = fmt.Sprintf("reading the request body: it did not arrive within %s; send the whole body at once", s.bodyTimeout)
		}
		fail(http.StatusBadRequest, "invalid_request_error", msg, 0)
		return
	}
	if !gjson.ValidBytes(body) {
		fail(http.StatusBadRequest, "invalid_request_error", "request body is not valid JSON: "+jsonSyntaxError(body), 0)
		return
	}
	mv, stream, dup := requestFields(body)
	if dup != "" {
		// Engines decode the last of two equal keys, a first-match
		// reader the first: "model" twice would route by one name and
		// run another (any model the backend holds).
		fail(http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("request body names the key %q more than once; send each key once", redact.Secrets(dup)), 0)
		return
	}
	if mv.Type != gjson.String || mv.Str == "" {
		fail(http.StatusBadRequest, "invalid_request_error", "request has no \"model\" string; use one of: "+listModels(s.modelNames()), 0)
		return
	}
	model := mv.Str
	e.Model = model
	e.Stream = stream
	if rt = s.lookup(model); rt == nil {
		// Not a served name: whatever a client sent (a key pasted into
		// the wrong field) stays out of the access log.
		e.Model = redact.Secrets(model)
		fail(http.StatusNotFound, "model_not_found", fmt.Sprintf("model %q is not served here; served: %s", model, listModels(s.modelNames())), 0)
		return
	}
	if rt != s.prod.current() && rt.watch.down() {
		fail(http.StatusServiceUnavailable, "unavailable", fmt.Sprintf("backend %s is not answering its health check; retry in %d s", rt.name, retryAfterRestarting), retryAfterRestarting)
		return
	}
	if rt == s.prod.current() {
		if ok, retry, why := s.prod.gate(r.Context(), s.sc.WaitForReady.Duration); !ok {
			fail(http.StatusServiceUnavailable, "unavailable", why, retry)
			return
		}
		// The route may have switched while waiting.
		rt = s.prod.current()
		// Counted on its route before it is used, so that a switch can
		// wait for the previous production's requests before its caller
		// stops that backend; picked again if the route switched meanwhile.
		for {
			rt.inFlight.Add(1)
			cur := s.prod.current()
			if cur == rt {
				break
			}
			rt.inFlight.Add(-1)
			rt = cur
		}
		counted := rt
		defer counted.inFlight.Add(-1)
	}
	if model != rt.prof.Model {
		if body, err = withModel(body, rt.prof.Model); err != nil {
			fail(http.StatusBadRequest, "invalid_request_error", "cannot set the model field: "+err.Error(), 0)
			return
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	rw.wantTail = routeName != RouteModels
	s.inFlight.Add(1)
	s.metrics.inFlight.Inc()
	// ReverseProxy aborts a response whose copy failed (a client that
	// left mid-stream) by panicking with http.ErrAbortHandler: the count
	// must come down all the same.
	defer func() {
		s.metrics.inFlight.Dec()
		s.inFlight.Add(-1)
	}()
	rt.proxy.ServeHTTP(rw, r)
	// Send what is buffered now: the net/http server would send a short
	// answer only after this handler returns, that is after the metrics
	// and the access log line below, which the client need not wait for.
	if rw.status != 0 && rw.status != 499 {
		rw.Flush()
	}
	if rw.status/100 == 2 && rw.errClass == "" && rt == s.prod.current() {
		s.prod.served()
	}
}

// DefaultBodyReadTimeout bounds the reading of a request body (8 MiB,
// the default bound, at 100 KB/s takes 80 s).
const DefaultBodyReadTimeout = 2 * time.Minute

// Retry-After values (seconds) by cause.
const (
	retryAfterDraining   = 5
	retryAfterRestarting = 5
	retryAfterHandedOver = 30
	retryAfterDown       = 60
)

// drain refuses new requests and waits up to timeout for in-flight ones.
func (s *Server) drain(ctx context.Context, timeout time.Duration) DrainResult {
	s.draining.Store(true)
	start := time.Now()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.inFlight.Load() > 0 {
		select {
		case <-ctx.Done():
		case <-deadline.C:
		case <-tick.C:
			continue
		}
		break
	}
	n := s.inFlight.Load()
	return DrainResult{Drained: n == 0, InFlight: n, WaitedMS: time.Since(start).Milliseconds()}
}

// Status returns the router's status.
func (s *Server) Status() Status {
	st := Status{Schema: StatusSchema, PID: os.Getpid(), StartedAt: s.started, Config: s.cfg.Path, Listen: s.addr,
		Alias: s.sc.Alias, InFlight: s.inFlight.Load(), Draining: s.draining.Load(), Models: s.modelNames()}
	st.Production, st.Handover = s.prod.status()
	for _, rt := range s.served {
		state, since, msg, last := rt.watch.snapshot()
		if state == "" {
			state, since, msg = StateStarting, s.started, "served as is; not checked yet"
		}
		st.Served = append(st.Served, BackendStatus{Name: rt.name, Engine: rt.prof.Engine, BaseURL: rt.prof.BaseURL,
			Model: rt.prof.Model, Managed: false, State: state, Since: since, Message: msg, LastHealth: last})
	}
	return st
}

// listenControl opens the control socket (0600 in a 0700 folder). A
// socket left by a dead router is removed; a live one is an error.
func (s *Server) listenControl() (net.Listener, error) {
	if err := privateDir(s.ctlDir); err != nil {
		return nil, err
	}
	path := SocketPath(s.ctlDir)
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("serve: another hiro serve answers on %s; stop it first (`hiro status` says which)", path)
	}
	os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("serve: control socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("serve: control socket %s: %w", path, err)
	}
	return ln, nil
}

func (s *Server) controlHandler() http.Handler {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, code int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(v)
	}
	fail := func(w http.ResponseWriter, code int, format string, a ...any) {
		reply(w, code, map[string]string{"error": fmt.Sprintf(format, a...)})
	}
	decode := func(w http.ResponseWriter, r *http.Request, v any) bool {
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil && !errors.Is(err, io.EOF) {
			fail(w, http.StatusBadRequest, "bad request body: %v", err)
			return false
		}
		return true
	}
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { reply(w, 200, s.Status()) })
	mux.HandleFunc("POST /v1/drain", func(w http.ResponseWriter, r *http.Request) {
		var req drainRequest
		if !decode(w, r, &req) {
			return
		}
		d := time.Duration(req.TimeoutMS) * time.Millisecond
		if d <= 0 {
			d = s.sc.DrainTimeout.Duration
		}
		s.event("drain", map[string]any{"timeout": d.String()})
		reply(w, 200, s.drain(r.Context(), d))
	})
	mux.HandleFunc("POST /v1/resume", func(w http.ResponseWriter, r *http.Request) {
		if s.prod.handedOver() {
			fail(w, http.StatusConflict, "production is handed over to a campaign; it resumes with take back")
			return
		}
		s.draining.Store(false)
		s.event("resume", nil)
		reply(w, 200, s.Status())
	})
	mux.HandleFunc("POST /v1/handover", func(w http.ResponseWriter, r *http.Request) {
		var req handoverRequest
		if !decode(w, r, &req) {
			return
		}
		if strings.TrimSpace(req.Campaign) == "" || req.LeaseOwnerPID <= 0 {
			fail(w, http.StatusBadRequest, "handover needs campaign and lease_owner_pid")
			return
		}
		d := time.Duration(req.TimeoutMS) * time.Millisecond
		if d <= 0 {
			d = s.sc.DrainTimeout.Duration
		}
		res, code, err := s.prod.handOver(r.Context(), req.Campaign, req.LeaseOwnerPID, d)
		if err != nil {
			fail(w, code, "%v", err)
			return
		}
		reply(w, 200, res)
	})
	mux.HandleFunc("POST /v1/takeback", func(w http.ResponseWriter, r *http.Request) {
		var req takebackRequest
		if !decode(w, r, &req) {
			return
		}
		v, code, err := s.prod.takeback(r.Context(), req.Campaign, false)
		if err != nil {
			fail(w, code, "%v", err)
			return
		}
		reply(w, 200, v)
	})
	mux.HandleFunc("POST /v1/switch", func(w http.ResponseWriter, r *http.Request) {
		var req switchRequest
		if !decode(w, r, &req) {
			return
		}
		res, code, err := s.prod.switchTo(r.Context(), req.Profile, req.Effective, req.Campaign)
		if err != nil {
			fail(w, code, "%v", err)
			return
		}
		reply(w, 200, res)
	})
	return mux
}
