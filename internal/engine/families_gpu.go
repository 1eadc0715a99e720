package engine

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/failure"
)

// The accelerator families of the classifier's log-line rules, one per
// vendor stack: CUDA (runtime, driver, PyTorch's CUDA layer, the NVIDIA
// container runtime and NVML), vendor-neutral GPU wording, HIP/ROCm,
// Apple Metal, Vulkan, SYCL/oneAPI, and the collective libraries
// NCCL/RCCL. Wordings are the vendors' own (their runtimes' error strings
// and the logs users paste into bug reports).

// cudaErrors are CUDA runtime errors as users paste them (numbers, enum
// names and texts of the CUDA Runtime API's cudaError enum,
// docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html, and
// the driver API's CUresult): by number
// ("CUDA error 35", "cudaError 803", "code=100"), by enum name
// (cudaErrorInsufficientDriver, CUDA_ERROR_NO_DEVICE) and by their
// message text. Each entry says what the number means for the user.
var cudaErrors = []struct {
	code  string
	names string // enum names, runtime and driver API, for a regexp alternation
	text  string // the runtime's message for the code (cudaGetErrorString)
	class failure.Class
	// tier is TierHint for an error whose meaning depends on the call
	// that raised it (an invalid device is a missing GPU for a device
	// query, a refused CUDA IPC handle when all-reduce opens another
	// GPU's memory): the traceback's frames name the call (frameHints).
	tier Tier
}{
	{"2", "cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|hipErrorOutOfMemory", "out of memory", failure.ClassGPUOOM, 0},
	{"3", "cudaErrorInitializationError|CUDA_ERROR_NOT_INITIALIZED|hipErrorNotInitialized", "initialization error", failure.ClassAcceleratorUnavailable, 0},
	{"35", "cudaErrorInsufficientDriver|hipErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version", failure.ClassDriverMismatch, 0},
	{"46", "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable", failure.ClassAcceleratorBusy, 0},
	{"100", "cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE|hipErrorNoDevice", "no CUDA-capable device is detected", failure.ClassAcceleratorUnavailable, 0},
	{"101", "cudaErrorInvalidDevice|CUDA_ERROR_INVALID_DEVICE|hipErrorInvalidDevice", "invalid device ordinal", failure.ClassAcceleratorUnavailable, TierHint},
	// 200: a kernel image (CUDA cubin, HIP code object) not built for
	// this GPU; HIP reports it as hipErrorInvalidImage, same text
	{"200", "cudaErrorInvalidKernelImage|CUDA_ERROR_INVALID_IMAGE|hipErrorInvalidImage", "device kernel image is invalid", failure.ClassGPUArchUnsupported, 0},
	{"209", "cudaErrorNoKernelImageForDevice|CUDA_ERROR_NO_BINARY_FOR_GPU|hipErrorNoBinaryForGpu", "no kernel image is available for execution on the device", failure.ClassGPUArchUnsupported, 0},
	{"218", "cudaErrorInvalidPtx|CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed", failure.ClassDriverMismatch, 0},
	{"500", "cudaErrorSymbolNotFound|CUDA_ERROR_NOT_FOUND|hipErrorNotFound", "named symbol not found", failure.ClassGPUArchUnsupported, 0},
	{"222", "cudaErrorUnsupportedPtxVersion|CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain", failure.ClassDriverMismatch, 0},
	// 304: an OS call the runtime made failed; what it means depends on
	// the call (shared memory, pinned memory, IPC, a driver bug)
	{"304", "cudaErrorOperatingSystem|CUDA_ERROR_OPERATING_SYSTEM|hipErrorOperatingSystem", "OS call failed or operation not supported on this OS", failure.ClassEngineDied, TierHint},
	{"801", "cudaErrorNotSupported|CUDA_ERROR_NOT_SUPPORTED|hipErrorNotSupported", "operation not supported", failure.ClassHostCapability, 0},
	// 702: a kernel ran past the display driver's watchdog (a GPU that
	// also drives a screen): the device is reset under the process
	{"702", "cudaErrorLaunchTimeout|CUDA_ERROR_LAUNCH_TIMEOUT|hipErrorLaunchTimeOut", "the launch timed out and was terminated", failure.ClassEngineDied, TierHint},
	{"802", "cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized", failure.ClassAcceleratorUnavailable, 0},
	{"803", "cudaErrorSystemDriverMismatch|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination", failure.ClassDriverMismatch, 0},
	{"804", "cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW", failure.ClassDriverMismatch, 0},
	// 900-908: stream capture (CUDA graphs, captured while the engine
	// warms up): a call the capture does not allow, or a capture an
	// earlier error broke. HIP mirrors each with the same text
	// (ROCm/clr@f9f995c hipamd/src/hip_error.cpp, ihipGetErrorString).
	{"900", "cudaErrorStreamCaptureUnsupported|CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED|hipErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing", failure.ClassWarmupFailed, 0},
	{"901", "cudaErrorStreamCaptureInvalidated|CUDA_ERROR_STREAM_CAPTURE_INVALIDATED|hipErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture", failure.ClassWarmupFailed, 0},
	{"902", "cudaErrorStreamCaptureMerge|CUDA_ERROR_STREAM_CAPTURE_MERGE|hipErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences", failure.ClassWarmupFailed, 0},
	{"903", "cudaErrorStreamCaptureUnmatched|CUDA_ERROR_STREAM_CAPTURE_UNMATCHED|hipErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began", failure.ClassWarmupFailed, 0},
	{"904", "cudaErrorStreamCaptureUnjoined|CUDA_ERROR_STREAM_CAPTURE_UNJOINED|hipErrorStreamCaptureUnjoined", "capturing stream has unjoined work", failure.ClassWarmupFailed, 0},
	{"905", "cudaErrorStreamCaptureIsolation|CUDA_ERROR_STREAM_CAPTURE_ISOLATION|hipErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream", failure.ClassWarmupFailed, 0},
	{"906", "cudaErrorStreamCaptureImplicit|CUDA_ERROR_STREAM_CAPTURE_IMPLICIT|hipErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream", failure.ClassWarmupFailed, 0},
	{"907", "cudaErrorCapturedEvent|CUDA_ERROR_CAPTURED_EVENT|hipErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream", failure.ClassWarmupFailed, 0},
	{"908", "cudaErrorStreamCaptureWrongThread|CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD|hipErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread", failure.ClassWarmupFailed, 0},
	{"999", "cudaErrorUnknown|CUDA_ERROR_UNKNOWN", "", failure.ClassAcceleratorUnavailable, 0},
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

// gpuGenerations names GPU generations as kernels and libraries write
// them: NVIDIA's architecture names and SM numbers (sm75, sm_90a,
// SM 8.0), AMD's gfx targets and CDNA/RDNA generations.
const gpuGenerations = `(?:Volta|Turing|Ampere|Ada(?: Lovelace)?|Hopper|Blackwell|sm_?\d{2,3}[af]?|SM ?\d\.\d|gfx\d{3,4}[a-z]?|CDNA ?\d|RDNA ?\d)`

// gpuGeneration is a pattern of before, a GPU generation (gpuGenerations)
// and after, case-insensitive.
func gpuGeneration(before, after string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)` + before + gpuGenerations + after)
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
func cudaErrorSignatures() []Rule {
	var out []Rule
	byName := map[string]failure.Class{}
	byCode := map[string]failure.Class{}
	for _, c := range cudaErrors {
		switch {
		case inLongerText(c.text):
			// words of another code's message (801's "operation not
			// supported" in 304's "OS call failed or operation not
			// supported on this OS"): only as the message itself, after
			// the error's name or number ("CUDA error: operation not supported")
			out = append(out, Rule{Text: c.text, Pattern: regexp.MustCompile(`(?i)[:=]\s*` + regexp.QuoteMeta(c.text)), Class: c.class, Tier: c.tier})
		case len(c.text) >= 22:
			out = append(out, Rule{Text: c.text, Class: c.class, Tier: c.tier})
		case c.text != "":
			out = append(out, Rule{Text: c.text, Pattern: regexp.MustCompile(`(?i)(cuda|cu\w+|hip|rocm|musa)\w*.{0,60}` + regexp.QuoteMeta(c.text)), Class: c.class, Tier: c.tier})
		}
		if c.tier == TierHint {
			for _, n := range strings.Split(c.names, "|") {
				out = append(out, Rule{Text: n, Class: c.class, Tier: c.tier})
			}
			out = append(out, Rule{Text: "error", Also: "cuda", Pattern: regexp.MustCompile(`(?i)cuda.{0,40}?(?:error|err|code|status|failure)\s*(?:=|:|\(|#|\s)\s*` + c.code + `\b`),
				Class: c.class, Tier: c.tier})
			continue
		}
		for _, n := range strings.Split(c.names, "|") {
			byName[n] = c.class
		}
		byCode[c.code] = c.class
	}
	out = append(out,
		Rule{Text: "cudaError", Pattern: regexp.MustCompile(`\b(cudaError[A-Za-z]+)\b`),
			Lookup: func(m []string) (failure.Class, bool) { c, ok := byName[m[1]]; return c, ok }},
		Rule{Text: "CUDA_ERROR_", Pattern: regexp.MustCompile(`\b(CUDA_ERROR_[A-Z_]+)\b`),
			Lookup: func(m []string) (failure.Class, bool) { c, ok := byName[m[1]]; return c, ok }},
		// HIP's names for the same errors (hipGetErrorName), whatever wording
		// surrounds them ("HIP error: ... Search for `hipErrorCapturedEvent'")
		Rule{Text: "hipError", Pattern: regexp.MustCompile(`\b(hipError[A-Za-z]+)\b`),
			Lookup: func(m []string) (failure.Class, bool) { c, ok := byName[m[1]]; return c, ok }},
		// "error" is the rarer word in a healthy log, so it is the prefilter.
		Rule{Text: "error", Also: "cuda", Pattern: regexp.MustCompile(`(?i)cuda.{0,40}?(?:error|err|code|status|failure)\s*(?:=|:|\(|#|\s)\s*(\d+)\b`),
			Lookup: func(m []string) (failure.Class, bool) { c, ok := byCode[m[1]]; return c, ok }})
	return out
}

// inLongerText reports whether text is part of another cudaErrors
// message.
func inLongerText(text string) bool {
	for _, c := range cudaErrors {
		if text != "" && c.text != text && strings.Contains(strings.ToLower(c.text), strings.ToLower(text)) {
			return true
		}
	}
	return false
}

// cudaFamily: CUDA, the NVIDIA driver and container runtime.
var cudaFamily = family("cuda", joinLists([]Rule{
	// driver_mismatch
	{Text: "driver version is insufficient", Class: failure.ClassDriverMismatch},
	{Text: "NVIDIA driver on your system is too old", Class: failure.ClassDriverMismatch},
	// raised when the CUDA context is made (the device chosen, before any
	// weight moves), whatever files the engine read before
	{Text: "forward compatibility was attempted on non supported HW", Class: failure.ClassDriverMismatch, Phase: failure.PhaseLaunch},
	// cudaErrorSystemDriverMismatch (803) in CUDA's words and in MUSA's
	// mirror ("system has unsupported display driver / musa driver
	// combination")
	{Name: "cuda/unsupported-display-driver-cuda-driver-combinati", Text: "unsupported display driver /", Pattern: regexp.MustCompile(`(?i)unsupported display driver / \w+ driver combination`), Class: failure.ClassDriverMismatch},
	{Text: "PTX was compiled with an unsupported toolchain", Class: failure.ClassDriverMismatch},
	{Text: "Driver/library version mismatch", Class: failure.ClassDriverMismatch},
	{Text: "requirement error: unsatisfied condition: cuda", Class: failure.ClassDriverMismatch},
	{Text: "please update your driver to a newer version", Class: failure.ClassDriverMismatch},
	// gpu_arch_unsupported
	{Text: "no kernel image is available", Class: failure.ClassGPUArchUnsupported},
	{Text: "compiled without support for the current GPU architecture", Class: failure.ClassGPUArchUnsupported},
	// ggml-cuda's NO_DEVICE_CODE (ggml/src/ggml-cuda/common.cuh: "ERROR:
	// CUDA kernel NAME has no device code compatible with CUDA arch N.
	// ggml-cuda.cu was compiled for: ..."): the build has no kernel for
	// this GPU's architecture, before ggml's abort
	{Text: "has no device code compatible with CUDA arch", Class: failure.ClassGPUArchUnsupported},
	{Text: "is not compatible with the current PyTorch installation", Class: failure.ClassGPUArchUnsupported, Tier: TierHint},
	{Text: "compute capability", Pattern: regexp.MustCompile(`(?i)(only supported|requires?|need|at least|minimum|not supported|unsupported).{0,60}compute capability|compute capability.{0,60}(not supported|unsupported|is required|or higher|or newer|at least)`), Class: failure.ClassGPUArchUnsupported},
	{Text: "Unsupported gpu architecture", Class: failure.ClassGPUArchUnsupported},
	{Text: "only supports Ampere GPUs or newer", Class: failure.ClassGPUArchUnsupported},
	// a kernel or library refusing the GPU's generation by name or SM
	// number, whatever the engine: Triton's layout conversion ("mma -> mma
	// layout conversion is only supported on Ampere", triton-lang/triton
	// lib/Analysis/Allocation.cpp getCvtOrder), FlashInfer's JIT
	// ("FlashInfer requires GPUs with sm75 or higher", flashinfer/jit),
	// "requires Hopper", "sm_90a or newer"
	{Name: "cuda/arch-only-supported-on", Text: "supported on", Pattern: gpuGeneration(`\bonly (?:be )?supported on (?:an? )?(?:NVIDIA |AMD )?`, ``), Class: failure.ClassGPUArchUnsupported},
	{Name: "cuda/arch-or-higher", Text: " or higher", Pattern: gpuGeneration(`\b`, `(?: GPUs?)? or higher\b`), Class: failure.ClassGPUArchUnsupported},
	{Name: "cuda/arch-or-newer", Text: " or newer", Pattern: gpuGeneration(`\b`, `(?: GPUs?)? or newer\b`), Class: failure.ClassGPUArchUnsupported},
	{Name: "cuda/arch-or-later", Text: " or later", Pattern: gpuGeneration(`\b`, `(?: GPUs?)? or later\b`), Class: failure.ClassGPUArchUnsupported},
	{Name: "cuda/arch-or-above", Text: " or above", Pattern: gpuGeneration(`\b`, `(?: GPUs?)? or above\b`), Class: failure.ClassGPUArchUnsupported},
	{Name: "cuda/arch-requires", Text: "requires", Pattern: gpuGeneration(`\brequires? (?:an? )?(?:GPUs? with |NVIDIA |AMD )?`, `\b`), Class: failure.ClassGPUArchUnsupported},
	// the attention kernels an older GPU gets lack a feature the model
	// needs: TGI's flash-attn v1 path for pre-Ampere GPUs
	// (huggingface/text-generation-inference@db931fc
	// server/text_generation_server/layers/attention/cuda.py: "window_size_left
	// is only available with flash attn v2", "softcap is not available in
	// flash attn v1", "Flash decoding requires Flash Attention V2"), vLLM's
	// XFormers backend, its choice on Volta and Turing ("XFormers does not
	// support attention logits soft capping.", vllm/attention/backends/xformers.py)
	{Name: "cuda/flash-attn-v1-lacks-feature", Text: "flash attn v", Pattern: regexp.MustCompile(`(?i)only available with flash attn v2|not available in flash attn v1`), Class: failure.ClassGPUArchUnsupported},
	{Text: "Flash decoding requires Flash Attention V2", Class: failure.ClassGPUArchUnsupported},
	{Text: "XFormers does not support attention logits soft capping", Class: failure.ClassGPUArchUnsupported},
	// TGI's own check of the GPU's generation (same file, and rocm.py: "GPU
	// with CUDA capability 7 0 is not supported", "AMD GPU with ROCm
	// capability 9 0 is not supported")
	{Text: "capability", Pattern: regexp.MustCompile(`GPU with (CUDA|ROCm) capability \d+ \d+ is not supported`), Class: failure.ClassGPUArchUnsupported},
	{Text: "is not defined for option 'gpu-name'", Class: failure.ClassGPUArchUnsupported},
	// an engine's own check of the architecture, as the assert statement a
	// bare AssertionError's frame shows ("assert is_sm100_supported() or
	// is_sm90_supported()", "assert get_device_capability() >= (9, 0)")
	{Text: "assert", Pattern: regexp.MustCompile(`^\s*assert .*\b(is_sm\d+\w*|sm_?\d{2,3}[a-z]?|is_(hopper|blackwell|ampere)\w*|(get_)?device_capability|compute_capability)\b`), Class: failure.ClassGPUArchUnsupported},
	// Triton's compiler refusing a type the GPU has no instructions for
	// ("type fp8e4nv not supported in this architecture", triton
	// python/triton/language/semantic.py; before Triton 3.0 an assertion:
	// "fp8e4nv data type is not supported on CUDA arch < 89")
	{Text: "not supported", Pattern: regexp.MustCompile(`(?i)\bnot supported (in this architecture|on CUDA arch\b)`), Class: failure.ClassGPUArchUnsupported},
	// accelerator_busy
	{Text: "busy or unavailable", Pattern: regexp.MustCompile(`(?i)\w+.capable device\(s\) is/are busy or unavailable`), Class: failure.ClassAcceleratorBusy},
	{Text: "Some GPUs may be occupied by other processes", Class: failure.ClassAcceleratorBusy},
	// accelerator_unavailable
	{Text: "no CUDA-capable device is detected", Class: failure.ClassAcceleratorUnavailable},
	{Text: "No CUDA GPUs are available", Class: failure.ClassAcceleratorUnavailable},
	{Text: "-capable device is detected", Pattern: regexp.MustCompile(`(?i)no \w+-capable device is detected`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "Found no NVIDIA driver on your system", Class: failure.ClassAcceleratorUnavailable},
	// a launcher's own statement that it found the GPU but not what it
	// needs to use it, and goes on without it (LocalAI's AIO entrypoint:
	// "NVIDIA GPU detected, but nvidia-smi is not installed. GPU
	// acceleration will not be available.", then "Defaulting to CPU."):
	// the cause; the shell's "nvidia-smi: command not found" of its probe
	// before it is only a hint
	{Text: "will not be available", Pattern: regexp.MustCompile(`(?i)\b(?:GPU|CUDA|ROCm|Metal|Vulkan|NPU) (?:acceleration|support|offload(?:ing)?) will not be available\b`),
		Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch},
	{Text: "Failed to infer device type", Class: failure.ClassAcceleratorUnavailable},
	// the runtime libraries of CUDA, ROCm and Moore Threads' MUSA (its
	// driver's user-mode libsrv_um_MUSA.so, mounted into a container by
	// the MT container toolkit): a GPU the container or host cannot use
	{Text: ".so", Pattern: regexp.MustCompile(`(?i)lib(cudart|cublas|cublasLt|nvrtc|cudnn|amdhip64|hipblas|rocblas|musa|musart|mublas|srv_um_MUSA)\S*\.so[.\d]*: cannot open shared object file`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "libcuda.so", Pattern: regexp.MustCompile(`(?i)libcuda\.so[.\d]*: cannot open shared object file`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "libnvidia-ml.so", Pattern: regexp.MustCompile(`(?i)(load library failed|cannot open shared object).{0,40}libnvidia-ml|libnvidia-ml.{0,60}(cannot open|not found)`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "could not select device driver", Class: failure.ClassAcceleratorUnavailable},
	{Text: "nvidia-container-cli: initialization error", Class: failure.ClassAcceleratorUnavailable},
	{Text: "nvidia-container-cli: device error", Class: failure.ClassAcceleratorUnavailable},
	{Text: "NVML", Pattern: regexp.MustCompile(`(?i)failed to initialize NVML: (driver not loaded|unknown error)`), Class: failure.ClassAcceleratorUnavailable},
	{Text: "CUDA driver initialization failed", Class: failure.ClassAcceleratorUnavailable},
	// pinned host memory cannot be registered (WSL2, a locked-memory limit)
	{Text: "cudaHostRegister", Pattern: regexp.MustCompile(`(?i)cudaHostRegister.{0,80}failed`), Class: failure.ClassHostCapability},
	// a JIT compile (Triton, torch.compile) cannot link the driver library
	{Text: "cannot find -lcuda", Class: failure.ClassHostCapability},
	{Text: "Torch not compiled with CUDA enabled", Class: failure.ClassAcceleratorUnavailable},
	// the CUDA driver or runtime library cannot be loaded at all: Rust's
	// cudarc (mistral.rs, candle) panics "Unable to dynamically load the
	// \"cuda\" shared library" (cudarc 0.11.9 src/lib.rs; 0.11.5: "Unable
	// to find cuda lib under the names [...]") or unwraps
	// Windows' LoadLibraryExW error (os error 126, module not found);
	// a C++ server's "Could not load library ...cuda.../engine.dll" (Jan's
	// cortex.cpp) names a CUDA build it could not load. The Linux dlopen
	// wording ("libcuda.so.1: cannot open shared object file") is above.
	{Text: "Unable to dynamically load the", Pattern: regexp.MustCompile(`(?i)unable to dynamically load the \W?(cuda|nvcuda|nvrtc|cublas\w*|curand|cudnn|nccl)\W? shared library`),
		Class: failure.ClassAcceleratorUnavailable, NextStep: cudaLibraryStep},
	{Text: "lib under the names", Pattern: regexp.MustCompile(`(?i)unable to find (cuda|nvrtc|cublas\w*|curand|cudnn|nccl) lib under the names`),
		Class: failure.ClassAcceleratorUnavailable, NextStep: cudaLibraryStep},
	{Text: "LoadLibraryExW", After: "cudarc", Class: failure.ClassAcceleratorUnavailable, NextStep: cudaLibraryStep},
	// a library or engine DLL of a CUDA build that does not load: a
	// missing CUDA runtime is the usual cause, not the only one (a hint)
	{Text: "load", Also: "cuda", Pattern: regexp.MustCompile(`(?i)\b(could not|cannot|can't|unable to|failed to) load\b.{0,40}\b(library|dll|engine|module|backend)\b.{0,300}\bcuda|\b(could not|cannot|can't|unable to|failed to) load\b.{0,300}cuda\S*\.(dll|so)\b`),
		Class: failure.ClassAcceleratorUnavailable, Tier: TierHint, NextStep: cudaLibraryStep},
	// gpu_oom
	{Text: "OutOfMemoryError", Class: failure.ClassGPUOOM},
	{Text: "CUBLAS_STATUS_ALLOC_FAILED", Class: failure.ClassGPUOOM},
	{Text: "CUBLAS_STATUS_NOT_INITIALIZED", Class: failure.ClassGPUOOM, Tier: TierHint},
	// engine crashes that name no cause by themselves. A kernel's fault
	// (cudaErrorIllegalAddress 700, MisalignedAddress 716, LaunchFailure
	// 719, Assert 710, IllegalInstruction 715) is sticky: "the process is
	// left in an inconsistent state and any further CUDA work will return
	// the same error" (CUDA Runtime API, cudaError), so a server that
	// stays up after one serves nothing more (Fatal: the engine died).
	{Text: "illegal memory access was encountered", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "misaligned address", Pattern: regexp.MustCompile(`(?i)cuda error: misaligned address`), Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: ".cu:", Pattern: regexp.MustCompile(`\.cu:\d+:.*Assertion .*failed`), Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "device-side assert triggered", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "unspecified launch failure", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "illegal instruction was encountered", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	// a cuBLAS call whose GPU program failed to launch or run
	// (CUBLAS_STATUS_EXECUTION_FAILED), by its enum name (PyTorch's
	// TORCH_CUDABLAS_CHECK, ggml before CUDA 12) or by cublasGetStatusString's
	// text (ggml-cuda's common.cuh cublas_get_error_str on CUDA 12)
	{Text: "CUBLAS_STATUS_EXECUTION_FAILED", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	// CUTLASS's own report that the driver refused a Hopper/Blackwell TMA
	// descriptor (cute's make_tma_copy: the descriptor's fields, then
	// "Error: Failed to initialize the TMA descriptor N", N the CUresult),
	// printed before whatever relays it (FlashMLA's assertion of the
	// result, FlashInfer's runner error, a later kernel fault): the cause,
	// its class depending on the tensor or error it met, so weak
	{Text: "Failed to initialize the TMA descriptor", Class: failure.ClassEngineDied, Weak: true},
	{Text: "the function failed to launch on the GPU", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "Xid", Pattern: regexp.MustCompile(`NVRM: Xid`), Class: failure.ClassEngineDied, Tier: TierHint},
}, cudaErrorSignatures()))

// gpuFamily: any vendor's out-of-memory and device discovery wording.
// A server that finds no usable GPU and goes on on the CPU says so once,
// at start, as a warning (llama.cpp's "no usable GPU found, --gpu-layers
// option will be ignored", llamafile's "no GPUs were found; falling back
// to CPU inference"): the failure of a profile that wanted the
// accelerator, raised at launch whatever the server did after.
var gpuFamily = family("gpu", []Rule{
	// fewer GPUs where the engine runs than the parallel layout needs:
	// vLLM's platform check (vllm/executor/*: "please ensure that
	// world_size (2) is less than than max local gpu count (1)"), its Ray
	// placement ("The number of required GPUs exceeds the total number of
	// available GPUs in the placement group", "Ray does not allocate any
	// GPUs on the driver node").
	{Text: "gpu count", Pattern: regexp.MustCompile(`(?i)(world.?size|tensor.?parallel.?size)\b.{0,40}\b(less|greater|larger|more|exceeds?)\b.{0,30}gpu count`),
		Class: failure.ClassAcceleratorUnavailable, NextStep: gpuCountStep},
	{Text: "number of required GPUs exceeds", Class: failure.ClassAcceleratorUnavailable, NextStep: gpuCountStep},
	{Text: "does not allocate any GPUs", Class: failure.ClassAcceleratorUnavailable, NextStep: gpuCountStep},
	// a device whose runtime cannot say how much memory is free (PyTorch's
	// XPU backend without sycl::aspect::ext_intel_free_memory, c10/xpu):
	// the engine cannot size its KV cache on it
	{Text: "doesn't support querying the available free memory", Class: failure.ClassHostCapability, NextStep: memQueryStep},
	{Text: "no usable GPU found", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch},
	// a GPU asked for (a flag, a mode, a device setting) that the server
	// refuses because it finds none (llamafile 0.6 llamafile/gpu.c: "fatal
	// error: --n-gpu-layers %d was passed but no gpus were found"; later
	// the warning "...; falling back to CPU inference"; a Python server's
	// "CUDA requested but no GPUs were found"): the failure of the profile
	// that wanted the accelerator, at launch
	{Text: "but no ", Pattern: regexp.MustCompile(`(?i)\b(passed|requested|specified|set|enabled|configured|required?s?)\b.{0,60}\bbut no (usable |compatible |supported )?(GPUs?|CUDA devices?|accelerators?) (was |were )?(found|detected|available)\b`),
		Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch},
	// Triton's launcher (python/triton/runtime/errors.py OutOfResources:
	// "out of resource: shared memory, Required: N, Hardware limit: M"):
	// the kernel's block configuration needs more shared memory per block
	// than this GPU has, a configuration tuned for another GPU
	{Text: "out of resource: shared memory", Class: failure.ClassGPUArchUnsupported},
	// a kernel library's dispatch that has no instantiation for the shape
	// asked (FlashInfer csrc/sparse_mla_sm120.cu: "Unsupported sparse-MLA
	// prefill configuration: model=DSV4 num_heads=16 topk=512 ..."): the
	// build for this GPU lacks it, or the layout (heads per rank, page
	// size) is one no GPU's build has, so weak with invalid_configuration
	{Name: "gpu/kernel-unsupported-configuration", Text: "unsupported", Also: "configuration", Pattern: regexp.MustCompile(`(?i)\bunsupported\b[\w .-]{0,40}\b(mla|attention|attn|prefill|decode|kernel|gemm|fmha|moe)\b[\w .-]{0,20}\bconfiguration\b`),
		Class: failure.ClassGPUArchUnsupported, Or: failure.ClassInvalidConfiguration},
	// a kernel library's table of the chips it has code or tuning for,
	// looked up by the GPU's name and without it (AMD aiter's chip_info:
	// KeyError "Unknown GPU architecture: gfx1151. Supported
	// architectures: [...]"; the same words with an NVIDIA sm_ name)
	{Name: "gpu/unknown-gpu-architecture", Text: "architecture", Pattern: regexp.MustCompile(`(?i)\b(unknown|unrecognized|unsupported) (gpu |device |cuda |hip )?arch(itecture)?\b\W{0,4}(gfx[0-9a-f]{3,4}|sm_?\d{2,3}a?)\b`), Class: failure.ClassGPUArchUnsupported},
	// a GEMM runner with no kernel configuration (tile, tactic) chosen
	// for the weights' type and shapes on this GPU: TensorRT-LLM's CUTLASS
	// MoE runner (moe_kernels.cu runMoe: "Assertion failed: MOE GEMM1
	// Config is not set", its profiler having found no valid tactic, as
	// for int4 experts on SM 8.7). The quantized kernel cannot run here
	// (quant_kernel_failed), or the GPU has no config at all
	// (gpu_arch_unsupported): weak, naming both
	{Name: "gpu/gemm-config-not-set", Text: "config is not set", Pattern: regexp.MustCompile(`(?i)\bGEMM\d* config is not set\b`),
		Class: failure.ClassQuantKernelFailed, Or: failure.ClassGPUArchUnsupported},
	// OpenVINO's GPU plugin (src/plugins/intel_gpu, its OpenCL USM
	// allocator: "[CL ext] Can not allocate N bytes for USM Device"):
	// the device's memory is short (an iGPU's share of system RAM)
	{Text: "[CL ext] Can not allocate", Class: failure.ClassGPUOOM},
	// a GPU job the driver reset, in any vendor's or wrapper's words
	// (Lemonade's watchdog: "backend marked unavailable: GPU Hang /
	// compute error detected; terminating"; ROCR's "reason :GPU Hang" is
	// rocmFamily's; i915's "GPU HANG: ecode"): the engine's GPU work is
	// gone with it
	{Name: "gpu/gpu-hang", Text: "GPU hang", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint, NextStep: gpuResetStep},
	// OpenVINO's device plugins compiling a graph with an operation they
	// have no implementation of ("Operation: NAME of type TYPE(OPSET) is
	// not supported", src/plugins/intel_gpu/src/plugin/program_builder.cpp
	// and the CPU plugin's node factory): the model as given cannot be
	// compiled for this device
	{Name: "gpu/openvino-operation-not-supported", Text: "Operation: ", Also: "is not supported", Pattern: regexp.MustCompile(`\bOperation: \S+ of type \S+ is not supported\b`), Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad},
	// OpenVINO's GPU plugin building the model's program for the device
	// (src/plugins/intel_gpu/src/plugin/program_builder.cpp:
	// OPENVINO_ASSERT(false, "[GPU] ProgramBuilder build failed!\n",
	// e.what())): a header whose cause is the builder's exception below it
	// (its OpenCL kernels not built for this GPU, or an allocation the
	// "[CL ext]" line names), so a hint: alone, the device cannot build the
	// model's kernels, the host's GPU stack (driver, compute runtime) the
	// other reading
	{Name: "gpu/openvino-program-build-failed", Text: "ProgramBuilder build failed", Class: failure.ClassGPUArchUnsupported, Or: failure.ClassHostCapability, Tier: TierHint, Phase: failure.PhaseLoad},
	// a CPU-only build given GPU layers (llama.cpp common/arg.cpp)
	{Text: "not compiled with GPU offload support", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch},
	{Text: "falling back to CPU", Pattern: regexp.MustCompile(`(?i)\bno (usable |compatible |supported )?(GPUs?|CUDA devices?|accelerators?)\b.{0,80}(found|detected|available)?.{0,40}falling back to CPU`),
		Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch},
	{Text: "discovery", Pattern: regexp.MustCompile(`(?i)(fail\w*|error)\W.{0,30}GPU discovery|GPU discovery.{0,30}(failed|error)`), Class: failure.ClassAcceleratorUnavailable},
	// PyTorch's caching allocator names its device type before the size
	// (c10/cuda/CUDACachingAllocator.cpp "CUDA out of memory. Tried to
	// allocate ", XPU's, MPS's), and every out-of-tree backend built on it
	// prints the same words with its own (torch_npu's NPUCachingAllocator
	// "NPU out of memory. Tried to allocate 30.00 MiB (NPU 3; ...)", MUSA,
	// MLU, HPU): one rule for every device name
	{Name: "gpu/torch-device-out-of-memory", Text: "out of memory. Tried to allocate", Pattern: regexp.MustCompile(`\b[A-Z][A-Za-z0-9]{1,11}( backend)? out of memory\. Tried to allocate`), Class: failure.ClassGPUOOM},
	// a device allocator of such a backend other than the caching one
	// names itself in the same sentence (torch_npu's workspace allocator,
	// torch_npu/csrc/core/npu/NPUWorkspaceAllocator.cpp: "NPU out of memory.
	// NPUWorkspaceAllocator tried to allocate 216.00 MiB(NPU 0; 61.27 GiB
	// total capacity; ...)", logged by OpParamMaker before the aclnn call's
	// RuntimeError "The Inner error is reported as above")
	{Name: "gpu/torch-device-allocator-out-of-memory", Text: "allocator tried to allocate", Pattern: regexp.MustCompile(`\b[A-Z][A-Za-z0-9]{1,11} out of memory\. \w*Allocator tried to allocate`), Class: failure.ClassGPUOOM},
	{Text: "out of memory", Pattern: regexp.MustCompile(`(?i)(cuda|gpu|vram|device|hip|rocm|musa|cudaMalloc|cublas|nccl).{0,60}out of memory|out of memory.{0,40}(on device|on gpu|cuda)`), Class: failure.ClassGPUOOM},
	// the memory left after the weights cannot hold a KV cache, in any
	// engine's words (SGLang: "Loaded weights leave no GPU memory for the
	// KV cache under --mem-fraction-static=0.88."): raised while the cache
	// is sized, whatever marker came last
	{Name: "gpu/no-memory-for-kv-cache", Text: "memory for", Pattern: regexp.MustCompile(`(?i)\b(no|not enough|insufficient) (free )?(GPU |device |NPU )?memory (left )?for (the )?KV[ -]?cache\b`), Class: failure.ClassGPUOOM, Phase: failure.PhaseKVInit},
	{Text: "memory", Pattern: regexp.MustCompile(`(?i)(insufficient|not enough) (gpu|device|vram|cuda) memory`), Class: failure.ClassGPUOOM},
	// a runtime's allocator that names the size, not the memory (TVM/MLC
	// "Failed to allocate N bytes with alignment 16 bytes", XLA "Out of
	// memory while trying to allocate N bytes"): device memory on an
	// accelerator host is the usual reading, host memory the other
	{Text: "to allocate", Pattern: regexp.MustCompile(`(?i)(failed|unable|trying) to allocate \d+ bytes`), Class: failure.ClassGPUOOM, Tier: TierHint},
})

// gpuResetStep is the advice when the GPU's driver reset the device under
// the engine (a context lost, a device removed).
const gpuResetStep = "The GPU driver reset the device under the engine (its context was lost): usually one GPU job ran " +
	"longer than the driver's timeout, or faulted. Try a smaller batch or micro-batch (llama.cpp -ub/-b), a shorter " +
	"prompt, a newer driver and kernel; on Linux the amdgpu lockup timeout (amdgpu.lockup_timeout) and dmesg say more, " +
	"on Windows the TDR delay (TdrDelay)."

// rocmFamily: AMD's HIP runtime, rocBLAS/Tensile and the HSA runtime.
var rocmFamily = family("rocm", []Rule{
	// hipBLASLt missing its Tensile library for the GPU ("rocblaslt error:
	// Cannot read|Could not load ...TensileLibrary_lazy_gfx1201.dat"): it
	// prints and goes on (rocblaslt_abort is commented out after each, in
	// hipBLASLt's tensile_host.cpp; ROCm/rocm-libraries#931), and rocBLAS
	// falls back to Tensile (lmstudio-bug-tracker#1163, ollama#11555,
	// lemonade-sdk/llamacpp-rocm#10): a notice, the cause only when no error
	// follows (PyTorch's own hipBLASLt call fails after it, ROCm/TheRock#754).
	{Text: "rocblaslt error", Class: failure.ClassGPUArchUnsupported, Tier: TierHint, Notice: true},
	// ggml's virtual-memory pool (ggml-cuda.cu's CU_CHECK through
	// vendors/hip.h and musa.h: GGML_ABORT("HipVMM Failure: %s"), "MusaVMM
	// Failure: %s"): the driver refused a VMM call (cuMemCreate, Map,
	// SetAccess), as some ROCm releases do for some GPUs: the host's
	// driver (build with GGML_HIP_NO_VMM / GGML_CUDA_NO_VMM), or the
	// engine's own crash; weak, Or engine_died
	{Name: "rocm/ggml-vmm-failure", Text: "VMM Failure:", Pattern: regexp.MustCompile(`\b(Hip|Musa|Cuda)VMM Failure: `), Class: failure.ClassHostCapability, Or: failure.ClassEngineDied, Fatal: true,
		NextStep: "The GPU driver refused ggml's virtual memory pool (a VMM call): rebuild llama.cpp without it (cmake -DGGML_HIP_NO_VMM=ON, -DGGML_CUDA_NO_VMM=ON), or use a driver and runtime release that supports VMM on this GPU."},
	{Text: "invalid device function", Class: failure.ClassGPUArchUnsupported},
	{Text: "hipErrorInvalidDeviceFunction", Class: failure.ClassGPUArchUnsupported},
	{Text: "hipErrorNoBinaryForGpu", Class: failure.ClassGPUArchUnsupported},
	// the HIP runtime's loader finds no code object for the device's ISA
	// in a fat binary (ROCm/clr@078cf80 hipamd/src/hip_fatbin.cpp,
	// ExtractFatBinaryUsingCOMGR: "No compatible code objects found for:
	// gfx1152, value of HIP_FORCE_SPIRV_CODEOBJECT: 0"; older clr,
	// hip_code_object.cpp: "hipErrorNoBinaryForGpu: Unable to find code
	// object for all current devices!", and hip_fatbin.cpp's "Missing CO
	// for these ISAs - "): the build has no kernels for this GPU; the
	// process often segfaults at the launch right after, with no other line
	{Text: "No compatible code objects found for", Class: failure.ClassGPUArchUnsupported},
	{Text: "Unable to find code object for all current devices", Class: failure.ClassGPUArchUnsupported},
	{Text: "Missing CO for these ISAs", Class: failure.ClassGPUArchUnsupported},
	// hipModuleLoad* refusing a code object built for another gfx target
	// or ROCm release (hipErrorSharedObjectInitFailed, TVM/MLC, PyTorch
	// extensions)
	{Text: "shared object initialization failed", Also: "hip", Class: failure.ClassGPUArchUnsupported},
	{Text: "hipErrorSharedObjectInitFailed", Class: failure.ClassGPUArchUnsupported},
	{Text: "TensileLibrary", Pattern: regexp.MustCompile(`(?i)TensileLibrary.{0,200}(GPU arch|gfx\d)`), Class: failure.ClassGPUArchUnsupported},
	{Text: "TensileLibrary", Pattern: regexp.MustCompile(`(?i)rocBLAS error: cannot read .{0,200}TensileLibrary`), Class: failure.ClassGPUArchUnsupported},
	{Text: "Could not initialize Tensile host", Class: failure.ClassGPUArchUnsupported},
	{Text: "for GPU arch", Pattern: regexp.MustCompile(`(?i)(cannot read|no such file|not found|unsupported).{0,200}for GPU arch`), Class: failure.ClassGPUArchUnsupported},
	{Text: "hipErrorOutOfMemory", Class: failure.ClassGPUOOM},
	{Text: "HSA_STATUS_ERROR_OUT_OF_RESOURCES", Class: failure.ClassGPUOOM},
	{Text: "HIP out of memory", Class: failure.ClassGPUOOM},
	{Text: "No HIP GPUs are available", Class: failure.ClassAcceleratorUnavailable},
	{Text: "hipErrorNoDevice", Class: failure.ClassAcceleratorUnavailable},
	{Text: "no ROCm-capable device is detected", Class: failure.ClassAcceleratorUnavailable},
	{Text: "hipErrorInsufficientDriver", Class: failure.ClassDriverMismatch},
	{Text: "HSA_STATUS_ERROR", Pattern: regexp.MustCompile(`HSA_STATUS_ERROR_(INVALID_ISA|INCOMPATIBLE_ARGUMENTS)`), Class: failure.ClassGPUArchUnsupported},
	// the HSA runtime's other statuses that name a class, as ROCclr's
	// queue callback prints them ("Callback: Queue 0x... aborting with
	// error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in
	// a hardware exception. code: 0x1016", ROCm/clr@f9f995c
	// rocclr/device/rocm/rocdevice.cpp; names from ROCR-Runtime's hsa.h
	// and hsa_ext_amd.h): a kernel's hardware exception or memory fault
	// on the GPU is the cause (the engine died of it, its queue gone:
	// Fatal; not a worker the server outlived), weak (what made the
	// kernel fault, a grammar's bitmask or a bug, the line does not say);
	// a code object the
	// runtime cannot load is the build's
	{Name: "rocm/hsa-kernel-fault", Text: "HSA_STATUS_ERROR_", Pattern: regexp.MustCompile(`\bHSA_STATUS_ERROR_(EXCEPTION|MEMORY_APERTURE_VIOLATION|MEMORY_FAULT|ILLEGAL_INSTRUCTION)\b`),
		Class: failure.ClassEngineDied, Fatal: true, Weak: true},
	{Text: "HSA_STATUS_ERROR_INVALID_CODE_OBJECT", Class: failure.ClassGPUArchUnsupported},
	// a kernel's fault, sticky as CUDA's (HIP mirrors cudaErrorIllegalAddress)
	{Text: "hipErrorIllegalAddress", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "Memory access fault by GPU", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	// the HSA runtime's report of a GPU job the kernel driver reset
	// (ROCR-Runtime: "HW Exception by GPU node-N (Agent handle: 0x...)
	// reason :GPU Hang"): the process aborts after it
	{Text: "reason :GPU Hang", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint, NextStep: gpuResetStep},
	// composable_kernel's instance refusing the problem it was given
	// (ROCm/composable_kernel: IsSupportedArgument false, "wrong! NAME with
	// the specified compilation parameters does not support this GEMM
	// problem", under aiter's MoE and GEMM ops in vLLM and SGLang): no
	// compiled kernel covers this shape (a tile size the model's dimension
	// after the tensor-parallel split does not divide) or this GPU; the
	// engine stops in the op, which a request's crash does not explain
	{Name: "rocm/ck-problem-not-supported", Text: "with the specified compilation parameters does not support this", Class: failure.ClassEngineDied,
		Or: failure.ClassGPUArchUnsupported, NextStep: ckProblemStep},
})

// ckProblemStep is the advice when a composable_kernel instance refuses
// the problem it is given.
const ckProblemStep = "A composable_kernel (CK) kernel of the ROCm build has no instance for this problem: the shape a " +
	"model dimension takes after the tensor-parallel split, or this GPU. Try another --tensor-parallel-size, or turn the " +
	"aiter/CK path off for that op (VLLM_ROCM_USE_AITER_MOE=0, SGLANG_USE_AITER=0), or a build with that instance."

// metalFamily: Apple Metal (llama.cpp's ggml-metal, MLX, PyTorch MPS).
var metalFamily = family("metal", []Rule{
	{Text: "kIOGPUCommandBufferCallbackErrorOutOfMemory", Class: failure.ClassGPUOOM},
	// MLX's Metal allocator (mlx/backend/metal/allocator.cpp): the
	// buffers it may hold ("[metal::malloc] Resource limit (499000)
	// exceeded.") or their size ("Attempting to allocate N bytes which is
	// greater than the maximum allowed buffer size") ran out
	{Text: "[metal::malloc]", Pattern: regexp.MustCompile(`(?i)\[metal::malloc\] (Resource limit|Attempting to allocate|Unable to allocate)`), Class: failure.ClassGPUOOM},
	{Text: "Insufficient Memory", Pattern: regexp.MustCompile(`(?i)insufficient memory \(0+8`), Class: failure.ClassGPUOOM},
	{Text: "MPS backend out of memory", Class: failure.ClassGPUOOM},
	// ggml-metal's status line (llama.cpp@49d0981 ggml/src/ggml-metal/
	// ggml-metal-context.m: "%s: error: command buffer %d failed with
	// status %d", then for status 5, MTLCommandBufferStatusError, "error:
	// %s" with the buffer's error): a header whose reason is the next
	// line (an out of memory, a hang, a page fault), so a hint; alone it
	// is most often the GPU out of memory, else the GPU job stopped.
	{Text: "command buffer", Pattern: regexp.MustCompile(`(?i)ggml_metal\w*: (error: )?command buffer \d+ failed with status`), Class: failure.ClassGPUOOM, Tier: TierHint, Or: failure.ClassEngineDied},
	// ggml-metal's buffer allocation; before the backend API (2023,
	// ggml-metal.m ggml_metal_add_buffer: "%s: error: failed to allocate
	// '%-16s' buffer, size = %8.2f MiB") the line names the buffer
	// ('data', 'kv', 'alloc') between quotes.
	{Text: "failed to allocate", Pattern: regexp.MustCompile(`(?i)ggml_metal\w*:.{0,40}failed to allocate ('[^']*'\s*)?buffer`), Class: failure.ClassGPUOOM},
	// ggml-metal's warning before an allocation beyond what macOS lets the
	// GPU hold: the abort that follows is its consequence.
	{Text: "greater than the recommended max working set size", Class: failure.ClassGPUOOM, Tier: TierHint},
	// candle's Metal kernels (mistral.rs): a kernel this GPU's Metal
	// cannot load (a bfloat16 kernel on a GPU without bf16).
	{Text: "Error while loading function", Class: failure.ClassGPUArchUnsupported},
	// candle's Metal kernels (candle-metal-kernels MetalKernelError::
	// LoadLibraryError): the GPU compiler would not build the kernels'
	// library for this device (a bfloat16 type the M1/M2 compiler rejects)
	{Text: "LoadLibraryError", Class: failure.ClassGPUArchUnsupported},
	// candle's Metal allocator (candle-metal-kernels / candle-core's
	// MetalError "Failed to create metal resource: Buffer" when the
	// device's newBuffer returns nil): almost always the GPU's memory
	// (its share of unified memory) refusing the buffer, a zero-sized
	// tensor the other reading
	{Name: "metal/candle-create-buffer-failed", Text: "Failed to create metal resource: Buffer", Class: failure.ClassGPUOOM, Or: failure.ClassEngineDied},
	{Text: "MTLCreateSystemDefaultDevice", Class: failure.ClassAcceleratorUnavailable},
	// MLX's Metal device (mlx/backend/metal/device.cpp, ml-explore/mlx@2118c3d
	// "[metal::Device] Unable to load kernel NAME", later "Unable to load
	// function NAME" / "Function NAME was not found in the library", and the
	// JIT's "Unable to build metal library from source"): the build's
	// library has no kernel this GPU family can use (an M5's nax kernels in
	// an older MLX) or the OS's Metal compiler will not build it. Weak: a
	// kernel may also be missing for a quantization the build never
	// instantiated (the name says which).
	{Text: "[metal::Device] Unable to", Pattern: regexp.MustCompile(`\[metal::Device\] Unable to (load (kernel|function) \S|build metal library)`), Class: failure.ClassGPUArchUnsupported, Weak: true, NextStep: mlxKernelStep},
	// A Metal shader library that does not compile for this GPU or OS:
	// the compiler's own error after ggml's Metal init began. ggml builds
	// its library when the backend is initialised for the model
	// (llama.cpp@0433293 ggml/src/ggml-metal/ggml-metal-device.m
	// ggml_metal_library_init, from ggml_metal_init as the context is
	// made): the model never got onto the device, a load failure whether
	// or not "llama_context: constructing" came first (Phase pinned).
	{Text: "static_assert failed", After: "ggml_metal", Class: failure.ClassGPUArchUnsupported, Phase: failure.PhaseLoad},
	// the Metal compiler's errors in ggml's library compiled from source
	// ("program_source:6450:1: error: expected expression" after
	// ggml_metal_load_library): the first states the cause
	{Text: "program_source:", Pattern: regexp.MustCompile(`^\s*program_source:\d+:\d+: error: `), After: "ggml_metal", Class: failure.ClassGPUArchUnsupported, Phase: failure.PhaseLoad},
	// Metal's own error for a kernel the library lacks
	// (MTLLibraryErrorFunctionNotFound, Code=5: "Function NAME was not
	// found in the library"), whoever asked for it (ggml's
	// ggml_metal_library_compile_pipeline, MLX, candle): the build carries
	// no kernel of this type for this GPU, the cause under the loader's or
	// the wrapper's "Failed to load model" summary. Weak: the kernel may
	// be missing for a type the build never instantiated, not the GPU.
	{Text: "was not found in the library", Pattern: regexp.MustCompile(`Function \S+ was not found in the library`), Class: failure.ClassGPUArchUnsupported, Or: failure.ClassModelLoadFailed},
	{Text: "MTLLibraryErrorDomain", Class: failure.ClassGPUArchUnsupported, Tier: TierHint},
	{Text: "failed to initialize the Metal library", Class: failure.ClassGPUArchUnsupported, Tier: TierHint, Phase: failure.PhaseLoad},
	{Text: "no Metal device", Class: failure.ClassAcceleratorUnavailable},
	{Text: "MPS backend is not available", Class: failure.ClassAcceleratorUnavailable},
	// Metal's API validation asserting on a call ("-[MTLDebugDevice
	// newResidencySetWithDescriptor:error:]:2768: failed assertion `device
	// does not support residency sets.'"): a device without residency
	// sets (an AMD GPU in an Intel Mac) for ggml's; any other is the
	// engine misusing the API, which aborts it
	{Name: "metal/residency-sets-unsupported", Text: "failed assertion `", Also: "residency set", Pattern: regexp.MustCompile(`^-\[\w+ [^\]]+\]:\d+: failed assertion `), Class: failure.ClassGPUArchUnsupported, Fatal: true},
	{Name: "metal/api-validation-assertion", Text: "failed assertion `", Pattern: regexp.MustCompile(`^-\[\w+ [^\]]+\]:\d+: failed assertion `), Class: failure.ClassEngineDied, Fatal: true},
	// the command buffer's error (MTLCommandBuffer.error's description and
	// its IOGPU code, printed by ggml-metal after "command buffer N failed
	// with status 5", llama.cpp@49d0981 ggml/src/ggml-metal/
	// ggml-metal-context.m; thrown by MLX as "[METAL] Command buffer
	// execution failed: ..."): any code but OutOfMemory (above) is the GPU
	// job stopped under the engine: the watchdog (Timeout, Hang, Impacting
	// Interactivity), a page fault, a recovery after another process's
	// fault (InnocentVictim). It states the cause the status line before
	// it only announces, so it is an error line, not a hint.
	{Name: "metal/kiogpucommandbuffercallbackerror", Text: "kIOGPUCommandBufferCallbackError", Pattern: regexp.MustCompile(`kIOGPUCommandBufferCallbackError[A-Z]\w*`), Class: failure.ClassEngineDied, Fatal: true, NextStep: gpuResetStep},
	{Name: "metal/command-buffer-gpu-stopped", Text: "Command buffer execution failed", Pattern: regexp.MustCompile(`(?i)Command buffer execution failed: (Caused GPU (Hang|Timeout|Address Fault) Error|Impacting Interactivity|Discarded \(victim)`), Class: failure.ClassEngineDied, Fatal: true, NextStep: gpuResetStep},
})

// mlxKernelStep is the advice when MLX's Metal library lacks a kernel.
const mlxKernelStep = "MLX's Metal library has no kernel this GPU or macOS can use (a newer chip than the MLX build " +
	"knows, or a dtype or quantization it did not compile): update MLX / mlx-lm (in LM Studio the MLX runtime, e.g. " +
	"its Beta channel), update macOS, or use another dtype or quant of the model."

// cudaLibraryStep is the advice when the CUDA driver or runtime library
// cannot be loaded.
const cudaLibraryStep = "The CUDA driver or runtime library could not be loaded: install the NVIDIA driver (it provides " +
	"libcuda.so / nvcuda.dll) and the CUDA runtime this build was made for, and put its folder on the library path " +
	"(LD_LIBRARY_PATH on Linux, PATH on Windows); or use the engine's CPU build."

// gpuCountStep is the advice when the node that runs the engine sees
// fewer GPUs than its parallel layout needs.
const gpuCountStep = "The node where the engine runs sees fewer GPUs than the parallel layout needs (tensor x " +
	"pipeline parallel size): lower --tensor-parallel-size / --pipeline-parallel-size to the GPUs it has, check " +
	"CUDA_VISIBLE_DEVICES (HIP_VISIBLE_DEVICES on ROCm), and on a Ray cluster start the engine on a GPU node that " +
	"joined the cluster (ray status shows the GPUs per node)."

// memQueryStep is the advice when the device cannot report its free
// memory.
const memQueryStep = "The device cannot report its free memory, which the engine needs to size its KV cache: on " +
	"Intel GPUs set ZES_ENABLE_SYSMAN=1 (Level Zero's sysman answers the query) or use a driver that supports it; " +
	"otherwise give the engine a fixed KV cache size (vLLM: --num-gpu-blocks-override) or use another device."

// vulkanFamily: Vulkan (llama.cpp's ggml-vulkan, MLC).
var vulkanFamily = family("vulkan", joinLists(vulkanResultRules(), []Rule{
	{Text: "Device memory allocation of size", Pattern: regexp.MustCompile(`(?i)ggml_vulkan: Device memory allocation of size \d+ failed`), Class: failure.ClassGPUOOM},
	{Text: "ggml_vulkan: No devices found", Class: failure.ClassAcceleratorUnavailable},
	// the driver will not build a compute pipeline from the engine's
	// shader for this device (ggml-vulkan's ggml_vk_create_pipeline: "Compute
	// pipeline creation failed for NAME", then the vk::SystemError): a
	// shader the device or its driver does not support (Adreno, MoltenVK)
	{Text: "Compute pipeline creation failed for", Class: failure.ClassGPUArchUnsupported},
	// the kernel driver reset the GPU's context (a job that ran too long,
	// a fault): Mesa's amdgpu winsys says so before the API reports the
	// device lost (mesa src/amd/vulkan/winsys/amdgpu/radv_amdgpu_cs.c,
	// src/gallium/winsys/amdgpu/drm/amdgpu_cs.c)
	{Text: "because the context is lost", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint, NextStep: gpuResetStep},
}))

// vulkanResults are the VkResult error codes a compute engine meets
// (the Vulkan specification's VkResult; Vulkan-Hpp's to_string names,
// which its exceptions' what() ends with: "vk::Queue::submit:
// ErrorDeviceLost", KhronosGroup/Vulkan-Hpp vulkan_to_string.hpp and
// throwResultException), each in both spellings, with the class hiro
// gives it. Codes whose meaning is the call's (too many objects, a
// fragmented or exhausted descriptor pool, unknown) name no class and
// are left out.
var vulkanResults = []struct {
	enum, hpp string
	class     failure.Class
	// tier is TierHint where the code says where the engine stopped
	// more than why (a lost device, a map that failed, a missing
	// extension or format the engine may have asked for needlessly)
	tier  Tier
	fatal bool
	step  string
}{
	{"VK_ERROR_OUT_OF_HOST_MEMORY", "ErrorOutOfHostMemory", failure.ClassHostOOM, 0, false, ""},
	{"VK_ERROR_OUT_OF_DEVICE_MEMORY", "ErrorOutOfDeviceMemory", failure.ClassGPUOOM, 0, false, ""},
	{"VK_ERROR_INCOMPATIBLE_DRIVER", "ErrorIncompatibleDriver", failure.ClassDriverMismatch, 0, false, ""},
	{"VK_ERROR_INITIALIZATION_FAILED", "ErrorInitializationFailed", failure.ClassAcceleratorUnavailable, 0, false, ""},
	// the device lacks a feature the engine enabled at device creation
	// (16-bit storage, shader float16 / int8 on an old iGPU)
	{"VK_ERROR_FEATURE_NOT_PRESENT", "ErrorFeatureNotPresent", failure.ClassGPUArchUnsupported, 0, false, ""},
	{"VK_ERROR_EXTENSION_NOT_PRESENT", "ErrorExtensionNotPresent", failure.ClassGPUArchUnsupported, TierHint, false, ""},
	{"VK_ERROR_FORMAT_NOT_SUPPORTED", "ErrorFormatNotSupported", failure.ClassGPUArchUnsupported, TierHint, false, ""},
	{"VK_ERROR_MEMORY_MAP_FAILED", "ErrorMemoryMapFailed", failure.ClassGPUOOM, TierHint, false, ""},
	// the device lost (vk::DeviceLostError, VK_ERROR_DEVICE_LOST): the
	// driver reset the GPU under the engine, whatever step it was in (a
	// warm-up run is not what failed; the device is), so not a crash its
	// moment refines
	{"VK_ERROR_DEVICE_LOST", "ErrorDeviceLost", failure.ClassEngineDied, TierHint, true, gpuResetStep},
}

// vulkanResultRules are the rules of vulkanResults: each spelling
// anywhere in a line (Vulkan-Hpp's first, as the Text of the rule names
// it: vulkan/erroroutofdevicememory).
func vulkanResultRules() []Rule {
	var out []Rule
	for _, r := range vulkanResults {
		for _, text := range []string{r.hpp, r.enum} {
			out = append(out, Rule{Text: text, Class: r.class, Tier: r.tier, Fatal: r.fatal, NextStep: r.step,
				Source: "Vulkan VkResult " + r.enum})
		}
	}
	return out
}

// openclErrors are the OpenCL runtime's error codes that name a class
// (KhronosGroup/OpenCL-Headers CL/cl.h, CL/cl_ext.h), as OpenCL's
// callers relay them: OpenVINO's GPU plugin ("clFinish, error code: -5
// CL_OUT_OF_RESOURCES"), llama.cpp's ggml-opencl, MLC's OpenCL target.
var openclErrors = []struct {
	name  string
	code  int
	class failure.Class
	tier  Tier
	// weak: the code is returned for more than its name says (Intel's
	// and Qualcomm's drivers give CL_OUT_OF_RESOURCES for a GPU hang or
	// reset too, not only for memory)
	weak bool
}{
	{"CL_DEVICE_NOT_FOUND", -1, failure.ClassAcceleratorUnavailable, TierError, false},
	{"CL_DEVICE_NOT_AVAILABLE", -2, failure.ClassAcceleratorUnavailable, TierError, false},
	{"CL_COMPILER_NOT_AVAILABLE", -3, failure.ClassHostCapability, TierError, false},
	{"CL_MEM_OBJECT_ALLOCATION_FAILURE", -4, failure.ClassGPUOOM, TierError, false},
	{"CL_OUT_OF_RESOURCES", -5, failure.ClassGPUOOM, TierError, true},
	{"CL_OUT_OF_HOST_MEMORY", -6, failure.ClassHostOOM, TierError, false},
	// the device's compiler refused a kernel the build carries as source
	{"CL_BUILD_PROGRAM_FAILURE", -11, failure.ClassGPUArchUnsupported, TierError, true},
	{"CL_INVALID_DEVICE", -33, failure.ClassAcceleratorUnavailable, TierHint, false},
	// a queue left unusable, most often by an earlier fault on the device
	{"CL_INVALID_COMMAND_QUEUE", -36, failure.ClassEngineDied, TierHint, false},
	// the ICD loader found no OpenCL driver
	{"CL_PLATFORM_NOT_FOUND_KHR", -1001, failure.ClassAcceleratorUnavailable, TierError, false},
}

// openclFamily: the rules of openclErrors, each name as a word.
var openclFamily = family("opencl", func() []Rule {
	var out []Rule
	for _, e := range openclErrors {
		out = append(out, Rule{Name: "opencl/" + strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(e.name, "CL_"), "_", "-")),
			Text: e.name, Pattern: regexp.MustCompile(`\b` + e.name + `\b`), Class: e.class, Tier: e.tier, Weak: e.weak,
			Source: "OpenCL CL/cl.h " + e.name + " (" + strconv.Itoa(e.code) + ")"})
	}
	// ggml-opencl's CL_CHECK prints the call and the number alone
	// ("ggml_opencl: clEnqueueNDRangeKernel(...) error -4 at
	// ggml-opencl.cpp:N", ggml/src/ggml-opencl/ggml-opencl.cpp)
	byCode := map[string]failure.Class{}
	for _, e := range openclErrors {
		if e.tier == TierError && !e.weak {
			byCode[strconv.Itoa(e.code)] = e.class
		}
	}
	out = append(out, Rule{Name: "opencl/ggml-opencl-error-code", Text: "ggml_opencl: ", Pattern: regexp.MustCompile(`ggml_opencl: .* error (-\d+) at \S+:\d+`),
		Lookup: func(m []string) (failure.Class, bool) { c, ok := byCode[m[1]]; return c, ok }})
	return out
}())

// syclFamily: SYCL / oneAPI (Intel GPUs: llama.cpp's ggml-sycl, IPEX).
var syclFamily = family("sycl", []Rule{
	{Text: "UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", Class: failure.ClassGPUOOM},
	{Text: "can't malloc", Pattern: regexp.MustCompile(`(?i)sycl\w*: can't malloc \d+ Bytes memory on device`), Class: failure.ClassGPUOOM},
	// ggml-sycl's buffer and pool allocators since 2024 (llama.cpp
	// ggml/src/ggml-sycl/ggml-sycl.cpp: "%s: can't allocate %lu Bytes of
	// memory on device" when sycl::malloc_device returns null): the
	// allocator's own line, before the graph allocator's or loader's
	// summary of the same failure
	{Name: "sycl/cant-allocate-bytes-on-device", Text: "can't allocate", Pattern: regexp.MustCompile(`(?i)sycl\w*: can't allocate \d+ Bytes of memory on device`), Class: failure.ClassGPUOOM},
	{Text: "PI_ERROR_OUT_OF_RESOURCES", Class: failure.ClassGPUOOM},
	{Text: "UR_RESULT_ERROR_OUT_OF_RESOURCES", Class: failure.ClassGPUOOM},
	{Text: "XPU out of memory", Class: failure.ClassGPUOOM},
	{Text: "No device of requested type available", Class: failure.ClassAcceleratorUnavailable},
	{Text: "UR_RESULT_ERROR_INVALID_BINARY", Class: failure.ClassGPUArchUnsupported},
	// the SYCL runtime finds no kernel of that name in the device images
	// the binary carries (built for other targets): DPC++'s "No kernel
	// named ... was found -46 (PI_ERROR_INVALID_KERNEL_NAME)"
	{Text: "No kernel named", Pattern: regexp.MustCompile(`(?i)No kernel named \S+ was found`), Class: failure.ClassGPUArchUnsupported},
	{Text: "PI_ERROR_INVALID_KERNEL_NAME", Class: failure.ClassGPUArchUnsupported},
	{Text: "UR_RESULT_ERROR_INVALID_KERNEL_NAME", Class: failure.ClassGPUArchUnsupported},
	{Text: "PI_ERROR_INVALID_BINARY", Class: failure.ClassGPUArchUnsupported},
	// the device lost, as vulkanFamily's: the GPU's, whatever the step
	{Text: "UR_RESULT_ERROR_DEVICE_LOST", Class: failure.ClassEngineDied, Fatal: true, Tier: TierHint, NextStep: gpuResetStep},
	// the rest of the runtime's results that name a class, as the SYCL
	// runtime relays them ("Native API failed. Native API returns: 38
	// (UR_RESULT_ERROR_OUT_OF_HOST_MEMORY)"; numbers move between
	// releases, names do not: oneapi-src/unified-runtime include/ur_api.h
	// ur_result_t), their PI forerunners and Level Zero's own
	// (ze_api.h ze_result_t) under them
	{Text: "_ERROR_OUT_OF_HOST_MEMORY", Pattern: regexp.MustCompile(`\b(UR_RESULT|PI|ZE_RESULT)_ERROR_OUT_OF_HOST_MEMORY\b`), Class: failure.ClassHostOOM},
	{Text: "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY", Class: failure.ClassGPUOOM},
	{Text: "_ERROR_MEM_OBJECT_ALLOCATION_FAILURE", Pattern: regexp.MustCompile(`\b(UR_RESULT|PI)_ERROR_MEM_OBJECT_ALLOCATION_FAILURE\b`), Class: failure.ClassGPUOOM},
	{Text: "ZE_RESULT_ERROR_DEVICE_LOST", Class: failure.ClassEngineDied, Fatal: true, Tier: TierHint, NextStep: gpuResetStep},
	// the device's compiler would not build the program's kernels for it
	// (an aspect it lacks, fp64 on most Arc GPUs): weak, a kernel's own
	// error is the other reading
	{Text: "_BUILD_FAILURE", Pattern: regexp.MustCompile(`\b(UR_RESULT_ERROR_(PROGRAM|MODULE)|ZE_RESULT_ERROR_MODULE)_BUILD_FAILURE\b`), Class: failure.ClassGPUArchUnsupported, Weak: true},
	{Text: "PI_ERROR_BUILD_PROGRAM_FAILURE", Class: failure.ClassGPUArchUnsupported, Weak: true},
	{Text: "_ERROR_UNSUPPORTED_FEATURE", Pattern: regexp.MustCompile(`\b(UR_RESULT|ZE_RESULT)_ERROR_UNSUPPORTED_FEATURE\b`), Class: failure.ClassGPUArchUnsupported, Tier: TierHint},
	{Text: "_ERROR_UNINITIALIZED", Pattern: regexp.MustCompile(`\b(UR_RESULT|ZE_RESULT)_ERROR_UNINITIALIZED\b`), Class: failure.ClassAcceleratorUnavailable, Tier: TierHint},
})

// tpuFamily: Google TPUs through XLA (vLLM's and JetStream's TPU
// backends): a compile that runs out of a memory space.
var tpuFamily = family("tpu", []Rule{
	{Text: "RESOURCE_EXHAUSTED", Pattern: regexp.MustCompile(`(?i)ran out of memory|out of memory`), Class: failure.ClassGPUOOM},
	// XLA's allocator on any device it drives (TPU, and JAX's GPU
	// backends): "RESOURCE_EXHAUSTED: Error allocating device buffer:
	// Attempting to allocate 1.00G. That was not possible. There are
	// 500.00M free."
	{Name: "tpu/xla-error-allocating-device-buffer", Text: "RESOURCE_EXHAUSTED", Pattern: regexp.MustCompile(`(?i)RESOURCE_EXHAUSTED: (Error allocating device buffer|Attempting to allocate)`), Class: failure.ClassGPUOOM},
	// the TPU held by another process (libtpu: "TPU initialization
	// failed: open(/dev/accel0): Device or resource busy"): one process
	// per TPU host, another (a previous server, a notebook) has it
	{Name: "tpu/accel-device-busy", Text: "/dev/accel", Pattern: regexp.MustCompile(`open\(/dev/accel\d+\): Device or resource busy`), Class: failure.ClassAcceleratorBusy},
})

// neuronFamily: AWS Inferentia and Trainium through the Neuron runtime
// (NRT; vLLM's and TGI's neuron backends): status 4 is NRT_RESOURCE, the
// device's memory exhausted.
var neuronFamily = family("neuron", []Rule{
	{Text: "nrt_tensor_allocate", Pattern: regexp.MustCompile(`(?i)nrt_tensor_allocate\b.{0,40}(status=4\b|allocation failure)`), Class: failure.ClassGPUOOM},
	{Text: "NRT_RESOURCE", Class: failure.ClassGPUOOM},
	{Text: "Failed to allocate", Pattern: regexp.MustCompile(`(?i)\bnrt\w*.{0,60}failed to allocate`), Class: failure.ClassGPUOOM},
})

// gaudiFamily: Intel Habana Gaudi HPUs through SynapseAI (TGI's and
// vLLM's Gaudi forks): synStatus 20, the device held by another process.
var gaudiFamily = family("gaudi", []Rule{
	{Text: "Device already acquired", Class: failure.ClassAcceleratorBusy},
	{Text: "Device acquire failed", Class: failure.ClassAcceleratorBusy, Tier: TierHint},
	// the device memory allocator of the PyTorch bridge ("[Rank:0] FATAL
	// ERROR :: MODULE:PT_DEVMEM Allocation failed for size::N (M)MB"),
	// printed after the bridge's "Exception in Launch thread..." that
	// only reports it
	{Text: "MODULE:PT_DEVMEM", Also: "Allocation failed", Class: failure.ClassGPUOOM},
	// any other module's fatal error of the bridge ("[Rank:0] FATAL ERROR
	// :: MODULE:PT_LAZY Error, ValidateSyncInputTensors tensor_data is
	// empty"; not PT_BRIDGE's "Exception in Launch thread...", which only
	// reports another module's line): the root-cause line, its class
	// depending on the message (an unsupported device generation, a bad
	// graph), so weak, as CANN's codes are
	{Name: "gaudi/pt-module-fatal", Text: "FATAL ERROR :: MODULE:PT_", Pattern: regexp.MustCompile(`MODULE:PT_[A-Z_]+ Error\b`), Class: failure.ClassEngineDied, Fatal: true, Weak: true},
})

// ascendFamily: Huawei Ascend NPUs through CANN (torch_npu, vllm-ascend,
// SGLang's NPU backend, llama.cpp's ggml-cann). CANN states each error
// as a code ("EE1001: [PID: N] DATE The argument is invalid.Reason:
// ...", E + module letter + 4 characters; ggml-cann relays it as "CANN
// error: EE1001: ..."); the line with the code is the cause, the Python
// RuntimeError after it ("The Inner error is reported as above") and
// ggml's "CANN error" abort only report it.
var ascendFamily = family("ascend", []Rule{
	// an operator CANN has no implementation of for this SoC
	{Name: "ascend/not-implemented-for-soc", Text: "is not implemented", Pattern: regexp.MustCompile(`\bE[A-Z][0-9A-Z]{4}: .*support for \S+ is not implemented`), Class: failure.ClassGPUArchUnsupported},
	// an operator whose kernel binary the installed operator package has
	// not for this SoC: the aclnn op's lookup of its registration fails
	// (EZ1001 "Get regInfo failed, The binary_info_config.json of
	// socVersion [ascend910] does not support opType [ApplyRotaryPosEmb]",
	// older and custom-op packages "The bin of socVersion [ascend910b] does
	// not support opType [X]", as torch_npu relays it in "call aclnnX
	// failed, detail:..."): the device generation lacks the kernel
	{Name: "ascend/op-not-built-for-soc", Text: "does not support opType", Pattern: regexp.MustCompile(`socVersion \[\w+\] does not support opType`), Class: failure.ClassGPUArchUnsupported},
	// CANN's catch-all codes (EE8888, EE9999 "Inner Error!"; Ascend's
	// error-code reference): the header names no cause, the runtime's own
	// lines indented below it do ("rtGetDeviceCount execution failed,
	// reason=driver error:internal error"), so it is only a hint; the
	// short form ggml-cann prints from aclGetRecentErrMsg ("CANN error:
	// EE9999: Inner Error!", no PID) puts the code's own line with its
	// cause after it ("EE9999: [PID: N] DATE Not allow to synchronize
	// captured stream ...[FUNC:...]")
	{Name: "ascend/inner-error", Text: "Inner Error", Pattern: regexp.MustCompile(`\bE[A-Z][0-9A-Z]{4}: (?:\[PID: \d+\].*\b)?Inner Error!?\s*$`), Class: failure.ClassEngineDied, Tier: TierHint, Below: true},
	// the runtime's device calls failing (rtGetDeviceCount,
	// rtSetDevice, rtGetDevice, rtSetDefaultDeviceId: "NAME execution
	// failed, reason=driver error:..."): no NPU can be used, as
	// cudaGetDeviceCount failing is for CUDA
	{Name: "ascend/device-call-failed", Text: "execution failed", Pattern: regexp.MustCompile(`\brt(?:Get|Set)(?:Default)?Device\w* execution failed\b`), Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch},
	// a code whose line is only the code's own sentence ("CANN error:
	// EL0003: [PID: N] DATE The argument is invalid.", no "Reason:"), then
	// "Solution: ..." and the runtime's "TraceBack (most recent call
	// last):" list indented below it: the header names no cause, the
	// first runtime line below does (as under "Inner Error!")
	{Name: "ascend/bare-code", Text: "[PID: ", Pattern: regexp.MustCompile(`\bE[A-Z][0-9A-Z]{4}: \[PID: \d+\] \S+ [^:\[]*\.\s*$`), Class: failure.ClassEngineDied, Tier: TierHint, Below: true},
	// the same header as CANN 8.x's error manager prints it to the log,
	// the code after its name ("[PID: N] DATE Invalid_Argument(EL0003):
	// The argument is invalid."), with the runtime's lines below
	{Name: "ascend/bare-named-code", Text: "[PID: ", Pattern: regexp.MustCompile(`\[PID: \d+\] \S+ \w+\(E[A-Z][0-9A-Z]{4}\): [^:\[]*\.\s*$`), Class: failure.ClassEngineDied, Tier: TierHint, Below: true},
	// the device's own report of a kernel that faulted on an AI core or
	// vector core ("The error from device(chipId:4, dieId:0), serial
	// number is 3, there is an exception of fftsplus aicore error, core id
	// is 13, ..."; older runtimes "The error from device(0), ..., there is
	// an aivec error, ..."): the cause that torch_npu's relay (a 507011
	// event query failing), ggml's "CANN error" abort and the HCCL
	// watchdog only report; the stream is lost (Fatal); weak, as what the
	// kernel met (a bad address, an operator bug) is not said
	{Name: "ascend/device-core-exception", Text: "The error from device(", Pattern: regexp.MustCompile(`The error from device\([^)]*\), serial number is \d+, there is an? (?:exception of )?(?:\w+ ){1,3}error\b`),
		Class: failure.ClassEngineDied, Fatal: true, Weak: true},
	// the runtime's own lines below such a header ("Convert memory address
	// from virtual to dma physical failed, retCode=0x7020014.[FUNC:
	// MemcpyAsyncTaskInitV3][FILE:memory_task.cc][LINE:694]"; CANN's
	// runtime logs each with the function, file and line that raised it):
	// the first is the cause, its class depending on the words, so weak;
	// a specific rule above (rtSetDevice failing) gives its class first
	{Name: "ascend/runtime-detail", Text: "[FUNC:", Pattern: regexp.MustCompile(`\s{4}\S.*\[FUNC:\w+\]\[FILE:[\w.]+\]\[LINE:\d+\]\s*$`), Class: failure.ClassEngineDied, Weak: true},
	// any other code: the root-cause line, its class depending on the
	// message (an invalid kernel argument, a device query refused), so weak
	{Name: "ascend/error-code", Text: "[PID: ", Pattern: regexp.MustCompile(`\bE[A-Z][0-9A-Z]{4}: \[PID: \d+\]`), Class: failure.ClassEngineDied, Weak: true},
	// the ACL runtime's stream synchronise failing with one of its
	// execution codes (acl_base.h ACL_ERROR_RT_*: 507xxx are the
	// runtime's internal and task errors, e.g. 507011 a stream sync
	// timeout, 507015 an AI Core exception, 507048; torch_npu's and
	// dlinfer's "ACL stream synchronize failed, error code:507048"): the
	// device's work failed and the stream is lost, so the engine cannot
	// go on even where its server stays up (Fatal)
	{Name: "ascend/stream-synchronize-failed", Text: "stream synchronize failed", Pattern: regexp.MustCompile(`(?i)\b(ACL|NPU|aclrt\w*) stream synchroni[sz]e failed\b`), Class: failure.ClassEngineDied, Fatal: true},
	{Name: "ascend/cann-error-code", Text: "CANN error: E", Pattern: regexp.MustCompile(`CANN error: E[A-Z][0-9A-Z]{4}\b`), Class: failure.ClassEngineDied, Weak: true},
})

// nativeFrameHints name the component of a native (C++, Objective-C)
// stack frame printed after a crash ("3  libmlx.dylib  0x...
// _ZN3mlx4core5metal6DeviceC2Ev"): the crash happened there.
var nativeFrameHints = []FrameHint{
	{Text: "blockscalemoe", Class: failure.ClassQuantKernelFailed},
	{Text: "marlin", Class: failure.ClassQuantKernelFailed},
	{Text: "machete", Class: failure.ClassQuantKernelFailed},
	{Text: "metal6device", Class: failure.ClassAcceleratorUnavailable},
	{Text: "metal::device", Class: failure.ClassAcceleratorUnavailable},
	{Text: "mtlcreatesystemdefaultdevice", Class: failure.ClassAcceleratorUnavailable},
}

// collectiveTimeoutStep is the advice of a collective operation that timed
// out between the GPUs of a multi-GPU run.
const collectiveTimeoutStep = "A collective operation (all-reduce, all-gather) between the GPUs never completed: one rank " +
	"stalled or its peer died. Run with NCCL_DEBUG=INFO to see which rank and link; try without the custom all-reduce " +
	"(vLLM/SGLang --disable-custom-all-reduce), check P2P and the interconnect (nvidia-smi topo -m, InfiniBand), and " +
	"raise the distributed timeout only when the step is legitimately slow."

// ncclStep is the advice of NCCL/RCCL failing between the GPUs or nodes
// of a run, whatever the engine (the remedies are NCCL's and the
// container's).
const ncclStep = "NCCL (RCCL on AMD) failed between the GPUs or nodes: rerun with NCCL_DEBUG=INFO to see which " +
	"transport fails; in a container give it shared memory and IPC (--ipc=host, or --shm-size=16g); where the GPUs " +
	"have no peer-to-peer path try NCCL_P2P_DISABLE=1; across nodes check the interface (NCCL_SOCKET_IFNAME) and " +
	"InfiniBand (NCCL_IB_DISABLE=1 to test without it)."

// shmFullStep is the advice when /dev/shm has no space left for NCCL's
// segments.
const shmFullStep = "Shared memory (/dev/shm) is full: remove the segments earlier runs left there (nccl-*, psm_*; " +
	"df -h /dev/shm shows the use), or start the container with a fresh, larger /dev/shm (--shm-size=16g or --ipc=host; " +
	"in Kubernetes an emptyDir with medium: Memory mounted at /dev/shm)."

// ncclUsageStep is the advice when NCCL refuses a call as invalid usage.
const ncclUsageStep = "NCCL refused the engine's call as invalid usage (ncclInvalidUsage): most often two ranks " +
	"share one GPU or the ranks disagree on the layout. Rerun with NCCL_DEBUG=WARN to see the reason; check that each " +
	"rank sees its own GPU (CUDA_VISIBLE_DEVICES, one process per GPU) and that every node starts the same world " +
	"size and parallel sizes; otherwise report it to the engine with that output."

// peerAccessStep is the advice when GPUs cannot map each other's memory
// (peer access, CUDA IPC), which custom all-reduce kernels need.
const peerAccessStep = "The GPUs cannot map each other's memory (peer access or CUDA IPC), which the engine's custom " +
	"all-reduce needs: turn it off and let NCCL do the all-reduce (vLLM and SGLang --disable-custom-all-reduce, " +
	"TensorRT-LLM allreduce_strategy: NCCL), keep tensor-parallel ranks on one node, check nvidia-smi topo -m; in a " +
	"container use --ipc=host."

// asyncCrashTexts are the CUDA runtime's messages of a kernel that
// crashed (cudaGetErrorString of 700, 716, 719, 710, 715): reported by
// whichever call comes next, so they name no call's own failure.
var asyncCrashTexts = []string{"illegal memory access was encountered", "misaligned address",
	"unspecified launch failure", "device-side assert triggered", "illegal instruction was encountered"}

// notAsyncCrash is a Lookup that gives class unless the rest of the line
// (the pattern's last submatch) is one of asyncCrashTexts.
func notAsyncCrash(class failure.Class) func(m []string) (failure.Class, bool) {
	return func(m []string) (failure.Class, bool) {
		rest := strings.ToLower(m[len(m)-1])
		for _, t := range asyncCrashTexts {
			if strings.Contains(rest, t) {
				return "", false
			}
		}
		return class, true
	}
}

// ncclFamily: NCCL and RCCL, custom all-reduce and CUDA IPC between the
// GPUs of a multi-GPU run: the host's interconnect, shared memory or
// peer access is what fails.
var ncclFamily = family("nccl", []Rule{
	// NCCL's "Last error:" detail (NCCL's shm transport,
	// src/transport/shm.cc): /dev/shm cannot hold its segments
	// with ENOSPC named (shmutils.cc: "..., error: No space left on
	// device (28)"): /dev/shm is full, of earlier runs' segments or too
	// small for this one's
	{Name: "nccl/shared-memory-segment-no-space", Text: "Error while creating shared memory segment", Also: "No space left on device", Class: failure.ClassDiskFull, NextStep: shmFullStep},
	{Text: "Error while creating shared memory segment", Class: failure.ClassHostCapability, NextStep: shmStep},
	// "unhandled system error" / ncclSystemError: "System call (e.g.
	// socket, malloc) or external library call failed or device error",
	// a wrapper whose cause is the detail NCCL prints after it: a hint
	{Text: "unhandled system error", Pattern: regexp.MustCompile(`(?i)nccl`), Class: failure.ClassHostCapability, Tier: TierHint, NextStep: ncclStep},
	{Text: "NCCL error", Pattern: regexp.MustCompile(`(?i)nccl error.{0,80}(unhandled cuda error|internal error|remote process exited|network error)`), Class: failure.ClassHostCapability, NextStep: ncclStep},
	// ncclInvalidUsage: "the call to NCCL is incorrect, usually a
	// programming error" (nccl src/misc/utils.cc ncclGetErrorString):
	// the engine's own call or rank layout, not the host (host_capability
	// was wrong strongly at first sight, r5); weak: which call the log
	// seldom says
	{Text: "invalid usage", Also: "nccl", Class: failure.ClassEngineDied, Weak: true, NextStep: ncclUsageStep},
	{Text: "ncclSystemError", Class: failure.ClassHostCapability, Tier: TierHint, NextStep: ncclStep},
	{Text: "ncclUnhandledCudaError", Class: failure.ClassHostCapability, NextStep: ncclStep},
	{Text: "ncclInternalError", Class: failure.ClassHostCapability, NextStep: ncclStep},
	{Text: "ncclRemoteError", Class: failure.ClassHostCapability, NextStep: ncclStep},
	{Text: "peer access is not supported between these two devices", Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	// a collective that never completed: one rank stalled (a hang, a
	// crashed peer, a link that stopped), not a missing host feature
	{Text: "Watchdog caught collective operation timeout", Class: failure.ClassEngineDied, NextStep: collectiveTimeoutStep},
	{Text: "cudaIpcOpenMemHandle", Pattern: regexp.MustCompile(`(?i)cudaIpcOpenMemHandle.{0,80}(fail|error|invalid)|(fail|error).{0,80}cudaIpcOpenMemHandle`), Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	// the same call in HIP (hipIpcOpenMemHandle) and Level Zero
	// (zeMemOpenIpcHandle, under oneCCL's collectives on Intel GPUs: "ze
	// error at zeMemOpenIpcHandle, code: ZE_RESULT_ERROR_INVALID_ARGUMENT")
	{Text: "hipIpcOpenMemHandle", Pattern: regexp.MustCompile(`(?i)hipIpcOpenMemHandle.{0,80}(fail|error|invalid)|(fail|error).{0,80}hipIpcOpenMemHandle`), Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	{Text: "zeMemOpenIpcHandle", Pattern: regexp.MustCompile(`(?i)zeMemOpenIpcHandle.{0,80}(fail|error|invalid)|(fail|error).{0,80}zeMemOpenIpcHandle`), Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	{Text: "ipc open mem handle", Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	// Weak: what failed depends on the step (a CUDA IPC handle the host
	// refuses, or a graph capture in warmup); wrong strongly at first sight
	// (testdata/first-sight.json, r2)
	// A kernel's crash the custom all-reduce's check reports only because
	// it is the next CUDA call (vLLM's CUDACHECK: "Failed: Cuda error
	// .../custom_all_reduce.cuh:594 'an illegal memory access was
	// encountered'"): CUDA errors are asynchronous, so the crash is the
	// engine's, not the host's IPC (asyncCrash); the crash rules take it.
	{Text: "custom_all_reduce", Pattern: regexp.MustCompile(`(?i)(?:(?:error|fail|assert).{0,120}custom_all_reduce|custom_all_reduce.{0,120}(?:error|fail|assert))(.*)$`),
		Lookup: notAsyncCrash(failure.ClassHostCapability), Class: failure.ClassHostCapability, Weak: true, NextStep: peerAccessStep},
	{Text: "rcclSystemError", Class: failure.ClassHostCapability, NextStep: ncclStep},
	{Text: "rcclUnhandledCudaError", Class: failure.ClassHostCapability, NextStep: ncclStep},
	{Text: "DistBackendError", Pattern: regexp.MustCompile(`(?i)DistBackendError.{0,40}(nccl|rccl)`), Class: failure.ClassHostCapability, NextStep: ncclStep},
	// NIXL, the KV-transfer library of disaggregated serving (vLLM's
	// NixlConnector, Dynamo's connector, LMCache: "NIXL is not available"
	// when its import failed, logged and raised): the transfer stack the
	// profile asks for cannot be used on this host (the nixl package or
	// its UCX/RDMA libraries), or the install lacks it (Or)
	{Name: "nccl/nixl-not-available", Text: "NIXL is not available", Class: failure.ClassHostCapability, Or: failure.ClassInvalidConfiguration, NextStep: nixlStep,
		Source: "vllm-project/vllm vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py (NixlConnectorWorker.__init__)"},
})

// nixlStep is the advice when the NIXL transfer library cannot be used.
const nixlStep = "The KV connector needs NIXL, and it could not be imported here: install the nixl package the engine " +
	"pins (pip install nixl, or the engine's container image), check that its UCX libraries load (the import warning " +
	"earlier in the log says which), or configure a KV connector this host has."
