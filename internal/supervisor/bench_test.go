package supervisor

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"
)

// The numbers (run: go test -run '^$' -bench . -benchtime 20x
// ./internal/supervisor/). Each iteration starts a real fake-engine
// process; the metric is the median over the iterations, from the
// timestamp the fake logs just before the event to Result.DecidedAt.

func reportMedian(b *testing.B, samples []time.Duration, unit string) {
	slices.Sort(samples)
	med := samples[len(samples)/2]
	b.ReportMetric(float64(med.Microseconds())/1000, unit+"-median-ms")
	b.ReportMetric(float64(samples[len(samples)-1].Microseconds())/1000, unit+"-max-ms")
}

// BenchmarkExitToVerdict: the engine exits before ready (exit 1 after
// 100 ms of life); from its "exiting at" timestamp to the classified
// failure verdict. Target: median ≤ 3 ms. It also reports
// wait-to-verdict: from cmd.Wait returning to the verdict (draining the
// log and classifying), hiro's own share; the rest is the kernel tearing
// the engine process down.
func BenchmarkExitToVerdict(b *testing.B) {
	var samples, afterWait []time.Duration
	for i := 0; i < b.N; i++ {
		p, state := fakeProfile(b, "vllm", 0, []string{"--progress-every", "20ms", "--exit-after", "100ms", "--exit", "1"}, "")
		_, res := Start(context.Background(), p, Options{StateDir: state})
		if res.State != StateFailed || res.Failure == nil || res.Failure.ExitCode == nil {
			b.Fatalf("state %s failure %+v", res.State, res.Failure)
		}
		samples = append(samples, res.DecidedAt.Sub(logTime(b, res.LogPath, reExit)))
		afterWait = append(afterWait, res.DecidedAt.Sub(res.ExitedAt))
	}
	reportMedian(b, samples, "exit-to-verdict")
	reportMedian(b, afterWait, "wait-to-verdict")
}

// BenchmarkHealthToReady: llama.cpp-style health answers 503 for 300 ms,
// then 200; from the flip to the ready verdict (identity checked, a real
// streamed completion made; the fake answers at once). Target: median
// ≤ 30 ms.
func BenchmarkHealthToReady(b *testing.B) {
	var samples []time.Duration
	for i := 0; i < b.N; i++ {
		port := freePort(b)
		p, state := fakeProfile(b, "llamacpp", port, []string{"--port", strconv.Itoa(port), "--load-time", "300ms"}, `ready_probe = { expect = "READY" }`)
		proc, res := Start(context.Background(), p, Options{StateDir: state})
		if res.State != StateReady {
			b.Fatalf("state %s failure %+v", res.State, res.Failure)
		}
		samples = append(samples, res.DecidedAt.Sub(logTime(b, res.LogPath, reFlip)))
		proc.Stop(context.Background())
	}
	reportMedian(b, samples, "health-to-ready")
}
