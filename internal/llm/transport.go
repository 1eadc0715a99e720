package llm

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/redact"
)

// Connection pool sizes of NewTransport. A pool smaller than the requests
// in flight makes the transport close and reopen connections on every
// request (net/http's default keeps 2 idle per host), which caps an
// extraction run at a few thousand requests/s whatever its concurrency.
const (
	// DefaultMaxIdleConnsPerHost is how many idle connections are kept per
	// host: more than any concurrency hiro is run with.
	DefaultMaxIdleConnsPerHost = 1024
	// DefaultIdleConnTimeout closes connections idle for this long.
	DefaultIdleConnTimeout = 90 * time.Second
	// DefaultDialTimeout bounds connecting (TCP and TLS handshake each).
	DefaultDialTimeout = 30 * time.Second
)

// Endpoint is how to reach one server: its root URL, the bearer key sent
// on every request to its host, and the certificate authorities of an
// https URL.
type Endpoint struct {
	// BaseURL is the server's root URL (scheme, host, port; no /v1).
	BaseURL string
	// APIKey, when not empty, is sent as "Authorization: Bearer APIKey"
	// on every request whose host is BaseURL's host (never to another host
	// a redirect points to).
	APIKey string
	// CAFile, when not empty, is a PEM file of the authorities trusted for
	// https in place of the system roots.
	CAFile string
	// Direct connects without the environment's proxy (HTTPS_PROXY and
	// the like): hiro's own managed servers are reached directly.
	Direct bool
}

// EndpointFor reads profile p's key (config.Profile.APIKey, from hiro's
// environment or the key file), registers it with package redact so that
// no public output can carry it, and returns p's Endpoint. It first prints
// p's EndpointWarnings (a key over plain http to another machine, a key
// file others can read) with the run's printer (SetWarnings), once
// per run. Errors are *config.Error naming the key path; they never
// contain the key.
func EndpointFor(p *config.Profile) (Endpoint, error) {
	warnOnce(p)
	key, err := p.APIKey(nil)
	if err != nil {
		return Endpoint{}, err
	}
	if key != "" {
		redact.Add(key)
	}
	return Endpoint{BaseURL: p.BaseURL, APIKey: key, CAFile: p.CAFile, Direct: !p.Unmanaged}, nil
}

// NewTransport returns the http.RoundTripper every hiro request to e goes
// through: proxies from the environment unless e.Direct (never for
// localhost), a
// connection pool sized for high concurrency (DefaultMaxIdleConnsPerHost),
// TLS with e.CAFile's authorities or the system roots, HTTP/2 when the
// server offers it over TLS, and the bearer key on requests to e's host.
// Errors: an unreadable CA file, or one holding no PEM certificate.
func NewTransport(e Endpoint) (http.RoundTripper, error) {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: DefaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          DefaultMaxIdleConnsPerHost,
		MaxIdleConnsPerHost:   DefaultMaxIdleConnsPerHost,
		IdleConnTimeout:       DefaultIdleConnTimeout,
		TLSHandshakeTimeout:   DefaultDialTimeout,
		ExpectContinueTimeout: time.Second,
	}
	if e.Direct {
		tr.Proxy = nil
	}
	if e.CAFile != "" {
		pem, err := os.ReadFile(e.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s holds no PEM certificate; give the CA certificate (-----BEGIN CERTIFICATE-----)", e.CAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if e.APIKey == "" {
		return tr, nil
	}
	host := ""
	if u, err := url.Parse(e.BaseURL); err == nil {
		host = strings.ToLower(u.Host)
	}
	return &bearer{base: tr, value: "Bearer " + e.APIKey, host: host}, nil
}

// HTTPClient returns an *http.Client for profile p: NewTransport of
// EndpointFor(p), no overall timeout (callers bound each request with a
// context). Every hiro command that talks to a profile's server builds its
// client here (backend start and readiness, extract, qualify, the
// restore of production, the router), so a key or a CA file works
// everywhere. Errors are configuration errors (a missing key variable or
// file, a bad CA file); they never contain the key.
func HTTPClient(p *config.Profile) (*http.Client, error) {
	e, err := EndpointFor(p)
	if err != nil {
		return nil, err
	}
	tr, err := NewTransport(e)
	if err != nil {
		return nil, &config.Error{Key: "backends." + p.Name + ".ca_file", Msg: err.Error()}
	}
	return &http.Client{Transport: tr}, nil
}

// NewForProfile returns a client for profile p's server: HTTPClient(p),
// p's overload policy (config.Profile.Overload), and Advice naming p's
// settings on the errors of Chat.
func NewForProfile(p *config.Profile) (*Client, error) {
	hc, err := HTTPClient(p)
	if err != nil {
		return nil, err
	}
	c := New(p.BaseURL, hc, WithOverload(p.Overload))
	c.profile = p
	return c, nil
}

// bearer adds the Authorization header to requests for host.
type bearer struct {
	base  http.RoundTripper
	value string
	host  string
}

// RoundTrip implements http.RoundTripper. It does not modify r (the
// contract of RoundTripper): the header goes on a shallow copy.
func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.host == "" || strings.ToLower(r.URL.Host) != b.host {
		return b.base.RoundTrip(r)
	}
	r2 := new(http.Request)
	*r2 = *r
	r2.Header = make(http.Header, len(r.Header)+1)
	for k, v := range r.Header {
		r2.Header[k] = v
	}
	r2.Header.Set("Authorization", b.value)
	return b.base.RoundTrip(r2)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// pool.
func (b *bearer) CloseIdleConnections() {
	if c, ok := b.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
