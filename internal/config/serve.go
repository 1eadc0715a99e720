package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Defaults of the [serve] section (the router, `hiro serve`).
const (
	// DefaultServeListen is where the router listens: loopback only.
	DefaultServeListen = "127.0.0.1:8400"
	// DefaultServeMaxBodyBytes bounds a request body (8 MiB: long
	// documents in a prompt fit, a runaway upload does not).
	DefaultServeMaxBodyBytes = 8 << 20
	// DefaultServeHealthInterval is how often production's health is read.
	DefaultServeHealthInterval = 5 * time.Second
	// DefaultServeCanaryInterval is how often a bounded canary completion
	// is made when no real request succeeded in that time.
	DefaultServeCanaryInterval = time.Minute
	// DefaultServeRestartBudget and DefaultServeRestartWindow: at most
	// that many restarts of production in the window, then it stays down.
	DefaultServeRestartBudget = 3
	DefaultServeRestartWindow = 10 * time.Minute
	// DefaultServeRestartBackoff is the first wait before a restart; it
	// doubles per restart in the window up to DefaultServeRestartBackoffMax.
	DefaultServeRestartBackoff    = time.Second
	DefaultServeRestartBackoffMax = 30 * time.Second
	// DefaultServeDrainTimeout bounds the wait for in-flight requests at
	// shutdown, drain and hand-over.
	DefaultServeDrainTimeout = 30 * time.Second
	// DefaultServeResponseTimeout bounds the wait for a backend's answer
	// to begin (its status and headers) after a request was sent: a
	// queued or long non-streamed generation fits in it (LiteLLM's
	// default request timeout is 600 s, too); a backend that never
	// answers does not hold a client for ever.
	DefaultServeResponseTimeout = 10 * time.Minute
	// DefaultServeAPIKeysEnv is the environment variable read for API keys
	// (comma-separated) when api_keys_env is not set.
	DefaultServeAPIKeysEnv = "HIRO_SERVE_API_KEYS"
	// MaxServeProcs is the largest [serve] procs accepted: Go's own
	// GOMAXPROCS cap. The router clamps a fixed procs to the machine's
	// CPUs anyway (runtime.NumCPU).
	MaxServeProcs = 1024
	// Values of Serve.OnExit.
	ServeOnExitLeave = "leave"
	ServeOnExitStop  = "stop"
)

// Serve is the [serve] section: how `hiro serve` routes, watches
// production and authenticates. Every field is optional.
type Serve struct {
	// Listen is HOST:PORT of the router; default DefaultServeListen. A
	// host that is not loopback needs tls_cert, tls_key and API keys.
	Listen string `toml:"listen" json:"listen"`
	// Alias is the model name clients use for production (e.g.
	// "extraction"); production's own model id is served too.
	Alias string `toml:"alias" json:"alias,omitempty"`
	// Served names other backend profiles reachable through the router by
	// their own model id. Candidates under qualification never are.
	Served []string `toml:"served" json:"served,omitempty"`
	// MaxBodyBytes bounds a request body; larger ones get 413. Default
	// (and 0) DefaultServeMaxBodyBytes.
	MaxBodyBytes int64 `toml:"max_body_bytes" json:"max_body_bytes"`
	// APIKeysFile is a file of bearer keys, one per line ('#' starts a
	// comment); relative to the configuration's directory.
	APIKeysFile string `toml:"api_keys_file" json:"api_keys_file,omitempty"`
	// APIKeysEnv names an environment variable holding comma-separated
	// keys; default DefaultServeAPIKeysEnv. Keys from both are accepted;
	// with none, requests need no key (loopback only). Every key has at
	// least 16 characters (`hiro serve` refuses a shorter one). A
	// variable other than the default must be set and hold a key when
	// `hiro serve` starts (it exits 2 naming it otherwise); the default
	// may be unset.
	APIKeysEnv string `toml:"api_keys_env" json:"api_keys_env,omitempty"`
	// MetricsKeyFile and MetricsKeyEnv give /metrics its own key; without
	// one, /metrics takes the API keys. A MetricsKeyEnv that is unset or
	// empty when `hiro serve` starts is an error (exit 2), not "no key".
	MetricsKeyFile string `toml:"metrics_key_file" json:"metrics_key_file,omitempty"`
	MetricsKeyEnv  string `toml:"metrics_key_env" json:"metrics_key_env,omitempty"`
	// TLSCert and TLSKey are PEM files; required when Listen is not
	// loopback. `hiro serve` checks the pair before it starts anything
	// (exit 2 naming the key at fault); TLSKey must not be readable by
	// group or others (chmod 600), as APIKeysFile.
	TLSCert string `toml:"tls_cert" json:"tls_cert,omitempty"`
	TLSKey  string `toml:"tls_key" json:"tls_key,omitempty"`
	// HealthInterval and CanaryInterval: see the defaults; 0 (or unset)
	// means the default, not "never".
	// Each at least 100ms: a poll loop, not a spin (CheckValues).
	HealthInterval Duration `toml:"health_interval" json:"health_interval" floor:"100ms"`
	CanaryInterval Duration `toml:"canary_interval" json:"canary_interval" floor:"100ms"`
	// RestartBudget restarts of production in RestartWindow at most;
	// 0 (or unset) means the default (DefaultServeRestartBudget), as 0
	// does for RestartWindow.
	RestartBudget int      `toml:"restart_budget" json:"restart_budget"`
	RestartWindow Duration `toml:"restart_window" json:"restart_window"`
	// RestartBackoff is the first wait before a restart, doubling up to
	// RestartBackoffMax; it may not be larger than RestartBackoffMax. 0
	// (or unset) means the default for each.
	RestartBackoff    Duration `toml:"restart_backoff" json:"restart_backoff"`
	RestartBackoffMax Duration `toml:"restart_backoff_max" json:"restart_backoff_max"`
	// WaitForReady: while production is restarting, a request waits up to
	// this long for it before getting 503 with Retry-After (0: at once).
	WaitForReady Duration `toml:"wait_for_ready" json:"wait_for_ready"`
	// DrainTimeout bounds the wait for in-flight requests; 0 (or unset)
	// means the default.
	DrainTimeout Duration `toml:"drain_timeout" json:"drain_timeout"`
	// ResponseTimeout bounds the wait for a backend's answer to begin
	// (status and headers; a stream's chunks then take as long as they
	// take); past it the client gets 504. 0 (or unset) means the default.
	ResponseTimeout Duration `toml:"response_timeout" json:"response_timeout"`
	// OnExit is what happens to a managed production when the router
	// stops: "leave" it running (recorded, the next router adopts it) or
	// "stop" it. Default "leave".
	OnExit string `toml:"on_exit" json:"on_exit"`
	// AccessLog is where the JSON access log goes: a file path (relative
	// to the configuration's directory; its folder must exist: `hiro
	// serve` refuses to start otherwise), "-" for stderr, or "off".
	// Default "-".
	AccessLog string `toml:"access_log" json:"access_log"`
	// Procs is how many processors (Go's GOMAXPROCS) the router runs
	// on: 0 (default) adapts, one while requests come one at a time
	// (no hand-off between threads: lowest added latency) and all the
	// process may use when they overlap (throughput); N > 0 fixes N,
	// at most MaxServeProcs (1024) and clamped to the machine's CPUs
	// (runtime.NumCPU). A GOMAXPROCS environment variable overrides it. Figures:
	// bench/serve-proxy.sh.
	Procs int `toml:"procs" json:"procs,omitempty"`
}

func (c *Config) fillServeDefaults() {
	s := &c.Serve
	if s.Listen == "" {
		s.Listen = DefaultServeListen
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = DefaultServeMaxBodyBytes
	}
	if s.APIKeysEnv == "" {
		s.APIKeysEnv = DefaultServeAPIKeysEnv
	}
	setDur := func(d *Duration, def time.Duration) {
		if d.Duration == 0 {
			d.Duration = def
		}
	}
	setDur(&s.HealthInterval, DefaultServeHealthInterval)
	setDur(&s.CanaryInterval, DefaultServeCanaryInterval)
	setDur(&s.RestartWindow, DefaultServeRestartWindow)
	setDur(&s.RestartBackoff, DefaultServeRestartBackoff)
	setDur(&s.RestartBackoffMax, DefaultServeRestartBackoffMax)
	setDur(&s.DrainTimeout, DefaultServeDrainTimeout)
	setDur(&s.ResponseTimeout, DefaultServeResponseTimeout)
	if s.RestartBudget == 0 {
		s.RestartBudget = DefaultServeRestartBudget
	}
	if s.OnExit == "" {
		s.OnExit = ServeOnExitLeave
	}
	if s.AccessLog == "" {
		s.AccessLog = "-"
	}
	for _, p := range []*string{&s.APIKeysFile, &s.MetricsKeyFile, &s.TLSCert, &s.TLSKey} {
		*p = c.resolve(*p)
	}
	if s.AccessLog != "-" && s.AccessLog != "off" {
		s.AccessLog = c.resolve(s.AccessLog)
	}
}

// ValidateServe checks the [serve] section (after defaults are filled);
// Load calls it, and `hiro serve --listen` again for its override.
func (c *Config) ValidateServe() Errors {
	var es Errors
	s := &c.Serve
	add := func(key, format string, a ...any) {
		es = append(es, &Error{File: c.Path, Key: "serve." + key, Msg: fmt.Sprintf(format, a...)})
	}
	host, port, err := net.SplitHostPort(s.Listen)
	if err != nil {
		add("listen", "%q is not HOST:PORT; write it like \"127.0.0.1:8400\"", s.Listen)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		add("listen", "port %q is out of range; use 0-65535", port)
	} else if !IsLoopbackHost(host) && (s.TLSCert == "" || s.TLSKey == "") {
		add("listen", "%q is not a loopback address: set tls_cert and tls_key (and API keys) to serve beyond this machine, or listen on 127.0.0.1", s.Listen)
	}
	// The key named is the one missing.
	switch {
	case s.TLSCert != "" && s.TLSKey == "":
		add("tls_key", "is not set but tls_cert is: they go together; set tls_key to the certificate's private key (PEM), or remove tls_cert")
	case s.TLSCert == "" && s.TLSKey != "":
		add("tls_cert", "is not set but tls_key is: they go together; set tls_cert to the certificate (PEM), or remove tls_key")
	}
	if s.Alias != "" && !reName.MatchString(s.Alias) {
		add("alias", "invalid alias %q: use letters, digits, '.', '_' and '-' only", s.Alias)
	}
	for i, name := range s.Served {
		if _, ok := c.Backends[name]; !ok {
			add(fmt.Sprintf("served[%d]", i), "names %q, which is not a backend profile%s; known: %s", name, DidYouMean(name, c.BackendNames()), strings.Join(c.BackendNames(), ", "))
		}
	}
	if s.MaxBodyBytes < 0 {
		add("max_body_bytes", "must not be negative, got %d; give a size in bytes (0 or unset: the default, %d)", s.MaxBodyBytes, DefaultServeMaxBodyBytes)
	}
	if s.Procs < 0 || s.Procs > MaxServeProcs {
		add("procs", "must be 0 (adapt to the load) or a number of processors up to %d, got %d", MaxServeProcs, s.Procs)
	}
	if s.RestartBudget < 0 || s.RestartBudget > 100 {
		add("restart_budget", "must be between 0 and 100, got %d; give the most restarts of production in restart_window (0 or unset: the default, %d)", s.RestartBudget, DefaultServeRestartBudget)
	}
	// What 0 (or unset) means for each duration: the default, except
	// wait_for_ready.
	for _, d := range []struct {
		key  string
		v    Duration
		zero time.Duration
	}{{"health_interval", s.HealthInterval, DefaultServeHealthInterval}, {"canary_interval", s.CanaryInterval, DefaultServeCanaryInterval},
		{"restart_window", s.RestartWindow, DefaultServeRestartWindow}, {"restart_backoff", s.RestartBackoff, DefaultServeRestartBackoff},
		{"restart_backoff_max", s.RestartBackoffMax, DefaultServeRestartBackoffMax}, {"wait_for_ready", s.WaitForReady, -1},
		{"drain_timeout", s.DrainTimeout, DefaultServeDrainTimeout}, {"response_timeout", s.ResponseTimeout, DefaultServeResponseTimeout}} {
		if d.v.Duration >= 0 {
			continue
		}
		zero := fmt.Sprintf("the default, %s", d.zero)
		if d.zero < 0 {
			zero = "no wait, 503 at once"
		}
		add(d.key, "must not be negative, got %s; write a duration like \"30s\" (0 or unset: %s)", d.v.Duration, zero)
	}
	if s.RestartBackoff.Duration > s.RestartBackoffMax.Duration {
		add("restart_backoff", "%s is larger than restart_backoff_max (%s): the first wait before a restart cannot exceed the longest; lower restart_backoff or raise restart_backoff_max", s.RestartBackoff.Duration, s.RestartBackoffMax.Duration)
	}
	if s.OnExit != ServeOnExitLeave && s.OnExit != ServeOnExitStop {
		add("on_exit", "unknown value %q; use \"leave\" (production keeps running) or \"stop\"", s.OnExit)
	}
	if s.APIKeysEnv != "" && !reEnvName.MatchString(s.APIKeysEnv) {
		add("api_keys_env", "invalid environment variable name %q; use letters, digits and '_', not starting with a digit (e.g. %s)", s.APIKeysEnv, DefaultServeAPIKeysEnv)
	}
	if s.MetricsKeyEnv != "" && !reEnvName.MatchString(s.MetricsKeyEnv) {
		add("metrics_key_env", "invalid environment variable name %q; use letters, digits and '_', not starting with a digit (e.g. HIRO_METRICS_KEY)", s.MetricsKeyEnv)
	}
	return es
}

// IsLoopbackHost reports whether host (no port) is a loopback name or
// address: "localhost", 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
