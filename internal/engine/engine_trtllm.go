package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// trtllm: NVIDIA TensorRT-LLM's trtllm-serve, a FastAPI/uvicorn server in
// front of the C++ executor; GET /health answers 200 once the executor is
// up, /v1/models lists the model. Texts from NVIDIA/TensorRT-LLM
// (tensorrt_llm/serve/openai_server.py at
// e7f7345e31e574b5d0918b756b871882c7346b3c; the KV cache line from
// cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, read in the stored
// index because the repository is too large to fetch): "[TRT-LLM] [I]"
// Python lines, "[TensorRT-LLM][ERROR]" C++ errors, "Loading weights",
// "CUDA graph warmup", "[MemUsageChange] Allocated ... for max tokens in
// paged KV cache", "Failed to initialize executor on rank N" (a worker's
// error, relayed), "Executor worker returned error" (the proxy's wrapper).
// trtllmRuntime are the TensorRT-LLM C++ runtime's errors, whichever
// server hosts it (trtllm-serve, Triton's tensorrtllm backend, served as
// the openai kind): cpp/tensorrt_llm/batch_manager's check that the paged
// KV cache holds one sequence of the configured length.
var trtllmRuntime = family("trtllm", []Rule{
	// the PyTorch backend's executor creation, after the weights: the KV
	// cache and the executor's resources (tensorrt_llm/_torch/pyexecutor/
	// py_executor_creator.py observe_creation_stage: "Executor creation
	// failed due to insufficient GPU memory. The following component could
	// not be created: KV cache")
	{Text: "Executor creation failed due to insufficient GPU memory", Class: failure.ClassGPUOOM, Phase: failure.PhaseKVInit},
	// the C++ runtime's world: the MPI ranks launched do not match the
	// engine's parallelism (cpp/tensorrt_llm/runtime/worldConfig.cpp
	// WorldConfig::mpi: TLLM_CHECK(mpiSize == tp * pp) in the 0.x
	// releases, later TLLM_CHECK_WITH_INFO "MPI size %d != TP size %d * PP
	// size %d" and "... * CP Size %d"): the launch's rank count (mpirun
	// -n, Triton's world_size) is wrong for the engine built
	{Text: "mpiSize == tp * pp", Class: failure.ClassInvalidConfiguration},
	{Text: "MPI size ", Pattern: regexp.MustCompile(`MPI size \d+ != TP size \d+ \* PP size \d+`), Class: failure.ClassInvalidConfiguration},
	// the same stage's failure the creator only suspects is memory
	// ("... with an error which might indicate insufficient GPU memory")
	{Text: "Executor creation failed with an error which might indicate insufficient GPU memory", Class: failure.ClassGPUOOM,
		Phase: failure.PhaseKVInit, Tier: TierHint},
	// TensorRT's engine deserialisation (stdArchiveReader: "Serialization
	// assertion stdVersionRead == kSERIALIZATION_VERSION failed.Version tag
	// does not match"): the engine was built by another TensorRT version
	{Text: "Version tag does not match", Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad},
	// TensorRT's other refusals of a serialised engine (its runtime's
	// deserialisation: "The engine plan file is not compatible with this
	// version of TensorRT, expecting library version A got B, please
	// rebuild.", "The engine plan file is generated on an incompatible
	// device, expecting compute X got compute Y, please rebuild.", and
	// the magic tag of a file that is no plan): the engine must be built
	// again for this runtime and GPU
	{Name: "trtllm/engine-plan-incompatible", Text: "The engine plan file is", Pattern: regexp.MustCompile(`The engine plan file is (not compatible with this version of TensorRT|generated on an incompatible device)`),
		Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad, NextStep: trtPlanStep},
	{Text: "Serialization assertion", Pattern: regexp.MustCompile(`Serialization assertion \S*[mM]agicTag\S* == \S+ failed`), Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad, NextStep: trtPlanStep},
	// TensorRT-LLM's runtime after such a refusal (tllmRuntime.cpp:
	// "Failed to deserialize cuda engine"): only a report of it
	{Text: "Failed to deserialize cuda engine", Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad, Tier: TierHint, NextStep: trtPlanStep},
	// the attention plugin's check when the engine starts (common/
	// attentionOp.cpp: "FP8 FMHA cannot be enabled because Context FMHA is
	// not supported"): no context FMHA kernel for this GPU and dtype
	{Text: "Context FMHA is not supported", Class: failure.ClassGPUArchUnsupported, Phase: failure.PhaseLoad},
	{Text: "maxTokensInPagedKvCache", Pattern: regexp.MustCompile(`maxTokensInPagedKvCache.{0,40}must be large enough`), Class: failure.ClassContextExceedsKV, Phase: failure.PhaseKVInit},
})

// trtPlanStep is the advice when TensorRT refuses a serialised engine.
const trtPlanStep = "TensorRT cannot read this engine file: it was built by another TensorRT version or for another GPU. " +
	"Build the engine again (trtllm-build) inside the container that serves it, on the GPU model it will run on, or " +
	"serve it with the container release it was built with."

// trtllmFacts are the TensorRT-LLM runtime's numbers, whichever server
// hosts it: the paged KV cache's memory and tokens (the C++ runtime's
// MemUsageChange line; older releases: "Using N tokens in paged KV
// cache."), the weights' memory.
var trtllmFacts = []FactParser{
	{Trigger: "for max tokens in paged KV cache", Pattern: regexp.MustCompile(`Allocated ([\d.]+) GiB for max tokens in paged KV cache \((\d+)\)`), Names: []string{"kv_cache_memory_gib", "kv_cache_tokens"}},
	{Trigger: "tokens in paged KV cache", Pattern: regexp.MustCompile(`Using (\d+) tokens in paged KV cache`), Names: []string{"kv_cache_tokens"}},
	{Trigger: "for model weights", Pattern: regexp.MustCompile(`Use ([\d.]+) GB for model weights`), Names: []string{"model_memory_gib"}},
	// the KV cache too small for one sequence (the batch manager's check:
	// "maxTokensInPagedKvCache (N) must be large enough to process at
	// least 1 sequence to completion", also inside Triton's "Failed to
	// create instance" line)
	{Trigger: "maxTokensInPagedKvCache (", Pattern: regexp.MustCompile(`maxTokensInPagedKvCache \((\d+)\) must be large enough`), Names: []string{"kv_cache_tokens"}},
}

func init() {
	register(&Engine{
		Kind:       "trtllm",
		HealthPath: "/health",
		health:     statusHealth,
		markers: joinLists([]Marker{
			{Text: "for max tokens in paged KV cache", Phase: failure.PhaseKVInit},
			{Text: "allocation in IExecutionContext creation", Phase: failure.PhaseKVInit},
			{Text: "CUDA graph warmup", Phase: failure.PhaseWarmup},
			// the PyTorch backend's autotuner runs the kernels before
			// serving (tensorrt_llm/_torch/autotuner.py)
			{Text: "Autotuning process starts", Phase: failure.PhaseWarmup},
			// the PyTorch backend's weights budget ("Use 20.66 GB for model
			// weights.") comes before the weights are read (the loading
			// bars follow): load; the memory profile after them ("Memory
			// used after loading model weights ... in memory usage
			// profiling") and the executor's sizes ("max_seq_len=N,
			// max_num_requests=") are the KV cache's estimation
			{Text: "for model weights", Phase: failure.PhaseLoad},
			{Text: "in memory usage profiling", Phase: failure.PhaseKVInit},
			{Text: "max_num_requests=", Pattern: regexp.MustCompile(`\bmax_seq_len=\d+, max_num_requests=\d+`), Phase: failure.PhaseKVInit},
			// the PyTorch backend's model engine has built the model and
			// read its weights ("Model init total -- 387.22s"): the KV
			// cache's estimation run comes next
			{Text: "Model init total -- ", Phase: failure.PhaseKVInit},
			{Text: "Loading weights", Phase: failure.PhaseLoad},
			// the executor takes its GPU (runtime/utils: "Rank 0 is using GPU
			// 0"), then deserialises the engine; Triton's tensorrtllm backend
			// loads its models (model_lifecycle.cc: "loading: tensorrt_llm:1")
			{Text: " is using GPU ", Pattern: regexp.MustCompile(`Rank \d+ is using GPU \d+`), Phase: failure.PhaseLoad},
			{Text: "loading: ", Pattern: regexp.MustCompile(`\.cc:\d+\] "?loading: \S+:\d+`), Phase: failure.PhaseLoad},
			{Text: "Engine loaded and ready to serve", Phase: failure.PhaseReadyWait},
			// Triton Inference Server serving TensorRT-LLM engines (its
			// tensorrtllm backend, whose "loading: " is above): the services
			// it starts once every model is loaded (grpc_server.cc,
			// http_server.cc at triton-inference-server/server r24.05, as in
			// engine_openai.go)
			{Text: "Started GRPCInferenceService at", Phase: failure.PhaseReadyWait},
			{Text: "Started HTTPService at", Phase: failure.PhaseReadyWait},
		}, genericMarkers),
		signatures: joinLists([]Rule{
			{Text: "undefined symbol", Pattern: regexp.MustCompile(`(?i)(ImportError|OSError).{0,200}undefined symbol`), Class: failure.ClassEngineDied},
		}, trtllmRuntime, pythonSignatures, hostFamilies),
		frameHints:  joinLists([]FrameHint{{Text: "blockscalemoe", Class: failure.ClassQuantKernelFailed}, {Text: "fp4", Class: failure.ClassQuantKernelFailed}}, pythonFrameHints),
		framePhases: pythonFramePhases,
		wrappers: joinLists(pythonWrappers, []string{
			"Executor worker returned error",
			"Executor worker initialization error",
		}),
		facts:   joinLists(shardFacts, trtllmFacts),
		devices: pythonDevices,
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower kv_cache_config.free_gpu_memory_fraction, --max_batch_size or " +
				"--max_num_tokens, or use more GPUs (--tp_size).",
			failure.ClassQuantKernelFailed: "A TensorRT-LLM quantized kernel failed on this model or GPU (an FP4/FP8 MoE GEMM): " +
				"try another backend or quantization, another --tp_size / --ep_size, or another TensorRT-LLM release.",
		},
	})
}
