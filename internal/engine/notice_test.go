package engine

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// TestNoticesNeverDecideStrongly: a notice or warning an engine prints
// and goes on after (its wording from the engine's source, cited) never
// outranks a later error line, and alone it is never a strong verdict of
// its class: the confident-wrong risk of a strong rule matching advice.
func TestNoticesNeverDecideStrongly(t *testing.T) {
	const bind = "start_server: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080"
	for _, c := range []struct{ name, kind, notice, real string }{
		// llama.cpp@f6d77a1 ggml/src/ggml-cuda/ggml-cuda.cu ggml_cuda_host_malloc
		{"pinned memory", "llamacpp", "ggml_cuda_host_malloc: failed to allocate 512.00 MiB of pinned memory: out of memory", bind},
		// llama.cpp@f6d77a1 ggml/src/ggml-cuda/ggml-cuda.cu ggml_cuda_init
		{"cuda init before the CPU backend", "llamacpp", "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected", bind},
		// llama.cpp@3074b50 src/llama-mmap.cpp llama_mlock
		{"mlock", "llamacpp", "warning: failed to mlock 3221225472-byte buffer (after previously locking 0 bytes): Cannot allocate memory", bind},
		// llama.cpp@3074b50 common/arg.cpp
		{"no usable GPU", "llamacpp", "warning: no usable GPU found, --gpu-layers option will be ignored", bind},
		// koboldcpp@8f8b164 koboldcpp.py prints its warnings as "Warning: ..."
		{"koboldcpp warning", "koboldcpp", "Warning: CUDA out of memory, retrying with fewer GPU layers", bind},
		// vLLM@bbf906a vllm/model_executor/layers/quantization/utils/marlin_utils_fp8.py
		{"fp8 marlin", "vllm", "WARNING 04-10 10:00:18 [marlin_utils_fp8.py:54] Your GPU does not have native support for FP8 computation but FP8 quantization is being used.",
			"OSError: [Errno 98] Address already in use"},
		// hipBLASLt's tensile_host.cpp prints "rocblaslt error: Cannot read|Could not load
		// PATH" and goes on (rocblaslt_abort commented out; ROCm/rocm-libraries#931);
		// rocBLAS falls back to Tensile. As users paste it: ollama#15452 (0.20.4, quoted
		// name), lemonade-sdk/llamacpp-rocm#10 (uvicorn's level prefix), ROCm/TheRock#6175
		// ("(or .zlib variant)"), lmstudio-bug-tracker#1163 (a Windows path)
		{"hipBLASLt's lazy library, ollama", "ollama", `Apr 09 14:34:09 box ollama[11959]: rocblaslt error: Cannot read "TensileLibrary_lazy_gfx1200.dat": No such file or directory`, bind},
		{"hipBLASLt's lazy library, lemonade", "openai", `ERROR:    rocblaslt error: Could not load "TensileLibrary_lazy_gfx1151.dat"`, bind},
		{"hipBLASLt's lazy library, zlib variant", "llamacpp", `rocblaslt error: Cannot read "TensileLibrary_lazy_gfx906.dat" (or .zlib variant): No such file or directory`, bind},
		{"hipBLASLt's lazy library, Windows", "openai", ` rocblaslt error: Cannot read C:\Users\u\.lmstudio\extensions\backends\vendor\win-llama-rocm-vendor-v5\bin\/hipblaslt/library/TensileLibrary_lazy_gfx1201.dat: No such file or directory`, bind},
		// TGI@db931fc server/text_generation_server/models/__init__.py (relayed by the launcher)
		{"flash attention v2", "tgi", "2025-04-10T10:00:09.000000Z  WARN text_generation_launcher: Unable to use Flash Attention V2: GPU with CUDA capability 7 5 is not supported for Flash Attention V2",
			"OSError: [Errno 98] Address already in use"},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		tr.Feed(c.notice)
		tr.Feed(c.real)
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)})
		if f.Class != failure.ClassPortInUse || f.RootCause != c.real {
			t.Errorf("%s, then a taken port: %s %q (rule %s), want port_in_use from the later line", c.name, f.Class, f.RootCause, f.Rule)
		}
		alone := mustLookup(t, c.kind).NewTracker()
		alone.Feed(c.notice)
		if f := alone.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)}); f.Confidence == failure.ConfidenceStrong {
			t.Errorf("%s alone: %s said strongly (rule %s); a notice is at most a hint", c.name, f.Class, f.Rule)
		}
	}
}

// TestHeadedWarningStaysAHint: under LM Studio's "[DEBUG]" header the
// runtime's own "warning: ..." line is still a warning: llama.cpp's mlock
// advice (lmstudio-bug-tracker#1343) never outranks the loader's error.
func TestHeadedWarningStaysAHint(t *testing.T) {
	const mlock = " warning: failed to mlock 1555828736-byte buffer (after previously locking 0 bytes): Cannot allocate memory"
	const load = " llama_model_load: error loading model: read error: Bad address"
	tr := mustLookup(t, "openai").NewTracker()
	for _, l := range []string{"2026-01-01 08:05:07 [DEBUG]", mlock, "2026-01-01 08:05:07 [DEBUG]", load} {
		tr.Feed(l)
	}
	f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)})
	if f.Class != failure.ClassModelLoadFailed || !strings.Contains(f.RootCause, "read error: Bad address") {
		t.Errorf("mlock warning, then the loader's error: %s %q (rule %s), want model_load_failed from the loader", f.Class, f.RootCause, f.Rule)
	}
	alone := mustLookup(t, "openai").NewTracker()
	alone.Feed("2026-01-01 08:05:07 [DEBUG]")
	alone.Feed(mlock)
	if f := alone.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)}); f.Confidence == failure.ConfidenceStrong {
		t.Errorf("headed mlock warning alone: %s said strongly (rule %s)", f.Class, f.Rule)
	}
}

// TestFramesNeverDecideStrongly: a class taken from a traceback's frames
// (the component the exception was raised in) says where the engine
// failed, not why: the verdict keeps the frames' class but is weak.
func TestFramesNeverDecideStrongly(t *testing.T) {
	tr := mustLookup(t, "vllm").NewTracker()
	for _, l := range []string{
		"Traceback (most recent call last):",
		`  File "/usr/lib/python3/site-packages/vllm/model_executor/layers/quantization/fp8.py", line 612, in process_weights_after_loading`,
		"    assert self.block_quant is not None",
		"AssertionError",
	} {
		tr.Feed(l)
	}
	f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)})
	if f.Class != failure.ClassQuantKernelFailed || !strings.HasPrefix(f.Rule, framePrefix) {
		t.Fatalf("class %s rule %s, want quant_kernel_failed from the frames", f.Class, f.Rule)
	}
	if f.Confidence == failure.ConfidenceStrong {
		t.Errorf("the frames' class %s was said strongly (rule %s)", f.Class, f.Rule)
	}
}

// TestDroppedDeviceNoticeNeedsCPUServing: a discovery notice that drops a
// device (Ollama's integrated GPU at INFO, a CUDA GPU too old) explains
// the CPU serving after it, and no failure when the model serves on
// another GPU (an iGPU dropped beside a discrete card).
func TestDroppedDeviceNoticeNeedsCPUServing(t *testing.T) {
	for _, drop := range []string{
		// ollama/ollama#16701 discover/runner.go
		`time=2026-09-30T01:19:15.477Z level=INFO source=runner.go:405 msg="dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1" id=0 library=Vulkan compute=0.0 name=Vulkan0 description="Intel(R) Iris(R) Xe Graphics" pci_id=""`,
		// ollama@v0.5.4 discover/gpu.go
		`time=2025-01-10T10:00:01.342+01:00 level=INFO source=gpu.go:325 msg="[1] CUDA GPU is too old. Compute Capability detected: 3.5"`,
	} {
		for _, c := range []struct {
			name, compute, offload string
			want                   failure.Class
		}{
			{"cpu", `msg="inference compute" id=cpu library=cpu compute="" name=cpu description=cpu libdirs=ollama driver="" pci_id="" type="" total="15.7 GiB" available="6.0 GiB"`,
				`msg="offloaded 0/29 layers to GPU"`, failure.ClassAcceleratorUnavailable},
			{"gpu", `msg="inference compute" id=GPU-1f0c library=CUDA compute=8.9 name=CUDA0 description="NVIDIA GeForce RTX 4060" libdirs=ollama,cuda_v13 driver=13.0 pci_id=0000:01:00.0 type=discrete total="8.0 GiB" available="7.1 GiB"`,
				`msg="offloaded 29/29 layers to GPU"`, ""},
		} {
			tr := mustLookup(t, "ollama").NewTracker()
			for _, l := range []string{drop, "time=2026-09-30T01:19:15.478Z level=INFO source=types.go:50 " + c.compute,
				"time=2026-09-30T01:19:41.310Z level=INFO source=ggml.go:501 " + c.offload,
				`[GIN] 2026/09/30 - 01:19:51 | 200 |   10.204518s |       127.0.0.1 | POST     "/api/chat"`} {
				tr.Feed(l)
			}
			f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)})
			ok := f.Class == c.want && f.RootCause == drop
			if c.want == "" {
				ok = f.Rule == RuleNoFailureShown
			}
			if !ok {
				t.Errorf("%.60s, serving on %s: %s %q (rule %s), want the notice as accelerator_unavailable on the CPU, no failure on the GPU", drop, c.name, f.Class, f.RootCause, f.Rule)
			}
		}
	}
}
