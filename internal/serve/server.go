package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/valyala/fasthttp"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/procmem"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Options tune a router. Config is required; the rest have defaults.
type Options struct {
	// Config is the loaded configuration ([serve], the profiles, state_dir).
	Config *config.Config
	// Listen overrides [serve].listen (the --listen flag).
	Listen string
	// ControlDir is where the control socket goes; default control.Dir().
	ControlDir string
	// Production, when set, is the production profile (an activated
	// one), used as is: 'hiro serve' resolves production once, says
	// which, and passes it here (ProductionOf); default
	// ProductionProfile(Config).
	Production *config.Profile
	// CampaignHolding reports the live hiro that holds production's
	// lease, or nil; default LeaseHolder (package lease). The router never
	// starts or restarts production while one does.
	CampaignHolding func(prod *config.Profile) *control.HandoverInfo
	// RecoverCampaign, when set, settles what a campaign whose hiro died
	// left behind (its candidate, its leases: qualify.RecoverCampaign),
	// called off the watch's goroutine once the router took production
	// back from that campaign's hand-over; progress lines go to the
	// event log.
	RecoverCampaign func(ctx context.Context, campaign string, progress func(string))
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
	// MaxConnections bounds the client connections open at once; default
	// DefaultMaxConnections.
	MaxConnections int
	// MaxUnauthenticated bounds the connections open at once on which
	// no request passed the key check yet (conns.go); default
	// DefaultMaxUnauthenticated, at most MaxConnections.
	MaxUnauthenticated int
	// MaxUnauthenticatedPerAddress bounds those of one client address
	// (an IPv6 /64); default DefaultMaxUnauthenticatedPerAddress.
	MaxUnauthenticatedPerAddress int
	// HeaderTimeout bounds the arrival of a request's line and headers,
	// from the connection's opening (or a kept-alive connection's next
	// first byte); default 10 s.
	HeaderTimeout time.Duration
	// Reopen, when set, delivers the requests to reopen the log files
	// (`hiro serve` passes SIGHUP, so that log rotation never kills the
	// router): the access log when [serve] access_log is a path, and
	// events.jsonl; each is recorded as a "reopened" event (or
	// "reopen_failed": the file open before is kept).
	Reopen <-chan os.Signal
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
	prod     *prodCtl
	served   []*route
	inFlight atomic.Int64
	shadow   shadowState  // the shadow run mirroring production's requests (shadow.go)
	ramp     rampState    // the progressive ramp to a candidate (ramp.go)
	procs    *procsPolicy // nil: the processors do not adapt
	// reqBase is the parent of every proxied request's context; Run
	// cancels it when the drain after a stop times out.
	reqBase        context.Context
	cancelRequests context.CancelFunc
	metricsHandler fasthttp.RequestHandler
	// bodyPending holds, for a request whose body fasthttp is reading
	// (key: &RequestCtx.Request.Header), its route and method (a
	// *pendingReq; see onReadError).
	bodyPending sync.Map
	// bodyTimeout is Options.BodyReadTimeout or its default.
	bodyTimeout time.Duration
	// maxConns is Options.MaxConnections or its default.
	maxConns int
	// conns admits and counts the client connections (conns.go).
	conns *connGate
	// headerTimeout is Options.HeaderTimeout or its default.
	headerTimeout time.Duration
	draining      atomic.Bool
	started       time.Time
	addr          string // scheme://host:port once listening
	ctlDir        string
	// tlsPair is [serve] tls_cert and tls_key, read and checked by New;
	// nil without TLS.
	tlsPair *tls.Certificate

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
	return ProductionOf(cfg, a)
}

// ProductionOf is ProductionProfile for a production already resolved
// (production.Resolve of cfg): a copy of its profile under its name, for
// Options.Production, so that a command that says which production it
// serves and the router serve the one resolution. A nil a (nothing names
// a production) is a *config.Error on production.backend.
func ProductionOf(cfg *config.Config, a *production.Active) (*config.Profile, error) {
	if a == nil || a.Profile == nil {
		return nil, &config.Error{File: cfg.Path, Key: "production.backend", Msg: "no production profile: hiro serve routes to production; set [production] backend = \"NAME\""}
	}
	p := a.Profile.Clone()
	p.Name = a.Name
	return p, nil
}

// New checks the configuration, reads the keys and prepares the router;
// it starts nothing. Errors say what to fix; a managed production
// recorded as running with another configuration is a
// *ForeignProductionError (nothing is stopped for a configuration
// change).
func New(opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("serve: Options.Config is nil")
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	s := &Server{cfg: opts.Config, sc: opts.Config.Serve, opts: opts, metrics: newMetrics(), tr: newDirectTransport(NewTransport()),
		bodyTimeout: opts.BodyReadTimeout}
	s.reqBase, s.cancelRequests = context.WithCancel(context.Background())
	s.metricsHandler = s.newMetricsHandler()
	if s.bodyTimeout <= 0 {
		s.bodyTimeout = DefaultBodyReadTimeout
	}
	if s.maxConns = opts.MaxConnections; s.maxConns <= 0 {
		s.maxConns = DefaultMaxConnections
	}
	s.conns = newConnGate(s.maxConns, orDefault(opts.MaxUnauthenticated, DefaultMaxUnauthenticated),
		orDefault(opts.MaxUnauthenticatedPerAddress, DefaultMaxUnauthenticatedPerAddress), s.metrics.connsCut)
	s.metrics.registerConns(s.conns)
	if s.headerTimeout = opts.HeaderTimeout; s.headerTimeout <= 0 {
		s.headerTimeout = headerTimeout
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
	if s.sc.TLSCert != "" && s.sc.TLSKey != "" {
		pair, err := loadTLSPair(opts.Config)
		if err != nil {
			return nil, err
		}
		s.tlsPair = &pair
	}
	var err error
	if s.keys, err = loadKeys(s.sc.APIKeysFile, "serve.api_keys_file", s.sc.APIKeysEnv, opts.LookupEnv); err != nil {
		return nil, err
	}
	if s.metKeys, err = loadKeys(s.sc.MetricsKeyFile, "serve.metrics_key_file", s.sc.MetricsKeyEnv, opts.LookupEnv); err != nil {
		return nil, err
	}
	if err := checkKeyEnvs(opts.Config, opts.LookupEnv); err != nil {
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
		rt, err := newRoute(s.cfg.Backends[name], s.tr, s.upstreamError)
		if err != nil {
			return nil, err
		}
		s.served = append(s.served, rt)
	}
	// A production recorded as running with another configuration is
	// not stopped for a configuration change: refused before anything
	// listens or starts (hiro serve exits 2), as 'hiro backend start'.
	if err := CheckRecordedProduction(opts.Config, prod); err != nil {
		return nil, err
	}
	if s.prod, err = newProdCtl(s, prod); err != nil {
		return nil, err
	}
	s.ctlDir = opts.ControlDir
	if s.ctlDir == "" {
		if s.ctlDir, err = control.Dir(); err != nil {
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
	stopDebug, err := startDebug()
	if err != nil {
		return err
	}
	defer stopDebug()
	if err := s.openLogs(); err != nil {
		return err
	}
	defer s.closeLogs()
	if s.opts.Reopen != nil {
		stopReopen := make(chan struct{})
		reopenDone := make(chan struct{})
		go func() {
			defer close(reopenDone)
			for {
				select {
				case <-s.opts.Reopen:
					s.reopenLogs()
				case <-stopReopen:
					return
				}
			}
		}()
		defer func() { close(stopReopen); <-reopenDone }()
	}

	// Who else serves comes first: another router on this state folder
	// (the control socket answers), then one on this production endpoint
	// from another folder (its lease), then the port.
	ctl, err := s.listenControl()
	if err != nil {
		return err
	}
	closeCtl := func() {
		ctl.Close()
		os.Remove(control.SocketPath(s.ctlDir))
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
		return fmt.Errorf("serve: cannot listen on %s: %w%s; pick another port with --listen or [serve] listen", s.sc.Listen, err, listenHolder(s.sc.Listen, err))
	}
	scheme := "http"
	if s.tlsPair != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*s.tlsPair}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}})
		scheme = "https"
	}
	s.addr = scheme + "://" + listenAddr(s.sc.Listen, ln.Addr())

	// Production supervision runs until the end of Run. With on_exit =
	// "leave", a start in progress at the stop may end within
	// drain_timeout (finish), so that production is left running.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	finish, cancelFinish := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelFinish()
	if s.sc.OnExit != config.ServeOnExitStop {
		s.prod.finish = finish
	}
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		s.prod.run(pctx)
	}()

	// Set before the front door serves: every exchange reads it.
	if s.opts.OwnsProcess {
		s.procs = newProcsPolicy(s.sc.Procs, func(n int) { s.metrics.procs.Set(float64(n)) })
	}
	srv := s.newFront()
	ctlSrv := &http.Server{Handler: s.controlHandler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(&clientListener{Listener: ln, gate: s.conns}) }()
	go func() { errc <- ctlSrv.Serve(ctl) }()
	s.event("listening", map[string]any{"listen": s.addr, "control_socket": control.SocketPath(s.ctlDir), "production": s.prod.name()})
	if s.opts.Ready != nil {
		s.opts.Ready(s.addr)
	}
	// A long-running router's resident memory is what it serves with,
	// not what start-up touched: trimmed now, and again once production
	// is first ready (its start or adoption, running meanwhile, touches
	// code and tables the serving path does not: idle RSS measured 12 or
	// 22 MB depending on which came first).
	procmem.Trim()
	go func() {
		s.prod.mu.Lock()
		ready := s.prod.readyCh
		s.prod.mu.Unlock()
		select {
		case <-ready:
			procmem.Trim()
		case <-ctx.Done():
		}
	}()
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
	stopAt := time.Now()
	s.event("stopping", map[string]any{"in_flight": s.inFlight.Load(), "drain_timeout": s.sc.DrainTimeout.String()})
	dctx, dcancel := context.WithTimeout(context.Background(), s.sc.DrainTimeout.Duration)
	if err := srv.ShutdownWithContext(dctx); err != nil {
		// What is still in flight is cut: its backend requests are
		// cancelled, which ends their answers (bounded: a client that
		// reads nothing holds a write, closed with its connection).
		s.event("drain_timeout", map[string]any{"in_flight": s.inFlight.Load()})
		s.cancelRequests()
		cutWait := time.Now().Add(2 * time.Second)
		for s.inFlight.Load() > 0 && time.Now().Before(cutWait) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	dcancel()
	s.cancelRequests()
	ctlSrv.Close()
	os.Remove(control.SocketPath(s.ctlDir))
	pcancel()
	// A start of production in progress (on_exit = "leave") has until
	// drain_timeout from the stop to end; then it is cut, and says so.
	finishBy := time.NewTimer(time.Until(stopAt.Add(s.sc.DrainTimeout.Duration)))
	select {
	case <-prodDone:
	case <-finishBy.C:
		cancelFinish()
		<-prodDone
	}
	finishBy.Stop()
	<-procsDone
	<-servedDone
	if s.ramp.run.Load() != nil {
		s.stopRamp(context.Background(), "hiro serve stopped", false)
	}
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
	l := &lease.Lease{Kind: lease.KindCommand, Command: "hiro serve", Config: s.cfg.Path, Production: prof.Name,
		Control: control.SocketPath(s.ctlDir)}
	h, err := lease.Acquire(dir, l, lease.RouterKey(prof.BaseURL))
	if err != nil {
		var held *lease.HeldError
		if errors.As(err, &held) && held.Holder != nil {
			return nil, busyError{fmt.Errorf("serve: production %s (%s) is already served by hiro serve pid %d (configuration %s): one router per production; stop that one first, or use it",
				prof.Name, prof.BaseURL, held.Holder.PID, held.Holder.Config)}
		}
		return nil, fmt.Errorf("serve: %w", err)
	}
	if err := CheckRouterElsewhere(s.cfg, prof); err != nil {
		h.Release()
		return nil, err
	}
	return h, nil
}

// RouterElsewhereError says that production's record names a process a
// live router watches (Record.Owner RouterOwner: it started or adopted
// it) whose lease this router cannot see: one under another HOME or
// HIRO_LEASE_DIR sharing the configuration's state_dir. Two routers on
// one production undo each other's restarts, so Run refuses
// (errors.Is(err, lease.ErrHeld): hiro serve exits 6, busy) and starts
// nothing.
type RouterElsewhereError struct {
	// Config is the router's configuration file; Record production's
	// record (its pid, and the watching router as Owner).
	Config string
	Record supervisor.RecordStatus
}

func (e *RouterElsewhereError) Error() string {
	r, o := e.Record, e.Record.Owner
	return fmt.Sprintf("serve: production %s (%s) is already served by another hiro serve (pid %d), which started or adopted its process (pid %d, record %s) and restarts it; "+
		"its lease is in another lease folder (another HOME or HIRO_LEASE_DIR), so only the record shows it. Two routers on one production undo each other's restarts: "+
		"stop that router (kill -TERM %d) and start this one again, or serve that one's address; for a trial beside it, give this router a production of its own (a profile on its own port, and its own state_dir)",
		r.Name, r.BaseURL, o.PID, r.PID, r.RecordPath, o.PID)
}

// Is makes errors.Is(err, lease.ErrHeld) true.
func (e *RouterElsewhereError) Is(target error) bool { return target == lease.ErrHeld }

// CheckRouterElsewhere returns a *RouterElsewhereError when prof's
// record in cfg's state_dir names a running process that another live
// router watches (RouterOwner), nil otherwise (no record, a stale one, no
// live owner, an owner that is not a router, this process).
func CheckRouterElsewhere(cfg *config.Config, prof *config.Profile) error {
	if prof.Unmanaged {
		return nil
	}
	st, ok := production.RouterWatching(cfg.StateDir, prof.Name)
	if !ok {
		return nil
	}
	return &RouterElsewhereError{Config: cfg.Path, Record: st}
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

// upstreamError counts a proxied request's upstream failure and asks the
// watcher to look at production now. Production (or a served backend)
// refusing or dropping the connection (connect, reset) most likely died:
// the client gets 503 with Retry-After, as it will once the watcher has
// seen the death, not 502.
func (s *Server) upstreamError(rt *route, class string) (reason string, retry int) {
	s.metrics.upErrors.WithLabelValues(rt.name, class).Inc()
	if class == "canceled" {
		return "", 0
	}
	if rt != s.prod.current() {
		// A served backend refusing or dropping the connection is not
		// answering: 503 + Retry-After, as once its health poll saw it.
		if class == "connect" || class == "reset" {
			return fmt.Sprintf("backend %s is not answering (%s); retry in %d s", rt.name, class, retryAfterRestarting), retryAfterRestarting
		}
		return "", 0
	}
	s.prod.poke()
	if class == "connect" || class == "reset" {
		return fmt.Sprintf("production %s is not answering (%s); hiro serve is checking it; retry in %d s", rt.name, class, retryAfterRestarting), retryAfterRestarting
	}
	return "", 0
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

// DefaultMaxConnections bounds the client connections the router holds
// open at once; one more is answered 503 and closed. Each open
// connection holds about 20 KiB (its 16 KiB read buffer, a goroutine):
// 4096 of them about 90 MB, whatever clients do with them.
const DefaultMaxConnections = 4096

// orDefault returns n, or def when n is not positive.
func orDefault(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
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

// listenHolder names who holds addr's port when listening on it failed
// for an address in use, as 'hiro backend start' does (", held by pid
// 5057 (python3)"); "" otherwise or when /proc does not show it.
func listenHolder(addr string, err error) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	_, p, serr := net.SplitHostPort(addr)
	port, perr := strconv.Atoi(p)
	if serr != nil || perr != nil {
		return ""
	}
	switch hs, unseen := procfs.Listeners(port); {
	case len(hs) > 0:
		return ", held by " + procfs.Describe(hs)
	case unseen > 0:
		return ", held by a process of another user's"
	}
	return ""
}
