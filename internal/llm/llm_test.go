package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/tlstest"
)

const testKey = "sk-test-6d1f0c2a"

// streamOK writes a one-chunk streamed completion of text.
func streamOK(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":\"stop\"}]}\n\n", text)
	fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\ndata: [DONE]\n\n")
}

// keyServer answers chat completions with "ok" when the bearer key is
// testKey and 401 otherwise; it records every Authorization header.
func keyServer(seen *[]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*seen = append(*seen, r.Header.Get("Authorization"))
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":{"message":"Unauthorized"}}`)
			return
		}
		streamOK(w, "ok")
	})
}

func chatOnce(t *testing.T, c *Client) (*Reply, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Chat(ctx, Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
}

func TestBearerKeyFromProfile(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(keyServer(&seen))
	defer srv.Close()
	t.Setenv("HIRO_TEST_API_KEY", testKey)
	p := &config.Profile{Name: "remote", BaseURL: srv.URL, APIKeyEnv: "HIRO_TEST_API_KEY", Unmanaged: true}
	c, err := NewForProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := chatOnce(t, c); err != nil || r.Text != "ok" {
		t.Fatalf("with key: %v %+v", err, r)
	}
	// Without a key the server refuses: the key is what made it pass.
	if _, err := chatOnce(t, New(srv.URL, nil)); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without key: %v", err)
	}
	if len(seen) != 2 || seen[0] != "Bearer "+testKey || seen[1] == "Bearer "+testKey {
		t.Fatalf("Authorization headers seen: %q", seen)
	}
	// A missing variable is a configuration error that names the key path.
	p.APIKeyEnv = "HIRO_TEST_NO_SUCH_VARIABLE"
	if _, err := NewForProfile(p); err == nil || !strings.Contains(err.Error(), "backends.remote.api_key_env") {
		t.Fatalf("missing variable: %v", err)
	}
}

func TestBearerNotSentToAnotherHost(t *testing.T) {
	var other atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other.Store(r.Header.Get("Authorization"))
		streamOK(w, "moved")
	}))
	defer elsewhere.Close()
	// 127.0.0.1 and localhost are different hosts to the client.
	target := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	tr, err := NewTransport(Endpoint{BaseURL: srv.URL, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	// A plain GET, as health checks make, follows the redirect.
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, ok := other.Load().(string); !ok || strings.Contains(got, testKey) {
		t.Fatalf("redirect target reached %v; Authorization there: %q", ok, got)
	}
}

func TestTLSWithCAFile(t *testing.T) {
	dir := t.TempDir()
	good := tlstest.Generate(t, dir, "good")
	wrong := tlstest.Generate(t, dir, "wrong")
	var seen []string
	srv := httptest.NewUnstartedServer(keyServer(&seen))
	srv.TLS = good.TLSConfig(t)
	srv.StartTLS()
	defer srv.Close()
	keyFile := dir + "/key"
	if err := writeFile(keyFile, testKey+"\n"); err != nil {
		t.Fatal(err)
	}
	p := &config.Profile{Name: "tls", BaseURL: srv.URL, APIKeyFile: keyFile, CAFile: good.CA, Unmanaged: true}
	c, err := NewForProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := chatOnce(t, c); err != nil || r.Text != "ok" {
		t.Fatalf("https with the right CA file: %v %+v", err, r)
	}
	// Another authority: the certificate is not trusted.
	p.CAFile = wrong.CA
	c, _ = NewForProfile(p)
	if _, err := chatOnce(t, c); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("wrong CA: %v", err)
	}
	// System roots do not know a private CA either.
	p.CAFile = ""
	c, _ = NewForProfile(p)
	if _, err := chatOnce(t, c); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("system roots: %v", err)
	}
	// A CA file that is no certificate is a configuration error.
	p.CAFile = keyFile
	if _, err := NewForProfile(p); err == nil || !strings.Contains(err.Error(), "ca_file") || strings.Contains(err.Error(), testKey) {
		t.Fatalf("bad CA file: %v", err)
	}
	if len(seen) != 1 {
		t.Fatalf("server saw %d requests, want 1 (the failed handshakes never reach it)", len(seen))
	}
}

// overloadServer answers the first n chat requests with status (and
// Retry-After ra when not empty), then "ok".
func overloadServer(n int64, status int, ra string) (*httptest.Server, *atomic.Int64) {
	var count atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if count.Add(1) <= n {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error":{"message":"busy"}}`)
			return
		}
		streamOK(w, "ok")
	}))
	return srv, &count
}

func fastPolicy(retries int) config.Overload {
	return config.Overload{MaxRetries: retries, InitialInterval: config.Duration{Duration: time.Millisecond},
		MaxInterval: config.Duration{Duration: 5 * time.Millisecond}, Multiplier: 2, MaxElapsed: config.Duration{Duration: 10 * time.Second}}
}

func TestOverloadRetried(t *testing.T) {
	for _, tc := range []struct {
		status int
		ra     string
	}{{429, "0"}, {503, ""}, {429, ""}, {503, "0"}} {
		t.Run(fmt.Sprintf("%d-retry-after-%q", tc.status, tc.ra), func(t *testing.T) {
			srv, count := overloadServer(3, tc.status, tc.ra)
			defer srv.Close()
			c := New(srv.URL, nil, WithOverload(fastPolicy(5)))
			r, err := chatOnce(t, c)
			if err != nil || r.Text != "ok" || r.Retries != 3 {
				t.Fatalf("reply %+v err %v: want ok after 3 retries", r, err)
			}
			st := c.Stats()
			want := Stats{Calls: 1, Sent: 4, Completed: 1, SucceededAfterRetry: 1}
			if tc.status == 429 {
				want.Retried429 = 3
			} else {
				want.Retried503 = 3
			}
			st.RetryWaitMS = 0
			if st != want || count.Load() != 4 {
				t.Fatalf("stats %+v (server saw %d), want %+v", st, count.Load(), want)
			}
		})
	}
}

func TestOverloadBound(t *testing.T) {
	srv, count := overloadServer(1000, 503, "")
	defer srv.Close()
	c := New(srv.URL, nil, WithOverload(fastPolicy(2)))
	_, err := chatOnce(t, c)
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 503 || !ae.GaveUp || ae.Retries != 2 || !strings.Contains(err.Error(), "overload bound") {
		t.Fatalf("err = %v (%+v)", err, ae)
	}
	if st := c.Stats(); st.OverloadGaveUp != 1 || st.Failed != 1 || st.Retried503 != 2 || count.Load() != 3 {
		t.Fatalf("stats %+v, server saw %d", st, count.Load())
	}
	// No policy: the first overload answer is the error.
	count.Store(0)
	_, err = chatOnce(t, New(srv.URL, nil))
	if !errors.As(err, &ae) || ae.GaveUp || count.Load() != 1 {
		t.Fatalf("without policy: %v, %d requests", err, count.Load())
	}
	// A Retry-After longer than max_elapsed is not waited for.
	srv2, count2 := overloadServer(1000, 429, "3600")
	defer srv2.Close()
	p := fastPolicy(5)
	p.MaxElapsed.Duration = time.Second
	t0 := time.Now()
	_, err = chatOnce(t, New(srv2.URL, nil, WithOverload(p)))
	if !errors.As(err, &ae) || !ae.GaveUp || count2.Load() != 1 || time.Since(t0) > 5*time.Second {
		t.Fatalf("Retry-After past the bound: %v after %s, %d requests", err, time.Since(t0), count2.Load())
	}
}

func TestOverloadOtherErrorsNotRetried(t *testing.T) {
	srv, count := overloadServer(1, 500, "")
	defer srv.Close()
	_, err := chatOnce(t, New(srv.URL, nil, WithOverload(fastPolicy(5))))
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 500 || count.Load() != 1 {
		t.Fatalf("500: %v, %d requests", err, count.Load())
	}
}

func TestOverloadCancelledWhileWaiting(t *testing.T) {
	srv, _ := overloadServer(1000, 429, "30")
	defer srv.Close()
	p := fastPolicy(5)
	p.MaxElapsed.Duration = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := New(srv.URL, nil, WithOverload(p)).Chat(ctx, Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "429") {
		t.Fatalf("err = %v", err)
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	if _, ok := retryAfter(h, now); ok {
		t.Error("absent header parsed")
	}
	h.Set("Retry-After", "7")
	if d, ok := retryAfter(h, now); !ok || d != 7*time.Second {
		t.Errorf("seconds: %v %v", d, ok)
	}
	h.Set("Retry-After", now.Add(90*time.Second).Format(http.TimeFormat))
	if d, ok := retryAfter(h, now); !ok || d != 90*time.Second {
		t.Errorf("date: %v %v", d, ok)
	}
	h.Set("Retry-After", "soon")
	if _, ok := retryAfter(h, now); ok {
		t.Error("garbage parsed")
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

func TestKeyRegisteredForRedaction(t *testing.T) {
	t.Setenv("HIRO_TEST_REDACT_KEY", "Zq7plainSecret93c2")
	if _, err := EndpointFor(&config.Profile{Name: "r", BaseURL: "http://127.0.0.1:1", APIKeyEnv: "HIRO_TEST_REDACT_KEY"}); err != nil {
		t.Fatal(err)
	}
	if got := redact.String("answer: key=Zq7plainSecret93c2 end"); strings.Contains(got, "Zq7plainSecret93c2") {
		t.Fatalf("the key survived redaction: %q", got)
	}
}
