package doctor_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/hiro-dev/hiro/internal/doctor"
	"github.com/hiro-dev/hiro/internal/doctor/doctortest"
)

// busyDir holds what nvidia-smi printed on the H200 machine while a Python
// process held all but 1.5 GiB of the GPU (examples/gpu/results).
var busyDir = filepath.Join("..", "..", "examples", "gpu", "results", "failures")

// busySMI is the fake nvidia-smi of that moment.
func busySMI() doctortest.SMI {
	return doctortest.SMI{
		QueryGPU:  filepath.Join(busyDir, "busy.query-gpu.csv"),
		QueryApps: filepath.Join(busyDir, "busy.query-apps.csv"),
		Plain:     filepath.Join(busyDir, "busy.nvidia-smi.txt"),
	}
}

func TestParseComputeApps(t *testing.T) {
	ps, err := doctor.ParseComputeApps([]byte("4084, python3, 141612\n\n77, /opt/my app, v2/bin/server, [N/A]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []doctor.GPUProcess{{PID: 4084, Name: "python3", UsedMemoryMiB: 141612}, {PID: 77, Name: "/opt/my app, v2/bin/server", UsedMemoryMiB: -1}}
	if len(ps) != len(want) || ps[0] != want[0] || ps[1] != want[1] {
		t.Fatalf("got %+v, want %+v", ps, want)
	}
	if s := ps[0].String(); s != "pid 4084 python3 (141612 MiB)" {
		t.Errorf("String() = %q", s)
	}
	if ps, err := doctor.ParseComputeApps(nil); err != nil || len(ps) != 0 {
		t.Errorf("empty output: %+v %v", ps, err)
	}
	if _, err := doctor.ParseComputeApps([]byte("python3, 4084\n")); err == nil {
		t.Error("a line without a numeric pid must be an error")
	}
}

// TestCollectBusyGPU runs Collect against a fake nvidia-smi on PATH that
// prints the H200's outputs while another process held its memory: the
// report names the GPU with its free memory and the process holding it.
func TestCollectBusyGPU(t *testing.T) {
	doctortest.FakeNvidiaSMI(t, busySMI())
	r := doctor.Collect(context.Background(), doctor.Options{})
	if len(r.Accelerators) != 1 {
		t.Fatalf("accelerators %+v (%s)", r.Accelerators, r.AcceleratorNote)
	}
	a := r.Accelerators[0]
	if a.Name != "NVIDIA H200" || a.MemoryTotalMiB != 143771 || a.MemoryFreeMiB != 1536 || a.Driver != "580.159.04" || a.CUDA != "13.0" {
		t.Errorf("accelerator %+v", a)
	}
	want := doctor.GPUProcess{PID: 4084, Name: "python3", UsedMemoryMiB: 141612}
	if len(r.GPUProcesses) != 1 || r.GPUProcesses[0] != want || r.GPUProcessNote != "" {
		t.Fatalf("gpu processes %+v (%s), want %+v", r.GPUProcesses, r.GPUProcessNote, want)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		GPUProcesses []map[string]any `json:"gpu_processes"`
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.GPUProcesses) != 1 ||
		back.GPUProcesses[0]["pid"] != float64(4084) || back.GPUProcesses[0]["process_name"] != "python3" ||
		back.GPUProcesses[0]["used_memory_mib"] != float64(141612) {
		t.Errorf("JSON gpu_processes %+v (%v)", back.GPUProcesses, err)
	}
}

// TestGPUProcessesFailing: an nvidia-smi whose process query fails gives a
// note, not a wrong list.
func TestGPUProcessesFailing(t *testing.T) {
	doctortest.FakeNvidiaSMI(t, doctortest.SMI{QueryGPU: filepath.Join(busyDir, "busy.query-gpu.csv"), QueryApps: filepath.Join(busyDir, "busy.query-gpu.csv")})
	ps, note := doctor.GPUProcesses(context.Background(), doctor.Options{})
	if len(ps) != 0 || note == "" {
		t.Errorf("processes %+v note %q: want none and a note", ps, note)
	}
}
