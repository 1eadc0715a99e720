package llm

import (
	"bytes"
	"context"
	"errors"
	"net"
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

func TestEndpointWarningsPlainHTTP(t *testing.T) {
	for _, tc := range []struct {
		url, env string
		allow    bool
		want     bool
	}{
		{"http://10.1.2.3:8000", "K", false, true},
		{"http://llm.internal.example", "K", false, true},
		{"http://[fd00::2]:8000", "K", false, true},
		{"http://10.1.2.3:8000", "K", true, false}, // allow_plain_http
		{"http://10.1.2.3:8000", "", false, false}, // no key to leak
		{"https://10.1.2.3:8000", "K", false, false},
		{"http://127.0.0.1:8000", "K", false, false},
		{"http://127.9.8.7:8000", "K", false, false},
		{"http://[::1]:8000", "K", false, false},
		{"http://localhost:8000", "K", false, false},
		{"http://LOCALHOST.:8000", "K", false, false},
		{"http://0.0.0.0:8000", "K", false, false},
	} {
		p := &config.Profile{Name: "remote", BaseURL: tc.url, APIKeyEnv: tc.env, AllowPlainHTTP: tc.allow}
		ws := EndpointWarnings(p)
		if got := len(ws) == 1; got != tc.want || len(ws) > 1 {
			t.Errorf("%s key=%q allow=%v: warnings %v, want one: %v", tc.url, tc.env, tc.allow, ws, tc.want)
			continue
		}
		if !tc.want {
			continue
		}
		w := ws[0]
		u := strings.TrimPrefix(tc.url, "http://")
		for _, s := range []string{"profile remote", u, "plain http", "https", "ca_file", "ssh -N -L", "127.0.0.1", "allow_plain_http = true"} {
			if !strings.Contains(w.Msg, s) {
				t.Errorf("%s: warning %q lacks %q", tc.url, w.Msg, s)
			}
		}
		if w.Key != "backends.remote.base_url" {
			t.Errorf("%s: key %q", tc.url, w.Key)
		}
	}
}

func TestEndpointWarningsKeyFileMode(t *testing.T) {
	dir := t.TempDir()
	kf := filepath.Join(dir, "key")
	if err := os.WriteFile(kf, []byte(testKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &config.Profile{Name: "remote", BaseURL: "https://10.1.2.3", APIKeyFile: kf}
	if ws := EndpointWarnings(p); len(ws) != 0 {
		t.Fatalf("0600 key file: %v", ws)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o660} {
		os.Chmod(kf, mode)
		ws := EndpointWarnings(p)
		if len(ws) != 1 || ws[0].Key != "backends.remote.api_key_file" {
			t.Fatalf("mode %#o: %v", mode, ws)
		}
		for _, s := range []string{"key file " + kf, "mode " + formatOctal(mode), "chmod 600 " + kf} {
			if !strings.Contains(ws[0].Msg, s) {
				t.Errorf("mode %#o: warning %q lacks %q", mode, ws[0].Msg, s)
			}
		}
		if strings.Contains(ws[0].String(), testKey) {
			t.Fatalf("the key is in the warning: %s", ws[0])
		}
	}
	// A key from the environment has no file to check.
	os.Chmod(kf, 0o644)
	if ws := EndpointWarnings(&config.Profile{Name: "remote", BaseURL: "https://10.1.2.3", APIKeyEnv: "K"}); len(ws) != 0 {
		t.Fatalf("env key: %v", ws)
	}
}

// formatOctal is mode's permission bits as 0NNN.
func formatOctal(m os.FileMode) string {
	const digits = "01234567"
	p := uint32(m.Perm())
	return "0" + string([]byte{digits[p>>6&7], digits[p>>3&7], digits[p&7]})
}

// TestEndpointForWarnsOncePerRun: every client a command builds for a
// profile goes through EndpointFor; the warnings come out once per run,
// on the run's output, without the key; a new run prints them again.
func TestEndpointForWarnsOncePerRun(t *testing.T) {
	dir := t.TempDir()
	kf := filepath.Join(dir, "key")
	os.WriteFile(kf, []byte(testKey+"\n"), 0o644)
	p := &config.Profile{Name: "remote", BaseURL: "http://10.1.2.3:8000", APIKeyFile: kf, Unmanaged: true}
	var buf bytes.Buffer
	restore := SetWarnings(PrintWarning(&buf))
	defer restore()
	for i := 0; i < 3; i++ {
		if _, err := HTTPClient(p); err != nil {
			t.Fatal(err)
		}
		if _, err := NewForProfile(p); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if strings.Count(out, "hiro: warning: ") != 2 || strings.Count(out, "backends.remote.base_url") != 1 || strings.Count(out, "backends.remote.api_key_file") != 1 {
		t.Fatalf("want each warning once:\n%s", out)
	}
	if strings.Contains(out, testKey) {
		t.Fatalf("the key was printed:\n%s", out)
	}
	var next bytes.Buffer
	SetWarnings(PrintWarning(&next))
	HTTPClient(p)
	if strings.Count(next.String(), "hiro: warning: ") != 2 {
		t.Fatalf("a new run must warn again:\n%s", next.String())
	}
}

// TestAdviceOnRealFailures makes real requests that fail the ways a remote
// endpoint does (a private CA not trusted, a certificate for other names,
// a missing or wrong key) and checks the hint names the setting to fix.
func TestAdviceOnRealFailures(t *testing.T) {
	dir := t.TempDir()
	good := tlstest.Generate(t, dir, "good")
	wrong := tlstest.Generate(t, dir, "wrong")
	var seen []string
	srv := httptest.NewUnstartedServer(keyServer(&seen))
	srv.TLS = good.TLSConfig(t)
	srv.StartTLS()
	defer srv.Close()
	t.Setenv("HIRO_TEST_ADVICE_KEY", testKey)
	defer SetWarnings(func(Warning) {})()

	chatErr := func(p *config.Profile) error {
		t.Helper()
		c, err := NewForProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = chatOnce(t, c)
		if err == nil {
			t.Fatalf("%+v: no error", p)
		}
		if strings.Contains(err.Error(), testKey) {
			t.Fatalf("the key is in the error: %v", err)
		}
		return err
	}
	want := func(what string, err error, subs ...string) {
		t.Helper()
		for _, s := range subs {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q lacks %q", what, err, s)
			}
		}
	}
	// The system roots: the CA is named, ca_file is to be set.
	p := &config.Profile{Name: "tls", BaseURL: srv.URL, APIKeyEnv: "HIRO_TEST_ADVICE_KEY", Unmanaged: true}
	want("system roots", chatErr(p), `"hiro test CA good"`, "set ca_file in [backends.tls]", "backends.tls.ca_file")
	// Another CA file: the file is named.
	p.CAFile = wrong.CA
	want("wrong CA file", chatErr(p), `"hiro test CA good"`, "ca_file "+wrong.CA, "backends.tls.ca_file")
	// The right CA, a wrong key: 401 names the variable and its key path.
	p.CAFile = good.CA
	t.Setenv("HIRO_TEST_ADVICE_KEY", "sk-wrong-key-0000")
	err := chatErr(p)
	want("wrong key", err, "HTTP 401", "HIRO_TEST_ADVICE_KEY", "backends.tls.api_key_env", "may be wrong or missing")
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("the advised error must still unwrap to *APIError: %v", err)
	}
	if strings.Contains(err.Error(), "sk-wrong-key-0000") {
		t.Fatalf("the wrong key is in the error: %v", err)
	}
	// No key at all: the profile is told to name one.
	p.APIKeyEnv = ""
	want("no key", chatErr(p), "sends no API key", "api_key_env", "api_key_file", "[backends.tls]")

	// A certificate for other names: the server's certificate holds
	// 127.0.0.1 and localhost, the URL asks for 127.0.0.2 (also this
	// machine on Linux).
	ln, lerr := net.Listen("tcp", "127.0.0.2:0")
	if lerr != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", lerr)
	}
	other := httptest.NewUnstartedServer(keyServer(&seen))
	other.Listener.Close()
	other.Listener = ln
	other.TLS = good.TLSConfig(t)
	other.StartTLS()
	defer other.Close()
	p = &config.Profile{Name: "tls", BaseURL: other.URL, CAFile: good.CA, Unmanaged: true}
	want("hostname", chatErr(p), "not for 127.0.0.2", "localhost, 127.0.0.1", "backends.tls.base_url", "ca_file")

	// The same wording from a health check's error, as supervisor and
	// extract see it (the error keeps its type, or only its text).
	p = &config.Profile{Name: "tls", BaseURL: srv.URL, Unmanaged: true}
	hc, _ := HTTPClient(p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/health", nil)
	_, herr := hc.Do(req)
	if herr == nil {
		t.Fatal("health over an untrusted certificate succeeded")
	}
	typed, text := Advice(p, 0, herr), Advice(p, 0, errors.New(herr.Error()))
	if !strings.Contains(typed, "set ca_file in [backends.tls]") || !strings.Contains(text, "set ca_file in [backends.tls]") {
		t.Fatalf("health advice: typed %q, text %q", typed, text)
	}
	if a := Advice(p, 0, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")); a != "" {
		t.Fatalf("a refused connection has no TLS or key hint: %q", a)
	}
	if a := Advice(p, 0, errors.New("GET /v1/models answered HTTP 403: forbidden")); !strings.Contains(a, "HTTP 403") || !strings.Contains(a, "sends no API key") {
		t.Fatalf("403 in a message: %q", a)
	}
}
