package engine

import "github.com/hiro-dev/hiro/internal/failure"

// nextSteps is the generic advice per class; an Engine may override it.
var nextSteps = map[failure.Class]string{
	failure.ClassDriverMismatch: "The NVIDIA driver is older than the CUDA runtime the engine was built with: " +
		"update the driver (nvidia-smi shows the highest CUDA version it supports), or use an engine build for that CUDA version.",
	failure.ClassHostCapability: "The host lacks a capability the engine needs (the root cause names it): shared memory " +
		"or IPC in a container (--shm-size, --ipc=host), peer access between the GPUs (NCCL_P2P_DISABLE=1, the engine's " +
		"custom all-reduce off), pinned memory or UVA under WSL2, or a CPU instruction set (a build for this CPU).",
	failure.ClassGPUArchUnsupported: "The engine or its PyTorch has no kernels for this GPU architecture: " +
		"install a build that targets it (e.g. a CUDA 12.8+ wheel for sm_120 / RTX 50xx), or use another engine.",
	failure.ClassPortInUse: "Another process holds the port: stop it (ss -ltnp shows who) or give the profile another port.",
	failure.ClassAcceleratorBusy: "Other processes hold GPU memory (nvidia-smi lists them): stop them, " +
		"or lower the engine's memory share (vLLM --gpu-memory-utilization) to what is free.",
	failure.ClassModelLoadFailed: "The engine could not load the model: check the artifact path and that this engine version " +
		"supports the architecture and format (update the engine, or convert the model).",
	failure.ClassQuantKernelFailed: "A quantization kernel failed on this GPU: try another kernel or quantization method " +
		"(e.g. vLLM --quantization awq instead of awq_marlin), or a different quant of the model.",
	failure.ClassGPUOOM: "GPU memory ran out: lower the context length (--max-model-len / --ctx-size) or " +
		"gpu_memory_utilization, offload fewer layers, or use a smaller quant of the model.",
	failure.ClassContextExceedsKV: "The KV cache cannot hold one request of the configured context: lower the max " +
		"model length to what the cache holds (the facts suggested_max_model_len or kv_cache_tokens, when the " +
		"log states them), or raise gpu_memory_utilization.",
	failure.ClassReadyTimeout: "The engine did not become ready in time: read the log tail for where it stopped; " +
		"raise the ready or stall timeout if it was still making progress.",
	failure.ClassWarmupFailed: "Warmup (CUDA graph capture, profiling run) failed: retry with CUDA graphs off " +
		"(vLLM --enforce-eager, SGLang --disable-cuda-graph) or a smaller batch size.",
	failure.ClassTokenizerTemplate: "The chat template is missing or broken: give the engine a chat template " +
		"(e.g. vLLM --chat-template, llama.cpp --jinja / --chat-template) or use a model that ships one.",
	failure.ClassEngineDied: "The engine died without a known cause: read the log tail; check the kernel log " +
		"(dmesg: OOM killer, Xid errors) and host memory; rerun to see whether it is deterministic.",
	failure.ClassIdentityMismatch: "The engine serves a different model than the profile expects: fix the " +
		"profile's model id or the served model name (vLLM --served-model-name, llama.cpp --alias).",
	failure.ClassStructuredOutputRejected: "The engine rejected the JSON Schema response_format: check its " +
		"structured-output support and backend (guided decoding), or simplify the schema.",
	failure.ClassStructuredOutputFailOpen: "The engine accepted the schema but did not enforce it: do not trust " +
		"its structured output; use another grammar backend or engine, and keep client-side validation.",
	failure.ClassStructuredOutputCrash: "A structured request crashed the engine: avoid that schema feature or " +
		"grammar backend with this engine version.",
	failure.ClassProbeFailed: "The server is up but its probe completion failed or replied wrong: read the " +
		"completion's error in the root cause; check the model id and the chat template, raise ready_probe.timeout " +
		"or max_tokens if the reply was cut, and fix ready_probe.expect if the model answers differently.",
	failure.ClassHostOOM: "Host memory ran out (the engine refused the model, a CPU buffer failed, or the kernel's OOM " +
		"killer ended it): use a smaller model or quant, a shorter context, offload more to the GPU, stop other " +
		"memory users, or raise the container's memory limit.",
	failure.ClassAcceleratorUnavailable: "The engine found no usable accelerator and would serve on the CPU: check " +
		"CUDA_VISIBLE_DEVICES, the container's GPU access (--gpus all and the NVIDIA container toolkit), the driver " +
		"(nvidia-smi) and that its libraries (libcuda.so) are visible to the engine.",
	failure.ClassDiskFull: "A file system the engine writes to is full (the root cause names the path): free space there " +
		"(old models in the Hugging Face cache: huggingface-cli delete-cache; Ollama's models folder), or move the " +
		"writes to a larger disk: HF_HOME / HF_HUB_CACHE for downloads, TMPDIR for temporary files (Ollama extracts " +
		"its runners there), OLLAMA_MODELS for Ollama's models; df -h shows what is full.",
	failure.ClassModelAccessDenied: "The model hub refused the model (401/403, or a gated repository): accept the model's " +
		"licence on its hub page with the account whose token the engine uses, and give the engine that token " +
		"(HF_TOKEN, or huggingface-cli login for the user the engine runs as); check the model id for a typo.",
	failure.ClassPermissionDenied: "The engine may not read or write a path it needs (the root cause names it): give the " +
		"user the engine runs as access (ls -ld the path; chown or chmod it; in a container, the volume's owner and " +
		"SELinux label :Z), or point the engine at a folder it owns (HF_HOME, OLLAMA_MODELS, --download-dir).",
	failure.ClassInvalidConfiguration: "The engine refused the configuration it was given (the root cause names the flag, " +
		"option or variable): fix the profile's args or env (or the plan variant that changed them) to what this engine " +
		"version accepts (its --help lists its flags); hiro passes the server only the profile's env and inherit_env, so " +
		"a variable it needs (HOME) goes there. Then rerun: this failure says nothing about the model.",
	failure.ClassShutdownLeak: "Processes of the engine survived the stop: kill the listed pids, and make the " +
		"launcher keep its children in its process group.",
}

// engineCrashStep is engine_died's advice when a log line names the crash
// (a CUDA illegal memory access, a scheduler exception): the cause is
// known, only not one of the classes.
const engineCrashStep = "The engine crashed; the root-cause line says where. Rerun to see whether it is " +
	"deterministic, try the engine's safer modes (vLLM --enforce-eager, SGLang --disable-cuda-graph), another engine " +
	"version, and report the line upstream with the log tail."

// NextStep returns generic advice for a person facing a failure of class
// c; an empty string for an unknown class. Engine.NextStep refines it per
// kind.
func NextStep(c failure.Class) string { return nextSteps[c] }
