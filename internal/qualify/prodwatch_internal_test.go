package qualify

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
)

// The watch polls production through one client: a campaign of 90
// minutes checks 2700 times, and a client per check would leave a
// connection per check open to production. Twenty checks of a server
// that keeps connections alive open one connection (a few at most).
func TestProductionWatchReusesItsConnection(t *testing.T) {
	var conns, checks atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			checks.Add(1)
			w.Write([]byte(`{"data":[{"id":"prod-model"}]}`))
			return
		}
		w.Write([]byte(`{"status":"ok"}`))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	prof := &config.Profile{Name: "prod", Engine: "llamacpp", BaseURL: srv.URL, Model: "prod-model"}
	w := watchProduction(prof, 5*time.Millisecond, func(s string) { t.Errorf("lost: %s", s) })
	deadline := time.Now().Add(30 * time.Second)
	for checks.Load() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	w.close()
	// One connection; a check cut by its 2 s bound on a loaded machine
	// drops it, so a few may be opened, never one a check.
	if checks.Load() < 20 || conns.Load() > checks.Load()/4 || w.Lost() != nil {
		t.Errorf("%d checks over %d connections (lost %v); want 20 or more over at most a quarter as many", checks.Load(), conns.Load(), w.Lost())
	}
}
