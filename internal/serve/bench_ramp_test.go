package serve

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/ramp"
)

// rampBenchHealthInterval is the [serve] health_interval of
// BenchmarkRampFailedRequests' router: how often a step looks at its
// samples, so it bounds the reversal time (the default is 5 s).
const rampBenchHealthInterval = 500 * time.Millisecond

// BenchmarkRampFailedRequests measures what a progressive ramp costs the
// clients (issue 27, "What it costs"): `hiro serve` (the real binary) in
// front of a production fake engine, a second fake as the candidate, and
// vegeta (github.com/tsenart/vegeta/v12, the load generator) sending
// chat requests at a constant HIRO_BENCH_RATE per second (default 500)
// while the router ramps 1, 5, 25, 100 %. Two scenarios:
//
//	clean       nothing goes wrong: the ramp completes, then the run ends
//	slow-at-25  the candidate becomes 300 ms slower (--slow-when) the
//	            moment the 25 % step begins: the ramp must reverse on
//	            latency
//
// Each reports failed_requests (vegeta's answers other than 200, and
// its transport errors: must be 0), requests, the clients' p99_ms, and
// ramp_s (clean: start to completion) or reversal_ms (slow-at-25: from
// the candidate turning slow to the router's reversal). The ramp's policy
// is one a benchmark can finish: soak 2 s, 50 requests, margins of 10
// points; the router's health_interval is rampBenchHealthInterval.
// bench/ramp.sh runs it.
func BenchmarkRampFailedRequests(b *testing.B) {
	hiroBin := buildHiro(b)
	rate := benchEnvInt("HIRO_BENCH_RATE", 500)
	for _, slow := range []bool{false, true} {
		name := "clean"
		if slow {
			name = "slow-at-25"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				r := rampBenchRun(b, hiroBin, rate, slow)
				b.ReportMetric(float64(r.failed), "failed_requests")
				b.ReportMetric(float64(r.requests), "requests")
				b.ReportMetric(r.p99.Seconds()*1000, "p99_ms")
				if slow {
					b.ReportMetric(float64(r.reversal.Microseconds())/1000, "reversal_ms")
				} else {
					b.ReportMetric(r.took.Seconds(), "ramp_s")
				}
				b.Logf("%s: %d requests at %d/s, %d failed %v; p99 %s; ramp %s in %s (reversal %s after the slowdown): %s",
					name, r.requests, rate, r.failed, r.codes, r.p99.Round(time.Microsecond), r.res.State, r.took.Round(time.Millisecond), r.reversal.Round(time.Millisecond), r.res.Reason)
				if r.failed > 0 {
					b.Errorf("%d client requests failed during the ramp (%v, %v); the ramp may add none", r.failed, r.codes, r.errors)
				}
			}
		})
	}
}

// rampBenchResult is one scenario's account.
type rampBenchResult struct {
	requests, failed int
	codes            map[string]int
	errors           []string
	p99              time.Duration
	took, reversal   time.Duration
	res              *evidence.RampResult
}

// rampBenchRun runs one scenario (see BenchmarkRampFailedRequests).
func rampBenchRun(b *testing.B, hiroBin string, rate int, slow bool) rampBenchResult {
	b.Helper()
	flagFile := filepath.Join(b.TempDir(), "slow")
	ePort, cPort := freePort(b), freePort(b)
	eURL, cURL := "http://127.0.0.1:"+itoa(ePort), "http://127.0.0.1:"+itoa(cPort)
	startBenchProcess(b, eURL, nil, fakeEngine, "--port", itoa(ePort), "--model", "fake-model")
	startBenchProcess(b, cURL, nil, fakeEngine, "--port", itoa(cPort), "--model", "fake-model", "--slow-when", flagFile, "--slow-when-delay", "300ms")
	sb := shadowBenchRouter(b, hiroBin, eURL, cURL, `health_interval = "`+rampBenchHealthInterval.String()+`"`)
	ctx := context.Background()

	tgt := vegeta.Target{Method: http.MethodPost, URL: sb.url + RouteChat, Body: []byte(chatBody("extraction", false)),
		Header: http.Header{"Content-Type": []string{"application/json"}}}
	atk := vegeta.NewAttacker(vegeta.Timeout(30*time.Second), vegeta.KeepAlive(true))
	results := atk.Attack(vegeta.NewStaticTargeter(tgt), vegeta.Rate{Freq: rate, Per: time.Second}, 0, "ramp")
	var m vegeta.Metrics
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for res := range results {
			m.Add(res)
		}
	}()
	stopLoad := func() {
		atk.Stop()
		wg.Wait()
		m.Close()
	}
	time.Sleep(time.Second) // production alone first

	pol := ramp.Policy{Steps: []float64{0.01, 0.05, 0.25, 1}, Soak: config.Duration{Duration: 2 * time.Second}, MinRequests: 50, Margin: 0.1}
	start := time.Now()
	if _, err := sb.ctl.RampStart(ctx, control.RampStartRequest{Candidate: "cand", Policy: pol}); err != nil {
		stopLoad()
		b.Fatal(err)
	}
	var slowAt time.Time
	var res *evidence.RampResult
	for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(10 * time.Millisecond) {
		st, err := sb.ctl.RampStatus(ctx)
		if err != nil {
			stopLoad()
			b.Fatal(err)
		}
		res = st.Result
		if slow && slowAt.IsZero() && res.Share == 0.25 {
			if err := os.WriteFile(flagFile, nil, 0o644); err != nil {
				b.Fatal(err)
			}
			slowAt = time.Now()
		}
		if res.State != evidence.RampRamping {
			break
		}
		if time.Now().After(deadline) {
			stopLoad()
			b.Fatalf("the ramp still runs after 5 minutes: %+v", res)
		}
	}
	out := rampBenchResult{res: res, took: time.Since(start)}
	if res.EndedAt != nil && !slowAt.IsZero() {
		out.reversal = res.EndedAt.Sub(slowAt)
	}
	time.Sleep(time.Second) // the load goes on after the ramp's end
	if res.State == evidence.RampCompleted {
		if _, err := sb.ctl.RampStop(ctx, "benchmark end"); err != nil {
			b.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	stopLoad()
	switch {
	case !slow && res.State != evidence.RampCompleted:
		b.Fatalf("the clean ramp ended %s: %s", res.State, res.Reason)
	case slow && (res.State != evidence.RampReversed || !strings.Contains(res.Reason, "reversed at 25 %: "+ramp.MeasureLatency)):
		b.Fatalf("the ramp whose candidate turned slow at 25 %% ended %s: %s; want reversed at 25 %% on latency", res.State, res.Reason)
	}
	out.requests, out.codes, out.errors, out.p99 = int(m.Requests), m.StatusCodes, m.Errors, m.Latencies.P99
	for code, n := range m.StatusCodes {
		if c, _ := strconv.Atoi(code); c != http.StatusOK {
			out.failed += n
		}
	}
	return out
}
