package llm

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

// Warning is something unsafe in how a profile reaches its server that
// does not stop hiro: Key is the configuration key path
// ("backends.NAME.base_url"), Msg says what is wrong and what to do. A
// Warning never holds a key.
type Warning struct {
	Key string `json:"key"`
	Msg string `json:"message"`
}

// String is "MSG (KEY)": the key path last, so that the redaction step
// does not take the words after a key path ending in "key_file" for a
// secret.
func (w Warning) String() string { return w.Msg + " (" + w.Key + ")" }

// EndpointWarnings returns what is unsafe in how profile p sends its API
// key, in this order:
//
//   - the key goes over plain http to a host that is not this machine
//     (not localhost, 127.0.0.0/8 or ::1), where anyone on the path can
//     read it (key backends.NAME.base_url), unless the profile sets
//     allow_plain_http = true;
//   - the key file (api_key_file) may be read by its group or by others
//     (any of the mode bits 0077), where other users of the machine can
//     read it (key backends.NAME.api_key_file). A key from the environment
//     (api_key_env) has no such check.
//
// It reads nothing but the key file's mode; a profile without a key has
// no warning. Every command that reaches a profile's server prints these
// once per run (EndpointFor); hiro doctor lists them.
func EndpointWarnings(p *config.Profile) []Warning {
	var ws []Warning
	k := "backends." + p.Name
	hasKey := p.APIKeyEnv != "" || p.APIKeyFile != ""
	if u, err := url.Parse(p.BaseURL); err == nil && hasKey && strings.EqualFold(u.Scheme, "http") && !p.AllowPlainHTTP && !IsLoopbackHost(u.Hostname()) {
		port := u.Port()
		if port == "" {
			port = "80"
		}
		ws = append(ws, Warning{Key: k + ".base_url", Msg: fmt.Sprintf(
			"profile %s sends its API key over plain http to %s, which is not this machine: anyone on the network path can read the key; "+
				"use an https base_url (with ca_file naming a private CA), or reach the server through a loopback tunnel "+
				"(e.g. ssh -N -L 8080:localhost:%s USER@%s, then base_url = \"http://127.0.0.1:8080\"); "+
				"on a network you trust, allow_plain_http = true in [backends.%s] silences this",
			p.Name, u.Host, port, u.Hostname(), p.Name)})
	}
	if p.APIKeyFile != "" && p.APIKeyEnv == "" {
		if fi, err := os.Stat(p.APIKeyFile); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			ws = append(ws, Warning{Key: k + ".api_key_file", Msg: fmt.Sprintf(
				"key file %s of profile %s has mode %#o: its group or other users of this machine can read the key; make it yours alone: chmod 600 %s",
				p.APIKeyFile, p.Name, fi.Mode().Perm(), shellquote.Quote(p.APIKeyFile))})
		}
	}
	return ws
}

// IsLoopbackHost reports whether host (a URL's host name, without port)
// is this machine: "localhost" (or a name under .localhost), an address
// of 127.0.0.0/8 or ::1, or the unspecified address (0.0.0.0, ::), which
// connects to this machine.
func IsLoopbackHost(host string) bool {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if i := strings.IndexByte(h, '%'); i >= 0 { // fe80::1%eth0
		h = h[:i]
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// warner prints each profile's EndpointWarnings once per run.
type warner struct {
	mu    sync.Mutex
	print func(Warning)
	seen  map[string]bool
}

var (
	warnMu  sync.Mutex
	current = &warner{print: PrintWarning(os.Stderr), seen: map[string]bool{}}
)

// PrintWarning returns a printer of one warning as one line "hiro:
// warning: MSG (KEY)" on w, through the redaction step: the default
// printer, on os.Stderr.
func PrintWarning(w io.Writer) func(Warning) {
	return func(wa Warning) { fmt.Fprintln(w, redact.Secrets("hiro: warning: "+wa.String())) }
}

// SetWarnings makes print what EndpointFor calls with each endpoint
// warning (default PrintWarning(os.Stderr)) and starts a new run: a
// warning already printed is printed again, once. It returns a function
// that restores the previous printer. hiro's command runner calls it for
// each run with a printer of its stderr (JSON lines under --json).
func SetWarnings(print func(Warning)) (restore func()) {
	warnMu.Lock()
	prev := current
	current = &warner{print: print, seen: map[string]bool{}}
	warnMu.Unlock()
	return func() {
		warnMu.Lock()
		current = prev
		warnMu.Unlock()
	}
}

// warnOnce hands p's EndpointWarnings not printed yet in this run to the
// run's printer (SetWarnings), each once (by key path).
func warnOnce(p *config.Profile) {
	ws := EndpointWarnings(p)
	if len(ws) == 0 {
		return
	}
	warnMu.Lock()
	cur := current
	warnMu.Unlock()
	cur.mu.Lock()
	defer cur.mu.Unlock()
	for _, w := range ws {
		if cur.seen[w.Key] {
			continue
		}
		cur.seen[w.Key] = true
		cur.print(w)
	}
}
