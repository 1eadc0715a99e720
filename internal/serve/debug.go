package serve

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"time"
)

// DebugListenEnv names a loopback address (host:port) on which hiro serve
// answers Go's profiling endpoints (net/http/pprof under /debug/pprof/:
// CPU, heap, allocations, block, mutex, goroutines, execution trace) for
// as long as it runs; unset (the default) it opens nothing. It is for
// measuring the router (BenchmarkShadowOverhead's HIRO_BENCH_PPROF), not
// for production: a non-loopback address is refused.
const DebugListenEnv = "HIRO_SERVE_PPROF"

// DebugRatesEnv sets the block and mutex profiles' rates while
// DebugListenEnv is set: "BLOCK,MUTEX" (runtime.SetBlockProfileRate's
// nanoseconds and runtime.SetMutexProfileFraction's 1/n), e.g. "1000,10";
// unset, both profiles stay off (their sampling costs every contended
// operation).
const DebugRatesEnv = "HIRO_SERVE_PPROF_RATES"

// startDebug opens the profiling listener DebugListenEnv names, if any;
// stop closes it. An address that is not loopback or cannot be listened
// on is an error naming the variable.
func startDebug() (stop func(), err error) {
	addr := os.Getenv(DebugListenEnv)
	if addr == "" {
		return func() {}, nil
	}
	host, _, err := net.SplitHostPort(addr)
	ip := net.ParseIP(host)
	if err != nil || !(host == "localhost" || ip != nil && ip.IsLoopback()) {
		return nil, fmt.Errorf("serve: %s=%q: use a loopback host:port such as 127.0.0.1:6061 (the profiling endpoints show the process's memory), or unset it", DebugListenEnv, addr)
	}
	if r := os.Getenv(DebugRatesEnv); r != "" {
		var block, mutex int
		if _, err := fmt.Sscanf(r, "%d,%d", &block, &mutex); err != nil || block < 0 || mutex < 0 {
			return nil, fmt.Errorf("serve: %s=%q: use BLOCK,MUTEX as two non-negative integers, e.g. 1000,10", DebugRatesEnv, r)
		}
		runtime.SetBlockProfileRate(block)
		runtime.SetMutexProfileFraction(mutex)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("serve: %s: cannot listen on %s: %w; pick another port or unset it", DebugListenEnv, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/gc", func(w http.ResponseWriter, _ *http.Request) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		w.Write([]byte(strconv.FormatUint(uint64(ms.NumGC), 10) + " " + strconv.FormatUint(ms.Mallocs, 10) + " " + strconv.FormatUint(ms.TotalAlloc, 10) + "\n"))
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return func() { srv.Close() }, nil
}
