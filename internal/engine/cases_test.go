package engine

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// casesDir holds the shared failure-log cases, relative to this package.
const casesDir = "../../../shared/cases/failure-logs"

// caseDirs are the case sets every case test runs: the handed cases
// (../shared, absent in a fresh clone), the field corpus beside this
// package (testdata/field, when present), the live captures
// (testdata/live) and the failures captured on the H200
// (examples/gpu/results).
var caseDirs = testsupport.CaseSetDirs()

// failureCase is a Case with the directory of its set.
type failureCase struct {
	Case
	dir string
}

// loadCases reads every case set present; it skips when none is.
func loadCases(t testing.TB) []failureCase {
	t.Helper()
	var all []failureCase
	for _, dir := range caseDirs {
		cs, err := LoadCaseSet(dir)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			all = append(all, failureCase{Case: c, dir: dir})
		}
	}
	if len(all) == 0 {
		t.Skipf("no failure-log cases found (%s)", strings.Join(caseDirs, ", "))
	}
	return all
}

func (c failureCase) name() string {
	return filepath.Base(c.dir) + "/" + strings.TrimSuffix(c.Log, ".log")
}

// outcome is how the case's attempt ended for the classifier: an exit, or
// the supervisor's refusal of CPU serving when the case's profile
// requires an accelerator and the log shows the CPU.
func (c failureCase) outcome(dev ServingDevice) Outcome {
	if c.RequiresAccelerator && dev.CPUOnly() {
		return Outcome{Kind: OutcomeAcceleratorUnavailable, Exit: c.ExitInfo(), Device: dev}
	}
	return Outcome{Kind: OutcomeExited, Exit: c.ExitInfo()}
}

// emptyLog says whether the case's log is empty (an engine that died
// before it printed anything): its failure has no log tail.
func (c failureCase) emptyLog(t *testing.T) bool {
	t.Helper()
	st, err := os.Stat(filepath.Join(c.dir, c.Log))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size() == 0
}

// checkCase asserts f and the serving device dev are what c expects (a
// Ready case expects no failure: only its device is checked).
func checkCase(t *testing.T, c failureCase, f *failure.Failure, dev ServingDevice) {
	t.Helper()
	if r := c.CheckDiagnosis(Diagnosis{Failure: f, Device: dev}); !r.Right() {
		t.Errorf("%s (source %s)", r.Misses(), c.Source)
	}
	if c.Ready {
		return
	}
	if c.Signal != "" && f.Signal != Signaled(c.Signal).Signal {
		t.Errorf("signal = %q, want %q", f.Signal, c.Signal)
	}
	if c.Exit != nil && (f.ExitCode == nil || *f.ExitCode != *c.Exit) {
		t.Errorf("exit code = %v, want %d", f.ExitCode, *c.Exit)
	}
	if (len(f.LogTail) == 0 && !c.emptyLog(t)) || len(f.LogTail) > failure.DefaultTailLines {
		t.Errorf("log tail has %d lines", len(f.LogTail))
	}
	if f.NextStep == "" {
		t.Error("no next step")
	}
	if c.RootCauseContains != "" && strings.Contains(f.RootCause, "no error line") {
		t.Errorf("root cause %q says no error line, but the log has one", f.RootCause)
	}
}

// TestCasesTracker replays each case log line by line through a Tracker,
// as the supervisor's log reader does, and classifies the exit.
func TestCasesTracker(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.name(), func(t *testing.T) {
			e, err := Lookup(c.Engine)
			if err != nil {
				t.Fatal(err)
			}
			fh, err := os.Open(filepath.Join(c.dir, c.Log))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			tr := e.NewTracker()
			sc := bufio.NewScanner(fh)
			sc.Buffer(make([]byte, 64<<10), 4<<20)
			var lines []string
			for sc.Scan() {
				tr.Feed(sc.Text())
				lines = append(lines, sc.Text())
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			dev := tr.Device()
			f := tr.Classify(c.outcome(dev))
			checkCase(t, c, f, dev)
			if len(lines) == 0 {
				return // nothing printed: no tail (checkCase saw it empty)
			}
			want := lines[len(lines)-1]
			if len(want) > maxStoredLine {
				want = want[:maxStoredLine] + "..."
			}
			if last := f.LogTail[len(f.LogTail)-1]; last != want && strings.TrimSpace(want) != "" {
				t.Errorf("last tail line %q, want %q", last, want)
			}
		})
	}
}

// TestCasesDiagnose gives each whole log file to DiagnoseLog (with
// requires_accelerator as the case says).
func TestCasesDiagnose(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.name(), func(t *testing.T) {
			fh, err := os.Open(filepath.Join(c.dir, c.Log))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			d, err := DiagnoseLog(fh, c.Engine, DiagnoseOptions{Exit: c.ExitInfo(), RequiresAccelerator: c.RequiresAccelerator})
			if err != nil {
				t.Fatal(err)
			}
			checkCase(t, c, d.Failure, d.Device)
		})
	}
}

// TestGPUCaseSet: the failures captured on the H200 are in the repository
// (not skipped like ../shared) and each names what it must: the serving
// device for the ready and CPU-fallback cases.
func TestGPUCaseSet(t *testing.T) {
	cf, err := LoadCaseFile("../../examples/gpu/results")
	if err != nil {
		t.Fatal(err)
	}
	devices := 0
	for _, c := range cf.Cases {
		if c.ServingDevice != "" {
			devices++
		}
		if c.RequiresAccelerator && c.ServingDevice != DeviceCPU {
			t.Errorf("%s: requires_accelerator without a CPU serving device", c.Log)
		}
	}
	if len(cf.Cases) < 8 || devices < 4 || len(cf.Prereq) == 0 {
		t.Errorf("%d cases (%d with a serving device), %d prereq cases", len(cf.Cases), devices, len(cf.Prereq))
	}
}

// TestCPUFallbackClass: a CPU fallback refused for requires_accelerator is
// accelerator_busy when the engine found the GPU and placed no layer on it
// (the H200 whose memory another process held), accelerator_unavailable
// when it found none (a hidden GPU).
func TestCPUFallbackClass(t *testing.T) {
	for log, want := range map[string]failure.Class{
		"ollama-fallback.log": failure.ClassAcceleratorBusy,
		"ollama-hidden.log":   failure.ClassAcceleratorUnavailable,
	} {
		fh, err := os.Open(filepath.Join("../../examples/gpu/results/failures", log))
		if err != nil {
			t.Fatal(err)
		}
		d, err := DiagnoseLog(fh, "ollama", DiagnoseOptions{Exit: Exited(0), RequiresAccelerator: true})
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		if d.Failure.Class != want || !d.Device.CPUOnly() {
			t.Errorf("%s: class %s device %+v, want %s on the CPU", log, d.Failure.Class, d.Device, want)
		}
		if want == failure.ClassAcceleratorBusy && (d.Failure.Detail["gpu_found"] != "NVIDIA H200" || !strings.Contains(d.Failure.RootCause, "0 of 9 layers")) {
			t.Errorf("%s: root cause %q detail %v", log, d.Failure.RootCause, d.Failure.Detail)
		}
	}
}

// TestSurvivedRunnerDeath: Ollama's runner killed under load is the root
// cause while the server keeps running (exit 0); when the server itself is
// killed later, after a new runner served again, the earlier runner death
// is kept as survived, not given as the cause of the server's death.
func TestSurvivedRunnerDeath(t *testing.T) {
	diag := func(log string, exit ExitInfo) *failure.Failure {
		fh, err := os.Open(filepath.Join("../../examples/gpu/results/failures", log))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		f, err := Diagnose(fh, "ollama", exit)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	const runner = "llama runner process no longer running"
	f := diag("ollama-kill-runner.log", Exited(0))
	if f.Class != failure.ClassEngineDied || !strings.Contains(f.RootCause, runner) || f.Detail["survived"] != nil {
		t.Errorf("runner killed, server up: %s %q %v", f.Class, f.RootCause, f.Detail["survived"])
	}
	f = diag("ollama-kill-server.log", Signaled("KILL"))
	s, _ := f.Detail["survived"].(string)
	if f.Class != failure.ClassEngineDied || f.Phase != failure.PhaseInference || strings.Contains(f.RootCause, runner) ||
		!strings.Contains(f.RootCause, "killed by signal KILL") || !strings.Contains(s, runner) {
		t.Errorf("server killed after a survived runner death: %s %s %q survived %q", f.Class, f.Phase, f.RootCause, s)
	}
}

// TestCoverageCountsEveryCase: the coverage table's total row counts every
// case of the sets, the ready ones (no failure expected) included, in a
// row of their own, so the table and "N of M cases right" agree; a wrong
// ready case shows as wrong in that row.
func TestCoverageCountsEveryCase(t *testing.T) {
	ok := func(c Case) CaseResult {
		return CaseResult{Case: c, ClassOK: true, PhaseOK: true, RootCauseOK: true, FactsOK: true, DeviceOK: true}
	}
	wrongDevice := ok(Case{Log: "c.log", Engine: "vllm", Ready: true, ServingDevice: DeviceGPU})
	wrongDevice.DeviceOK = false
	results := []CaseResult{
		ok(Case{Log: "a.log", Engine: "ollama", Class: "gpu_oom", Phase: "load"}),
		ok(Case{Log: "b.log", Engine: "ollama", Ready: true, ServingDevice: DeviceCPU}),
		wrongDevice,
	}
	cv := CoverageOf(results)
	total := 0
	for _, row := range cv.Cells {
		for _, c := range row {
			total += c.Cases
		}
	}
	if total != len(results) {
		t.Errorf("cells count %d cases, want all %d", total, len(results))
	}
	var b strings.Builder
	if err := cv.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// columns: the kinds with a case (ollama, vllm), then all
	ready := regexp.MustCompile(`(?m)^\| ready \(no failure\) +\| 1/1 +\| 0/1 +\| 1/2 +\|$`)
	all := regexp.MustCompile(`(?m)^\| all +\| 2/2 +\| 0/1 +\| 2/3 +\|$`)
	if !ready.MatchString(out) || !all.MatchString(out) {
		t.Errorf("table lacks the ready row or a total of every case:\n%s", out)
	}
	// Without ready cases the table has no ready row (the README's table).
	var b2 strings.Builder
	CoverageOf(results[:1]).Write(&b2)
	if strings.Contains(b2.String(), "ready (no failure)") {
		t.Errorf("a ready row without ready cases:\n%s", b2.String())
	}
}

// TestCoverageOfTheGPUCaptures: examples/gpu/results, whose eighth case
// became ready, totals 8 cases in the table as in its count.
func TestCoverageOfTheGPUCaptures(t *testing.T) {
	rs, err := RunCaseSet(filepath.Join("..", "..", "examples", "gpu", "results"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	CoverageOf(rs).Write(&b)
	want := fmt.Sprintf(`(?m)^\| all .*\| %d/%d +\|$`, len(rs), len(rs))
	if !regexp.MustCompile(want).MatchString(b.String()) {
		t.Errorf("total row is not %d/%d:\n%s", len(rs), len(rs), b.String())
	}
}
