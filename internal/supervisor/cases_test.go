package supervisor

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// casesDir is ../shared/cases/failure-logs seen from the module root.
func casesDir(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "cases", "failure-logs")
	if _, err := os.Stat(filepath.Join(dir, "cases.json")); err != nil {
		t.Skipf("failure cases not found at %s (the shared folder sits beside the checkout): %v", dir, err)
	}
	return dir
}

type failureCase struct {
	Log       string             `json:"log"`
	Engine    string             `json:"engine"`
	Exit      *int               `json:"exit"`
	Signal    string             `json:"signal"`
	Class     failure.Class      `json:"class"`
	Phase     failure.Phase      `json:"phase"`
	RootCause string             `json:"root_cause_contains"`
	Facts     map[string]float64 `json:"facts"`
}

// TestFailureCasesFullPath replays every case of cases.json from a real
// fake-engine process that then exits with the given code or signal; the
// supervisor must follow the log file and classify the exit with the
// expected class, phase, root cause, facts and exit status.
func TestFailureCasesFullPath(t *testing.T) {
	dir := casesDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []failureCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range doc.Cases {
		t.Run(strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
			t.Parallel()
			args := []string{"--replay", filepath.Join(dir, c.Log)}
			if c.Signal != "" {
				args = append(args, "--signal", c.Signal)
			} else {
				args = append(args, "--exit", strconv.Itoa(*c.Exit))
			}
			p, state := fakeProfile(t, c.Engine, 0, args, "")
			proc, res := startFake(t, p, state)
			if proc != nil || res.State != StateFailed || res.Failure == nil {
				t.Fatalf("state %s failure %+v err %v", res.State, res.Failure, res.Err)
			}
			f := res.Failure
			if f.Class != c.Class || f.Phase != c.Phase {
				t.Errorf("class %s phase %s, want %s %s (root cause %q)", f.Class, f.Phase, c.Class, c.Phase, f.RootCause)
			}
			if c.RootCause != "" && !strings.Contains(f.RootCause, c.RootCause) {
				t.Errorf("root cause %q does not contain %q", f.RootCause, c.RootCause)
			}
			for k, want := range c.Facts {
				if got, ok := f.Facts[k]; !ok || math.Abs(got-want) > 1e-9 {
					t.Errorf("fact %s = %v (present %v), want %v", k, got, ok, want)
				}
			}
			if c.Signal != "" {
				if f.Signal != c.Signal || f.ExitCode != nil {
					t.Errorf("signal %q exit %v, want signal %s", f.Signal, f.ExitCode, c.Signal)
				}
			} else if f.ExitCode == nil || *f.ExitCode != *c.Exit {
				t.Errorf("exit code %v, want %d", f.ExitCode, *c.Exit)
			}
			if len(f.LogTail) == 0 || f.SecondsSinceStart <= 0 {
				t.Errorf("tail %d lines, seconds since start %v", len(f.LogTail), f.SecondsSinceStart)
			}
			if res.Stop == nil || !res.Stop.AlreadyExited || res.Stop.Leak != nil {
				t.Errorf("stop after the exit: %+v", res.Stop)
			}
		})
	}
}
