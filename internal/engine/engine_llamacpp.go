package engine

import (
	"github.com/hiro-dev/hiro/internal/failure"
)

// llama.cpp's llama-server: GET /health answers 503 {"error":{"message":
// "Loading model"}} while loading, 200 once the model is loaded.
func init() {
	register(&Engine{
		Kind:       "llamacpp",
		HealthPath: "/health",
		health:     statusHealth,
		markers:    ggmlMarkers,
		signatures: joinLists(ggmlSignatures, hostFamilies),
		wrappers:   ggmlWrappers,
		facts:      ggmlFacts,
		devices:    ggmlDevices,
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower --ctx-size, offload fewer layers (--n-gpu-layers), " +
				"quantize the KV cache (--cache-type-k q8_0), or use a smaller quant of the model.",
			failure.ClassHostOOM: "Host memory ran out: lower --ctx-size, use --mmap (the default; not --no-mmap), " +
				"offload more layers to the GPU (--n-gpu-layers), or use a smaller quant of the model.",
			failure.ClassModelLoadFailed: "llama.cpp could not load the GGUF: check the path and that the file is complete " +
				"(its SHA-256 against the source), and update llama.cpp when the architecture is newer than the build.",
			failure.ClassTokenizerTemplate: "The chat template could not be used: start llama-server with --jinja, or give one " +
				"with --chat-template NAME or --chat-template-file FILE.",
			failure.ClassContextExceedsKV: "The request does not fit the context: raise --ctx-size (per slot: ctx-size / --parallel), " +
				"or lower --parallel, or shorten the prompt.",
			failure.ClassAcceleratorUnavailable: "llama.cpp serves on the CPU: use a build with the GPU backend (GGML_CUDA=on), " +
				"make the device visible (CUDA_VISIBLE_DEVICES, --gpus all in a container), and set --n-gpu-layers.",
			failure.ClassHostCapability: "The CPU lacks an instruction this llama.cpp build uses (SIGILL): build with " +
				"GGML_NATIVE=ON on this host, or use a build for an older CPU (no AVX-512 / AVX2).",
		},
	})
}

// ggmlMarkers are llama.cpp's phases, shared with Ollama's runner and
// llama.cpp-based openai servers (llamafile). Served requests: slot and
// request-parameter lines (the access log is read for every kind).
var ggmlMarkers = []Marker{
	{Text: "params_from_", Phase: failure.PhaseInference},
	{Text: "launch_slot_", Phase: failure.PhaseInference},
	{Text: "get_availabl", Phase: failure.PhaseInference},
	{Text: "prompt eval time", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
	{Text: "is processing [task", Phase: failure.PhaseInference},
	{Text: "model loaded", Phase: failure.PhaseReadyWait},
	{Text: "server is listening on", Phase: failure.PhaseReadyWait},
	{Text: "starting the main loop", Phase: failure.PhaseReadyWait},
	{Text: "all slots are idle", Phase: failure.PhaseReadyWait},
	{Text: "llama server listening", Phase: failure.PhaseReadyWait},
	{Text: `"HTTP server listening"`, Phase: failure.PhaseReadyWait},
	{Text: "warming up the model", Phase: failure.PhaseWarmup},
	// the compute buffers are the last allocation: the graph runs next
	{Text: "compute buffer size", Phase: failure.PhaseWarmup},
	// the graph allocator reserving the context's compute buffers
	// (ggml/src/ggml-alloc.c ggml_gallocr_reserve_n: "failed to allocate
	// %s buffer of size %zu"): the context's buffers are being sized, as
	// after "llama_kv_cache", also where the engine logs no context line
	// first (Ollama's own engine after "model weights"); the device
	// allocator's failure just before it is that step's (Continues)
	{Text: "ggml_gallocr_reserve_n", Phase: failure.PhaseKVInit, After: failure.PhaseLoad, Continues: true},
	{Text: "llama_context: constructing llama_context", Phase: failure.PhaseKVInit},
	{Text: "llama_new_context_with_model", Phase: failure.PhaseKVInit},
	{Text: "llama_kv_cache", Phase: failure.PhaseKVInit},
	// a model loaded once the server listens (llama-server's HTTP server
	// starts before the model loads; LM Studio and other wrappers load
	// on demand) is a load again (Reload)
	{Text: "loading model", Pattern: reLoadingModel, Phase: failure.PhaseLoad, Reload: true},
	{Text: "llama_model_loader: loaded meta data", Phase: failure.PhaseLoad, Reload: true},
}
