package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Signatures and parsers shared by several kinds. A kind's own list comes
// first so its specific signatures win.

// cudaSignatures are CUDA and host errors any GPU engine can print.
var cudaSignatures = []Signature{
	{Text: "driver version is insufficient", Class: failure.ClassDriverMismatch},
	{Text: "NVIDIA driver on your system is too old", Class: failure.ClassDriverMismatch},
	{Text: "forward compatibility was attempted on non supported HW", Class: failure.ClassDriverMismatch},
	{Text: "no kernel image is available", Class: failure.ClassGPUArchUnsupported},
	{Text: "is not compatible with the current PyTorch installation", Class: failure.ClassGPUArchUnsupported, Tier: TierHint},
	{Text: "busy or unavailable", Pattern: regexp.MustCompile(`(?i)CUDA.capable device\(s\) is/are busy or unavailable`), Class: failure.ClassAcceleratorBusy},
	{Text: "CUDA out of memory", Class: failure.ClassGPUOOM},
	{Text: "OutOfMemoryError", Class: failure.ClassGPUOOM},
	{Text: "Illegal instruction", Class: failure.ClassHostCapability},
	{Text: "Address already in use", Class: failure.ClassPortInUse},
	{Text: "address already in use", Class: failure.ClassPortInUse},
}

// ggmlSignatures are llama.cpp's (and so Ollama's runner's) errors.
var ggmlSignatures = []Signature{
	{Text: "unknown model architecture", Class: failure.ClassModelLoadFailed},
	{Text: "unable to allocate", Pattern: regexp.MustCompile(`unable to allocate (CUDA|ROCm|Vulkan|Metal|SYCL)\d* buffer`), Class: failure.ClassGPUOOM},
	{Text: "cudaMalloc failed: out of memory", Class: failure.ClassGPUOOM, Tier: TierHint},
	{Text: "failed to allocate", Pattern: regexp.MustCompile(`failed to allocate (CUDA|ROCm|Vulkan|Metal|SYCL)\d* buffer`), Class: failure.ClassGPUOOM, Tier: TierHint},
	{Text: "couldn't bind HTTP server socket", Class: failure.ClassPortInUse},
	{Text: "failed to parse grammar", Class: failure.ClassStructuredOutputFailOpen},
	{Text: "error loading model", Class: failure.ClassModelLoadFailed},
}

// ggmlWrappers restate a llama.cpp failure explained by an earlier line.
var ggmlWrappers = []string{
	"exiting due to model loading error",
	"llama_model_load_from_file_impl: failed to load model",
	"llama_load_model_from_file: failed to load model",
	"srv    load_model: failed to load model",
	"cleaning up before exit",
}

// ggmlFacts are llama.cpp's numbers.
var ggmlFacts = []FactParser{
	{Trigger: "cudaMalloc failed", Pattern: regexp.MustCompile(`allocating ([\d.]+) MiB on device \d+: cudaMalloc failed`), Names: []string{"failed_alloc_mib"}},
	{Trigger: "MiB free", Pattern: regexp.MustCompile(`using device \S+ \(.*\) - (\d+) MiB free`), Names: []string{"device_free_mib"}},
	{Trigger: "model buffer size", Pattern: regexp.MustCompile(`\w+ model buffer size = +([\d.]+) MiB`), Names: []string{"model_buffer_mib"}},
	{Trigger: "KV buffer size", Pattern: regexp.MustCompile(`\w+ KV buffer size = +([\d.]+) MiB`), Names: []string{"kv_buffer_mib"}},
	{Trigger: "n_ctx", Pattern: regexp.MustCompile(`n_ctx += (\d+)`), Names: []string{"context_tokens"}},
}

// shardFacts reads the safetensors progress bar (vLLM, SGLang).
var shardFacts = []FactParser{
	{Trigger: "checkpoint shards", Pattern: regexp.MustCompile(`checkpoint shards:.*?(\d+)/(\d+)`), Names: []string{"shards_loaded", "shards_total"}},
}

// pythonWrappers restate a Python failure explained by a later line.
var pythonWrappers = []string{
	"Traceback (most recent call last)",
	"See root cause above",
}

// num is a regexp fragment for a decimal number that may be negative.
const num = `(-?[\d.]+)`
