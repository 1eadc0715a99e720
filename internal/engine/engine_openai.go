package engine

import (
	"context"
	"fmt"
	"net/http"
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// openai: any other OpenAI-compatible server (TGI, LM Studio, LocalAI,
// a FastAPI wrapper). There is no health endpoint to rely on, so health
// is GET /v1/models answering 200 with a model list (readiness then still
// checks the model id and makes a real completion). Its log knowledge is
// what such servers share: uvicorn/HTTP server start and access lines,
// TGI's router and shard lines, generic loading, shard and warmup
// progress, and the CUDA/host and Python-stack signatures.
func init() {
	register(&Engine{
		Kind:       "openai",
		HealthPath: "/v1/models",
		health:     modelsHealth,
		markers: joinLists(uvicornMarkers, []Marker{
			// the C++ Lemonade (lemond) before it starts its backend
			// ("Ensuring model loaded: NAME", src/cpp/server), before
			// llama.cpp's "model loaded" reads it as ready
			{Text: "Ensuring model loaded: ", Phase: failure.PhaseLoad, Reload: true},
		}, ggmlMarkers, []Marker{
			// TGI's router logs each request in a span named after the
			// route; a shard's prefill or decode serves one.
			{Text: "text_generation_router", Pattern: regexp.MustCompile(`\b(chat_completions|generate|generate_stream|completions)\{`), Phase: failure.PhaseInference},
			{Text: "Method Prefill", Phase: failure.PhaseInference},
			// LM Studio's server logs each request it runs.
			{Text: "Received POST request to", Phase: failure.PhaseInference},
			{Text: "Running chat completion", Phase: failure.PhaseInference},
			{Text: "Running completion", Phase: failure.PhaseInference},
			{Text: "Method Decode", Phase: failure.PhaseInference},
			// TGI's router connects to the shards before (old) or after
			// (new) warming up: only after warmup does it mean ready.
			{Text: "Connected", Phase: failure.PhaseReadyWait, After: failure.PhaseWarmup},
			{Text: "Starting HTTP server", Phase: failure.PhaseReadyWait},
			// a server's own "listening" line without an address word
			// (LocalAI core/startup: "LocalAI API is listening! Please
			// connect to the endpoint for API documentation.")
			{Text: " is listening", Pattern: regexp.MustCompile(`\b(API|[Ss]erver) is listening\b`), Phase: failure.PhaseReadyWait},
			{Text: "HTTP server listening", Phase: failure.PhaseReadyWait},
			{Text: "server listening", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
			{Text: "Warming up model", Phase: failure.PhaseWarmup},
			{Text: "warming up", Phase: failure.PhaseWarmup},
			{Text: "Warmup", Phase: failure.PhaseWarmup},
			{Text: "Setting max batch total tokens", Phase: failure.PhaseWarmup},
			{Text: "Shard ready", Phase: failure.PhaseKernelSetup},
			{Text: "Server started at unix://", Phase: failure.PhaseKernelSetup},
			{Text: "Starting shard", Phase: failure.PhaseLoad},
			{Text: "checkpoint shards", Phase: failure.PhaseLoad},
			// NVIDIA NIM fetching the selected profile's files from NGC into
			// its workspace (ngc_injector.py: "Preparing model workspace.
			// This step might download additional files to run the
			// model."): the model's files, as a download is (load)
			{Text: "Preparing model workspace", Phase: failure.PhaseLoad},
			// the load's own summary once the weights are on the device
			// (vLLM and its platform plugins: vllm-ascend's model_runner_v1
			// "Loading model weights took 47.3511 GB", vLLM's "Model loading
			// took 14.99 GiB"): the load is over, the KV cache's sizing is
			// next; before "Loading model", which it contains
			{Text: "Loading model weights took", Pattern: regexp.MustCompile(`Loading model weights took [\d.]+ GB`), Phase: failure.PhaseKVInit, After: failure.PhaseLoad},
			{Text: "Model loading took", Pattern: regexp.MustCompile(`Model loading took [\d.]+ GiB`), Phase: failure.PhaseKVInit, After: failure.PhaseLoad},
			{Text: "Loading model", Phase: failure.PhaseLoad, Reload: true},
			{Text: "loading model", Pattern: reLoadingModel, Phase: failure.PhaseLoad, Reload: true},
			// Lemonade Server loads a model on request ("Loading llm: NAME")
			{Text: "Loading llm: ", Phase: failure.PhaseLoad, Reload: true},
			// LM Studio's main process names the RPC endpoint a line
			// belongs to ("[LMSInternal][Client=LM Studio][Endpoint=
			// sendMessage] Error in RPC handler"): a chat message's send or
			// a prediction is a request (loadModel is the load's)
			{Text: "[Endpoint=", Pattern: regexp.MustCompile(`\[Endpoint=(sendMessage|predict\w*|respond\w*|\w*[Cc]ompletion\w*)\]`), Phase: failure.PhaseInference},
			// GPUStack's llama-box: a request's parameters, once it serves
			{Text: "oaicompat_", Pattern: regexp.MustCompile(`oaicompat_\w+: rid `), Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Loading weights", Phase: failure.PhaseLoad},
			// Triton Inference Server (model_lifecycle.cc, grpc_server.cc,
			// http_server.cc at triton-inference-server/server r24.05;
			// model_repository_manager.cc before): each model's load, then
			// the services it starts
			{Text: "Started GRPCInferenceService at", Phase: failure.PhaseReadyWait},
			{Text: "Started HTTPService at", Phase: failure.PhaseReadyWait},
			{Text: "loading: ", Pattern: regexp.MustCompile(`\.cc:\d+\] "?loading: \S+:\d+`), Phase: failure.PhaseLoad},
			{Text: " requests", Pattern: regexp.MustCompile(`\bmodel \S+, instance \S+, executing \d+ requests`), Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// text-generation-webui (oobabooga/text-generation-webui
			// modules/models.py: 'Loading "NAME"', 'Loaded "NAME" in N
			// seconds.', before 2024 'Loaded the model in N seconds.';
			// modules/text_generation.py: "Output generated in N
			// seconds (...)" after each reply): its UI and API listen
			// before a model loads on demand, the load's end is ready, and
			// each reply is one request served
			{Text: `Loading "`, Pattern: regexp.MustCompile(`\bLoading "[^"]+"\s*$`), Phase: failure.PhaseLoad, Reload: true},
			{Text: "Loaded ", Pattern: regexp.MustCompile(`\bLoaded (the model|"[^"]+") in [\d.]+ seconds`), Phase: failure.PhaseReadyWait},
			{Text: "Output generated in ", Pattern: regexp.MustCompile(`Output generated in [\d.]+ seconds \(`), Phase: failure.PhaseInference, After: failure.PhaseLoad},
			// servers that load a model when asked, once up: Xinference's
			// worker (launch_builtin_model), TorchServe's backend worker
			{Text: "launch_builtin_model", Phase: failure.PhaseLoad, Reload: true},
			{Text: "Torch worker started", Phase: failure.PhaseLoad, Reload: true},
			// TensorRT-LLM under Triton, MLC LLM
			{Text: "for max tokens in paged KV cache", Phase: failure.PhaseKVInit},
			{Text: "Loaded engine size", Phase: failure.PhaseLoad},
			// the engine's execution contexts are made: the runtime
			// buffers and the KV cache are allocated next
			// (cpp/tensorrt_llm/runtime: "[MemUsageChange] TensorRT-managed
			// allocation in IExecutionContext creation")
			{Text: "allocation in IExecutionContext creation", Phase: failure.PhaseKVInit},
			// KTransformers replaces the model's modules by its optimized
			// operators while it loads ("Injecting model.layers.0 as ...")
			{Text: "Injecting model", Phase: failure.PhaseLoad},
			{Text: "Using library model", Phase: failure.PhaseLoad},
			// MLC LLM's advice on its engine mode (serve/engine_base.py: "We
			// choose small max batch size and KV cache capacity ...") names
			// the KV cache but sizes nothing yet: the model loads next
			{Text: "KV cache capacity to use less GPU memory", Phase: failure.PhaseLoad},
			// mlx_lm.server processing a request's prompt
			// (mlx_lm/server.py: "Prompt processing progress: 4096/11873");
			// its "Starting httpd at" comes before the default model loads
			// in newer versions, so it marks nothing
			{Text: "Prompt processing progress: ", Pattern: regexp.MustCompile(`Prompt processing progress: \d+/\d+`), Phase: failure.PhaseInference},
			// MLC LLM's chat runs the conversation's system prompt first:
			// its first kernels
			{Text: "Running system prompts", Phase: failure.PhaseWarmup},
			// OpenVINO Model Server builds a servable from the model's files
			// ("Initializing Language Model Continuous Batching servable",
			// src/llm/servable_initializer.cpp): the weights are read and
			// compiled for the device
			{Text: "servable", Pattern: regexp.MustCompile(`\]\s*Initializing [\w ]*servable`), Phase: failure.PhaseLoad, Reload: true},
			// Ray Serve's application up (ray@3addb93 python/ray/serve/
			// _private/client.py: "Application '{app.name}' is
			// ready{url_part}."; before applications, "Deployment 'NAME' is
			// ready at `URL`."), and
			// a vLLM engine under a wrapper taking a request
			// (engine/async_llm_engine.py, v1/engine/async_llm.py: "Added
			// request ID."; entrypoints/logger.py "Received request ID:
			// prompt:"), once its KV cache is sized: a serverless or queue
			// worker calling the engine in-process logs no ready line
			{Text: "' is ready", Pattern: regexp.MustCompile(`\b(Application|Deployment) '[^']*' is ready\b`), Phase: failure.PhaseReadyWait},
			{Text: "Added request ", Phase: failure.PhaseInference, After: failure.PhaseKVInit},
			{Text: "Received request ", Pattern: regexp.MustCompile(`Received request \S+: prompt: `), Phase: failure.PhaseInference, After: failure.PhaseKVInit},
			// OVMS's servables are up once its servable manager started
			// (src/servablemanagermodule.cpp: "{} started"), and its LLM
			// executors count the requests they hold each loop
			// (src/llm/...executor: "All requests: N;")
			{Text: "ServableManagerModule started", Phase: failure.PhaseReadyWait},
			{Text: "All requests: ", Pattern: regexp.MustCompile(`All requests: [1-9]\d*;`), Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// NVIDIA Dynamo's frontend: its Rust HTTP service listening
			// (tracing target dynamo_llm::http::service: "Starting HTTP
			// service on: ADDR") and its KV router placing each request on a
			// worker ("kv_router.generate: Scheduling to worker_id: N"),
			// the vLLM or SGLang workers' own lines around them
			{Text: "dynamo_llm::http::service", Pattern: regexp.MustCompile(`dynamo_llm::http::service\S*: Starting HTTP service on`), Phase: failure.PhaseReadyWait},
			{Text: "Scheduling to worker_id", Pattern: regexp.MustCompile(`\bkv_router\S*: Scheduling to worker_id\b`), Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// vLLM's periodic stats with requests running, under a wrapper
			{Text: "Avg prompt throughput", Pattern: regexp.MustCompile(`Running: [1-9]`), Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
		}, genericMarkers),
		signatures: joinLists([]Rule{
			{Text: "Shard", Pattern: regexp.MustCompile(`(?i)shard \d+ (failed to start|crashed)`), Class: failure.ClassEngineDied, Tier: TierHint},
			{Text: "Not enough memory to handle", Class: failure.ClassGPUOOM},
			// LM Studio's loadModel errors relay its llmworker's: the child's
			// exception follows the wrapper's stack as "- Caused By: TypeError:
			// ..." (an LM Studio bug), a hint over the wrapper's line
			{Text: "- Caused By: ", Pattern: regexp.MustCompile(`^- Caused By: \w*Error: `), Class: failure.ClassEngineDied, Tier: TierHint},
			// LM Studio found no GPU to read memory from ("Live GPU memory
			// info:" then this): a hint, the engine may still run on the CPU
			{Text: "No live GPU info available", Class: failure.ClassAcceleratorUnavailable, Tier: TierHint},
			{Text: "max_batch_prefill_tokens", Pattern: regexp.MustCompile(`(?i)(lower|too (large|high|small)|not enough)`), Class: failure.ClassContextExceedsKV},
			{Text: "is longer than the maximum model length", Class: failure.ClassContextExceedsKV},
			// Triton: a backend could not make the model's instance (its
			// reason follows on the line: a rule for it wins there)
			{Text: "Failed to create instance", Class: failure.ClassModelLoadFailed, Tier: TierHint},
			// Cortex (Jan's server) with no engine to run the model:
			// janhq/cortex.cpp@ee9e0ad engine/services/engine_service.cc
			// ("Default engine variant for X is not set yet!", "Engine
			// variant V-X is not installed yet!", "Remote engine 'X' is not
			// installed", "No compatible variants found for X"): the
			// server's engine setup, not the model
			{Name: "openai/cortex-engine-not-set", Text: "engine variant", Pattern: regexp.MustCompile(`(?i)\bengine variant\b.{0,80}\bis not (?:set|installed) yet\b`),
				Class: failure.ClassInvalidConfiguration, NextStep: cortexEngineStep},
			{Text: "Remote engine '", Also: "is not installed", Class: failure.ClassInvalidConfiguration, NextStep: cortexEngineStep},
			{Text: "No compatible variants found for", Class: failure.ClassInvalidConfiguration, NextStep: cortexEngineStep},
			// Triton's model lifecycle (model_lifecycle.cc): a model of
			// the repository that could not be loaded, its reason after
			// the colon (a rule for the reason wins on the line)
			{Text: "failed to load '", Pattern: regexp.MustCompile(`failed to load '[^']+' version \d+: \S`), Class: failure.ClassModelLoadFailed, Tier: TierHint},
		}, vllmMemoryRules, vllmKVRules, vllmWarmupRules, vllmModeRules, vllmSchedulerRules, trtllmRuntime, pythonSignatures, ggmlSignatures, hostFamilies),
		frameHints:  pythonFrameHints,
		framePhases: pythonFramePhases,
		wrappers: joinLists(pythonWrappers, []string{
			"Shard complete standard error output",
			"Shard process was signaled to shutdown",
			"Webserver Crashed",
		}),
		facts:   joinLists(shardFacts, ggmlFacts, trtllmFacts, vllmModelFacts, vllmKVFacts, aphroditeFacts),
		devices: joinLists(pythonDevices, ggmlDevices),
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower the server's batch and context bounds (TGI --max-batch-total-tokens, " +
				"--max-batch-prefill-tokens, --max-total-tokens; llama.cpp-based servers: context size and GPU layers), " +
				"or use a smaller quant / more GPUs (TGI --num-shard).",
			failure.ClassContextExceedsKV: "The request or the configured batch does not fit: lower TGI's --max-batch-prefill-tokens / " +
				"--max-input-tokens, or raise the context of a llama.cpp-based server (LM Studio, llamafile: context length).",
			failure.ClassTokenizerTemplate: "The chat template is missing or broken: give the server one (TGI: a tokenizer_config.json " +
				"with chat_template, or --chat-template where supported; LM Studio: the prompt template setting), or use an instruct model.",
			failure.ClassModelLoadFailed: "The server could not load the model: check the model id or path and the files " +
				"(TGI: --num-shard must divide the model's attention heads; LocalAI: the model file in its models path).",
		},
	})
}

func modelsHealth(ctx context.Context, e *Engine, client *http.Client, baseURL, _ string) HealthResult {
	r := HealthResult{Path: e.HealthPath}
	code, body, err := get(ctx, client, baseURL+e.HealthPath)
	r.StatusCode = code
	switch {
	case err != nil:
		r.State, r.Message, r.Err = HealthDown, err.Error(), err
	case code == http.StatusOK:
		r.State = HealthReady
	case code == http.StatusServiceUnavailable:
		r.State, r.Message = HealthLoading, errorMessage(body)
	default:
		r.State, r.Message = HealthDown, fmt.Sprintf("GET %s answered HTTP %d: %s", e.HealthPath, code, errorMessage(body))
	}
	return r
}

// cortexEngineStep is the advice when Cortex has no engine variant to run
// a model with.
const cortexEngineStep = "The server has no inference engine selected for this model (Cortex/Jan: no llama.cpp variant " +
	"installed or set as default): install one and make it the default (Jan's Settings > Engines, or cortex engines " +
	"install llama-cpp and cortex engines default llama-cpp VARIANT), then start the model again."

// aphroditeFacts: Aphrodite Engine's (a vLLM fork, served as openai) own
// words for vLLM's memory figures after the profile run (0.6: "Total
// model weights memory usage: 6.79 GiB", "Total KV cache memory usage:
// 5.95 GiB", per GPU).
var aphroditeFacts = []FactParser{
	{Trigger: "Total model weights memory usage:", Pattern: regexp.MustCompile(`Total model weights memory usage: ` + num + ` GiB`), Names: []string{"model_memory_gib"}},
	{Trigger: "Total KV cache memory usage:", Pattern: regexp.MustCompile(`Total KV cache memory usage: ` + num + ` GiB`), Names: []string{"kv_cache_memory_gib"}},
}
