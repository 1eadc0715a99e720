package engine

import (
	"os"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Each kind of fault is known for every engine kind that can print it,
// whatever the case or platform of the wording.
func TestKnowledgeAcrossKinds(t *testing.T) {
	lines := []struct {
		line  string
		class failure.Class
	}{
		// ports, every platform
		{"OSError: [Errno 98] Address already in use", failure.ClassPortInUse},
		{"OSError: [Errno 48] address already in use", failure.ClassPortInUse},
		{"OSError: [WinError 10048] Only one usage of each socket address (protocol/network address/port) is normally permitted", failure.ClassPortInUse},
		{"Error: listen tcp 127.0.0.1:11434: bind: Normal olarak her yuva adresi için yalnızca bir kullanıma izin veriliyor.", failure.ClassPortInUse},
		{"docker: Error response from daemon: driver failed programming external connectivity: Bind for 0.0.0.0:8000 failed: port is already allocated.", failure.ClassPortInUse},
		// CUDA runtime errors by number, name and text
		{"RuntimeError: CUDA error 35 at init", failure.ClassDriverMismatch},
		{"cuda runtime error (803) : system has unsupported display driver / cuda driver combination", failure.ClassDriverMismatch},
		{"CUDA driver error: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", failure.ClassDriverMismatch},
		{"failed call to cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected", failure.ClassAcceleratorUnavailable},
		{"ggml_cuda_init: failed to initialize CUDA: system not yet initialized", failure.ClassAcceleratorUnavailable},
		{"CUDA error: the provided PTX was compiled with an unsupported toolchain.", failure.ClassDriverMismatch},
		{"RuntimeError: CUDA error: no kernel image is available for execution on the device", failure.ClassGPUArchUnsupported},
		// container runtime
		{"docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]].", failure.ClassAcceleratorUnavailable},
		{"nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a newer version", failure.ClassDriverMismatch},
		// host memory
		{"Out of memory: Killed process 4242 (python3) total-vm:80000000kB", failure.ClassHostOOM},
		{"RuntimeError: [enforce fail at alloc_cpu.cpp:114] . DefaultCPUAllocator: can't allocate memory: you tried to allocate 8589934592 bytes.", failure.ClassHostOOM},
		{"Error: model requires more system memory (44.0 GiB) than is available (7.6 GiB)", failure.ClassHostOOM},
		// CPU
		{"Illegal instruction (core dumped)", failure.ClassHostCapability},
		// NCCL
		{"RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)", failure.ClassHostCapability},
		// GPU memory, any case
		{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", failure.ClassGPUOOM},
		{"RuntimeError: cuda OUT OF MEMORY", failure.ClassGPUOOM},
	}
	for _, kind := range Kinds() {
		for _, c := range lines {
			tr := feed(t, kind, c.line)
			if cls, _, ok := tr.Signature(); !ok || cls != c.class {
				t.Errorf("%s: %q: got %q (ok %v), want %s", kind, c.line, cls, ok, c.class)
			}
		}
	}
	for _, kind := range []string{"vllm", "sglang", "openai"} {
		l := "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://huggingface.co/api/models/org/m"
		if cls, _, ok := feed(t, kind, l).Signature(); !ok || cls != failure.ClassModelAccessDenied {
			t.Errorf("%s: hub error: %s %v", kind, cls, ok)
		}
	}
	if cls, _, ok := feed(t, "ollama", `time=x level=ERROR msg="chat prompt" error="template: :3:12: executing \"\" at <.Messages>: can't evaluate field Messages"`).Signature(); !ok || cls != failure.ClassTokenizerTemplate {
		t.Errorf("ollama template error: %s %v", cls, ok)
	}
	for _, code := range []int{35, 100, 222, 803, 804} {
		name, text, cls, ok := CUDAError(code)
		if !ok || name == "" || cls == "" || (code != 999 && text == "") {
			t.Errorf("CUDA error %d: %q %q %q %v", code, name, text, cls, ok)
		}
	}
}

// A Python exception is a block: the exception line is the root cause
// (not the logger header before it), the frames name the component, and
// a block cut off before its exception line gives its header, never "no
// error line".
func TestTracebackBlocks(t *testing.T) {
	tr := feed(t, "vllm",
		"(APIServer pid=1) INFO:     Application startup complete.",
		"(APIServer pid=1) ERROR 01-01 00:00:00 [serving_chat.py:1] Error in preprocessing prompt inputs",
		"(APIServer pid=1) ERROR 01-01 00:00:00 [serving_chat.py:1] Traceback (most recent call last):",
		`(APIServer pid=1) ERROR 01-01 00:00:00 [serving_chat.py:1]   File "/x/vllm/entrypoints/chat_utils.py", line 1, in apply_hf_chat_template`,
		"(APIServer pid=1) ERROR 01-01 00:00:00 [serving_chat.py:1] ValueError: template went wrong")
	f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)})
	if f.Class != failure.ClassTokenizerTemplate || !strings.HasSuffix(f.RootCause, "ValueError: template went wrong") {
		t.Errorf("frames ignored or header taken: %s %q", f.Class, f.RootCause)
	}
	if fr, _ := f.Detail["traceback_frames"].([]string); len(fr) != 1 || !strings.Contains(fr[0], "chat_utils.py") {
		t.Errorf("frames %v", f.Detail["traceback_frames"])
	}

	cut := feed(t, "sglang",
		"[2025-01-01 00:00:00 TP0] Load weight begin. avail mem=70.00 GB",
		"[2025-01-01 00:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
		`  File "/x/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process`,
		`  File "/x/sglang/srt/model_executor/model_runner.py", line 2, in load_model`)
	f = cut.Classify(Outcome{Kind: OutcomeExited, Exit: Signaled("KILL")})
	if !strings.Contains(f.RootCause, "Scheduler hit an exception") || strings.Contains(f.RootCause, "no error line") {
		t.Errorf("cut-off block: %s %q", f.Class, f.RootCause)
	}
	if fr, _ := f.Detail["traceback_frames"].([]string); len(fr) != 2 {
		t.Errorf("cut-off block frames %v", f.Detail["traceback_frames"])
	}
	if f.NextStep == NextStep(failure.ClassEngineDied) {
		t.Errorf("a known crash line got the no-known-cause advice")
	}

	// A later line that restates an earlier, more specific one is not
	// the root cause.
	f = feed(t, "llamacpp",
		"main: loading model",
		"gguf_init_from_file_impl: failed to open GGUF file '/m/x.gguf'",
		"llama_model_load_from_file_impl: failed to load model").Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)})
	if f.Class != failure.ClassModelLoadFailed || !strings.Contains(f.RootCause, "failed to open GGUF file") {
		t.Errorf("restatement: %s %q", f.Class, f.RootCause)
	}
}

// Signals and exit codes explain an exit no line explains.
func TestExitMeanings(t *testing.T) {
	load := []string{"main: loading model"}
	for _, c := range []struct {
		exit  ExitInfo
		class failure.Class
		text  string
	}{
		{Signaled("ILL"), failure.ClassHostCapability, "illegal instruction"},
		{Exited(132), failure.ClassHostCapability, "illegal instruction"},
		{Signaled("TERM"), failure.ClassReadyTimeout, "stopped from outside"},
		{Exited(143), failure.ClassReadyTimeout, "stopped from outside"},
		{Signaled("KILL"), failure.ClassEngineDied, "OOM killer"},
		{Exited(127), failure.ClassEngineDied, "not found"},
		{Exited(125), failure.ClassEngineDied, "container runtime"},
	} {
		f := feed(t, "llamacpp", load...).Classify(Outcome{Kind: OutcomeExited, Exit: c.exit})
		if f.Class != c.class || !strings.Contains(f.RootCause, c.text) || f.Phase != failure.PhaseLoad {
			t.Errorf("%s: %s %s %q", c.exit, f.Class, f.Phase, f.RootCause)
		}
	}
	f := feed(t, "vllm", "Starting to load model m...", "[12345.6] Out of memory: Killed process 77 (python3)").
		Classify(Outcome{Kind: OutcomeExited, Exit: Signaled("KILL")})
	if f.Class != failure.ClassHostOOM {
		t.Errorf("KILL with the OOM killer's line: %s", f.Class)
	}
}

// Served requests move the phase to inference; a 503 while loading and
// the readiness GETs do not; the message no longer says "before ready".
func TestServedPhase(t *testing.T) {
	tr := feed(t, "llamacpp", "main: loading model", "srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 503",
		"srv  log_server_r: request: GET /v1/models 127.0.0.1 200")
	if tr.Phase() != failure.PhaseLoad {
		t.Errorf("503 while loading moved the phase to %s", tr.Phase())
	}
	tr.Feed("main: model loaded")
	tr.Feed("srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200")
	if tr.Phase() != failure.PhaseInference {
		t.Errorf("served request: phase %s", tr.Phase())
	}
	f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Signaled("SEGV")})
	if strings.Contains(f.RootCause, "before ready") || !strings.Contains(f.RootCause, "while serving") {
		t.Errorf("root cause %q", f.RootCause)
	}
	v := feed(t, "vllm", "INFO:     Application startup complete.", `INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 200 OK`)
	if v.Phase() != failure.PhaseReadyWait {
		t.Errorf("health GET: phase %s", v.Phase())
	}
	v.Feed(`INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK`)
	o := feed(t, "ollama", `time=x level=INFO msg="llama runner started in 1.0 seconds"`,
		`[GIN] 2025/01/01 - 00:00:00 | 200 |  1.2s |  127.0.0.1 | POST     "/api/chat"`)
	if v.Phase() != failure.PhaseInference || o.Phase() != failure.PhaseInference {
		t.Errorf("vllm %s ollama %s", v.Phase(), o.Phase())
	}
	// an engine called in-process (a serverless or queue worker) logs no
	// ready line: a client's request once the KV cache is sized is served
	for _, kind := range []string{"vllm", "openai"} {
		w := feed(t, kind, "INFO 01-01 00:00:00 model_runner.py:1] Loading model weights took 4.1 GB",
			"INFO 01-01 00:00:00 gpu_executor.py:1] # GPU blocks: 1000, # CPU blocks: 512",
			"INFO 01-01 00:00:01 model_runner.py:1] Graph capturing finished in 9 secs.")
		w.Feed("INFO 01-01 00:00:02 async_llm_engine.py:1] Added request job-1.")
		if w.Phase() != failure.PhaseInference {
			t.Errorf("%s in-process request: phase %s", kind, w.Phase())
		}
		p := feed(t, kind, "INFO 01-01 00:00:00 model_runner.py:1] Starting to load model m...")
		p.Feed("INFO 01-01 00:00:01 logger.py:1] Received request cmpl-1: prompt: 'x', params: SamplingParams(n=1)")
		if p.Phase() == failure.PhaseInference {
			t.Errorf("%s request line while loading: phase %s", kind, p.Phase())
		}
	}
}

// Numbers logged once per device are kept per device.
func TestPerDeviceFacts(t *testing.T) {
	f := feed(t, "llamacpp",
		"load_tensors:        CUDA0 model buffer size = 15360.42 MiB",
		"load_tensors:        CUDA1 model buffer size = 15054.61 MiB",
		"load_tensors:   CPU_Mapped model buffer size =   315.30 MiB",
		"llama_kv_cache_unified:      CUDA0 KV buffer size =  1024.00 MiB",
		"llama_kv_cache_unified:      CUDA1 KV buffer size =   512.00 MiB").Facts()
	want := map[string]float64{"model_buffer_mib.cuda0": 15360.42, "model_buffer_mib.cuda1": 15054.61,
		"model_buffer_mib.cpu_mapped": 315.30, "model_buffer_mib": 15360.42 + 15054.61,
		"kv_buffer_mib.cuda0": 1024, "kv_buffer_mib.cuda1": 512, "kv_buffer_mib": 1536}
	for k, v := range want {
		if d := f[k] - v; d > 1e-6 || d < -1e-6 {
			t.Errorf("%s = %v, want %v (facts %v)", k, f[k], v, f)
		}
	}
	o := feed(t, "ollama", `time=x level=INFO source=ggml.go:289 msg="model weights" buffer=CUDA0 size="16.2 GiB"`,
		`time=x level=INFO source=ggml.go:289 msg="model weights" buffer=CPU size="1.1 GiB"`).Facts()
	if o["model_weights_gib.cuda0"] != 16.2 || o["model_weights_gib.cpu"] != 1.1 || o["model_weights_gib"] != 16.2 {
		t.Errorf("ollama per-device weights: %v", o)
	}
}

// A warning explains an exit, not a wrong probe reply.
func TestWarningDoesNotExplainProbe(t *testing.T) {
	tr := feed(t, "vllm", "WARNING 01-01 00:00:00 [x.py:1] Compute Capability < 8.0 is not supported by the V1 Engine. Falling back to V0.",
		"INFO:     Application startup complete.")
	f := tr.Classify(Outcome{Kind: OutcomeCompletionFailed, Status: 200, Message: `the reply "x" is not the expected "READY"`})
	if f.Class != failure.ClassProbeFailed {
		t.Errorf("got %s (%q)", f.Class, f.RootCause)
	}
}

// The serving device is read from each engine's own lines.
func TestServingDevice(t *testing.T) {
	for _, c := range []struct {
		kind  string
		lines []string
		want  string
	}{
		{"llamacpp", []string{"llama_model_load_from_file_impl: using device CUDA0 (NVIDIA H200) - 139000 MiB free", "load_tensors: offloaded 29/29 layers to GPU"}, "GPU (NVIDIA H200, 29/29 layers)"},
		{"llamacpp", []string{"load_tensors: offloaded 10/29 layers to GPU"}, "GPU and CPU (10/29 layers)"},
		{"llamacpp", []string{"warning: no usable GPU found, --gpu-layers option will be ignored"}, "CPU"},
		{"ollama", []string{`time=x level=INFO source=types.go:130 msg="inference compute" id=0 library=cpu variant="" compute="" driver=0.0 name="" total="23.5 GiB" available="19.7 GiB"`}, "CPU"},
		{"ollama", []string{`time=x level=INFO msg="inference compute" id=GPU-1 library=cuda variant=v12 compute=9.0 driver=12.8 name="NVIDIA H200" total="139.8 GiB" available="139.2 GiB"`}, "GPU (NVIDIA H200)"},
		// Ollama 0.12 on: names unquoted, the CPU named cpu
		{"ollama", []string{`time=x level=INFO source=types.go:50 msg="inference compute" id=cpu library=cpu compute="" name=cpu description=cpu libdirs=ollama driver="" total="61.4 GiB"`}, "CPU"},
		{"ollama", []string{`time=x level=INFO source=types.go:42 msg="inference compute" id=GPU-1 filter_id="" library=CUDA compute=8.6 name=CUDA0 description="NVIDIA GeForce RTX 3090" libdirs=ollama,cuda_v12`}, "GPU (CUDA0)"},
		{"vllm", []string{"INFO 01-01 00:00:00 [__init__.py:1] Automatically detected platform cuda."}, "GPU (cuda)"},
		{"vllm", []string{"INFO 01-01 00:00:00 [__init__.py:1] Automatically detected platform cpu."}, "CPU"},
		{"sglang", []string{"[2025] Load weight begin. avail mem=70.00 GB"}, "GPU"},
		{"openai", []string{"nothing about devices"}, "unknown"},
	} {
		if got := feed(t, c.kind, c.lines...).Device().String(); got != c.want {
			t.Errorf("%s %q: device %q, want %q", c.kind, c.lines, got, c.want)
		}
	}
	// a server that stayed up and served, with no error line, whose own
	// discovery found only the CPU: the accelerator was not there (weak)
	served := feed(t, "ollama", `time=x level=INFO source=types.go:50 msg="inference compute" id=cpu library=cpu compute="" name=cpu description=cpu`,
		`[GIN] 2026/06/07 - 09:17:52 | 200 |         1m47s |       127.0.0.1 | POST     "/api/chat"`).Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)})
	if served.Class != failure.ClassAcceleratorUnavailable || served.Phase != failure.PhaseLaunch || served.Confidence != failure.ConfidenceWeak ||
		!strings.Contains(served.RootCause, "library=cpu") {
		t.Errorf("served on the CPU: %s %s %s %q", served.Class, served.Phase, served.Confidence, served.RootCause)
	}
	f := feed(t, "ollama").Classify(Outcome{Kind: OutcomeAcceleratorUnavailable, Device: ServingDevice{Kind: DeviceCPU, Evidence: "library=cpu"}})
	if f.Class != failure.ClassAcceleratorUnavailable || f.Phase != failure.PhaseReadyWait || !strings.Contains(f.RootCause, "library=cpu") {
		t.Errorf("accelerator unavailable: %s %s %q", f.Class, f.Phase, f.RootCause)
	}
}

// A wrong probe reply is probe_failed, with the reply in the root cause.
func TestProbeWrongReply(t *testing.T) {
	f := feed(t, "ollama", `time=x level=INFO msg="llama runner started in 1.0 seconds"`).Classify(Outcome{
		Kind: OutcomeCompletionFailed, Status: 200, Message: `the reply "GGG" is not the expected "READY" (ready_probe.expect)`})
	if f.Class != failure.ClassProbeFailed || f.Phase != failure.PhaseReadyWait || !strings.Contains(f.RootCause, "GGG") {
		t.Errorf("%s %s %q", f.Class, f.Phase, f.RootCause)
	}
	if !strings.Contains(f.NextStep, "ready_probe") {
		t.Errorf("next step %q", f.NextStep)
	}
}

// docs/failure-classes.md lists every class with an example line and its
// next step.
func TestClassesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/failure-classes.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, c := range failure.Classes {
		i := strings.Index(doc, "\n### "+string(c)+"\n")
		if i < 0 {
			t.Errorf("class %s has no section", c)
			continue
		}
		sec := doc[i+1:]
		if j := strings.Index(sec[4:], "\n### "); j >= 0 {
			sec = sec[:j+4]
		}
		if !strings.Contains(sec, "\n`") || !strings.Contains(sec, "Next step:") {
			t.Errorf("class %s: no example line or next step", c)
		}
	}
}

// Every kind has a next step for every class, and where the reports
// document an engine's own remedy, the advice names it.
func TestNextStepsNameRemedies(t *testing.T) {
	for _, k := range Kinds() {
		for _, c := range failure.Classes {
			if mustLookup(t, k).NextStep(c) == "" {
				t.Errorf("%s/%s: no next step", k, c)
			}
		}
	}
	for _, c := range []struct {
		kind  string
		class failure.Class
		want  []string
	}{
		{"vllm", failure.ClassQuantKernelFailed, []string{"--quantization", "--tensor-parallel-size"}},
		{"vllm", failure.ClassTokenizerTemplate, []string{"--chat-template"}},
		{"vllm", failure.ClassHostCapability, []string{"VLLM_USE_V2_MODEL_RUNNER=0"}},
		{"llamacpp", failure.ClassTokenizerTemplate, []string{"--jinja", "--chat-template-file"}},
		{"llamacpp", failure.ClassGPUOOM, []string{"--n-gpu-layers", "--ctx-size"}},
		{"sglang", failure.ClassWarmupFailed, []string{"--disable-cuda-graph"}},
		{"sglang", failure.ClassGPUOOM, []string{"--mem-fraction-static"}},
		{"ollama", failure.ClassHostOOM, []string{"num_ctx"}},
		{"ollama", failure.ClassAcceleratorUnavailable, []string{"CUDA_VISIBLE_DEVICES"}},
		{"openai", failure.ClassGPUOOM, []string{"--max-batch-total-tokens"}},
	} {
		s := mustLookup(t, c.kind).NextStep(c.class)
		for _, w := range c.want {
			if !strings.Contains(s, w) {
				t.Errorf("%s/%s: next step %q lacks %q", c.kind, c.class, s, w)
			}
		}
	}
}

// A server that had been ready and then died is not said to have died
// before ready, and its phase is at least ready.
func TestAfterReady(t *testing.T) {
	f := feed(t, "llamacpp", "main: loading model", "main: model loaded").Classify(Outcome{Kind: OutcomeExited, Exit: Signaled("SEGV"), AfterReady: true})
	if f.Phase != failure.PhaseReady || strings.Contains(f.RootCause, "before ready") || !strings.Contains(f.RootCause, "after ready") {
		t.Errorf("%s %q", f.Phase, f.RootCause)
	}
	f = feed(t, "llamacpp", "main: loading model").Classify(Outcome{Kind: OutcomeExited, Exit: Signaled("TERM"), AfterReady: true})
	if f.Class == failure.ClassReadyTimeout {
		t.Errorf("a stop after ready is no ready timeout: %s %q", f.Class, f.RootCause)
	}
}
