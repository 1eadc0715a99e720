package llm

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
)

// reAuthStatus finds an HTTP 401 or 403 in a message that lost its error
// type (a health result, a failure's root cause): "answered HTTP 401".
var reAuthStatus = regexp.MustCompile(`\bHTTP (401|403)\b`)

// Advice returns what a person should do when profile p's server could not
// be reached over TLS or refused hiro's key, in the one wording every
// command uses (extract's check that the backend is up, readiness of an
// unmanaged or running server in backend start, qualify and the router,
// the rejects of a run); "" when err calls for neither:
//
//   - a TLS certificate not trusted (unknown authority): names the
//     authority the server presented and ca_file (backends.NAME.ca_file),
//     set or to set;
//   - a certificate for other names (hostname mismatch): names the host
//     asked for and the names the certificate holds;
//   - HTTP 401 or 403: names where the profile's key comes from
//     (api_key_env VAR or api_key_file FILE, with the key path) and that
//     the key may be wrong or missing, or that the profile sends none.
//
// status is the HTTP status when the caller has one (0 otherwise: it is
// taken from an *APIError in err, or from "HTTP 401"/"HTTP 403" in err's
// text); err may have lost its type (errors.New of a message): the TLS
// cases are then recognised by crypto/x509's and crypto/tls's wording.
// The advice never holds the key.
func Advice(p *config.Profile, status int, err error) string {
	text := ""
	if err != nil {
		text = err.Error()
	}
	if status == 0 {
		var ae *APIError
		if errors.As(err, &ae) {
			status = ae.StatusCode
		} else if m := reAuthStatus.FindStringSubmatch(text); m != nil {
			status, _ = strconv.Atoi(m[1])
		}
	}
	if status == 401 || status == 403 {
		return authAdvice(p, status)
	}
	return tlsAdvice(p, err, text)
}

// authAdvice is Advice for a 401 or 403 answer.
func authAdvice(p *config.Profile, status int) string {
	k := "backends." + p.Name
	what := "refused the request (HTTP 401: no valid key)"
	if status == 403 {
		what = "refused the request (HTTP 403: the key is not allowed, or not for this model)"
	}
	switch {
	case p.APIKeyEnv != "":
		return fmt.Sprintf("the server %s: the API key profile %s sends comes from the environment variable %s (%s.api_key_env) and may be wrong or missing; export %s with the server's key, or name the right variable",
			what, p.Name, p.APIKeyEnv, k, p.APIKeyEnv)
	case p.APIKeyFile != "":
		return fmt.Sprintf("the server %s: the API key profile %s sends comes from the file %s (%s.api_key_file) and may be wrong or missing; put the server's key alone in that file, or name the right file",
			what, p.Name, p.APIKeyFile, k)
	}
	return fmt.Sprintf("the server %s and profile %s sends no API key: set api_key_env (an environment variable holding the key) or api_key_file (a file holding it) in [%s]",
		what, p.Name, k)
}

// tlsAdvice is Advice for a TLS verification failure, or "".
func tlsAdvice(p *config.Profile, err error, text string) string {
	k := "backends." + p.Name
	host := ""
	if u, perr := url.Parse(p.BaseURL); perr == nil {
		host = u.Hostname()
	}
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var cv *tls.CertificateVerificationError
	unknown := errors.As(err, &ua) || strings.Contains(text, "certificate signed by unknown authority")
	mismatch := errors.As(err, &he) || strings.Contains(text, "x509: certificate is valid for") || strings.Contains(text, "x509: certificate is not valid for any names")
	switch {
	case unknown:
		issuer := ""
		if ua.Cert != nil {
			issuer = name(ua.Cert.Issuer.CommonName, ua.Cert.Issuer.String())
		} else if errors.As(err, &cv) && len(cv.UnverifiedCertificates) > 0 {
			c := cv.UnverifiedCertificates[0]
			issuer = name(c.Issuer.CommonName, c.Issuer.String())
		}
		by := "an authority hiro does not trust"
		if issuer != "" {
			by = fmt.Sprintf("%q, an authority hiro does not trust", issuer)
		}
		if p.CAFile != "" {
			return fmt.Sprintf("the TLS certificate of %s is signed by %s: ca_file %s (%s.ca_file) does not hold that authority; put the PEM certificate of the CA that signed the server's certificate in ca_file",
				host, by, p.CAFile, k)
		}
		return fmt.Sprintf("the TLS certificate of %s is signed by %s (not in the system roots): set ca_file in [%s] to the PEM certificate of that CA (%s.ca_file)",
			host, by, k, k)
	case mismatch:
		names := ""
		if he.Certificate != nil {
			ns := append([]string{}, he.Certificate.DNSNames...)
			for _, ip := range he.Certificate.IPAddresses {
				ns = append(ns, ip.String())
			}
			if len(ns) > 0 {
				names = " (it is valid for " + strings.Join(ns, ", ") + ")"
			}
		}
		return fmt.Sprintf("the TLS certificate the server presented is not for %s%s: put a name the certificate holds in base_url (%s.base_url), or give the server a certificate for %s; ca_file (%s.ca_file) only chooses which authorities are trusted",
			host, names, k, host, k)
	}
	return ""
}

// name is cn, or full when cn is empty.
func name(cn, full string) string {
	if cn != "" {
		return cn
	}
	return full
}
