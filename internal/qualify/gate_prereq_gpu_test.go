package qualify_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/doctor/doctortest"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
)

// gpuResults is what came back from the H200 machine.
var gpuResults = filepath.Join("..", "..", "examples", "gpu", "results")

// TestGatePrereqGPUBusy replays the prereq cases captured on the H200
// (cases.json "prereq"): with a fake nvidia-smi on PATH printing what the
// real one printed while another process held the GPU's memory, the
// prereq gate's accelerator check fails with accelerator_busy and names
// the holder (pid, process, MiB) in its detail and in the failure's facts.
func TestGatePrereqGPUBusy(t *testing.T) {
	cf, err := engine.LoadCaseFile(gpuResults)
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Prereq) == 0 {
		t.Fatal("examples/gpu/results/cases.json has no prereq case")
	}
	for i, pc := range cf.Prereq {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			doctortest.FakeNvidiaSMI(t, doctortest.SMI{
				QueryGPU:  filepath.Join(gpuResults, pc.NvidiaSMIQueryGPU),
				QueryApps: filepath.Join(gpuResults, pc.NvidiaSMIQueryApp),
			})
			want, _ := pc.Facts["free_mib_wanted"].(float64)
			e := newEnv(t, nil, "", nil)
			g, err := gateAlone(t, e, fmt.Sprintf("[[gates]]\nkind = \"prereq\"\n[gates.accelerator]\nname_pattern = \"NVIDIA\"\nmin_free_mib = %d\n", int(want)), false)
			if err == nil || len(g.Checks) != 1 || g.Checks[0].Status != evidence.StatusFailed {
				t.Fatalf("err %v checks %+v: want the accelerator check to fail", err, g.Checks)
			}
			f := g.Failure
			if f == nil || string(f.Class) != pc.Class || f.Phase != failure.PhasePrereq || f.NextStep == "" {
				t.Fatalf("failure %+v, want class %s in phase prereq", f, pc.Class)
			}
			for k, v := range pc.Facts {
				switch v := v.(type) {
				case float64:
					if got, ok := f.Facts[k]; !ok || got != v {
						t.Errorf("fact %s = %v, want %v (facts %v)", k, got, v, f.Facts)
					}
				case string:
					if got := f.Detail[k]; got != v {
						t.Errorf("detail %s = %v, want %q", k, got, v)
					}
				}
			}
			pid, _ := pc.Facts["holder_pid"].(float64)
			used, _ := pc.Facts["holder_used_mib"].(float64)
			holder := fmt.Sprintf("pid %d %s (%d MiB)", int(pid), pc.Facts["holder_process"], int(used))
			for _, s := range []string{g.Checks[0].Detail, f.RootCause, err.Error()} {
				if !strings.Contains(s, "held by "+holder) {
					t.Errorf("%q does not name the holder %q", s, holder)
				}
			}
		})
	}
}

// TestGatePrereqGPUAbsentOrFree: without nvidia-smi the check fails with
// accelerator_unavailable; with the GPU's memory free it passes.
func TestGatePrereqGPUAbsentOrFree(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	gate := "[[gates]]\nkind = \"prereq\"\n[gates.accelerator]\nname_pattern = \"H200\"\nmin_free_mib = 16384\n"
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir())
	g, err := gateAlone(t, e, gate, false)
	if err == nil || g.Failure == nil || g.Failure.Class != failure.ClassAcceleratorUnavailable || !strings.Contains(g.Failure.RootCause, "nvidia-smi not found") {
		t.Fatalf("no nvidia-smi: err %v failure %+v", err, g.Failure)
	}
	t.Setenv("PATH", path)
	doctortest.FakeNvidiaSMI(t, doctortest.SMI{QueryGPU: filepath.Join(gpuResults, "nvidia-smi-query-gpu.csv")})
	g, err = gateAlone(t, e, gate, false)
	if err != nil || g.Failure != nil || !strings.Contains(g.Checks[0].Detail, "NVIDIA H200 (") {
		t.Fatalf("free GPU: err %v failure %+v checks %+v", err, g.Failure, g.Checks)
	}
}
