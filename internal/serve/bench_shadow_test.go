package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/shadow"
	"github.com/hiro-dev/hiro/internal/stats"
)

// shadowBench is hiro serve (the real binary) in front of one fake
// engine, with a second fake engine as the shadow candidate, and the
// control client that turns the mirror on and off.
type shadowBench struct {
	url string
	pid int
	ctl *control.Client
	// debug is the router's profiling listener (DebugListenEnv), set
	// when HIRO_BENCH_PPROF asks for profiles; "" otherwise.
	debug string
}

// shadowBenchSetup starts the production fake (engineArgs), the
// candidate fake (the same arguments) and hiro serve in front of
// production with the candidate as profile "cand".
func shadowBenchSetup(b *testing.B, engineArgs ...string) *shadowBench {
	b.Helper()
	eURL, cURL := shadowBenchEngines(b, engineArgs...)
	return shadowBenchRouter(b, buildHiro(b), eURL, cURL)
}

// shadowBenchEngines starts the production fake and the candidate fake
// (both with engineArgs) and returns their URLs.
func shadowBenchEngines(b *testing.B, engineArgs ...string) (eURL, cURL string) {
	b.Helper()
	ePort, cPort := freePort(b), freePort(b)
	eURL, cURL = "http://127.0.0.1:"+itoa(ePort), "http://127.0.0.1:"+itoa(cPort)
	startBenchProcess(b, eURL, nil, fakeEngine, append([]string{"--port", itoa(ePort), "--model", "fake-model"}, engineArgs...)...)
	startBenchProcess(b, cURL, nil, fakeEngine, append([]string{"--port", itoa(cPort), "--model", "fake-model"}, engineArgs...)...)
	return eURL, cURL
}

// shadowBenchRouter starts the hiro binary hiroBin as hiro serve in
// front of the production fake at eURL, with the candidate at cURL as
// profile "cand", each router with its own state; serveExtra are more
// [serve] lines.
func shadowBenchRouter(b *testing.B, hiroBin, eURL, cURL string, serveExtra ...string) *shadowBench {
	b.Helper()
	return shadowBenchRouterEnv(b, hiroBin, eURL, cURL, nil, serveExtra...)
}

// shadowBenchRouterEnv is shadowBenchRouter with more environment for
// this router only (after HIRO_BENCH_ENV's).
func shadowBenchRouterEnv(b *testing.B, hiroBin, eURL, cURL string, extraEnv []string, serveExtra ...string) *shadowBench {
	b.Helper()
	hPort := freePort(b)
	hURL := "http://127.0.0.1:" + itoa(hPort)
	dir := b.TempDir()
	cfgPath := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfgPath, []byte(fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
unmanaged = true
base_url = %q
model = "fake-model"
[backends.cand]
engine = "llamacpp"
unmanaged = true
base_url = %q
model = "fake-model"
[serve]
listen = "127.0.0.1:%d"
alias = "extraction"
access_log = %q
%s
`, eURL, cURL, hPort, filepath.Join(dir, "access.log"), strings.Join(serveExtra, "\n"))), 0o644)
	stateHome := shortDir(b)
	env := []string{"HIRO_STATE_HOME=" + stateHome, "HIRO_LEASE_DIR=" + filepath.Join(stateHome, "leases"),
		"HIRO_PRODUCTION_DIR=" + filepath.Join(stateHome, "production")}
	env = append(env, strings.Fields(os.Getenv("HIRO_BENCH_ENV"))...)
	env = append(env, extraEnv...)
	debug := ""
	if os.Getenv("HIRO_BENCH_PPROF") != "" {
		debug = "127.0.0.1:" + itoa(freePort(b))
		env = append(env, DebugListenEnv+"="+debug)
	}
	hiro := startBenchProcess(b, hURL, env, hiroBin, "--config", cfgPath, "serve")
	ctl, err := control.Dial(filepath.Join(stateHome, "serve"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ctl.Close)
	return &shadowBench{url: hURL, pid: hiro.Process.Pid, ctl: ctl, debug: debug}
}

// profilePhase fetches the router's profiles of one measured phase of
// secs (HIRO_BENCH_PPROF=DIR): a CPU profile and the block and mutex
// profiles' deltas (their rates: HIRO_SERVE_PPROF_RATES in
// HIRO_BENCH_ENV), or with HIRO_BENCH_PPROF_TRACE=1 an execution trace,
// written to DIR as NAME.cpu.pprof, NAME.block.pprof, NAME.mutex.pprof,
// NAME.trace, and with HIRO_BENCH_PPROF_ALLOCS=1 the allocations' delta
// (NAME.allocs.pprof); and the
// collections and allocations of the phase (the router's /debug/gc
// before and after), also per client request of the n the phase sent.
// wait returns them.
func (sb *shadowBench) profilePhase(name string, secs time.Duration) (wait func(n int) string) {
	dir := os.Getenv("HIRO_BENCH_PPROF")
	if sb.debug == "" || dir == "" {
		return func(int) string { return "" }
	}
	os.MkdirAll(dir, 0o755)
	get := func(path string) []byte {
		resp, err := http.Get("http://" + sb.debug + path)
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	gc0 := strings.Fields(string(get("/debug/gc")))
	s := int(secs / time.Second)
	var wg sync.WaitGroup
	fetch := func(path, file string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			os.WriteFile(filepath.Join(dir, name+file), get(path), 0o644)
		}()
	}
	if os.Getenv("HIRO_BENCH_PPROF_TRACE") == "1" {
		fetch("/debug/pprof/trace?seconds=1", ".trace")
	} else {
		fetch("/debug/pprof/profile?seconds="+itoa(s), ".cpu.pprof")
		fetch("/debug/pprof/block?seconds="+itoa(s), ".block.pprof")
		fetch("/debug/pprof/mutex?seconds="+itoa(s), ".mutex.pprof")
		if os.Getenv("HIRO_BENCH_PPROF_ALLOCS") == "1" {
			// Its collection allocates in the router: opt-in, so that the
			// per-request counts below stay comparable between runs.
			fetch("/debug/pprof/allocs?seconds="+itoa(s), ".allocs.pprof")
		}
	}
	return func(n int) string {
		wg.Wait()
		gc1 := strings.Fields(string(get("/debug/gc")))
		if len(gc0) != 3 || len(gc1) != 3 {
			return ""
		}
		d := func(i int) int64 {
			a, _ := strconv.ParseInt(gc0[i], 10, 64)
			b, _ := strconv.ParseInt(gc1[i], 10, 64)
			return b - a
		}
		return fmt.Sprintf("%d GCs, %d mallocs, %d bytes: %.1f allocations and %.0f bytes per request", d(0), d(1), d(2),
			float64(d(1))/float64(max(n, 1)), float64(d(2))/float64(max(n, 1)))
	}
}

// hlSample is the most latencies per side the Hodges-Lehmann shift of
// BenchmarkShadowOverhead reads: a uniform random draw without
// replacement from each side's pooled latencies (2,000 × 2,000 = 4
// million differences; all 15,000 × 15,000 took 100 of the run's 161 s,
// and the draw leaves the interval's width to the rounds' spread).
const hlSample = 2000

// draw returns at most n values of xs drawn uniformly without
// replacement.
func draw(xs []float64, n int) []float64 {
	if len(xs) <= n {
		return xs
	}
	out := make([]float64, 0, n)
	for _, i := range rand.Perm(len(xs))[:n] {
		out = append(out, xs[i])
	}
	return out
}

// set turns the mirror on (share, to the candidate) or off.
func (sb *shadowBench) set(b *testing.B, on bool, share float64) {
	b.Helper()
	ctx := context.Background()
	if !on {
		if _, err := sb.ctl.ShadowStop(ctx); err != nil {
			b.Fatal(err)
		}
		return
	}
	if _, err := sb.ctl.ShadowStart(ctx, control.ShadowStartRequest{Candidate: "cand", Config: shadow.Config{Share: share, MaxPairs: shadow.MaxPairsLimit}}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkShadowOverhead measures what shadow traffic adds to the
// primary path: p50 latency of one client through hiro serve with the
// mirror off and on (share HIRO_BENCH_SHADOW_SHARE, default 1: every
// request mirrored to a second fake engine), in paired interleaved
// rounds (the order alternates). It reports each round's difference
// on − off, their median and range, and the Hodges-Lehmann shift of the
// latencies (hlSample drawn per side) with its 95 % interval
// (Mann-Whitney, package stats). HIRO_BENCH_HIRO_BASE names another hiro
// binary (the code before a change; "self": the same binary), measured
// the same way in the same rounds in front of the same engines
// ("hiro-base", with HIRO_BENCH_BASE_ENV's NAME=VALUE pairs in its
// environment only: HIRO_BENCH_HIRO_BASE=self
// HIRO_BENCH_BASE_ENV=HIRO_SHADOW_IDLE_WAIT=0 compares the mirror's idle
// gate with none), and the per-round difference of the two added p50s.
// Goal: added p50 <= 10 µs.
func BenchmarkShadowOverhead(b *testing.B) {
	rounds := benchEnvInt("HIRO_BENCH_ROUNDS", 8)
	secs := time.Duration(benchEnvInt("HIRO_BENCH_SECONDS", 2)) * time.Second
	share, _ := strconv.ParseFloat(os.Getenv("HIRO_BENCH_SHADOW_SHARE"), 64)
	if share == 0 {
		share = 1
	}
	eURL, cURL := shadowBenchEngines(b)
	type target struct {
		name                 string
		sb                   *shadowBench
		diffs, offP50, onP50 stat
		offAll, onAll        []float64
		dropped, pairs       int64
	}
	targets := []*target{{name: "hiro", sb: shadowBenchRouter(b, buildHiro(b), eURL, cURL)}}
	if bin := os.Getenv("HIRO_BENCH_HIRO_BASE"); bin != "" {
		if bin == "self" {
			bin = buildHiro(b)
		}
		baseEnv := strings.Fields(os.Getenv("HIRO_BENCH_BASE_ENV"))
		targets = append(targets, &target{name: "hiro-base", sb: shadowBenchRouterEnv(b, bin, eURL, cURL, baseEnv)})
	}
	hc := benchClient()
	body := chatBody("fake-model", false)
	sample := func(lat []time.Duration) []float64 {
		out := make([]float64, 0, 1500)
		for _, i := range rand.Perm(len(lat))[:min(1500, len(lat))] {
			out = append(out, us(lat[i]))
		}
		return out
	}
	var versus stat // per round: hiro's added p50 − hiro-base's
	loads := []string{loadAvg()}
	b.ResetTimer()
	for round := range rounds {
		order := targets
		if round%2 == 1 && len(targets) == 2 {
			order = []*target{targets[1], targets[0]}
		}
		for _, tg := range order {
			p50 := map[bool]float64{}
			for _, on := range [][2]bool{{false, true}, {true, false}}[(round/2)%2] {
				if on {
					tg.sb.set(b, true, share)
				}
				runLoad(hc, tg.sb.url, body, 4, 300*time.Millisecond, false) // warm-up
				var warmDropped int64                                        // the mirror's drops in the warm-up (4 clients)
				if on {
					if st, err := tg.sb.ctl.ShadowStatus(context.Background()); err == nil && st.Result != nil {
						warmDropped = st.Result.Dropped
					}
				}
				prof := tg.sb.profilePhase(fmt.Sprintf("%s-r%d-%v", tg.name, round, map[bool]string{false: "off", true: "on"}[on]), secs)
				lat, n, errs := runLoad(hc, tg.sb.url, body, 1, secs, false)
				if g := prof(int(n)); g != "" {
					fmt.Printf("# %s round %d shadow %v: %d requests; router %s\n", tg.name, round, on, n, g)
				}
				if errs > 0 {
					b.Errorf("round %d (%s, shadow %v): %d failed requests", round, tg.name, on, errs)
				}
				if on {
					st, err := tg.sb.ctl.ShadowStop(context.Background())
					if err != nil {
						b.Fatal(err)
					}
					tg.dropped += st.Result.Dropped
					tg.pairs += int64(st.Result.Pairs)
					fmt.Printf("# %s round %d: mirror %d pairs, %d dropped (%d of them in the 4-client warm-up)\n", tg.name, round, st.Result.Pairs, st.Result.Dropped, warmDropped)
				}
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				p50[on] = us(pct(lat, .5))
				if on {
					tg.onAll = append(tg.onAll, sample(lat)...)
				} else {
					tg.offAll = append(tg.offAll, sample(lat)...)
				}
			}
			tg.diffs, tg.offP50, tg.onP50 = append(tg.diffs, p50[true]-p50[false]), append(tg.offP50, p50[false]), append(tg.onP50, p50[true])
		}
		if len(targets) == 2 {
			versus = append(versus, targets[0].diffs[round]-targets[1].diffs[round])
		}
		loads = append(loads, loadAvg())
	}
	b.StopTimer()
	w := os.Stdout
	fmt.Fprintf(w, "\n# shadow overhead: %d paired interleaved rounds, %s each side, share %g; load average per round: %s\n", rounds, secs, share, strings.Join(loads, " | "))
	for _, tg := range targets {
		on, off := draw(tg.onAll, hlSample), draw(tg.offAll, hlSample)
		rt, err := stats.MannWhitney(on, off, 0.95)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(w, "%-9s p50 µs shadow off  %s\n", tg.name, medSpread(tg.offP50, "%.1f"))
		fmt.Fprintf(w, "%-9s p50 µs shadow on   %s\n", tg.name, medSpread(tg.onP50, "%.1f"))
		fmt.Fprintf(w, "%-9s added p50 µs       %s (per-round on − off, median and range)\n", tg.name, medSpread(tg.diffs, "%.1f"))
		fmt.Fprintf(w, "%-9s shift µs           %.1f, 95 %% interval [%.1f, %.1f] (Hodges-Lehmann of %d on and %d off latencies, drawn from %d and %d)\n",
			tg.name, rt.Shift, rt.Lower, rt.Upper, len(on), len(off), len(tg.onAll), len(tg.offAll))
		fmt.Fprintf(w, "%-9s mirror             %d pairs scored, %d dropped (queue full)\n", tg.name, tg.pairs, tg.dropped)
		if tg.name == "hiro" {
			b.ReportMetric(tg.diffs.median(), "shadow-added-p50-µs")
			b.ReportMetric(rt.Shift, "shadow-shift-µs")
			b.ReportMetric(rt.Lower, "shadow-shift-lo-µs")
			b.ReportMetric(rt.Upper, "shadow-shift-hi-µs")
		}
	}
	if len(versus) > 0 {
		on, base := draw(targets[0].onAll, hlSample), draw(targets[1].onAll, hlSample)
		rt, err := stats.MannWhitney(on, base, 0.95)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(w, "hiro − hiro-base: added p50 µs %s (per round); shadow-on latency shift µs %.1f, 95 %% interval [%.1f, %.1f]\n", medSpread(versus, "%.1f"), rt.Shift, rt.Lower, rt.Upper)
		b.ReportMetric(versus.median(), "added-p50-vs-base-µs")
	}
	fmt.Fprintln(w, "goal: added p50 <= 10 µs")
}

// BenchmarkShadowStreamingRSS holds 256 concurrent streaming clients
// through two hiro serve processes, each in front of its own fake
// engines: one with the mirror off, one with it on (every stream
// sampled, mirrored to a second fake), in alternating phases (off, on,
// off, on), and reports each process's peak resident memory (VmHWM over
// its life, start-up trimmed) and the difference. Goal: within 10 MB.
func BenchmarkShadowStreamingRSS(b *testing.B) {
	const clients = 256
	reply := strings.TrimSpace(strings.Repeat("word ", 100))
	procs := map[bool]*shadowBench{false: shadowBenchSetup(b, "--token-delay", "20ms", "--reply", reply), true: shadowBenchSetup(b, "--token-delay", "20ms", "--reply", reply)}
	idle := float64(procKB(procs[true].pid, "VmRSS")) / 1024
	procs[true].set(b, true, 1)
	fmt.Printf("# idle RSS of the shadow-on router: %.1f MB before the run started, %.1f MB after (shadow off: %.1f MB)\n",
		idle, float64(procKB(procs[true].pid, "VmRSS"))/1024, float64(procKB(procs[false].pid, "VmRSS"))/1024)
	hc := benchClient()
	body := `{"model":"fake-model","stream":true,"messages":[{"role":"user","content":"count"}]}`
	b.ResetTimer()
	for _, on := range []bool{false, true, false, true} {
		sb := procs[on]
		var wg sync.WaitGroup
		var bad atomic.Int64
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := hc.Post(sb.url+RouteChat, "application/json", strings.NewReader(body))
				if err != nil {
					bad.Add(1)
					return
				}
				defer resp.Body.Close()
				sc := bufio.NewScanner(resp.Body)
				last := ""
				for sc.Scan() {
					if l := sc.Text(); l != "" {
						last = l
					}
				}
				if resp.StatusCode != 200 || last != "data: [DONE]" {
					bad.Add(1)
				}
			}()
		}
		wg.Wait()
		fmt.Printf("# shadow %v: %d streams, %d failed; peak RSS so far %.1f MB (load %s)\n", on, clients, bad.Load(), float64(procKB(sb.pid, "VmHWM"))/1024, loadAvg())
		if bad.Load() > 0 {
			b.Errorf("shadow %v: %d streams failed", on, bad.Load())
		}
	}
	time.Sleep(3 * time.Second) // the mirror's last candidate streams
	st, _ := procs[true].ctl.ShadowStop(context.Background())
	off, on := float64(procKB(procs[false].pid, "VmHWM"))/1024, float64(procKB(procs[true].pid, "VmHWM"))/1024
	fmt.Printf("# peak RSS: shadow off %.1f MB, on %.1f MB (%d pairs scored, %d dropped): added %.1f MB (goal <= 10 MB)\n", off, on, st.Result.Pairs, st.Result.Dropped, on-off)
	b.ReportMetric(off, "off-peak-RSS-MB")
	b.ReportMetric(on, "on-peak-RSS-MB")
	b.ReportMetric(on-off, "shadow-added-RSS-MB")
}
