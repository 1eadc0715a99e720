package engine

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchLines is a vLLM startup log: the case logs when present (their
// lines mix markers, facts, errors and plain INFO), else a built-in one.
func benchLines(b *testing.B) []string {
	var lines []string
	for _, name := range []string{"vllm-marlin-repack.log", "vllm-max-model-len.log", "vllm-wsl2-uva.log"} {
		data, err := os.ReadFile(filepath.Join(casesDir, name))
		if err != nil {
			break
		}
		lines = append(lines, strings.Split(strings.TrimSpace(string(data)), "\n")...)
	}
	if len(lines) == 0 {
		lines = []string{
			"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [core.py:77] Initializing a V1 LLM engine (v0.28.0) with config: model='m', max_seq_len=4096",
			"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [gpu_model_runner.py:1] Starting to load model m...",
			"Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:47<00:47, 23.80s/it]",
			"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [default_loader.py:1] Loading weights took 93.66 seconds",
		}
	}
	return lines
}

// BenchmarkTrackerLine is the cost of one log line fed to a Tracker
// before any root cause is known (the common case while an engine loads).
// A fresh tracker is taken every len(lines) lines so the first-error
// shortcut does not hide the scanning cost.
func BenchmarkTrackerLine(b *testing.B) {
	e := mustLookup(b, "vllm")
	lines := benchLines(b)
	tr := e.NewTracker()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := i % len(lines)
		if j == 0 {
			tr = e.NewTracker()
		}
		tr.Feed(lines[j])
	}
}

// BenchmarkTrackerLineInfo is the cost of a plain INFO line that matches
// nothing, the bulk of a real log.
func BenchmarkTrackerLineInfo(b *testing.B) {
	tr := mustLookup(b, "vllm").NewTracker()
	line := "(APIServer pid=4120) INFO 11-21 14:02:20 [model.py:1510] Using max model len 4096 for the served model mistral-small"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr.Feed(line)
	}
}

// BenchmarkClassify is the latency from an exit notice to the classified
// failure (the supervisor's verdict must be ≤ 3 ms after the exit): a
// tracker with a full tail, facts and a root cause, classified once.
func BenchmarkClassify(b *testing.B) {
	tr := mustLookup(b, "vllm").NewTracker()
	for _, l := range benchLines(b) {
		tr.Feed(l)
	}
	code := 1
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: ExitInfo{Code: &code}})
		if f.Class == "" {
			b.Fatal("no class")
		}
	}
}

// BenchmarkDiagnose is a whole case log through Diagnose.
func BenchmarkDiagnose(b *testing.B) {
	data := strings.Join(benchLines(b), "\n")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Diagnose(strings.NewReader(data), "vllm", Exited(1)); err != nil {
			b.Fatal(err)
		}
	}
}

// tenThousandLines is a 10,000-line log: the field corpus's logs (or the
// built-in vLLM lines) repeated, the error-free lines first, ending in a
// CUDA out-of-memory traceback, so every line is scanned.
func tenThousandLines(b *testing.B) string {
	var pool []string
	if cs, err := LoadCaseSet("testdata/field"); err == nil {
		for _, c := range cs {
			data, err := os.ReadFile(filepath.Join("testdata/field", c.Log))
			if err != nil {
				continue
			}
			e := mustLookup(b, c.Engine)
			for _, l := range strings.Split(string(data), "\n") {
				tr := e.NewTracker()
				tr.Feed(l)
				if _, _, ok := tr.Signature(); ok || tr.fallback != "" || strings.Contains(l, "Traceback") {
					continue // keep the lines that explain nothing
				}
				pool = append(pool, l)
			}
		}
	}
	if len(pool) == 0 {
		pool = benchLines(b)
	}
	var sb strings.Builder
	for i := 0; i < 9995; i++ {
		sb.WriteString(pool[i%len(pool)])
		sb.WriteByte('\n')
	}
	sb.WriteString("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1] Traceback (most recent call last):\n")
	sb.WriteString("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1]   File \"/x/vllm/worker/gpu_worker.py\", line 1, in determine_available_memory\n")
	sb.WriteString("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1]     self.model_runner.profile_run()\n")
	sb.WriteString("(EngineCore_DP0 pid=1) ERROR 01-01 00:00:00 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
	sb.WriteString("RuntimeError: Engine core initialization failed. See root cause above.\n")
	return sb.String()
}

// BenchmarkDiagnose10kLines: a 10,000-line log classified by Diagnose
// (the bound: under 50 ms). Reported as wall ms per log and as
// CPU ms per log (user+system time of this process: the figure that does
// not grow when other work shares the machine).
func BenchmarkDiagnose10kLines(b *testing.B) {
	data := tenThousandLines(b)
	if n := strings.Count(data, "\n"); n != 10000 {
		b.Fatalf("%d lines", n)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := Diagnose(strings.NewReader(data), "vllm", Exited(1))
		if err != nil || f.Class != "gpu_oom" {
			b.Fatalf("%v %+v", err, f)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/log")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/log")
}

// cpuTime is this process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
