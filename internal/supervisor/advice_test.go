package supervisor

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/tlstest"
)

// TestCheckReadyAdvisesOnTLSAndKey checks an unmanaged profile's server
// (CheckReady: what backend start, qualify's production check and the
// router use) served over https with a private CA and a key: an untrusted
// certificate and a refused key each end in a next step naming the
// setting to fix (ca_file; api_key_file), in llm.Advice's wording.
func TestCheckReadyAdvisesOnTLSAndKey(t *testing.T) {
	const key = "sk-supervisor-advice-77aa"
	dir := t.TempDir()
	certs := tlstest.Generate(t, dir, "srv")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"message":"invalid api key"}}`)
			return
		}
		fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
	}))
	srv.TLS = certs.TLSConfig(t)
	srv.StartTLS()
	defer srv.Close()
	keyFile := filepath.Join(dir, "key")
	os.WriteFile(keyFile, []byte("sk-not-the-key-0000\n"), 0o600)
	prof := &config.Profile{Name: "remote", Engine: "openai", Unmanaged: true, BaseURL: srv.URL, Model: "m", APIKeyFile: keyFile}
	check := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rr := CheckReady(ctx, prof, nil)
		if rr.OK || rr.Failure == nil || rr.Advice != rr.Failure.NextStep {
			t.Fatalf("ready against a server that must refuse (advice = next step): %+v", rr)
		}
		return rr.Failure.NextStep
	}
	if ns := check(); !strings.Contains(ns, `"hiro test CA srv"`) || !strings.Contains(ns, "set ca_file in [backends.remote]") {
		t.Fatalf("untrusted certificate: next step %q", ns)
	}
	prof.CAFile = certs.CA
	if ns := check(); !strings.Contains(ns, "HTTP 401") || !strings.Contains(ns, "file "+keyFile+" (backends.remote.api_key_file) and may be wrong or missing") {
		t.Fatalf("wrong key: next step %q", ns)
	}
}
