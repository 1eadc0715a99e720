package serve

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
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
}

// shadowBenchSetup starts the production fake (engineArgs), the
// candidate fake (the same arguments) and hiro serve in front of
// production with the candidate as profile "cand".
func shadowBenchSetup(b *testing.B, engineArgs ...string) *shadowBench {
	b.Helper()
	hiroBin := buildHiro(b)
	ePort, cPort, hPort := freePort(b), freePort(b), freePort(b)
	eURL, cURL, hURL := "http://127.0.0.1:"+itoa(ePort), "http://127.0.0.1:"+itoa(cPort), "http://127.0.0.1:"+itoa(hPort)
	startBenchProcess(b, eURL, nil, fakeEngine, append([]string{"--port", itoa(ePort), "--model", "fake-model"}, engineArgs...)...)
	startBenchProcess(b, cURL, nil, fakeEngine, append([]string{"--port", itoa(cPort), "--model", "fake-model"}, engineArgs...)...)
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
`, eURL, cURL, hPort, filepath.Join(dir, "access.log"))), 0o644)
	stateHome := shortDir(b)
	env := []string{"HIRO_STATE_HOME=" + stateHome, "HIRO_LEASE_DIR=" + filepath.Join(stateHome, "leases"),
		"HIRO_PRODUCTION_DIR=" + filepath.Join(stateHome, "production")}
	env = append(env, strings.Fields(os.Getenv("HIRO_BENCH_ENV"))...)
	hiro := startBenchProcess(b, hURL, env, hiroBin, "--config", cfgPath, "serve")
	ctl, err := control.Dial(filepath.Join(stateHome, "serve"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ctl.Close)
	return &shadowBench{url: hURL, pid: hiro.Process.Pid, ctl: ctl}
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
// on − off, their median and range, and the Hodges-Lehmann shift of all
// latencies with its 95 % interval (Mann-Whitney, package stats).
// Goal: added p50 <= 10 µs.
func BenchmarkShadowOverhead(b *testing.B) {
	rounds := benchEnvInt("HIRO_BENCH_ROUNDS", 8)
	secs := time.Duration(benchEnvInt("HIRO_BENCH_SECONDS", 2)) * time.Second
	share, _ := strconv.ParseFloat(os.Getenv("HIRO_BENCH_SHADOW_SHARE"), 64)
	if share == 0 {
		share = 1
	}
	sb := shadowBenchSetup(b)
	hc := benchClient()
	body := chatBody("fake-model", false)
	var diffs, offP50, onP50 stat
	var offAll, onAll []float64
	sample := func(lat []time.Duration) []float64 {
		out := make([]float64, 0, 1500)
		for _, i := range rand.Perm(len(lat))[:min(1500, len(lat))] {
			out = append(out, us(lat[i]))
		}
		return out
	}
	var dropped, pairs int64
	loads := []string{loadAvg()}
	b.ResetTimer()
	for round := range rounds {
		p50 := map[bool]float64{}
		for _, on := range [][2]bool{{false, true}, {true, false}}[round%2] {
			if on {
				sb.set(b, true, share)
			}
			runLoad(hc, sb.url, body, 4, 300*time.Millisecond, false) // warm-up
			lat, _, errs := runLoad(hc, sb.url, body, 1, secs, false)
			if errs > 0 {
				b.Errorf("round %d (shadow %v): %d failed requests", round, on, errs)
			}
			if on {
				st, err := sb.ctl.ShadowStop(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				dropped += st.Result.Dropped
				pairs += int64(st.Result.Pairs)
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			p50[on] = us(pct(lat, .5))
			if on {
				onAll = append(onAll, sample(lat)...)
			} else {
				offAll = append(offAll, sample(lat)...)
			}
		}
		diffs, offP50, onP50 = append(diffs, p50[true]-p50[false]), append(offP50, p50[false]), append(onP50, p50[true])
		loads = append(loads, loadAvg())
	}
	b.StopTimer()
	rt, err := stats.MannWhitney(onAll, offAll, 0.95)
	if err != nil {
		b.Fatal(err)
	}
	w := os.Stdout
	fmt.Fprintf(w, "\n# shadow overhead: %d paired interleaved rounds, %s each side, share %g; load average per round: %s\n", rounds, secs, share, strings.Join(loads, " | "))
	fmt.Fprintf(w, "p50 µs shadow off  %s\n", medSpread(offP50, "%.1f"))
	fmt.Fprintf(w, "p50 µs shadow on   %s\n", medSpread(onP50, "%.1f"))
	fmt.Fprintf(w, "added p50 µs       %s (per-round on − off, median and range)\n", medSpread(diffs, "%.1f"))
	fmt.Fprintf(w, "shift µs           %.1f, 95 %% interval [%.1f, %.1f] (Hodges-Lehmann of %d on and %d off latencies)\n", rt.Shift, rt.Lower, rt.Upper, len(onAll), len(offAll))
	fmt.Fprintf(w, "mirror             %d pairs scored, %d dropped (queue full)\ngoal: added p50 <= 10 µs\n", pairs, dropped)
	b.ReportMetric(diffs.median(), "shadow-added-p50-µs")
	b.ReportMetric(rt.Shift, "shadow-shift-µs")
	b.ReportMetric(rt.Lower, "shadow-shift-lo-µs")
	b.ReportMetric(rt.Upper, "shadow-shift-hi-µs")
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
