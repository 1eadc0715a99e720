package serve

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/tlstest"
)

// TestEveryRequestIsAccounted: a request to a route the router does not
// serve (/v1/foo) gets its 404 and is access-logged with its path and
// counted under route "other" (it was neither); a 200 KB unknown model
// name is logged and quoted back bounded (at most maxQuoted bytes,
// marked truncated; it was written whole); a missing key is logged with
// one error name, invalid_api_key, on a proxied route and on
// /v1/models (the latter said "unauthorized").
func TestEveryRequestIsAccounted(t *testing.T) {
	const key = "sk-accounting-key-0123"
	cfg := fakeConfig(t, nil, "")
	r := startRouter(t, cfg, func(o *Options) {
		o.LookupEnv = func(k string) (string, bool) {
			if k == config.DefaultServeAPIKeysEnv {
				return key, true
			}
			return "", false
		}
	})
	r.waitState(t, control.StateReady, 20*time.Second)
	auth := []string{"Authorization", "Bearer " + key}

	if code, _, body := post(t, r.url, "/v1/foo", `{"model":"extraction"}`, auth...); code != 404 || !strings.Contains(errorMessage(t, body), "/v1/foo") {
		t.Errorf("/v1/foo: %d %s", code, body)
	}
	long := strings.Repeat("m", 200_000)
	code, _, body := post(t, r.url, RouteChat, chatBody(long, false), auth...)
	if code != 404 || len(body) > 2048 || !strings.Contains(body, "truncated") {
		t.Errorf("200 KB model name: %d, %d bytes of answer (want 404, at most 2 KiB, marked truncated)", code, len(body))
	}
	if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 401 {
		t.Errorf("chat without a key: %d %s", code, body)
	}
	if resp, err := http.Get(r.url + RouteModels); err != nil || resp.StatusCode != 401 {
		t.Fatalf("models without a key: %v %v", resp, err)
	}

	waitAccess(t, r, `"path":"/v1/models"`)
	waitAccess(t, r, `"path":"/v1/foo"`)
	var notFound, models, chat401 int
	for _, line := range strings.Split(strings.TrimSpace(r.access.String()), "\n") {
		var e accessEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("access line %q: %v", line, err)
		}
		if len(line) > 1024 {
			t.Errorf("access line of %d bytes (model %d bytes): the model name is not bounded", len(line), len(e.Model))
		}
		switch {
		case e.Path == "/v1/foo":
			notFound++
			if e.Status != 404 || e.Method != "POST" || e.Error != "not_found" {
				t.Errorf("/v1/foo logged as %+v", e)
			}
		case e.Status == 401:
			if e.Error != "invalid_api_key" {
				t.Errorf("401 on %s logged with error %q, want invalid_api_key", e.Path, e.Error)
			}
			if e.Path == RouteModels {
				models++
			} else {
				chat401++
			}
		case e.Status == 404:
			if !strings.HasSuffix(e.Model, "(truncated: 200000 bytes)") || len(e.Model) > maxQuoted+64 {
				t.Errorf("unknown model logged as %d bytes ending %q", len(e.Model), e.Model[max(0, len(e.Model)-40):])
			}
		}
	}
	if notFound != 1 || models != 1 || chat401 != 1 {
		t.Errorf("access log: %d lines for /v1/foo, %d 401s on /v1/models, %d on chat; want 1 each:\n%s", notFound, models, chat401, r.access.String())
	}
	req, _ := http.NewRequest("GET", r.url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := `hiro_serve_requests_total{backend="",route="other",status="404"} 1`; !strings.Contains(string(b), want) {
		t.Errorf("/metrics lacks %s", want)
	}
}

// TestPlainHTTPToTheTLSPort: a plain HTTP request sent to a router that
// serves TLS gets a plain HTTP 400 saying to use https (it got bytes no
// HTTP client reads), and is logged as what it was: status 400, error
// "plain HTTP to the TLS port" (it was logged as a malformed request
// with the generic 400 text).
func TestPlainHTTPToTheTLSPort(t *testing.T) {
	certs := tlstest.Generate(t, t.TempDir(), "router")
	cfg := fakeConfig(t, nil, fmt.Sprintf("tls_cert = %q\ntls_key = %q\n", certs.Cert, certs.Key))
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	addr := strings.TrimPrefix(r.url, "https://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("plain HTTP to the TLS port: no HTTP answer: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(errorMessage(t, string(b)), "https://") {
		t.Errorf("plain HTTP to the TLS port: %d %s", resp.StatusCode, b)
	}
	waitAccess(t, r, `"status":400`)
	if !strings.Contains(r.access.String(), `"error":"plain HTTP to the TLS port"`) {
		t.Errorf("access log does not say what the 400 was:\n%s", r.access.String())
	}
	// The port still serves TLS.
	tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS after the plain request: %v", err)
	}
	tc.Close()
}
