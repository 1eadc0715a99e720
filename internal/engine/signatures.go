package engine

import (
	"regexp"
	"strings"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Signatures and parsers shared by several kinds. A kind's own list comes
// first so its specific signatures win. Texts match case-insensitively;
// the wordings are the engines' and libraries' own (read from their
// sources and from the logs users paste into bug reports), and cover every
// platform's text where the OS writes the message (a taken port reads
// differently on Linux, macOS and Windows).

// cudaErrors are CUDA runtime errors as users paste them: by number
// ("CUDA error 35", "cudaError 803", "code=100"), by enum name
// (cudaErrorInsufficientDriver, CUDA_ERROR_NO_DEVICE) and by their
// message text. Each entry says what the number means for the user.
var cudaErrors = []struct {
	code  string
	names string // enum names, runtime and driver API, for a regexp alternation
	text  string // the runtime's message for the code (cudaGetErrorString)
	class failure.Class
}{
	{"2", "cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY", "out of memory", failure.ClassGPUOOM},
	{"3", "cudaErrorInitializationError|CUDA_ERROR_NOT_INITIALIZED", "initialization error", failure.ClassAcceleratorUnavailable},
	{"35", "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version", failure.ClassDriverMismatch},
	{"46", "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable", failure.ClassAcceleratorBusy},
	{"100", "cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected", failure.ClassAcceleratorUnavailable},
	{"101", "cudaErrorInvalidDevice|CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal", failure.ClassAcceleratorUnavailable},
	{"209", "cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device", failure.ClassGPUArchUnsupported},
	{"222", "cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain", failure.ClassDriverMismatch},
	{"801", "cudaErrorNotSupported|CUDA_ERROR_NOT_SUPPORTED", "operation not supported", failure.ClassHostCapability},
	{"802", "cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized", failure.ClassAcceleratorUnavailable},
	{"803", "cudaErrorSystemDriverMismatch|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination", failure.ClassDriverMismatch},
	{"804", "cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW", failure.ClassDriverMismatch},
	{"999", "cudaErrorUnknown|CUDA_ERROR_UNKNOWN", "", failure.ClassAcceleratorUnavailable},
}

// CUDAError says what a CUDA runtime error number means: its enum name,
// the runtime's message, and the failure class hiro gives it. ok is false
// for a number hiro has no knowledge of.
func CUDAError(code int) (name, text string, class failure.Class, ok bool) {
	for _, c := range cudaErrors {
		if c.code == itoa(code) {
			return firstAlt(c.names), c.text, c.class, true
		}
	}
	return "", "", "", false
}

func firstAlt(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '|' {
			return s[:i]
		}
	}
	return s
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// cudaErrorSignatures are built from cudaErrors: the message text, the
// enum name anywhere, or "CUDA" with "error" and the number ("CUDA error
// 35", "cuda runtime error (35)", "CUDA driver initialization failed ...
// code=100").
func cudaErrorSignatures() []Signature {
	var out []Signature
	byName := map[string]failure.Class{}
	byCode := map[string]failure.Class{}
	for _, c := range cudaErrors {
		switch {
		case len(c.text) >= 22:
			out = append(out, Signature{Text: c.text, Class: c.class})
		case c.text != "":
			out = append(out, Signature{Text: c.text, Pattern: regexp.MustCompile(`(?i)(cuda|cu\w+|hip|rocm)\w*.{0,60}` + regexp.QuoteMeta(c.text)), Class: c.class})
		}
		for _, n := range strings.Split(c.names, "|") {
			byName[n] = c.class
		}
		byCode[c.code] = c.class
	}
	out = append(out,
		Signature{Text: "cudaError", Pattern: regexp.MustCompile(`\b(cudaError[A-Za-z]+)\b`),
			Lookup: func(m []string) (failure.Class, bool) { c, ok := byName[m[1]]; return c, ok }},
		Signature{Text: "CUDA_ERROR_", Pattern: regexp.MustCompile(`\b(CUDA_ERROR_[A-Z_]+)\b`),
			Lookup: func(m []string) (failure.Class, bool) { c, ok := byName[m[1]]; return c, ok }},
		// "error" is the rarer word in a healthy log, so it is the prefilter.
		Signature{Text: "error", Also: "cuda", Pattern: regexp.MustCompile(`(?i)cuda.{0,40}?(?:error|err|code|status|failure)\s*(?:=|:|\(|#|\s)\s*(\d+)\b`),
			Lookup: func(m []string) (failure.Class, bool) { c, ok := byCode[m[1]]; return c, ok }})
	return out
}

// cudaSignatures are CUDA, driver, accelerator and host errors any GPU
// engine can print (from CUDA, PyTorch, NVML, NCCL, the container
// runtime, the OS).
var cudaSignatures = joinLists([]Signature{
	// driver_mismatch
	{Text: "driver version is insufficient", Class: failure.ClassDriverMismatch},
	{Text: "NVIDIA driver on your system is too old", Class: failure.ClassDriverMismatch},
	{Text: "forward compatibility was attempted on non supported HW", Class: failure.ClassDriverMismatch},
	{Text: "unsupported display driver / cuda driver combination", Class: failure.ClassDriverMismatch},
	{Text: "PTX was compiled with an unsupported toolchain", Class: failure.ClassDriverMismatch},
	{Text: "Driver/library version mismatch", Class: failure.ClassDriverMismatch},
	{Text: "requirement error: unsatisfied condition: cuda", Class: failure.ClassDriverMismatch},
	{Text: "please update your driver to a newer version", Class: failure.ClassDriverMismatch},
	// gpu_arch_unsupported
	{Text: "no kernel image is available", Class: failure.ClassGPUArchUnsupported},
	{Text: "is not compatible with the current PyTorch installation", Class: failure.ClassGPUArchUnsupported, Tier: TierHint},
	{Text: "compute capability", Pattern: regexp.MustCompile(`(?i)(only supported|requires?|need|at least|minimum|not supported|unsupported).{0,60}compute capability|compute capability.{0,60}(not supported|unsupported|is required|or higher|or newer|at least)`), Class: failure.ClassGPUArchUnsupported},
	{Text: "Unsupported gpu architecture", Class: failure.ClassGPUArchUnsupported},
	{Text: "only supports Ampere GPUs or newer", Class: failure.ClassGPUArchUnsupported},
	{Text: "is not defined for option 'gpu-name'", Class: failure.ClassGPUArchUnsupported},
	// accelerator_busy
	{Text: "busy or unavailable", Pattern: regexp.MustCompile(`(?i)CUDA.capable device\(s\) is/are busy or unavailable`), Class: failure.ClassAcceleratorBusy},
	{Text: "Some GPUs may be occupied by other processes", Class: failure.ClassAcceleratorBusy},
	// accelerator_unavailable
	{Text: "no CUDA-capable device is detected", Class: failure.ClassAcceleratorUnavailable},
	{Text: "No CUDA GPUs are available", Class: failure.ClassAcceleratorUnavailable},
	{Text: "-capable device is detected", Pattern: regexp.MustCompile(`(?i)no \w+-capable device is detected`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "Found no NVIDIA driver on your system", Class: failure.ClassAcceleratorUnavailable},
	{Text: "Failed to infer device type", Class: failure.ClassAcceleratorUnavailable},
	{Text: "libcuda.so", Pattern: regexp.MustCompile(`(?i)libcuda\.so[.\d]*: cannot open shared object file`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "libnvidia-ml.so", Pattern: regexp.MustCompile(`(?i)(load library failed|cannot open shared object).{0,40}libnvidia-ml|libnvidia-ml.{0,60}(cannot open|not found)`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "could not select device driver", Class: failure.ClassAcceleratorUnavailable},
	{Text: "nvidia-container-cli: initialization error", Class: failure.ClassAcceleratorUnavailable},
	{Text: "nvidia-container-cli: device error", Class: failure.ClassAcceleratorUnavailable},
	{Text: "NVML", Pattern: regexp.MustCompile(`(?i)failed to initialize NVML: (driver not loaded|unknown error)`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "CUDA driver initialization failed", Class: failure.ClassAcceleratorUnavailable},
	{Text: "Torch not compiled with CUDA enabled", Class: failure.ClassAcceleratorUnavailable},
	// gpu_oom
	{Text: "out of memory", Pattern: regexp.MustCompile(`(?i)(cuda|gpu|vram|device|hip|rocm|cudaMalloc|cublas|nccl).{0,60}out of memory|out of memory.{0,40}(on device|on gpu|cuda)`), Class: failure.ClassGPUOOM},
	{Text: "OutOfMemoryError", Class: failure.ClassGPUOOM},
	{Text: "CUBLAS_STATUS_ALLOC_FAILED", Class: failure.ClassGPUOOM},
	{Text: "CUBLAS_STATUS_NOT_INITIALIZED", Class: failure.ClassGPUOOM, Tier: TierHint},
	// host_oom: the engine's refusal, a CPU allocation, the OOM killer.
	{Text: "requires more system memory", Class: failure.ClassHostOOM},
	{Text: "Out of memory: Killed process", Class: failure.ClassHostOOM},
	{Text: "killed by the OOM killer", Class: failure.ClassHostOOM},
	{Text: "oom-kill", Class: failure.ClassHostOOM},
	{Text: "oom_reaper", Class: failure.ClassHostOOM},
	{Text: "Memory cgroup out of memory", Class: failure.ClassHostOOM},
	{Text: "OOMKilled", Class: failure.ClassHostOOM},
	{Text: "DefaultCPUAllocator: can't allocate memory", Class: failure.ClassHostOOM},
	{Text: "std::bad_alloc", Class: failure.ClassHostOOM},
	{Text: "Cannot allocate memory", Class: failure.ClassHostOOM},
	{Text: "MemoryError", Pattern: regexp.MustCompile(`(^|[\s:(])MemoryError\b`), Class: failure.ClassHostOOM},
	{Text: "cpu_buffer_type_alloc_buffer: failed to allocate", Class: failure.ClassHostOOM},
	{Text: "CPU buffer", Pattern: regexp.MustCompile(`(?i)(unable|failed) to allocate CPU(_Mapped|_REPACK)? buffer`), Class: failure.ClassHostOOM},
	{Text: "insufficient system memory", Class: failure.ClassHostOOM},
	{Text: "not enough system memory", Class: failure.ClassHostOOM},
	// host_capability: the CPU, WSL2, shared memory, the OS.
	{Text: "Illegal instruction", Class: failure.ClassHostCapability},
	{Text: "SIGILL", Class: failure.ClassHostCapability},
	{Text: "Bus error", Class: failure.ClassHostCapability},
	{Text: "UVA is not available", Class: failure.ClassHostCapability},
	{Text: "No space left on device", Pattern: regexp.MustCompile(`(?i)/dev/shm|shm|shared memory`), Class: failure.ClassHostCapability},
	{Text: "unhandled system error", Pattern: regexp.MustCompile(`(?i)nccl`), Class: failure.ClassHostCapability},
	{Text: "NCCL error", Pattern: regexp.MustCompile(`(?i)nccl error.{0,80}(unhandled cuda error|internal error|invalid usage|remote process exited|network error)`), Class: failure.ClassHostCapability},
	{Text: "ncclSystemError", Class: failure.ClassHostCapability},
	{Text: "ncclUnhandledCudaError", Class: failure.ClassHostCapability},
	{Text: "ncclInternalError", Class: failure.ClassHostCapability},
	{Text: "ncclRemoteError", Class: failure.ClassHostCapability},
	{Text: "executable file not found in $PATH", Class: failure.ClassEngineDied},
	{Text: "command not found", Class: failure.ClassEngineDied},
	{Text: "exec format error", Class: failure.ClassEngineDied},
	{Text: "does not support AVX", Class: failure.ClassHostCapability},
	{Text: "CPU does not have", Pattern: regexp.MustCompile(`(?i)CPU does not have.{0,30}(AVX|SSE|FMA|F16C)`), Class: failure.ClassHostCapability},
	// port_in_use, every platform's wording: Linux EADDRINUSE (errno 98),
	// macOS (errno 48), Windows WSAEADDRINUSE (10048) and WSAEACCES
	// (10013, a port reserved by Hyper-V), Docker's port allocator.
	{Text: "address already in use", Class: failure.ClassPortInUse},
	{Text: "Only one usage of each socket address", Class: failure.ClassPortInUse},
	{Text: "port is already allocated", Class: failure.ClassPortInUse},
	{Text: "WinError 10048", Class: failure.ClassPortInUse},
	{Text: "access a socket in a way forbidden by its access permissions", Class: failure.ClassPortInUse},
	{Text: "EADDRINUSE", Class: failure.ClassPortInUse},
	{Text: "cannot assign requested address", Class: failure.ClassHostCapability},
	// Go's net package: "listen tcp ADDR: bind: <the OS's text, in the
	// system's language>".
	{Text: ": bind: ", Pattern: regexp.MustCompile(`listen tcp\S* \S+: bind: `), Class: failure.ClassPortInUse},
	{Text: "couldn't bind", Pattern: regexp.MustCompile(`(?i)couldn't bind.{0,30}(socket|port|address)`), Class: failure.ClassPortInUse},
	{Text: "failed to bind", Pattern: regexp.MustCompile(`(?i)failed to bind.{0,60}(port|address|:\d+)`), Class: failure.ClassPortInUse},
	// engine crashes that name no cause by themselves.
	{Text: "illegal memory access was encountered", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "misaligned address", Pattern: regexp.MustCompile(`(?i)cuda error: misaligned address`), Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: ".cu:", Pattern: regexp.MustCompile(`\.cu:\d+:.*Assertion .*failed`), Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "device-side assert triggered", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "unspecified launch failure", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "Xid", Pattern: regexp.MustCompile(`NVRM: Xid`), Class: failure.ClassEngineDied, Tier: TierHint},
}, cudaErrorSignatures())

// pythonSignatures are errors of the Python serving stacks (vLLM, SGLang,
// TGI's shards, other uvicorn/FastAPI servers) and of the libraries under
// them (transformers, huggingface_hub, safetensors, grammar backends).
var pythonSignatures = []Signature{
	// GPU memory first: a warmup or a kernel that ran out of memory is gpu_oom.
	{Text: "CUDA out of memory", Class: failure.ClassGPUOOM},
	{Text: "OutOfMemoryError", Class: failure.ClassGPUOOM},
	{Text: "out of memory", Pattern: regexp.MustCompile(`(?i)(on device|gpu \d|allocation on device).{0,60}out of memory`), Class: failure.ClassGPUOOM},
	// tokenizer_template
	{Text: "Template error", Class: failure.ClassTokenizerTemplate},
	{Text: "default chat template is no longer allowed", Class: failure.ClassTokenizerTemplate},
	{Text: "chat_template is not set", Class: failure.ClassTokenizerTemplate},
	{Text: "chat template", Pattern: regexp.MustCompile(`(?i)(must provide|no|missing|cannot use|could not|failed to|unable to).{0,40}chat.template|chat.template.{0,60}(not set|not found|is missing|invalid|error|failed|does not define)`), Class: failure.ClassTokenizerTemplate},
	{Text: "TemplateSyntaxError", Class: failure.ClassTokenizerTemplate},
	{Text: "jinja2.exceptions", Class: failure.ClassTokenizerTemplate},
	{Text: "Can't load tokenizer", Class: failure.ClassTokenizerTemplate},
	{Text: "does not exist or is not currently imported", Pattern: regexp.MustCompile(`(?i)tokenizer class`), Class: failure.ClassTokenizerTemplate},
	{Text: "tokenizer", Pattern: regexp.MustCompile(`(?i)(failed|unable|could not|couldn't|error).{0,30}(load|instantiate|find|init\w*).{0,20}tokenizer|tokenizer.{0,40}(failed to load|could not be loaded|not found)`), Class: failure.ClassTokenizerTemplate},
	// structured output: the grammar backend refuses the schema or tokens.
	// Grammars exist only in requests: these fail in inference.
	{Text: "Failed to advance FSM", Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "grammar rejected tokens", Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "not supported by xgrammar", Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "Error compiling FSM", Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "Invalid request type for", Pattern: regexp.MustCompile(`(?i)invalid request type for \w+ backend`), Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "schema", Pattern: regexp.MustCompile(`(?i)(invalid|unsupported|failed to (compile|convert|parse)).{0,30}(json.?schema|schema)|json.?schema.{0,40}(is invalid|not supported|unsupported|failed)`), Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "grammar", Pattern: regexp.MustCompile(`(?i)(failed to (compile|build|parse|create)|invalid|error (in|compiling|building)).{0,20}grammar`), Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	// quant_kernel_failed
	{Text: "arlin", Pattern: regexp.MustCompile(`(?i)(error|fail|illegal|exception).*marlin|marlin.*(error|fail|illegal|not supported)`), Class: failure.ClassQuantKernelFailed},
	{Text: "min_thread_k", Class: failure.ClassQuantKernelFailed},
	{Text: "min_thread_n", Class: failure.ClassQuantKernelFailed},
	{Text: "is not divisible by", Pattern: regexp.MustCompile(`(?i)(input_size|output_size|size_per_partition|group_size|tile).{0,60}is not divisible by`), Class: failure.ClassQuantKernelFailed},
	{Text: "quantization", Pattern: regexp.MustCompile(`(?i)(quantization|quant method|quant_method).{0,80}(not supported|unsupported|is not available|requires|failed)`), Class: failure.ClassQuantKernelFailed},
	// model_load_failed
	{Text: "are not supported for now", Pattern: regexp.MustCompile(`Model architectures? .* (is|are) not supported`), Class: failure.ClassModelLoadFailed},
	{Text: "does not recognize this architecture", Class: failure.ClassModelLoadFailed},
	{Text: "does not appear to have a file named", Class: failure.ClassModelLoadFailed},
	{Text: "SafetensorError", Class: failure.ClassModelLoadFailed},
	{Text: "Error(s) in loading state_dict", Class: failure.ClassModelLoadFailed},
	{Text: "Repository Not Found", Class: failure.ClassModelLoadFailed},
	{Text: "RepositoryNotFoundError", Class: failure.ClassModelLoadFailed},
	{Text: "GatedRepoError", Class: failure.ClassModelLoadFailed},
	{Text: "Cannot access gated repo", Class: failure.ClassModelLoadFailed},
	{Text: "HFValidationError", Class: failure.ClassModelLoadFailed},
	{Text: "Unrecognized model in", Class: failure.ClassModelLoadFailed},
	{Text: "Invalid repository ID or local directory", Class: failure.ClassModelLoadFailed},
	{Text: "LocalEntryNotFoundError", Class: failure.ClassModelLoadFailed},
	{Text: "We couldn't connect to", Pattern: regexp.MustCompile(`huggingface`), Class: failure.ClassModelLoadFailed},
	{Text: "Cannot find any model weights", Class: failure.ClassModelLoadFailed},
	{Text: "No model weights found", Class: failure.ClassModelLoadFailed},
	{Text: "Error in inspecting model architecture", Class: failure.ClassModelLoadFailed},
	{Text: "failed to be inspected", Class: failure.ClassModelLoadFailed},
	{Text: "must be divisible by", Pattern: regexp.MustCompile(`(?i)(heads|num_heads|attention heads|hidden.size|vocab).{0,80}must be divisible by`), Class: failure.ClassModelLoadFailed},
	{Text: "could not load model", Pattern: regexp.MustCompile(`(?i)no such file or directory|not found`), Class: failure.ClassModelLoadFailed},
	{Text: "could not load model", Class: failure.ClassModelLoadFailed, Tier: TierHint},
	{Text: "is greater than the derived max_model_len", Class: failure.ClassContextExceedsKV},
	{Text: "Client Error", Pattern: regexp.MustCompile(`(?i)(401|403|404) Client Error.{0,80}huggingface`), Class: failure.ClassModelLoadFailed},
	{Text: "Unrecognized configuration class", Class: failure.ClassModelLoadFailed},
	{Text: "does not exist", Pattern: regexp.MustCompile(`(?i)weight \S+ does not exist`), Class: failure.ClassModelLoadFailed},
	{Text: "failed loading model", Class: failure.ClassModelLoadFailed, Tier: TierHint},
	{Text: "DownloadError", Class: failure.ClassModelLoadFailed, Tier: TierHint},
	{Text: "trust_remote_code", Pattern: regexp.MustCompile(`(?i)(requires|set the option|execute the configuration).{0,80}trust_remote_code`), Class: failure.ClassModelLoadFailed},
	// gpu_oom raised by the Python stacks
	{Text: "Not enough memory", Class: failure.ClassGPUOOM},
	{Text: "Insufficient memory", Pattern: regexp.MustCompile(`(?i)(gpu|cuda|kv|mem_fraction|memory pool)`), Class: failure.ClassGPUOOM},
	// warmup_failed
	{Text: "raph", Also: "cuda", Pattern: regexp.MustCompile(`(?i)cuda ?graph.*(fail|error)`), Class: failure.ClassWarmupFailed},
	{Text: "Error in memory profiling", Class: failure.ClassWarmupFailed},
	{Text: "Warmup failed", Class: failure.ClassWarmupFailed},
	{Text: "warmup error", Class: failure.ClassWarmupFailed},
	{Text: "Unable to warmup model", Class: failure.ClassWarmupFailed},
	{Text: "operation not permitted when stream is capturing", Class: failure.ClassWarmupFailed},
	{Text: "Method Warmup encountered an error", Class: failure.ClassWarmupFailed, Tier: TierHint},
	{Text: "profile run", Pattern: regexp.MustCompile(`(?i)(failed|error).{0,20}profile run`), Class: failure.ClassWarmupFailed},
	// crashes while serving, refined by context; hints, so that the
	// exception block they introduce can name the cause.
	{Text: "Scheduler hit an exception", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "EngineCore encountered a fatal error", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "EngineDeadError", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "Engine loop has died", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "AsyncLLM output_handler failed", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "AsyncLLMEngine has failed", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "TokenizerManager hit an exception", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "Method Prefill encountered an error", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "Method Decode encountered an error", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
}

// pythonFrameHints name the component of a traceback frame (file paths
// and function names).
var pythonFrameHints = []FrameHint{
	{"marlin", failure.ClassQuantKernelFailed},
	{"/quantization/", failure.ClassQuantKernelFailed},
	{"awq", failure.ClassQuantKernelFailed},
	{"gptq", failure.ClassQuantKernelFailed},
	{"exllama", failure.ClassQuantKernelFailed},
	{"machete", failure.ClassQuantKernelFailed},
	{"bitsandbytes", failure.ClassQuantKernelFailed},
	{"xgrammar", failure.ClassStructuredOutputCrash},
	{"outlines", failure.ClassStructuredOutputCrash},
	{"llguidance", failure.ClassStructuredOutputCrash},
	{"guidance", failure.ClassStructuredOutputCrash},
	{"lm_format_enforcer", failure.ClassStructuredOutputCrash},
	{"structured_output", failure.ClassStructuredOutputCrash},
	{"guided_decoding", failure.ClassStructuredOutputCrash},
	{"constrained/", failure.ClassStructuredOutputCrash},
	{"grammar", failure.ClassStructuredOutputCrash},
	{"chat_template", failure.ClassTokenizerTemplate},
	{"chat_utils", failure.ClassTokenizerTemplate},
	{"jinja2", failure.ClassTokenizerTemplate},
	{"tokenization_", failure.ClassTokenizerTemplate},
	{"/tokenizer.py", failure.ClassTokenizerTemplate},
	{"get_tokenizer", failure.ClassTokenizerTemplate},
	{"cuda_graph", failure.ClassWarmupFailed},
	{"cudagraph", failure.ClassWarmupFailed},
	{"capture_model", failure.ClassWarmupFailed},
	{"profile_run", failure.ClassWarmupFailed},
	{"determine_available_memory", failure.ClassWarmupFailed},
	{"_wait_and_warmup", failure.ClassWarmupFailed},
	{"custom_modeling", failure.ClassModelLoadFailed},
	{"model_executor/models/", failure.ClassModelLoadFailed},
	{"srt/models/", failure.ClassModelLoadFailed},
	{"model_loader", failure.ClassModelLoadFailed},
	{"load_weights", failure.ClassModelLoadFailed},
	{"weight_utils", failure.ClassModelLoadFailed},
	{"huggingface_hub", failure.ClassModelLoadFailed},
	{"configuration_auto", failure.ClassModelLoadFailed},
}

// pythonFramePhases name the step a traceback frame belongs to: an
// exception raised below such a frame happened in that phase (when it is
// later than the last marker's).
var pythonFramePhases = []FramePhase{
	{"init_memory_pool", failure.PhaseKVInit},
	{"initialize_kv_cache", failure.PhaseKVInit},
	{"_initialize_kv_caches", failure.PhaseKVInit},
	{"determine_available_memory", failure.PhaseKVInit},
	{"determine_num_available_blocks", failure.PhaseKVInit},
	{"init_cuda_graphs", failure.PhaseWarmup},
	{"capture_model", failure.PhaseWarmup},
	{"warmup", failure.PhaseWarmup},
}

// ggmlSignatures are llama.cpp's (and so Ollama's runner's) errors.
var ggmlSignatures = []Signature{
	{Text: "cpu_buffer_type_alloc_buffer: failed to allocate", Class: failure.ClassHostOOM},
	{Text: "unknown model architecture", Class: failure.ClassModelLoadFailed},
	{Text: "failed to open GGUF file", Class: failure.ClassModelLoadFailed},
	{Text: "gguf_init_from_file", Pattern: regexp.MustCompile(`(?i)gguf_init_from_file\w*: (failed|invalid|tensor|key|unable)`), Class: failure.ClassModelLoadFailed},
	{Text: "invalid magic", Class: failure.ClassModelLoadFailed},
	{Text: "wrong number of tensors", Class: failure.ClassModelLoadFailed},
	{Text: "has wrong shape", Class: failure.ClassModelLoadFailed},
	{Text: "key not found in model", Class: failure.ClassModelLoadFailed},
	{Text: "unable to allocate", Pattern: regexp.MustCompile(`(?i)unable to allocate (CUDA|ROCm|Vulkan|Metal|SYCL|CANN|MUSA|HIP)\d* buffer`), Class: failure.ClassGPUOOM},
	{Text: "cudaMalloc failed: out of memory", Class: failure.ClassGPUOOM, Tier: TierHint},
	{Text: "failed to allocate", Pattern: regexp.MustCompile(`(?i)failed to allocate (CUDA|ROCm|Vulkan|Metal|SYCL|CANN|MUSA|HIP)\d* buffer`), Class: failure.ClassGPUOOM, Tier: TierHint},
	{Text: "ErrorOutOfDeviceMemory", Class: failure.ClassGPUOOM},
	{Text: "failed to allocate compute buffers", Class: failure.ClassGPUOOM},
	{Text: "couldn't bind HTTP server socket", Class: failure.ClassPortInUse},
	{Text: "error parsing grammar", Class: failure.ClassStructuredOutputFailOpen, Phase: failure.PhaseInference},
	{Text: "failed to parse grammar", Class: failure.ClassStructuredOutputFailOpen, Phase: failure.PhaseInference},
	{Text: "error initializing grammar sampler", Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "at row", Pattern: regexp.MustCompile(`at row \d+, column \d+`), Class: failure.ClassTokenizerTemplate},
	{Text: "exceeds the available context size", Class: failure.ClassContextExceedsKV},
	{Text: "input is too large to process", Class: failure.ClassContextExceedsKV},
	{Text: "failed to find free space in the KV cache", Class: failure.ClassContextExceedsKV},
	{Text: "chat template", Pattern: regexp.MustCompile(`(?i)(failed to|unable to|error).{0,30}(parse|apply|render|format).{0,20}chat template|chat template.{0,40}(error|failed|not supported|unsupported)`), Class: failure.ClassTokenizerTemplate},
	{Text: "this instruction set", Class: failure.ClassHostCapability},
	{Text: "error loading model", Class: failure.ClassModelLoadFailed},
	{Text: "failed to load model", Class: failure.ClassModelLoadFailed, Tier: TierHint},
}

// ggmlWrappers restate a llama.cpp failure explained by an earlier line.
var ggmlWrappers = []string{
	"exiting due to model loading error",
	"llama_model_load_from_file_impl: failed to load model",
	"llama_load_model_from_file: failed to load model",
	"srv    load_model: failed to load model",
	"cleaning up before exit",
}

// ggmlFacts are llama.cpp's numbers. Buffer sizes are logged once per
// device and kept per device.
var ggmlFacts = []FactParser{
	{Trigger: "cudaMalloc failed", Pattern: regexp.MustCompile(`allocating ([\d.]+) MiB on device \d+: cudaMalloc failed`), Names: []string{"failed_alloc_mib"}},
	{Trigger: "MiB free", Pattern: regexp.MustCompile(`using device (\S+) \(.*\) - (\d+) MiB free`), Names: []string{"device_free_mib"}, PerDevice: true},
	{Trigger: "model buffer size", Pattern: regexp.MustCompile(`(\w+) model buffer size = +([\d.]+) MiB`), Names: []string{"model_buffer_mib"}, PerDevice: true},
	{Trigger: "KV buffer size", Pattern: regexp.MustCompile(`(\w+) KV buffer size = +([\d.]+) MiB`), Names: []string{"kv_buffer_mib"}, PerDevice: true},
	{Trigger: "compute buffer size", Pattern: regexp.MustCompile(`(\w+) compute buffer size = +([\d.]+) MiB`), Names: []string{"compute_buffer_mib"}, PerDevice: true},
	{Trigger: "n_ctx", Pattern: regexp.MustCompile(`n_ctx += (\d+)`), Names: []string{"context_tokens"}},
	{Trigger: "layers to GPU", Pattern: regexp.MustCompile(`offloaded (\d+)/(\d+) layers to GPU`), Names: []string{"gpu_layers_offloaded", "layers_total"}},
	{Trigger: "CUDA devices", Pattern: regexp.MustCompile(`found (\d+) CUDA devices`), Names: []string{"cuda_devices"}},
}

// shardFacts reads the safetensors progress bar (vLLM, SGLang, other
// transformers-based servers).
var shardFacts = []FactParser{
	{Trigger: "checkpoint shards", Pattern: regexp.MustCompile(`checkpoint shards:.*?(\d+)/(\d+)`), Names: []string{"shards_loaded", "shards_total"}},
}

// pythonWrappers restate a Python failure explained by another line.
var pythonWrappers = []string{
	"See root cause above",
	"Engine process failed to start",
}

// uvicornMarkers are the HTTP server's startup lines of every
// uvicorn/FastAPI server (vLLM, many openai-kind servers). Served requests
// are read from access-log lines by the tracker for every kind (a 2xx
// POST to a completion path; GETs of health or the model list are the
// readiness checks themselves).
var uvicornMarkers = []Marker{
	{Text: "Application startup complete", Phase: failure.PhaseReadyWait},
	{Text: "Uvicorn running on", Phase: failure.PhaseReadyWait},
}

// num is a regexp fragment for a decimal number that may be negative.
const num = `(-?[\d.]+)`
