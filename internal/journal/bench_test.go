package journal

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// writeBenchJournal writes n entries shaped like a campaign entry (summary,
// five sections, a Markdown body, six validation rows, an alias) into a new
// journal directory.
func writeBenchJournal(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "journal")
	j := &Journal{Dir: dir}
	t0 := time.Date(2024, 1, 1, 9, 0, 0, 0, time.FixedZone("", 3600))
	for i := range n {
		e := &Entry{
			Timestamp: t0.Add(time.Duration(i) * time.Hour),
			Slug:      fmt.Sprintf("campaign-%04d", i),
			Title:     fmt.Sprintf("Campaign %d: alternate backend <stops> before inference", i),
			Subtitle:  "Bounded qualification stopped at engine startup",
			Summary:   "A bounded qualification tested one candidate.\n\nNo inference request executed; production was restored and verified.",
			Body:      "## Notes\n\nThe V1 runner loaded **all** shards, then `gptq_marlin_repack` failed.\n\n- one\n- two\n\nSee [the previous entry](campaign-0000.html).\n",
			Aliases:   []string{fmt.Sprintf("old-campaign-%04d", i)},
			NextSteps: []string{"Try native Linux.", "Keep production unchanged."},
		}
		for s := range 5 {
			e.Sections = append(e.Sections, Section{Title: fmt.Sprintf("Section %d", s), Status: "Completed",
				Items: []string{"The engine recognised the architecture.", "All four shards loaded in 93.66 s.", "Health 200 and READY."}})
		}
		for _, st := range []string{StatusPassed, StatusPassed, StatusFailed, StatusNotRun, StatusNotRun, StatusPassed} {
			e.Validation = append(e.Validation, ValidationRow{Check: "Gate " + st, Status: st, Result: "Result text with <markup> & detail."})
		}
		if _, err := j.Create(e); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkBuild1000 loads a journal of 1,000 entries and builds its site:
// what 'hiro journal build' does (target ≤ 1 s per op on the 2-core dev
// box). "fresh" builds into a new directory each time (3,002 files created);
// "rebuild" builds over the previous site, the usual case after adding an
// entry.
func BenchmarkBuild1000(b *testing.B) {
	dir := writeBenchJournal(b, 1000)
	build := func(b *testing.B, out string) {
		j, err := Load(dir)
		if err != nil {
			b.Fatal(err)
		}
		if len(j.Problems) > 0 || len(j.Entries) != 1000 {
			b.Fatalf("loaded %d entries, problems %v", len(j.Entries), j.Problems)
		}
		res, err := Build(j, out, BuildOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Files != 3002 {
			b.Fatalf("wrote %d files, want 3,002", res.Files)
		}
	}
	b.Run("fresh", func(b *testing.B) {
		base := b.TempDir()
		n := 0
		cpu := startCPU()
		for b.Loop() {
			n++
			build(b, filepath.Join(base, fmt.Sprint(n)))
		}
		cpu.report(b)
	})
	b.Run("rebuild", func(b *testing.B) {
		out := filepath.Join(b.TempDir(), "site")
		build(b, out)
		cpu := startCPU()
		for b.Loop() {
			build(b, out)
		}
		cpu.report(b)
		if _, err := os.Stat(filepath.Join(out, "entries", "campaign-0999.html")); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkCheck1000 is 'hiro journal check --out DIR' on the same journal.
func BenchmarkCheck1000(b *testing.B) {
	dir := writeBenchJournal(b, 1000)
	j, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(b.TempDir(), "site")
	if _, err := Build(j, out, BuildOptions{}); err != nil {
		b.Fatal(err)
	}
	cpu := startCPU()
	for b.Loop() {
		r, err := Check(j, out)
		if err != nil || len(r.Problems) > 0 {
			b.Fatalf("check: %v %v", err, r.Problems)
		}
	}
	cpu.report(b)
}

// cpuClock measures the process's CPU time (user + system, all threads).
// Reported as cpu-ms/op beside ns/op: on a shared machine the wall time
// includes waiting for other processes, the CPU time does not.
type cpuClock struct{ start time.Duration }

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock{cpuNow()} }

func (c cpuClock) report(b *testing.B) {
	if b.N > 0 {
		b.ReportMetric(float64(cpuNow()-c.start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
	}
}
