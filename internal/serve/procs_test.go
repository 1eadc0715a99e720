package serve

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestProcsPolicyStep drives the adaptive policy with made-up loads: it
// goes to all processors as soon as requests overlap, back to one only
// after the load stayed low for procsCalm and procsDwell after the last
// change, so a flapping load changes it at most twice per procsDwell.
func TestProcsPolicyStep(t *testing.T) {
	var sets []int
	p := &procsPolicy{max: 4, cur: 4, set: func(n int) { sets = append(sets, n) }}
	t0 := time.Unix(1000, 0)
	tick := procsTick
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * tick) }

	// Idle: one processor once the calm period has passed.
	p.step(at(1), tick, 0)
	if p.cur != 4 {
		t.Fatalf("changed at the first quiet tick: %d", p.cur)
	}
	i := 1
	for ; p.cur != 1 && i < 100; i++ {
		p.step(at(i), tick, 0)
	}
	if p.cur != 1 || at(i-1).Sub(at(1)) < procsCalm {
		t.Fatalf("after %s of calm: %d processors (sets %v)", at(i-1).Sub(at(1)), p.cur, sets)
	}
	// Eight requests of a full tick each: all processors at the next
	// tick, however recent the last change.
	i++
	p.done(8 * tick)
	p.step(at(i), tick, 0)
	if p.cur != 4 {
		t.Fatalf("with 8 requests in flight on average: %d processors", p.cur)
	}
	// One long stream in flight counts though it has not ended; two
	// streams are an overlap.
	p.step(at(i+1), tick, 2)
	if p.cur != 4 {
		t.Fatalf("with 2 streams in flight: %d processors", p.cur)
	}
	// Load in the dead band (between procsLow and procsHigh) keeps the
	// setting and restarts the calm period.
	p.done(tick * 5 / 4)
	p.step(at(i+2), tick, 0)
	if p.cur != 4 || !p.lowSince.IsZero() {
		t.Fatalf("in the dead band: %d processors, low since %v", p.cur, p.lowSince)
	}
	// Right after going up, a calm load does not bring it down before
	// procsDwell.
	for k := 3; k <= int(procsDwell/tick); k++ {
		p.step(at(i+k), tick, 0)
		if at(i+k).Sub(at(i)) < procsDwell && p.cur != 4 {
			t.Fatalf("down %s after going up (dwell %s)", at(i+k).Sub(at(i)), procsDwell)
		}
	}
	i += int(procsDwell/tick) + 1
	p.done(8 * tick)
	p.step(at(i+2), tick, 0)
	// A flapping load (a busy tick every `every` ticks) changes it at
	// most twice per procsDwell, and a load busy once per 200 ms does
	// change it (calm is reached between bursts).
	start := i + 3
	for _, every := range []int{2, 3, 4, 8} {
		n := len(sets)
		for j := 0; j < 200; j++ {
			if j%every == 0 {
				p.done(8 * tick)
			}
			p.step(at(start+j), tick, 0)
		}
		span := at(start + 199).Sub(at(start))
		if max := 2 * (int(span/procsDwell) + 1); len(sets)-n > max {
			t.Errorf("busy every %d ticks: %d changes in %s, at most %d allowed", every, len(sets)-n, span, max)
		}
		if every == 4 && len(sets) == n {
			t.Errorf("busy every %d ticks (%s): never changed", every, time.Duration(every)*tick)
		}
		start += 200
	}
	for _, s := range sets {
		if s != 1 && s != 4 {
			t.Errorf("set %d processors; only 1 and 4 are expected", s)
		}
	}
}

// TestServeProcsAdapts runs `hiro serve` (the real binary, [serve] procs
// left to adapt): idle it runs on one processor; while eight streams
// overlap it runs on all of them (the hiro_serve_procs gauge); once they
// end it goes back to one. A fixed procs = 1 stays at 1 under the same
// load.
func TestServeProcsAdapts(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 || os.Getenv("GOMAXPROCS") != "" {
		t.Skip("one processor, or GOMAXPROCS set in the environment: nothing to adapt")
	}
	bin := buildHiro(t)
	reply := strings.TrimSpace(strings.Repeat("word ", 60)) // ~75 chunks at 20 ms: ~1.5 s per stream
	for _, fixed := range []bool{false, true} {
		extra := ""
		if fixed {
			extra = "procs = 1"
		}
		cfg := fakeConfig(t, []string{"--token-delay", "20ms", "--reply", reply}, extra)
		port := cfg.Backends["prod"].Port
		stateHome := shortDir(t)
		t.Cleanup(func() {
			for _, pid := range enginePIDs(port) {
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		})
		startHiroServe(t, bin, cfg, stateHome)
		st := waitRouterReady(t, filepath.Join(stateHome, "serve"), 30*time.Second)
		procs := func() int {
			resp, err := http.Get(st.Listen + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "hiro_serve_procs "); ok {
					n, _ := strconv.ParseFloat(v, 64)
					return int(n)
				}
			}
			t.Fatal("no hiro_serve_procs in /metrics")
			return 0
		}
		waitProcs := func(want int, within time.Duration, what string) {
			t.Helper()
			deadline := time.Now().Add(within)
			for procs() != want {
				if time.Now().After(deadline) {
					t.Fatalf("procs=%v: %s: hiro_serve_procs is %d, want %d", fixed, what, procs(), want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		waitProcs(1, 5*time.Second, "idle")
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := http.Post(st.Listen+RouteChat, "application/json", strings.NewReader(chatBody("extraction", true)))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}()
		}
		if fixed {
			time.Sleep(time.Second)
			if n := procs(); n != 1 {
				t.Errorf("procs = 1: %d processors while 8 streams run", n)
			}
		} else {
			waitProcs(runtime.GOMAXPROCS(0), time.Second, "8 streams in flight")
		}
		wg.Wait()
		waitProcs(1, 5*time.Second, "after the streams")
	}
}

// TestClampProcs: a fixed [serve] procs above the machine's CPUs runs on
// the CPUs (procs = 100000 made Go start more than 10000 threads and
// crash); one at or under them is kept.
func TestClampProcs(t *testing.T) {
	for _, c := range []struct{ fixed, cpus, want int }{{100000, 2, 2}, {1024, 16, 16}, {3, 2, 2}, {2, 2, 2}, {1, 8, 1}} {
		if got := clampProcs(c.fixed, c.cpus); got != c.want {
			t.Errorf("clampProcs(%d, %d) = %d, want %d", c.fixed, c.cpus, got, c.want)
		}
	}
}

// TestNewProcsPolicyClampsFixed applies procs = 100000 as the router
// does and reads GOMAXPROCS back: no more than runtime.NumCPU.
func TestNewProcsPolicyClampsFixed(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set in the environment: the policy leaves it")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	if p := newProcsPolicy(100000, nil); p != nil {
		t.Fatal("a fixed procs returned an adaptive policy")
	}
	if got := runtime.GOMAXPROCS(0); got != runtime.NumCPU() {
		t.Errorf("GOMAXPROCS = %d after procs = 100000, want NumCPU %d", got, runtime.NumCPU())
	}
}
