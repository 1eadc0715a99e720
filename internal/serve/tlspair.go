package serve

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
)

// loadTLSPair reads [serve] tls_cert and tls_key and checks that they
// make a pair, in New (before the router starts or adopts anything). Each
// fault is a *config.Error naming the configuration file and the key
// that holds the wrong file (a certificate given as tls_key is a tls_key
// fault), and saying what to do, so that `hiro serve` exits 2: a missing
// or unreadable file, a file holding no PEM block of the right kind (a
// key where the certificate goes, garbage), a certificate that does not
// parse, a key readable by group or others (as api_keys_file: chmod 600
// it), and a key that is not the certificate's.
func loadTLSPair(cfg *config.Config) (tls.Certificate, error) {
	sc := &cfg.Serve
	bad := func(key, format string, a ...any) error {
		return &config.Error{File: cfg.Path, Key: "serve." + key, Msg: fmt.Sprintf(format, a...)}
	}
	read := func(key, path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, bad(key, "%s does not exist; give the path of the PEM file (relative paths are relative to the configuration's folder)", path)
		case err != nil && isDir(path):
			return nil, bad(key, "%s is a folder; give the path of the PEM file in it", path)
		case err != nil:
			return nil, bad(key, "cannot read %s: %v; make it readable by this user", path, err)
		}
		return b, nil
	}
	certPEM, err := read("tls_cert", sc.TLSCert)
	if err != nil {
		return tls.Certificate{}, err
	}
	keyPEM, err := read("tls_key", sc.TLSKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	certTypes, keyTypes := pemTypes(certPEM), pemTypes(keyPEM)
	switch {
	case !hasType(certTypes, isCertBlock) && hasType(certTypes, isKeyBlock):
		return tls.Certificate{}, bad("tls_cert", "%s holds a private key, not a certificate: tls_cert and tls_key may be swapped; give the certificate (-----BEGIN CERTIFICATE-----) as tls_cert", sc.TLSCert)
	case !hasType(certTypes, isCertBlock):
		return tls.Certificate{}, bad("tls_cert", "%s holds no PEM certificate (-----BEGIN CERTIFICATE-----); give the server's certificate in PEM", sc.TLSCert)
	case !hasType(keyTypes, isKeyBlock) && hasType(keyTypes, isCertBlock):
		return tls.Certificate{}, bad("tls_key", "%s holds a certificate, not a private key; give the certificate's private key (-----BEGIN ... PRIVATE KEY-----) as tls_key", sc.TLSKey)
	case !hasType(keyTypes, isKeyBlock):
		return tls.Certificate{}, bad("tls_key", "%s holds no PEM private key (-----BEGIN ... PRIVATE KEY-----); give the certificate's private key in PEM", sc.TLSKey)
	}
	// After the kinds: swapped files are said swapped, not "chmod" the
	// certificate.
	if st, err := os.Stat(sc.TLSKey); err == nil && st.Mode().Perm()&0o077 != 0 {
		return tls.Certificate{}, bad("tls_key", "key file %s is readable by group or others (mode %o); chmod 600 it", sc.TLSKey, st.Mode().Perm())
	}
	for rest := certPEM; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if b.Type == "CERTIFICATE" {
			if _, err := x509.ParseCertificate(b.Bytes); err != nil {
				return tls.Certificate{}, bad("tls_cert", "%s: the certificate does not parse (%v); give a valid PEM certificate", sc.TLSCert, err)
			}
		}
	}
	// The certificate parses: what X509KeyPair still refuses is the key
	// (it does not parse, or it is not the certificate's).
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "tls: ")
		if strings.Contains(msg, "does not match") {
			return tls.Certificate{}, bad("tls_key", "the private key in %s is not the one of the certificate in %s; give the key the certificate was made with (the public keys of `openssl x509 -noout -pubkey -in CERT` and `openssl pkey -pubout -in KEY` must be the same)", sc.TLSKey, sc.TLSCert)
		}
		return tls.Certificate{}, bad("tls_key", "%s: %s; give the certificate's private key in PEM (PKCS #1, PKCS #8 or EC)", sc.TLSKey, msg)
	}
	return pair, nil
}

// isDir reports whether path names a folder.
func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

// pemTypes lists the types of the PEM blocks in b, in order.
func pemTypes(b []byte) []string {
	var types []string
	for {
		var blk *pem.Block
		if blk, b = pem.Decode(b); blk == nil {
			return types
		}
		types = append(types, blk.Type)
	}
}

func hasType(types []string, f func(string) bool) bool {
	for _, t := range types {
		if f(t) {
			return true
		}
	}
	return false
}

func isCertBlock(t string) bool { return t == "CERTIFICATE" }

func isKeyBlock(t string) bool { return t == "PRIVATE KEY" || strings.HasSuffix(t, " PRIVATE KEY") }
