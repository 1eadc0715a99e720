package engine

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// casesDir holds the shared failure-log cases, relative to this package.
const casesDir = "../../../shared/cases/failure-logs"

// failureCase is one entry of cases.json.
type failureCase struct {
	Log               string             `json:"log"`
	Engine            string             `json:"engine"`
	Exit              *int               `json:"exit"`
	Signal            string             `json:"signal"`
	Class             failure.Class      `json:"class"`
	Phase             failure.Phase      `json:"phase"`
	RootCauseContains string             `json:"root_cause_contains"`
	Facts             map[string]float64 `json:"facts"`
}

func loadCases(t *testing.T) []failureCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(casesDir, "cases.json"))
	if os.IsNotExist(err) {
		t.Skipf("failure-log cases not found at %s (the shared tree is absent here)", casesDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []failureCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("cases.json: %v", err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("cases.json has no cases")
	}
	return doc.Cases
}

func (c failureCase) exitInfo() ExitInfo {
	switch {
	case c.Signal != "":
		return Signaled(c.Signal)
	case c.Exit != nil:
		return Exited(*c.Exit)
	}
	return ExitInfo{}
}

// checkCase asserts f is what c expects.
func checkCase(t *testing.T, c failureCase, f *failure.Failure) {
	t.Helper()
	if f.Class != c.Class {
		t.Errorf("class = %s, want %s (root cause %q)", f.Class, c.Class, f.RootCause)
	}
	if f.Phase != c.Phase {
		t.Errorf("phase = %s, want %s", f.Phase, c.Phase)
	}
	if !strings.Contains(f.RootCause, c.RootCauseContains) {
		t.Errorf("root cause %q does not contain %q", f.RootCause, c.RootCauseContains)
	}
	if f.RootCause == "" {
		t.Error("empty root cause")
	}
	for name, want := range c.Facts {
		got, ok := f.Facts[name]
		if !ok {
			t.Errorf("fact %s missing (facts %v)", name, f.Facts)
			continue
		}
		if math.Abs(got-want) > 1e-6 {
			t.Errorf("fact %s = %v, want %v", name, got, want)
		}
	}
	if c.Signal != "" && f.Signal != c.Signal {
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
}

// TestCasesTracker replays each case log line by line through a Tracker,
// as the supervisor's log reader does, and classifies the exit.
func TestCasesTracker(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
			e, err := Lookup(c.Engine)
			if err != nil {
				t.Fatal(err)
			}
			fh, err := os.Open(filepath.Join(casesDir, c.Log))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			tr := e.NewTracker()
			sc := bufio.NewScanner(fh)
			var lines []string
			for sc.Scan() {
				tr.Feed(sc.Text())
				lines = append(lines, sc.Text())
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.exitInfo()})
			checkCase(t, c, f)
			if last := f.LogTail[len(f.LogTail)-1]; last != lines[len(lines)-1] {
				t.Errorf("last tail line %q, want %q", last, lines[len(lines)-1])
			}
		})
	}
}

// TestCasesDiagnose gives each whole log file to Diagnose.
func TestCasesDiagnose(t *testing.T) {
	for _, c := range loadCases(t) {
		t.Run(strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
			fh, err := os.Open(filepath.Join(casesDir, c.Log))
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			f, err := Diagnose(fh, c.Engine, c.exitInfo())
			if err != nil {
				t.Fatal(err)
			}
			checkCase(t, c, f)
		})
	}
}
