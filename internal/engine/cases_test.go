package engine

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// casesDir holds the shared failure-log cases, relative to this package.
const casesDir = "../../../shared/cases/failure-logs"

// caseDirs are the case sets every case test runs: the handed cases
// (../shared, absent in a fresh clone) and the field corpus beside this
// package (testdata/field, when present).
var caseDirs = []string{casesDir, "../../../shared/cases/failure-logs-2", "testdata/field", "testdata/live"}

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

// checkCase asserts f is what c expects.
func checkCase(t *testing.T, c failureCase, f *failure.Failure) {
	t.Helper()
	if r := c.Check(f); !r.Right() {
		t.Errorf("%s (source %s)", r.Misses(), c.Source)
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
			f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.ExitInfo()})
			checkCase(t, c, f)
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

// TestCasesDiagnose gives each whole log file to Diagnose.
func TestCasesDiagnose(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(c.name(), func(t *testing.T) {
			fh, err := os.Open(filepath.Join(c.dir, c.Log))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			f, err := Diagnose(fh, c.Engine, c.ExitInfo())
			if err != nil {
				t.Fatal(err)
			}
			checkCase(t, c, f)
		})
	}
}
