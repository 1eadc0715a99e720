package serve

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestDebugListener: unset, startDebug opens nothing; a non-loopback
// address or bad rates are refused naming the variable; a loopback one
// answers the profiling index and /debug/gc until stopped.
func TestDebugListener(t *testing.T) {
	t.Setenv(DebugListenEnv, "")
	stop, err := startDebug()
	if err != nil {
		t.Fatal(err)
	}
	stop()
	t.Setenv(DebugListenEnv, "0.0.0.0:6061")
	if _, err := startDebug(); err == nil || !strings.Contains(err.Error(), DebugListenEnv) {
		t.Fatalf("non-loopback address: %v", err)
	}
	addr := "127.0.0.1:" + itoa(freePort(t))
	t.Setenv(DebugListenEnv, addr)
	t.Setenv(DebugRatesEnv, "fast")
	if _, err := startDebug(); err == nil || !strings.Contains(err.Error(), DebugRatesEnv) {
		t.Fatalf("bad rates: %v", err)
	}
	t.Setenv(DebugRatesEnv, "")
	stop, err = startDebug()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/gc"} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(b) == 0 {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, b)
		}
	}
	stop()
	if _, err := http.Get("http://" + addr + "/debug/gc"); err == nil {
		t.Fatal("the listener answers after stop")
	}
}
