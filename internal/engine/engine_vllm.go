package engine

import (
	"context"
	"fmt"
	"net/http"
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// vLLM: the OpenAI-compatible server answers HTTP only once the engine is
// built, so /health 200 means ready; 503 means the engine core is dead.
// vllmNoCacheBlocks: vLLM's KV cache sizing found no memory left, in
// vLLM and in the forks served as openai (vllm-ascend). Weak: V1 counts
// memory other processes hold on the GPU against this instance's
// gpu_memory_utilization budget, so the same line ends a model too large
// for it and a second instance on a busy GPU (accelerator_busy, wrong
// strongly at first sight: testdata/first-sight.json, r5); the log does
// not say which.
var vllmNoCacheBlocks = Rule{Text: "No available memory for the cache blocks", Class: failure.ClassGPUOOM, Phase: failure.PhaseKVInit, Weak: true,
	NextStep: "No GPU memory was left for the KV cache within --gpu-memory-utilization: if another process uses " +
		"this GPU (nvidia-smi), vLLM counts its memory against this budget, so stop it or raise the budget to cover " +
		"both; otherwise the weights and activations fill it: raise --gpu-memory-utilization, lower " +
		"--max-num-seqs or --max-model-len, or use a smaller quant / more GPUs (--tensor-parallel-size)."}

// vllmMemoryRules: vLLM's check of the device's free memory at start-up
// (vllm/v1/worker/gpu_worker.py init_device: "Free memory on device (F/T
// GiB) on startup is less than desired GPU memory utilization (U, R
// GiB)"): other processes hold the memory; in vLLM and in the forks and
// wrappers served as openai (GPUStack, vllm-ascend, KAITO, llm-scaler).
var vllmMemoryRules = []Rule{
	{Text: "less than desired GPU memory utilization", Class: failure.ClassAcceleratorBusy},
}

// vllmKVRules: vLLM's KV cache sizing errors, in vLLM and in the forks
// and wrappers served as openai: raised in kv_init, after "Available KV
// cache memory" (a kv_init marker) was logged (vllm/worker/worker.py
// raise_if_cache_size_invalid in V0, vllm/v1/core/kv_cache_utils.py
// check_enough_kv_cache_memory in V1).
var vllmKVRules = []Rule{
	{Text: "estimated maximum model length is", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseKVInit},
	{Text: "larger than the maximum number of tokens that can be stored in KV cache", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseKVInit},
	{Text: "larger than the available KV cache memory", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseKVInit},
	vllmNoCacheBlocks,
}

// vllmWarmupRules: vLLM's own words for a failure of its warmup runs,
// which come after the KV cache is allocated (the KV cache's markers
// are kv_init): the sampler's dummy run of max_num_seqs requests
// (vllm@00f6c9b v1/worker/gpu_model_runner.py _dummy_sampler_run:
// "CUDA out of memory occurred when warming up sampler with N dummy
// requests"), in vLLM and in the forks served as openai.
var vllmWarmupRules = []Rule{
	{Text: "out of memory occurred when warming up", Class: failure.ClassGPUOOM, Phase: failure.PhaseWarmup},
}

// vllmSchedulerRules: V0's scheduler when it preempts a sequence by
// swapping its KV blocks to the host and the CPU swap space (--swap-space,
// GiB per GPU) is full (core/scheduler.py _swap_out: "Aborted due to the
// lack of CPU swap space. Please increase the swap space to avoid this
// error."): the engine loop dies under load, in vLLM and in wrappers that
// serve it (Dynamo, Ray Serve). The host memory set aside is too small
// (host_oom) or the setting is (invalid_configuration): weak, naming both.
var vllmSchedulerRules = []Rule{
	{Text: "lack of CPU swap space", Class: failure.ClassHostOOM, Or: failure.ClassInvalidConfiguration,
		NextStep: "vLLM's CPU swap space for preempted sequences ran out under load: raise --swap-space (GiB per GPU, " +
			"within the host's free memory), lower --max-num-seqs, or give the KV cache more GPU memory so fewer sequences are preempted."},
}

// vllmModeRules: vLLM refusing the engine version (V0, V1) a flag or a
// platform needs, in vLLM and in the forks served as openai: the engine
// was started with a configuration this build cannot run (arg_utils.py
// _raise_or_fallback: "VLLM_USE_V1=1 is not supported with
// --otlp-traces-endpoint."; a platform's own check: "CPU backend only
// supports V1.").
var vllmModeRules = []Rule{
	{Text: "is not supported with", Pattern: regexp.MustCompile(`VLLM_USE_V1=1 is not supported with \S`), Class: failure.ClassInvalidConfiguration},
	{Text: "only supports V", Pattern: regexp.MustCompile(`\b\w+ backend only supports V[01]\b`), Class: failure.ClassInvalidConfiguration},
}

// vllmKVFacts: the KV cache's figures vLLM logs, its sizing errors
// (both sides of the shortfall) and its start-up free-memory check (the
// device's free and total GiB), wherever vLLM runs (the openai kind too).
// vllmModelFacts: the weights' load time and memory in each release's
// words, read under the openai kind too (a wrapper of vLLM logs them).
var vllmModelFacts = []FactParser{
	{Trigger: "Loading weights took", Pattern: regexp.MustCompile(`Loading weights took ([\d.]+) seconds`), Names: []string{"weights_load_seconds"}},
	{Trigger: "Model loading took", Pattern: regexp.MustCompile(`Model loading took ([\d.]+) GiB(?: memory)?(?: and ([\d.]+) seconds)?`), Names: []string{"model_memory_gib", "model_load_seconds"}},
	{Trigger: "Loading model weights took", Pattern: regexp.MustCompile(`Loading model weights took ([\d.]+) GB`), Names: []string{"model_memory_gib"}},
}

var vllmKVFacts = []FactParser{
	// later vLLM names the device ("Free memory on device
	// cuda:0 (22.65/79.18 GiB) on startup", vllm@0027b02
	// vllm/v1/worker/utils.py request_memory: init_snapshot.device_)
	{Trigger: "Free memory on device", Pattern: regexp.MustCompile(`Free memory on device (?:[\w-]+:\d+ )?\(([\d.]+)/([\d.]+) GiB\)`), Names: []string{"device_free_gib", "device_total_gib"}},
	// V0's memory profile in each release's words: 0.6's one line
	// (worker.py determine_num_available_blocks: "Memory profiling
	// results: total_gpu_memory=23.58GiB ... kv_cache_size=2.89GiB"),
	// 0.7's and 0.8's ("the current vLLM instance can use total_gpu_memory
	// (23.57GiB) x gpu_memory_utilization", "the rest of the memory
	// reserved for KV Cache is 12.10GiB.")
	{Trigger: "total_gpu_memory", Pattern: regexp.MustCompile(`total_gpu_memory(?:=| \()([\d.]+) ?GiB`), Names: []string{"device_total_gib"}},
	{Trigger: "Memory profiling results:", Pattern: regexp.MustCompile(`\bkv_cache_size=` + num + `GiB`), Names: []string{"kv_cache_memory_gib"}},
	{Trigger: "reserved for KV Cache is", Pattern: regexp.MustCompile(`the rest of the memory reserved for KV Cache is ` + num + `GiB`), Names: []string{"kv_cache_memory_gib"}},
	{Trigger: "Available KV cache memory", Pattern: regexp.MustCompile(`Available KV cache memory: ` + num + ` GiB`), Names: []string{"kv_cache_memory_gib"}},
	{Trigger: "GPU KV cache size", Pattern: regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`), Names: []string{"kv_cache_tokens"}},
	{Trigger: "maximum number of tokens that can be stored in KV cache", Pattern: regexp.MustCompile(`max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV cache \((\d+)\)`), Names: []string{"max_model_len", "kv_cache_tokens"}},
	{Trigger: "KV cache is needed, which is larger than the available KV cache memory", Pattern: regexp.MustCompile(`max seq len \((\d+)\), \(` + num + ` GiB KV cache is needed, which is larger than the available KV cache memory \(` + num + ` GiB\)`), Names: []string{"max_model_len", "kv_cache_needed_gib", "kv_cache_memory_gib"}},
	{Trigger: "estimated maximum model length is", Pattern: regexp.MustCompile(`estimated maximum model length is (\d+)`), Names: []string{"suggested_max_model_len"}},
}

func init() {
	register(&Engine{
		Kind:       "vllm",
		HealthPath: "/health",
		health:     vllmHealth,
		markers: joinLists(uvicornMarkers, []Marker{
			// a client's request logged by the engine (entrypoints/logger.py
			// "Received request ID: prompt: ...", the async engine's "Added
			// request ID."): only clients send them, so once the start-up
			// has sized its KV cache they are inference even with no HTTP
			// ready line (a serverless or queue worker calling the engine
			// in-process, RunPod's worker-vllm)
			{Text: "Received request", Phase: failure.PhaseInference, After: failure.PhaseKVInit},
			{Text: "Added request", Phase: failure.PhaseInference, After: failure.PhaseKVInit},
			{Text: "Avg prompt throughput", Pattern: regexp.MustCompile(`Running: [1-9]`), Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// the CUDA model runner's weights memory ("Loading model weights
			// took 14.99 GB"); OpenVINO's backend times its load with the
			// same words in seconds and compiles the model after it (load)
			{Text: "Loading model weights took", Pattern: regexp.MustCompile(`Loading model weights took [\d.]+ GB`), Phase: failure.PhaseKVInit},
			{Text: "# GPU blocks", Phase: failure.PhaseKVInit},
			{Text: "# TPU blocks", Phase: failure.PhaseKVInit},
			{Text: "Compiling the model with different input shapes", Phase: failure.PhaseWarmup},
			{Text: "# cuda blocks", Phase: failure.PhaseKVInit},
			{Text: "Starting to load model", Phase: failure.PhaseLoad},
			{Text: "Loading weights took", Phase: failure.PhaseKernelSetup},
			{Text: "Model loading took", Phase: failure.PhaseKVInit},
			{Text: "GPU KV cache size", Phase: failure.PhaseKVInit},
			{Text: "Available KV cache memory", Phase: failure.PhaseKVInit},
			{Text: "Capturing CUDA graph", Phase: failure.PhaseWarmup},
			// V0's capture (worker/model_runner.py capture_model: "Capturing
			// the model for CUDA graphs. This may lead to ...", later
			// "Capturing cudagraphs for decoding")
			{Text: "Capturing the model for CUDA graphs", Phase: failure.PhaseWarmup},
			{Text: "Capturing cudagraphs", Phase: failure.PhaseWarmup},
			// the kernel warm-up after the KV cache (vllm/model_executor/
			// warmup/kernel_warmup.py: DeepGEMM's tqdm bars "DeepGemm(
			// fp8_gemm_nt) warmup (W=...)", printed without the logger's
			// prefix; FlashInfer's autotuner and "Warming up FlashInfer
			// attention."): warmup, as the CUDA graphs after it are
			{Text: "DeepGemm(", Pattern: regexp.MustCompile(`DeepGemm\(\w+\) warmup`), Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
			{Text: "Warming up FlashInfer", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
			{Text: "[Autotuner]: Autotuning process starts", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
			{Text: "Starting vLLM API server", Phase: failure.PhaseReadyWait},
		}),
		signatures: joinLists([]Rule{
			{Text: "UVA is not available", Class: failure.ClassHostCapability},
			// the executor's watch of its workers (vllm@c5c40ab
			// v1/executor/multiproc_executor.py "Worker proc %s died
			// unexpectedly", vllm@ff583b3 v1/executor/ray_executor.py
			// "RayWorkerProc rank=%s died unexpectedly"): a worker gone with
			// no cause of its own; its traceback, when printed, explains more
			{Text: "died unexpectedly", Pattern: regexp.MustCompile(`(?i)\b(Worker ?proc|RayWorkerProc)\b.{0,60}died unexpectedly`), Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
			// an API server process gave up waiting for the engine cores
			// (v1/engine/core_client.py, VLLM_ENGINE_READY_TIMEOUT_S): the
			// load was slower than the timeout, nothing failed in it
			{Text: "Timed out waiting for engines to send initial message", Class: failure.ClassReadyTimeout,
				NextStep: "vLLM's own engine-ready timeout ended the start before the engines finished loading: raise " +
					"VLLM_ENGINE_READY_TIMEOUT_S (600 s by default) to cover the load, or pre-warm the weights (page cache, a local copy)."},
		}, vllmMemoryRules, vllmKVRules, vllmWarmupRules, vllmModeRules, vllmSchedulerRules, []Rule{
			{Text: "not supported for the current GPU", Class: failure.ClassGPUArchUnsupported},
			{Text: "Bfloat16 is only supported on GPUs with compute capability", Class: failure.ClassGPUArchUnsupported},
			{Text: "is longer than the maximum model length", Class: failure.ClassContextExceedsKV},
			{Text: "maximum context length is", Pattern: regexp.MustCompile(`(?i)maximum context length is \d+ tokens`), Class: failure.ClassContextExceedsKV},
		}, pythonSignatures, hostFamilies),
		frameHints:  pythonFrameHints,
		framePhases: pythonFramePhases,
		wrappers: joinLists(pythonWrappers, []string{
			"Engine core initialization failed",
			"EngineCore failed to start",
			"Process EngineCore",
			"Worker failed with error",
		}),
		facts: joinLists(shardFacts, vllmModelFacts, vllmKVFacts, []FactParser{
			{Trigger: "Maximum concurrency", Pattern: regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x`), Names: []string{"max_model_len", "max_concurrency"}},
			{Trigger: "init engine", Pattern: regexp.MustCompile(`init engine \(profile, create kv cache, warmup model\) took ([\d.]+) seconds`), Names: []string{"engine_init_seconds"}},
		}),
		devices: pythonDevices,
		nextSteps: map[failure.Class]string{
			failure.ClassHostCapability: "UVA / pinned memory is unavailable on this host (typical of WSL2): use a documented " +
				"fallback that avoids UVA, e.g. VLLM_USE_V2_MODEL_RUNNER=0 (the V1 model runner), or run on native Linux; " +
				"for NCCL errors in a container give it shared memory (--ipc=host or --shm-size) or try NCCL_P2P_DISABLE=1.",
			failure.ClassQuantKernelFailed: "A quantization kernel failed on this model or GPU (e.g. a Marlin shape constraint): " +
				"choose a non-Marlin kernel (--quantization awq or gptq instead of awq_marlin / gptq_marlin), a different " +
				"--tensor-parallel-size, or another quant of the model.",
			failure.ClassTokenizerTemplate: "The model's tokenizer has no usable chat template: give one with --chat-template " +
				"FILE (transformers no longer supplies a default), or use the model's instruct variant.",
			failure.ClassGPUOOM: "GPU memory ran out: lower --max-model-len or --max-num-seqs, raise or lower " +
				"--gpu-memory-utilization to what is free, use --enforce-eager, or a smaller quant / more GPUs (--tensor-parallel-size).",
			failure.ClassStructuredOutputRejected: "vLLM's grammar backend refused the schema or the tokens: try another backend " +
				"(--structured-outputs-config.backend / --guided-decoding-backend guidance or outlines), simplify the schema, " +
				"and keep client-side validation.",
			failure.ClassStructuredOutputCrash: "A structured request crashed vLLM's engine: try another grammar backend " +
				"(guidance / outlines instead of xgrammar) or another vLLM version, and avoid the schema feature.",
			failure.ClassAcceleratorUnavailable: "vLLM found no usable GPU: check CUDA_VISIBLE_DEVICES, the container's " +
				"GPU access (--gpus all, the NVIDIA container toolkit) and that the driver libraries (libcuda.so) are visible.",
		},
	})
}

func vllmHealth(ctx context.Context, e *Engine, client *http.Client, baseURL, _ string) HealthResult {
	r := HealthResult{Path: e.HealthPath}
	code, body, err := get(ctx, client, baseURL+e.HealthPath)
	r.StatusCode = code
	switch {
	case err != nil:
		r.State, r.Message, r.Err = HealthDown, err.Error(), err
	case code == http.StatusOK:
		r.State = HealthReady
	case code == http.StatusServiceUnavailable:
		r.State, r.Message = HealthDown, "engine core is dead (vLLM /health 503)"
	default:
		r.State, r.Message = HealthDown, fmt.Sprintf("GET %s answered HTTP %d: %s", e.HealthPath, code, errorMessage(body))
	}
	return r
}
