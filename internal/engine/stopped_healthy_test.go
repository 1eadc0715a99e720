package engine

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// cpuHostServedLog is the shape of the demo's production log (Ollama on a
// host with no GPU, served many completions, then stopped by hiro with
// SIGTERM): discovery says outright that the host has no GPU, the model
// loads on the CPU, every request is answered 200, no error line.
const cpuHostServedLog = `time=2026-12-03T05:13:47.643Z level=INFO source=routes.go:1298 msg="Listening on 127.0.0.1:11536 (version 0.0.0)"
time=2026-12-03T05:13:47.645Z level=INFO source=gpu.go:217 msg="looking for compatible GPUs"
time=2026-12-03T05:13:47.653Z level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered"
time=2026-12-03T05:13:47.653Z level=INFO source=types.go:130 msg="inference compute" id=0 library=cpu variant="" compute="" driver=0.0 name="" total="23.5 GiB" available="22.8 GiB"
[GIN] 2026/12/03 - 05:13:47 | 200 |      75.833µs |       127.0.0.1 | GET      "/"
time=2026-12-03T05:13:47.679Z level=INFO source=server.go:138 msg=offload library=cpu layers.requested=-1 layers.model=9 layers.offload=0 layers.split="" memory.available="[22.8 GiB]"
time=2026-12-03T05:13:47.686Z level=INFO source=server.go:405 msg="starting llama server" cmd="/usr/bin/ollama runner --model /m/blobs/sha256-38c2 --ctx-size 4096"
time=2026-12-03T05:13:47.692Z level=INFO source=server.go:580 msg="waiting for llama runner to start responding"
time=2026-12-03T05:13:47.693Z level=INFO source=server.go:614 msg="waiting for server to become available" status="llm server error"
time=2026-12-03T05:13:47.718Z level=INFO source=runner.go:913 msg="Server listening on 127.0.0.1:35733"
load_tensors:          CPU model buffer size =    12.52 MiB
llama_kv_cache_init:        CPU KV buffer size =    32.00 MiB
time=2026-12-03T05:13:47.945Z level=INFO source=server.go:619 msg="llama runner started in 0.25 seconds"
[GIN] 2026/12/03 - 05:13:47 | 200 |  299.764844ms |       127.0.0.1 | POST     "/v1/chat/completions"
[GIN] 2026/12/03 - 05:13:48 | 200 |   13.044716ms |       127.0.0.1 | POST     "/v1/chat/completions"
[GIN] 2026/12/03 - 05:18:26 | 200 |      52.859µs |       127.0.0.1 | GET      "/"
[GIN] 2026/12/03 - 05:18:26 | 200 |     832.627µs |       127.0.0.1 | GET      "/api/tags"
[GIN] 2026/12/03 - 05:18:26 | 200 |     770.745µs |       127.0.0.1 | GET      "/v1/models"
`

func diagnoseCPUHost(t *testing.T, o DiagnoseOptions) Diagnosis {
	t.Helper()
	d, err := DiagnoseLog(strings.NewReader(cpuHostServedLog), "ollama", o)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Device.CPUOnly() {
		t.Fatalf("device %+v, want the CPU", d.Device)
	}
	return d
}

// TestCPUHostServedIsNoAcceleratorFailure (finding N4): a CPU-only host's
// healthy log, exit 0, is not accelerator_unavailable in phase launch
// unless the profile requires an accelerator.
func TestCPUHostServedIsNoAcceleratorFailure(t *testing.T) {
	d := diagnoseCPUHost(t, DiagnoseOptions{Exit: Exited(0)})
	if f := d.Failure; f.Class == failure.ClassAcceleratorUnavailable || f.Phase == failure.PhaseLaunch {
		t.Errorf("no accelerator required: %s in phase %s (%s): %s", f.Class, f.Phase, f.Rule, f.RootCause)
	}
	d = diagnoseCPUHost(t, DiagnoseOptions{Exit: Exited(0), RequiresAccelerator: true})
	if d.Failure.Class != failure.ClassAcceleratorUnavailable {
		t.Errorf("requires_accelerator: %s, want accelerator_unavailable", d.Failure.Class)
	}
}

// TestServedThenStoppedFromOutside (finding N5): the same log ended by a
// TERM (hiro's own graceful stop) after serving: "stopped from outside",
// not a death with the OOM killer's advice; a KILL keeps that advice.
func TestServedThenStoppedFromOutside(t *testing.T) {
	for _, sig := range []string{"TERM", "INT"} {
		f := diagnoseCPUHost(t, DiagnoseOptions{Exit: Signaled(sig)}).Failure
		if f.Rule != "exit/stopped-after-serving" || !strings.Contains(f.RootCause, "stopped from outside") ||
			strings.Contains(f.NextStep, "OOM") || strings.Contains(f.NextStep, "dmesg") ||
			f.Confidence == failure.ConfidenceStrong || f.Detail["stopped_by"] != "outside" {
			t.Errorf("%s after serving: %s %s rule %s confidence %s: %q; next step %q", sig, f.Class, f.Phase, f.Rule, f.Confidence, f.RootCause, f.NextStep)
		}
	}
	f := diagnoseCPUHost(t, DiagnoseOptions{Exit: Exited(143)}).Failure
	if f.Rule != "exit/stopped-after-serving" {
		t.Errorf("exit 143 after serving: rule %s", f.Rule)
	}
	f = diagnoseCPUHost(t, DiagnoseOptions{Exit: Signaled("KILL")}).Failure
	if f.Class != failure.ClassEngineDied || !strings.Contains(f.RootCause+f.NextStep, "OOM") {
		t.Errorf("KILL after serving: %s %q %q", f.Class, f.RootCause, f.NextStep)
	}
}
