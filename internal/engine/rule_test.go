package engine

import (
	"sort"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// TestRuleNamesUnique: every rule of every kind has a name, unique in
// its table, of the form family/slug.
func TestRuleNamesUnique(t *testing.T) {
	for _, kind := range Kinds() {
		e := mustLookup(t, kind)
		seen := map[string]bool{}
		for _, r := range e.signatures {
			if r.Name == "" || r.Family == "" || !strings.HasPrefix(r.Name, r.Family+"/") {
				t.Errorf("%s: rule %q of family %q (text %q): want the name family/slug", kind, r.Name, r.Family, r.Text)
			}
			if seen[r.Name] {
				t.Errorf("%s: rule name %q twice", kind, r.Name)
			}
			seen[r.Name] = true
		}
	}
}

// TestRulePatternsHoldNoControlCharacters: a rule's text and pattern
// hold no control character. A "\b" written in an interpreted string
// by a tool becomes a backspace (0x08) and the rule never matches, with
// no error: a rule that silently cannot fire.
func TestRulePatternsHoldNoControlCharacters(t *testing.T) {
	for _, kind := range Kinds() {
		for _, r := range mustLookup(t, kind).signatures {
			s := r.Text
			if r.Pattern != nil {
				s += r.Pattern.String()
			}
			for _, c := range s {
				if c < 0x20 && c != '\t' {
					t.Errorf("%s: rule %s holds the control character %#x in %q", kind, r.Name, c, s)
					break
				}
			}
		}
	}
}

// TestVerdictRecordsRule: the failure names the rule that decided and
// the verdict's confidence.
func TestVerdictRecordsRule(t *testing.T) {
	for _, c := range []struct {
		name  string
		lines []string
		exit  ExitInfo
		rule  string
		class failure.Class
		conf  failure.Confidence
	}{
		{"line", []string{"RuntimeError: CUDA error: no kernel image is available for execution on the device"}, Exited(1),
			"cuda/no-kernel-image-is-available", failure.ClassGPUArchUnsupported, failure.ConfidenceStrong},
		{"exit", []string{"INFO starting"}, Signaled("ILL"), "exit/illegal-instruction", failure.ClassHostCapability, failure.ConfidenceStrong},
		{"fallback", []string{"ERROR something nobody knows"}, Exited(1), "fallback/engine-died", failure.ClassEngineDied, failure.ConfidenceNone},
		{"hint", []string{"ERROR RuntimeError: CUDA error: an illegal memory access was encountered"}, Exited(1),
			"cuda/illegal-memory-access-was-encountered", failure.ClassEngineDied, failure.ConfidenceWeak},
		{"conflict", []string{"ERROR RuntimeError: CUDA error: no kernel image is available for execution on the device",
			"ERROR OSError: [Errno 98] address already in use"}, Exited(1),
			"cuda/no-kernel-image-is-available", failure.ClassGPUArchUnsupported, failure.ConfidenceWeak},
	} {
		tr := mustLookup(t, "vllm").NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.exit})
		if f.Rule != c.rule || f.Class != c.class || f.Confidence != c.conf {
			t.Errorf("%s: rule %q class %s confidence %s, want %q %s %s", c.name, f.Rule, f.Class, f.Confidence, c.rule, c.class, c.conf)
		}
	}
}

// TestRuleAfterNotAfter: a rule with After matches only once its text was
// logged; one with NotAfter only while it was not.
func TestRuleAfterNotAfter(t *testing.T) {
	e := &Engine{Kind: "test-after", signatures: []Rule{
		{Name: "t/after", Text: "boom", After: "grammar on", Class: failure.ClassStructuredOutputRejected},
		{Name: "t/not-after", Text: "boom", NotAfter: "grammar on", Class: failure.ClassGPUOOM},
	}}
	prepare(e)
	for _, c := range []struct {
		lines []string
		want  failure.Class
	}{
		{[]string{"ERROR boom"}, failure.ClassGPUOOM},
		{[]string{"INFO grammar on", "ERROR boom"}, failure.ClassStructuredOutputRejected},
	} {
		tr := e.NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		if cls, _, _ := tr.Signature(); cls != c.want {
			t.Errorf("%q: class %s, want %s", c.lines, cls, c.want)
		}
	}
}

// TestFirstMatch: a table read outside the tracker (a preflight table of
// host output) takes the first rule that matches a line.
func TestFirstMatch(t *testing.T) {
	rules := family("host", []Rule{
		{Text: "flags", Pattern: nil, Also: "avx512f", Class: failure.ClassHostOOM},
		{Text: "flags", Class: failure.ClassHostCapability},
	})
	if r, c := FirstMatch(rules, "flags : fpu sse2 avx2"); r == nil || r.Name != "host/flags-2" || c != failure.ClassHostCapability {
		t.Errorf("FirstMatch = %v %s, want host/flags-2 host_capability", r, c)
	}
	if r, _ := FirstMatch(rules, "model name : x"); r != nil {
		t.Errorf("FirstMatch matched %s on a line without its text", r.Name)
	}
}

// TestSharedFamilies: the shared families give their class on every kind
// (one line per family entry worth holding: a wording the field cases do
// not carry).
func TestSharedFamilies(t *testing.T) {
	lines := []struct {
		line  string
		class failure.Class
	}{
		{"Error: HTTP status client error (401 Unauthorized) for url (https://huggingface.co/api/models/org/m)", failure.ClassModelAccessDenied},
		{"Error: pull model manifest: 401: unauthorized", failure.ClassModelAccessDenied},
		{"Error: pull model manifest: file does not exist", failure.ClassModelLoadFailed},
		{"ImportError: libcudart.so.12: cannot open shared object file: No such file or directory", failure.ClassAcceleratorUnavailable},
		{"ggml_vulkan: Device memory allocation of size 4294967296 failed.", failure.ClassGPUOOM},
		{"OSError: [Errno 24] Too many open files", failure.ClassHostCapability},
		{"OSError: [Errno 28] No space left on device: '/root/.cache/huggingface/hub/tmp'", failure.ClassDiskFull},
		{"RuntimeError: HIP error: invalid device function", failure.ClassGPUArchUnsupported},
		{"UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", failure.ClassGPUOOM},
		// a library the loader may not read, an accelerator's runtime too
		{"/usr/bin/server: error while loading shared libraries: libpython3.11.so.1.0: cannot open shared object file: Permission denied", failure.ClassPermissionDenied},
		{"ImportError: libcudart.so.12: cannot open shared object file: Permission denied", failure.ClassPermissionDenied},
		{"OSError: /tmp/x/libllama.so: failed to map segment from shared object", failure.ClassPermissionDenied},
		{"/usr/bin/server: error while loading shared libraries: libfoo.so.1: cannot open shared object file: No such file or directory", failure.ClassEngineDied},
		{"ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")", failure.ClassGPUArchUnsupported},
		{"AssertionError: fp8e4nv data type is not supported on CUDA arch < 89", failure.ClassGPUArchUnsupported},
		{"RuntimeError: [metal::malloc] Resource limit (499000) exceeded.", failure.ClassGPUOOM},
		// an older GPU's attention kernels (TGI's flash-attn v1, vLLM's
		// XFormers), TGI's own generation check
		{"NotImplementedError: softcap is not available in flash attn v1", failure.ClassGPUArchUnsupported},
		{"ValueError: Flash decoding requires Flash Attention V2", failure.ClassGPUArchUnsupported},
		{"ImportError: AMD GPU with ROCm capability 9 0 is not supported", failure.ClassGPUArchUnsupported},
		{"ImportError: GPU with CUDA capability 7 0 is not supported", failure.ClassGPUArchUnsupported},
		// CANN's operator with no kernel binary for the SoC, both wordings
		{"RuntimeError: call aclnnDispatchLayout failed, detail:[PID: 1] 2026-08-10-09:47:34.932.611 AclNN_Parameter_Error(EZ1001): Get regInfo failed, The bin of socVersion [ascend910b] does not support opType [DispatchLayout].", failure.ClassGPUArchUnsupported},
		// huggingface_hub's errors for a revision or a file the repository has not
		{"huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: Mwhe_c3Kt650GcdKEFomX)", failure.ClassModelLoadFailed},
		{"huggingface_hub.errors.RemoteEntryNotFoundError: 404 Client Error. (Request ID: 53pNl6M0MxsnG5Sw8JA6x)", failure.ClassModelLoadFailed},
		{"Entry Not Found for url: https://huggingface.co/bert-base-cased/resolve/main/%3Cnon-existent-file%3E.", failure.ClassModelLoadFailed},
		// the dynamic loader: a symbol or a symbol version a library needs
		{"ImportError: /usr/lib/python3/dist-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", failure.ClassEngineDied},
		{"./llama-server: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by ./llama-server)", failure.ClassHostCapability},
		{"ImportError: /opt/conda/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /usr/lib/libLLVM.so.17)", failure.ClassEngineDied},
		// opening another GPU's memory by IPC handle, every vendor's call
		{"RuntimeError: hipIpcOpenMemHandle failed: invalid argument", failure.ClassHostCapability},
		{"RuntimeError: oneCCL: ze_call.cpp:28 do_call: EXCEPTION: ze error at zeMemOpenIpcHandle, code: ZE_RESULT_ERROR_INVALID_ARGUMENT", failure.ClassHostCapability},
		// the memory left after the weights holds no KV cache
		{"ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.88.", failure.ClassGPUOOM},
		{"RuntimeError: not enough GPU memory for the KV cache: 0.41 GiB free after the weights", failure.ClassGPUOOM},
		// the SYCL runtime's results, Level Zero's under them
		{"Native API failed. Native API returns: 38 (UR_RESULT_ERROR_OUT_OF_HOST_MEMORY)", failure.ClassHostOOM},
		{"Native API failed. Native API returns: -6 (PI_ERROR_OUT_OF_HOST_MEMORY)", failure.ClassHostOOM},
		{"Native API failed. Native API returns: 35 (UR_RESULT_ERROR_MEM_OBJECT_ALLOCATION_FAILURE)", failure.ClassGPUOOM},
		{"level_zero backend failed with error: 2013265923 (ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)", failure.ClassGPUOOM},
		{"Native API failed. Native API returns: 41 (UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE)", failure.ClassGPUArchUnsupported},
		{"Native API failed. Native API returns: -11 (PI_ERROR_BUILD_PROGRAM_FAILURE)", failure.ClassGPUArchUnsupported},
		// HIP's fat-binary loader, old and new wording
		{":1:hip_code_object.cpp      :570 : 1234 us: hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", failure.ClassGPUArchUnsupported},
	}
	for _, kind := range Kinds() {
		for _, c := range lines {
			if cls, _, ok := feed(t, kind, c.line).Signature(); !ok || cls != c.class {
				t.Errorf("%s: %q: %s (ok %v), want %s", kind, c.line, cls, ok, c.class)
			}
		}
	}
	// vLLM (and its forks as openai) refusing the engine version a flag or
	// platform needs: the configuration
	for _, kind := range []string{"vllm", "openai"} {
		for _, line := range []string{
			"ERROR 09-05 06:01:06 [engine.py:467] ValueError: CPU backend only supports V1.",
			"NotImplementedError: VLLM_USE_V1=1 is not supported with --otlp-traces-endpoint.",
		} {
			if cls, _, ok := feed(t, kind, line).Signature(); !ok || cls != failure.ClassInvalidConfiguration {
				t.Errorf("%s: %q: %s (ok %v), want invalid_configuration", kind, line, cls, ok)
			}
		}
	}
	// the Python stacks: a model architecture's module or class the
	// engine does not have, not a module of the engine's own install
	for _, kind := range []string{"vllm", "sglang", "lmdeploy", "trtllm", "openai"} {
		for _, line := range []string{
			"ModuleNotFoundError: No module named 'mlx_lm.models.qwen3_5'",
			"ModuleNotFoundError: No module named 'transformers_modules.baidu.ERNIE-4'",
			"ValueError: Model type gemma3 not supported.",
			"RuntimeError: Can not found rewrite for architectures: ['Qwen2_5_VLForConditionalGeneration']",
		} {
			if cls, _, ok := feed(t, kind, line).Signature(); !ok || cls != failure.ClassModelLoadFailed {
				t.Errorf("%s: %q: %s (ok %v), want model_load_failed", kind, line, cls, ok)
			}
		}
		if cls, _, _ := feed(t, kind, "ModuleNotFoundError: No module named 'flash_attn'").Signature(); cls != failure.ClassEngineDied {
			t.Errorf("%s: an engine dependency's module: %s, want engine_died", kind, cls)
		}
	}
	// a C program's warning explains only as a hint: the error after it wins
	tr := feed(t, "llamafile", "link_cuda_dso: warning: libcublas.so.12: cannot open shared object file: No such file or directory",
		"fatal error: support for --gpu nvidia was explicitly requested, but it wasn't available")
	if _, line, _ := tr.Signature(); !strings.Contains(line, "fatal error") {
		t.Errorf("root cause %q, want the fatal error after the warning", line)
	}
}

// TestGPURuntimeErrorTable: every error of the CUDA/HIP table gives its
// class on every kind, by each enum name (CUDA runtime, driver API, HIP)
// and by its message as the runtimes print it ("CUDA error: TEXT", "HIP
// error: TEXT"), so that a HIP name or a stream-capture error is the same
// entry as CUDA's.
func TestGPURuntimeErrorTable(t *testing.T) {
	for _, kind := range Kinds() {
		for _, e := range cudaErrors {
			var lines []string
			for _, n := range strings.Split(e.names, "|") {
				lines = append(lines, "RuntimeError: "+n)
			}
			if e.text != "" {
				lines = append(lines, "RuntimeError: CUDA error: "+e.text, "RuntimeError: HIP error: "+e.text)
			}
			for _, line := range lines {
				if cls, _, ok := feed(t, kind, line).Signature(); !ok || cls != e.class {
					t.Errorf("%s: %q: %s (ok %v), want %s (error %s)", kind, line, cls, ok, e.class, e.code)
				}
			}
		}
	}
}

// TestVulkanResultTable: every VkResult of the table gives its class on
// every kind, in both spellings as engines print them (Vulkan-Hpp's
// exception what() "vk::Device::allocateMemory: ErrorOutOfHostMemory",
// TVM's "Check failed: ... Vulkan Error, code=-1: VK_ERROR_OUT_OF_HOST_MEMORY").
func TestVulkanResultTable(t *testing.T) {
	for _, kind := range Kinds() {
		for _, r := range vulkanResults {
			for _, line := range []string{"  what():  vk::Device::allocateMemory: " + r.hpp,
				"InternalError: Check failed: (__e == VK_SUCCESS) is false: Vulkan Error, code=-1: " + r.enum} {
				if cls, _, ok := feed(t, kind, line).Signature(); !ok || cls != r.class {
					t.Errorf("%s: %q: %s (ok %v), want %s", kind, line, cls, ok, r.class)
				}
			}
		}
	}
}

// TestRuleNextStep: a rule's own next step is the verdict's advice when
// that rule decides (an illegal instruction, whatever the engine; vLLM's
// host_capability advice is about UVA under WSL2).
func TestRuleNextStep(t *testing.T) {
	tr := feed(t, "vllm", "INFO starting")
	if f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Signaled("ILL")}); f.NextStep != sigillStep {
		t.Errorf("SIGILL exit: next step %q", f.NextStep)
	}
	tr = feed(t, "tgi", "2024-03-06T17:53:31.052444Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to shutdown with signal 4 rank=0")
	if f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)}); f.Class != failure.ClassHostCapability || f.NextStep != sigillStep {
		t.Errorf("signal 4 in a line: %s, next step %q", f.Class, f.NextStep)
	}
}

// TestRuleNames: RuleNames lists the names of every classifier table,
// sorted, each once.
func TestRuleNames(t *testing.T) {
	names := RuleNames()
	if !sort.StringsAreSorted(names) {
		t.Error("RuleNames is not sorted")
	}
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			t.Errorf("RuleNames has %q twice", names[i])
		}
	}
	for _, want := range []string{"cuda/no-kernel-image-is-available", "exit/illegal-instruction", "fallback/engine-died", "outcome/port-in-use"} {
		if i := sort.SearchStrings(names, want); i == len(names) || names[i] != want {
			t.Errorf("RuleNames lacks %q", want)
		}
	}
}

// TestFamiliesBeyondTheCases: the families and structure reads learnt
// from one engine's case hold for the other engines that print the same
// runtime's words (lines written from those runtimes' messages: HIP's and
// CUDA's error strings, the Neuron runtime's, SynapseAI's, Docker's exec
// error, llama.cpp's CPU fallback warning as its derivatives print it).
func TestFamiliesBeyondTheCases(t *testing.T) {
	for _, c := range []struct {
		kind  string
		lines []string
		exit  ExitInfo
		class failure.Class
		phase failure.Phase
	}{
		{"vllm", []string{"INFO 01-01 00:00:00 [model_runner.py:1] Loading model weights took 4.1 GB", "Capturing CUDA graph shapes:  10%|       | 3/35",
			"ERROR 01-01 00:00:01 [core.py:1] RuntimeError: HIP error: device kernel image is invalid"}, Exited(1),
			failure.ClassGPUArchUnsupported, failure.PhaseWarmup},
		{"sglang", []string{"[2025-01-01 00:00:00 TP0] RuntimeError: CUDA error: device kernel image is invalid"}, Exited(1),
			failure.ClassGPUArchUnsupported, failure.PhaseLaunch},
		{"tgi", []string{"2024-01-01T00:00:00.000000Z ERROR text_generation_launcher: RuntimeError: hipErrorSharedObjectInitFailed"}, Exited(1),
			failure.ClassGPUArchUnsupported, failure.PhaseLaunch},
		{"koboldcpp", []string{"warning: no usable GPU found, --gpu-layers option will be ignored",
			"Loading Text Model: /m.gguf", "Load Text Model OK: True", "Starting Kobold API on port 5001"}, Exited(0),
			failure.ClassAcceleratorUnavailable, failure.PhaseLaunch},
		{"llamacpp", []string{"warning: not compiled with GPU offload support, --gpu-layers option will be ignored",
			"warning: see main README.md for information on enabling GPU BLAS support", "main: server is listening on http://127.0.0.1:8080"}, Exited(0),
			failure.ClassAcceleratorUnavailable, failure.PhaseLaunch},
		{"tgi", []string{"2024-01-01T00:00:00.000000Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0",
			`2024-01-01T00:00:09.000000Z ERROR text_generation_launcher: RuntimeError: nrt_tensor_allocate status=4 message="Allocation Failure"`}, Exited(1),
			failure.ClassGPUOOM, failure.PhaseLoad},
		{"vllm", []string{"exec /usr/bin/python3: exec format error"}, Exited(1), failure.ClassHostCapability, failure.PhaseLaunch},
		{"ollama", []string{"HW Exception by GPU node-1 (Agent handle: 0x5ab48bbcc960) reason :GPU Hang"}, Signaled("ABRT"),
			failure.ClassEngineDied, failure.PhaseLaunch},
		{"llamacpp", []string{"CUDA error 702 at /x/ggml-cuda.cu:123: the launch timed out and was terminated"}, Signaled("ABRT"),
			failure.ClassEngineDied, failure.PhaseLaunch},
		{"openai", []string{"RuntimeError: CUDA error: OS call failed or operation not supported on this OS"}, Exited(1),
			failure.ClassEngineDied, failure.PhaseLaunch},
		{"openai", []string{"RuntimeError: CUDA error: operation not supported"}, Exited(1),
			failure.ClassHostCapability, failure.PhaseLaunch},
		{"ollama", []string{"/bin/sh: 1: /usr/bin/ollama: exec format error"}, Exited(126), failure.ClassHostCapability, failure.PhaseLaunch},
		{"sglang", []string{"[2025-01-01 00:00:00] The server is fired up and ready to roll!",
			"[2025-01-01 00:01:00 TP0] RuntimeError: CUDA error: an illegal instruction was encountered"}, Exited(1),
			failure.ClassEngineDied, failure.PhaseInference}, // after "fired up", with no request line: a request's (failedOnRequest)
		{"vllm", []string{"ERROR 01-01 00:00:00 [worker.py:1] RuntimeError: synStatus=20 [Device already acquired] Device acquire failed."}, Exited(1),
			failure.ClassAcceleratorBusy, failure.PhaseLaunch},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.exit})
		if f.Class != c.class || f.Phase != c.phase {
			t.Errorf("%s %q: %s/%s (rule %s), want %s/%s", c.kind, c.lines[len(c.lines)-1], f.Class, f.Phase, f.Rule, c.class, c.phase)
		}
	}
}

// TestEighthSetConfidentWrongKinds: the two kinds said strongly and
// wrongly at first sight on the eighth held-out set (first-sight.json).
// LMDeploy's missing dlinfer plugin is the host's missing device backend,
// not a broken install; LM Studio's "Error loading model. (Exit code:
// N)" says the engine died, weakly (it names no cause), and leaves the
// cause to an engine line before it.
func TestEighthSetConfidentWrongKinds(t *testing.T) {
	classify := func(kind string, exit int, lines ...string) *failure.Failure {
		tr := feed(t, kind, lines...)
		return tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(exit)})
	}
	f := classify("lmdeploy", 1,
		"2025-03-24 17:58:14,284 - lmdeploy - ERROR - base.py:53 - ModuleNotFoundError: No module named 'dlinfer'",
		"2025-03-24 17:58:14,284 - lmdeploy - ERROR - base.py:54 - <dlinfer> check failed!",
		"dlinfer is not available.")
	if f.Class != failure.ClassHostCapability || f.Rule != "lmdeploy/no-dlinfer" || !strings.Contains(f.RootCause, "No module named 'dlinfer'") {
		t.Errorf("dlinfer: %s by %s, %q; want host_capability by lmdeploy/no-dlinfer", f.Class, f.Rule, f.RootCause)
	}
	if f := classify("lmdeploy", 1, "ModuleNotFoundError: No module named 'flash_attn'"); f.Class != failure.ClassEngineDied {
		t.Errorf("another module: %s, want engine_died (a broken install)", f.Class)
	}
	const summary = "[2026-01-14 11:07:46][ERROR] [LM Studio] Failed to load model m: Error loading model. (Exit code: 18446744072635812000). Unknown error. Try a different model and/or config."
	f = classify("openai", 0, "[2026-01-14 11:06:48][INFO] Server started.", summary)
	if f.Class != failure.ClassEngineDied || f.Confidence != failure.ConfidenceWeak || f.Rule != "ggml/summary-error-loading-model-exit-code" {
		t.Errorf("LM Studio's exit code: %s %s by %s, want engine_died weak", f.Class, f.Confidence, f.Rule)
	}
	f = classify("openai", 0, "[2026-01-14 11:06:48][INFO] Server started.", "ROCm error: invalid device function", summary)
	if f.Class != failure.ClassGPUArchUnsupported || !strings.Contains(f.RootCause, "invalid device function") {
		t.Errorf("LM Studio's exit code after the engine's line: %s %q, want that line's gpu_arch_unsupported", f.Class, f.RootCause)
	}
	f = classify("openai", 0, "[2026-01-14 11:06:48][INFO] Server started.",
		"[2026-01-14 11:07:46][ERROR] llama_model_load: error loading model: unknown model architecture: 'x'")
	if f.Class != failure.ClassModelLoadFailed {
		t.Errorf("the loader's own error loading model: %s, want model_load_failed", f.Class)
	}
}

// TestBrokenInstallClasses: a broken install is classed as
// docs/vocabulary.md "A broken install" says: a libc function or the
// system's C++ runtime too old is the host's (host_capability), a line
// that cannot tell whose (dyld's, bionic's, a module missing) is weak
// and names the other reading in Classes.
func TestBrokenInstallClasses(t *testing.T) {
	for _, c := range []struct {
		line string
		want failure.Class
		conf failure.Confidence
		or   failure.Class
	}{
		{"OSError: /tmp/_MEI/koboldcpp_cublas.so: undefined symbol: getcpu", failure.ClassHostCapability, failure.ConfidenceStrong, ""},
		{"ImportError: /x/flash_attn_2_cuda.so: undefined symbol: _ZN3c104cuda9SetDeviceEi", failure.ClassEngineDied, failure.ConfidenceWeak, failure.ClassInvalidConfiguration},
		{"ImportError: /lib/x86_64-linux-gnu/libstdc++.so.6: version `CXXABI_1.3.15' not found (required by /x/y.so)", failure.ClassHostCapability, failure.ConfidenceWeak, failure.ClassInvalidConfiguration},
		{"ImportError: /opt/conda/lib/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by /x/y.so)", failure.ClassEngineDied, failure.ConfidenceWeak, failure.ClassInvalidConfiguration},
		{"dyld[1]: Library not loaded: @rpath/libpython3.11.dylib", failure.ClassEngineDied, failure.ConfidenceWeak, failure.ClassInvalidConfiguration},
		{`OSError: dlopen failed: library "/data/x/koboldcpp_default.so" not found`, failure.ClassInvalidConfiguration, failure.ConfidenceWeak, failure.ClassEngineDied},
		{"ModuleNotFoundError: No module named 'llama_cpp_binaries'", failure.ClassEngineDied, failure.ConfidenceWeak, failure.ClassInvalidConfiguration},
	} {
		f := feed(t, "openai", c.line).Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)})
		if f.Class != c.want || f.Confidence != c.conf || c.or != "" && (len(f.Classes) == 0 || f.Classes[0] != c.or) {
			t.Errorf("%q: %s %s by %s, classes %v; want %s %s, classes first %q", c.line, f.Class, f.Confidence, f.Rule, f.Classes, c.want, c.conf, c.or)
		}
	}
}
