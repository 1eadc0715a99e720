// Package tlstest is test support: it generates a throw-away certificate
// authority and a server certificate for 127.0.0.1 and localhost (ECDSA
// P-256, valid one day) with crypto/x509, and writes them as PEM files, so
// tests can serve https (cmd/hiro-fake-engine --tls-cert, httptest) and
// check that hiro trusts exactly the CA file a profile names.
//
// It owns nothing else and is imported only by tests.
package tlstest
