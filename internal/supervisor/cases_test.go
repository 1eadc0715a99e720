package supervisor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// caseSets are the failure-log case sets replayed through the fake
// engine: the handed cases beside the checkout (../shared, skipped when
// absent), the field corpus in internal/engine/testdata/field and the
// failures captured on the H200 in examples/gpu/results.
func caseSets(t *testing.T) []string {
	t.Helper()
	dirs := testsupport.CaseSetDirs()
	if len(dirs) == 0 {
		t.Skip("no failure-log case sets found (the shared folder sits beside the checkout)")
	}
	return dirs
}

// TestFailureCasesFullPath replays every case of every case set from a
// real fake-engine process that then exits with the given code or signal;
// the supervisor must follow the log file and classify the exit with the
// expected class, phase, root cause, facts and exit status.
func TestFailureCasesFullPath(t *testing.T) {
	for _, dir := range caseSets(t) {
		cases, err := engine.LoadCaseSet(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.Ready || c.RequiresAccelerator {
				continue // the engine became ready: TestCasesServingDevice
			}
			t.Run(filepath.Base(dir)+"/"+strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
				if c.Exit != nil && (*c.Exit < 0 || *c.Exit > 255) {
					// a Windows NTSTATUS (0xC0000409): a process here exits
					// with 0 to 255 only, so the fake cannot end with it;
					// TestCasesTracker and TestCasesDiagnose read its verdict
					t.Skipf("exit status %d is Windows' (NTSTATUS): a process on this system cannot end with it", *c.Exit)
				}
				t.Parallel()
				args := []string{"--replay", filepath.Join(dir, c.Log)}
				switch {
				case c.Signal != "":
					args = append(args, "--signal", c.Signal)
				case c.Exit != nil:
					args = append(args, "--exit", strconv.Itoa(*c.Exit))
				default:
					args = append(args, "--exit", "1")
				}
				p, state := fakeProfile(t, c.Engine, 0, args, "")
				// The fake binds no port, so a port_in_use answer expected by
				// the case comes from the replayed log: start once (startFake
				// would retry). Other cases retry on another port when a
				// process elsewhere on the machine took the chosen one.
				var proc *Process
				var res *Result
				if engine.Accepts(c.Class, "port_in_use") {
					for attempt := 0; ; attempt++ {
						proc, res = Start(context.Background(), p, Options{StateDir: state})
						if proc != nil {
							t.Cleanup(func() { proc.Stop(context.Background()) })
						}
						// hiro's own check before launch found the chosen port
						// taken by another process on the machine (its root
						// cause says "before launch"; the phase is launch, as
						// start.go records it): the fake never ran, so pick
						// another port.
						if f := res.Failure; attempt < 3 && f != nil && res.PID == 0 &&
							strings.Contains(f.RootCause, "is already in use before launch") {
							t.Logf("port %d taken by someone else (%s); retrying on another", p.Port, f.RootCause)
							movePort(t, p, freePort(t))
							continue
						}
						break
					}
				} else {
					proc, res = startFake(t, p, state)
				}
				if proc != nil || res.State != StateFailed || res.Failure == nil {
					t.Fatalf("state %s failure %+v err %v", res.State, res.Failure, res.Err)
				}
				f := res.Failure
				if r := c.Check(f); !r.Right() {
					t.Errorf("%s (source %s)", r.Misses(), c.Source)
				}
				if c.Signal != "" {
					if f.Signal != engine.Signaled(c.Signal).Signal || f.ExitCode != nil {
						t.Errorf("signal %q exit %v, want signal %s", f.Signal, f.ExitCode, c.Signal)
					}
				} else if c.Exit != nil && (f.ExitCode == nil || *f.ExitCode != *c.Exit) {
					t.Errorf("exit code %v, want %d", f.ExitCode, *c.Exit)
				}
				// An engine that died before printing anything has no tail.
				if st, err := os.Stat(filepath.Join(dir, c.Log)); err != nil {
					t.Fatal(err)
				} else if (len(f.LogTail) == 0 && st.Size() > 0) || f.SecondsSinceStart <= 0 {
					t.Errorf("tail %d lines, seconds since start %v", len(f.LogTail), f.SecondsSinceStart)
				}
				if res.Stop == nil || !res.Stop.AlreadyExited || res.Stop.Leak != nil {
					t.Errorf("stop after the exit: %+v", res.Stop)
				}
			})
		}
	}
}

// TestCasesServingDevice replays each case whose engine became ready
// (the GPU captures: a GPU busy but large enough, a CPU fallback, a
// hidden GPU) from a fake engine that then serves, as the real one did:
// the ready verdict names the serving device the case expects; and when
// the case's profile requires an accelerator, the same start with
// requires_accelerator fails with the expected class, phase and root
// cause, and the process is stopped.
func TestCasesServingDevice(t *testing.T) {
	n := 0
	for _, dir := range caseSets(t) {
		cases, err := engine.LoadCaseSet(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.ServingDevice == "" || !(c.Ready || c.RequiresAccelerator) {
				continue
			}
			n++
			t.Run(filepath.Base(dir)+"/"+strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
				t.Parallel()
				port := freePort(t)
				args := []string{"--replay", filepath.Join(dir, c.Log), "--port", strconv.Itoa(port), "--model", "fake-model"}
				p, state := fakeProfile(t, c.Engine, port, args, "")
				proc, res := startFake(t, p, state)
				if res.State != StateReady || proc == nil {
					t.Fatalf("without requires_accelerator: state %s failure %+v err %v", res.State, res.Failure, res.Err)
				}
				proc.Stop(context.Background())
				if res.Device == nil || res.Device.Kind != c.ServingDevice || res.Device.Evidence == "" {
					t.Fatalf("ready verdict names device %+v, want %s", res.Device, c.ServingDevice)
				}
				if !c.RequiresAccelerator {
					return
				}
				p.RequiresAccelerator = true
				proc, res = startFake(t, p, state)
				if proc != nil || res.State != StateFailed || res.Failure == nil {
					t.Fatalf("with requires_accelerator: state %s failure %+v err %v", res.State, res.Failure, res.Err)
				}
				if r := c.Check(res.Failure); !r.Right() {
					t.Errorf("%s", r.Misses())
				}
				if res.Stop == nil || res.Stop.Leak != nil {
					t.Errorf("stop after the refusal: %+v", res.Stop)
				}
			})
		}
	}
	if n == 0 {
		t.Skip("no case with a serving device")
	}
}

// TestCasesFirstRequestFails replays each case whose server kept running
// (exit 0) and whose failure showed in the first request (the GPU
// captures: Ollama answered the probe with HTTP 500 after its runner
// failed): the fake engine replays the log, then serves and answers chat
// with HTTP 500, as the real one did; the supervisor classifies from the
// log, not from the request's error, with the expected class, phase and
// root cause.
func TestCasesFirstRequestFails(t *testing.T) {
	n := 0
	for _, dir := range caseSets(t) {
		if filepath.Base(dir) != "results" {
			continue // the other sets are logs of exits, not of servers that stayed up
		}
		cases, err := engine.LoadCaseSet(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if c.Ready || c.RequiresAccelerator || c.Exit == nil || *c.Exit != 0 || strings.Contains(c.Phase, "inference") {
				continue
			}
			n++
			t.Run(strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
				t.Parallel()
				port := freePort(t)
				args := []string{"--replay", filepath.Join(dir, c.Log), "--port", strconv.Itoa(port), "--model", "fake-model", "--chat", "500"}
				p, state := fakeProfile(t, c.Engine, port, args, "")
				proc, res := startFake(t, p, state)
				if proc != nil || res.State != StateFailed || res.Failure == nil {
					t.Fatalf("state %s failure %+v err %v", res.State, res.Failure, res.Err)
				}
				if r := c.Check(res.Failure); !r.Right() {
					t.Errorf("%s", r.Misses())
				}
				if res.Stop == nil || res.Stop.Leak != nil {
					t.Errorf("stop after the failure: %+v", res.Stop)
				}
			})
		}
	}
	if n == 0 {
		t.Skip("no case of a server that stayed up")
	}
}
