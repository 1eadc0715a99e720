package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// diagnoseCasesDir holds the shared failure-log cases, relative to this package.
const diagnoseCasesDir = "../../../shared/cases/failure-logs"

// TestDiagnoseCases runs every cases.json log through 'hiro diagnose
// --json' and checks class, phase, root cause, facts and exit.
func TestDiagnoseCases(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(diagnoseCasesDir, "cases.json"))
	if os.IsNotExist(err) {
		t.Skipf("failure-log cases not found at %s (the shared tree is absent here)", diagnoseCasesDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cases []struct {
			Log               string             `json:"log"`
			Engine            string             `json:"engine"`
			Exit              *int               `json:"exit"`
			Signal            string             `json:"signal"`
			Class             string             `json:"class"`
			Phase             string             `json:"phase"`
			RootCauseContains string             `json:"root_cause_contains"`
			Facts             map[string]float64 `json:"facts"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Cases) == 0 {
		t.Fatalf("cases.json: %v (%d cases)", err, len(doc.Cases))
	}
	for _, c := range doc.Cases {
		t.Run(strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
			args := []string{"diagnose", filepath.Join(diagnoseCasesDir, c.Log), "--engine", c.Engine, "--json"}
			if c.Signal != "" {
				args = append(args, "--signal", c.Signal)
			} else if c.Exit != nil {
				args = append(args, "--exit", strconv.Itoa(*c.Exit))
			}
			var out, errb bytes.Buffer
			if code := Run(context.Background(), args, &out, &errb); code != ExitOK {
				t.Fatalf("exit %d, stderr %q", code, errb.String())
			}
			var rep struct {
				Engine  string `json:"engine"`
				Failure struct {
					Class     string             `json:"class"`
					Phase     string             `json:"phase"`
					RootCause string             `json:"root_cause"`
					ExitCode  *int               `json:"exit_code"`
					Signal    string             `json:"signal"`
					Facts     map[string]float64 `json:"facts"`
					LogTail   []string           `json:"log_tail"`
					NextStep  string             `json:"next_step"`
				} `json:"failure"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out.String())
			}
			f := rep.Failure
			if f.Class != c.Class || f.Phase != c.Phase {
				t.Errorf("got %s/%s, want %s/%s (root cause %q)", f.Class, f.Phase, c.Class, c.Phase, f.RootCause)
			}
			if f.RootCause == "" || !strings.Contains(f.RootCause, c.RootCauseContains) {
				t.Errorf("root cause %q does not contain %q", f.RootCause, c.RootCauseContains)
			}
			for name, want := range c.Facts {
				if got, ok := f.Facts[name]; !ok || math.Abs(got-want) > 1e-6 {
					t.Errorf("fact %s = %v (present %v), want %v", name, got, ok, want)
				}
			}
			if c.Signal != "" && f.Signal != c.Signal {
				t.Errorf("signal %q, want %q", f.Signal, c.Signal)
			}
			if c.Exit != nil && (f.ExitCode == nil || *f.ExitCode != *c.Exit) {
				t.Errorf("exit code %v, want %d", f.ExitCode, *c.Exit)
			}
			if f.NextStep == "" || len(f.LogTail) == 0 || rep.Engine != c.Engine {
				t.Errorf("next step %q, %d tail lines, engine %q", f.NextStep, len(f.LogTail), rep.Engine)
			}
		})
	}
}

func TestDiagnoseHuman(t *testing.T) {
	log := filepath.Join(t.TempDir(), "engine.log")
	os.WriteFile(log, []byte("INFO 01-01 00:00:00 [x.py:1] Starting to load model m...\n"+
		"INFO 01-01 00:00:30 [x.py:1] Loading weights took 30.50 seconds\n"+
		"ERROR 01-01 00:00:31 [core.py:1] RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"), 0o644)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"diagnose", log, "--engine", "vllm", "--signal", "sigabrt"}, &out, &errb)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"failed: gpu_oom in phase kernel_setup", "root cause: ERROR", "CUDA out of memory",
		"killed by signal ABRT", "weights_load_seconds=30.5", "next step:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestDiagnoseUsage(t *testing.T) {
	log := filepath.Join(t.TempDir(), "engine.log")
	os.WriteFile(log, []byte("main: loading model\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diagnose", filepath.Join(t.TempDir(), "absent.log"), "--engine", "vllm"}, "absent.log"},
		{[]string{"diagnose", log, "--engine", "tgi"}, "llamacpp, ollama, openai, sglang, vllm"},
		{[]string{"diagnose", log}, "--engine is required"},
		{[]string{"diagnose", log, "--engine", "vllm", "--exit", "1", "--signal", "KILL"}, "not both"},
		{[]string{"diagnose", log, "--engine", "vllm", "--signal", "NOPE"}, "not a signal name"},
		{[]string{"diagnose", log, "--engine", "vllm", "--exit", "300"}, "0 to 255"},
		{[]string{"diagnose", "--engine", "vllm"}, "accepts 1 arg"},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), c.args, &out, &errb)
		if code != ExitUsage || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %q", c.args, code, errb.String(), out.String(), c.want)
		}
	}
	// --json errors are JSON too.
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"diagnose", log, "--engine", "tgi", "--json"}, &out, &errb)
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if code != ExitUsage || json.Unmarshal(errb.Bytes(), &e) != nil || e.ExitCode != ExitUsage {
		t.Errorf("json error: exit %d, stderr %q", code, errb.String())
	}
	// A signal number is accepted and named.
	out.Reset()
	if code := Run(context.Background(), []string{"diagnose", log, "--engine", "llamacpp", "--signal", "9"}, &out, &errb); code != ExitOK ||
		!strings.Contains(out.String(), "killed by signal KILL") || !strings.Contains(out.String(), "engine_died in phase load") {
		t.Errorf("signal 9: exit %d, %q", code, out.String())
	}
}
