package engine

import (
	"bufio"
	"os"
	"path/filepath"
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
	if len(f.LogTail) == 0 || len(f.LogTail) > failure.DefaultTailLines {
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
