package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// The families of the classifier's log-line rules that belong to the
// serving stacks: the Python stacks (vLLM, SGLang, TGI's shards and other
// uvicorn/FastAPI servers, the libraries under them) and ggml (llama.cpp
// and its derivatives). A kind's own list comes first so its specific
// rules win. Texts match case-insensitively; the wordings are the
// engines' and libraries' own (read from their sources and from the logs
// users paste into bug reports).

// pythonSignatures are errors of the Python serving stacks (vLLM, SGLang,
// TGI's shards, other uvicorn/FastAPI servers) and of the libraries under
// them (transformers, huggingface_hub, safetensors, grammar backends).
var pythonSignatures = family("python", []Rule{
	// GPU memory first: a warmup or a kernel that ran out of memory is gpu_oom.
	{Text: "CUDA out of memory", Class: failure.ClassGPUOOM},
	{Text: "OutOfMemoryError", Class: failure.ClassGPUOOM},
	{Text: "out of memory", Pattern: regexp.MustCompile(`(?i)(on device|gpu \d|allocation on device).{0,60}out of memory`), Class: failure.ClassGPUOOM},
	// MLC LLM's check of the weights and the KV cache against the
	// device's memory, when it sizes the KV cache (python/mlc_llm/serve/
	// engine_base.py: "The model weight size may be larger than GPU memory
	// size."; cpp/serve/config.cc: "Insufficient GPU memory error: The
	// available single GPU memory is X MB, which is less than the sum of
	// model weight size (Y MB) and temporary buffer size (Z MB)."; the
	// spring 2024 engine.py's assertion puts the figures in the sentence:
	// "Cannot estimate KV cache capacity. The model weight size N may be
	// larger than GPU memory size M")
	{Name: "python/model-weight-size-may-be-larger-than-gpu-memory-size", Text: "may be larger than GPU memory size",
		Pattern: regexp.MustCompile(`(?i)model weight size (?:[\d.]+ )?may be larger than GPU memory size\b`), Class: failure.ClassGPUOOM, Phase: failure.PhaseKVInit},
	{Text: "Insufficient GPU memory error:", Class: failure.ClassGPUOOM, Phase: failure.PhaseKVInit},
	// a broken install: a module or name the engine imports is missing
	// (packages out of step). A crash, so that context refines it (a
	// grammar backend's module while serving), but the frames do not:
	// where the import was made says nothing of why it failed.
	// ... unless the module is a model architecture's (mlx_lm.models.X,
	// vllm.model_executor.models.X, a checkpoint's own code under
	// transformers_modules): this version does not know the model
	{Text: "No module named", Pattern: regexp.MustCompile(`No module named '(transformers_modules\.|[\w.]*\.models?\.)\w+`), Class: failure.ClassModelLoadFailed},
	// ... or a vendor's device plugin, the PyTorch bridge a device type
	// needs (LMDeploy's --device maca and camb through dlinfer, Ascend's
	// torch_npu, Cambricon's torch_mlu, Moore Threads' torch_musa,
	// Enflame's torch_gcu, Gaudi's habana_frameworks, Intel's
	// intel_extension_for_pytorch, TPUs' torch_xla, Neuron's
	// torch_neuronx, vllm-ascend's plugin): the host lacks the device's
	// software stack, or the profile names a device this host has not
	// (a crash: imported lazily on a request's path it is that request
	// failing, verdict.lazyCrash)
	{Name: "python/no-device-plugin-module", Text: "No module named", Pattern: regexp.MustCompile(`No module named '(dlinfer|torch_npu|torch_mlu|torch_musa|torch_gcu|habana_frameworks|intel_extension_for_pytorch|torch_xla|torch_neuronx|vllm_ascend)\b`),
		Class: failure.ClassHostCapability, Crash: true, NextStep: devicePluginStep},
	// Or: a package the install never got (a requirement skipped) is
	// invalid_configuration, one of another version engine_died; the
	// line names only the module (docs/vocabulary.md "A broken install")
	{Text: "No module named", Class: failure.ClassEngineDied, Crash: true, Or: failure.ClassInvalidConfiguration, NextStep: brokenInstallStep},
	{Text: "cannot import name", Class: failure.ClassEngineDied, Crash: true, NextStep: brokenInstallStep},
	// tokenizer_template
	{Text: "Template error", Class: failure.ClassTokenizerTemplate},
	{Text: "default chat template is no longer allowed", Class: failure.ClassTokenizerTemplate},
	{Text: "chat_template is not set", Class: failure.ClassTokenizerTemplate},
	{Text: "chat template", Pattern: regexp.MustCompile(`(?i)(must provide|no|missing|cannot use|could not|failed to|unable to).{0,40}chat.template|chat.template.{0,60}(not set|not found|is missing|invalid|error|failed|does not define)`), Class: failure.ClassTokenizerTemplate},
	{Text: "TemplateSyntaxError", Class: failure.ClassTokenizerTemplate},
	{Text: "jinja2.exceptions", Class: failure.ClassTokenizerTemplate},
	{Text: "Can't load tokenizer", Class: failure.ClassTokenizerTemplate},
	// HF tokenizers' serde error on a tokenizer.json written by a newer
	// tokenizers than the one linked ("data did not match any variant of
	// untagged enum PreTokenizerWrapper|ModelWrapper"): read at model load
	{Text: "untagged enum", Pattern: regexp.MustCompile(`untagged enum \w*(Wrapper|Tokenizer|Normalizer|Decoder|Processor)\b`), Class: failure.ClassTokenizerTemplate, Phase: failure.PhaseLoad},
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
	// vLLM's quantization checks, before the kernel rules whose words
	// ("marlin", "not supported") the message's list of methods holds
	// (vllm/config.py
	// ModelConfig._verify_quantization): a method this version does not
	// have ("Unknown quantization method: X. Must be one of [...]": the
	// model's config names one newer than the engine, or the flag names a
	// wrong one, Or), the flag contradicting the model's config ("...
	// specified in the model config (X) does not match the quantization
	// method specified in the `quantization` argument (Y)")
	{Name: "python/vllm-unknown-quantization-method", Text: "Unknown quantization method: ", Also: "Must be one of", Class: failure.ClassModelLoadFailed, Or: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Name: "python/vllm-quantization-argument-mismatch", Text: "does not match the quantization method specified in the `quantization` argument", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	// quant_kernel_failed
	{Text: "arlin", Pattern: regexp.MustCompile(`(?i)(error|fail|illegal|exception).*marlin|marlin.*(error|fail|illegal|not supported)`), Class: failure.ClassQuantKernelFailed},
	{Text: "min_thread_k", Class: failure.ClassQuantKernelFailed},
	{Text: "min_thread_n", Class: failure.ClassQuantKernelFailed},
	{Text: "is not divisible by", Pattern: regexp.MustCompile(`(?i)(input_size|output_size|size_per_partition|group_size|tile).{0,60}is not divisible by`), Class: failure.ClassQuantKernelFailed},
	{Text: "quantization", Pattern: regexp.MustCompile(`(?i)(quantization|quant method|quant_method).{0,80}(not supported|unsupported|is not available|requires|failed)`), Class: failure.ClassQuantKernelFailed},
	// model_load_failed
	{Text: "are not supported for now", Pattern: regexp.MustCompile(`Model architectures? .* (is|are) not supported`), Class: failure.ClassModelLoadFailed},
	{Text: "does not recognize this architecture", Class: failure.ClassModelLoadFailed},
	// the engine has no implementation of the model's type or
	// architecture ("Model type qwen3_5 not supported.", mlx_lm/utils.py;
	// LMDeploy's PyTorch engine: "Can not found rewrite for
	// architectures: [...]", lmdeploy/pytorch/models/module_map.py)
	// ... and the loader's table of model types without the model's, the
	// type quoted with a qualifier around it (OpenVINO GenAI's
	// vlm_config.cpp: "Unsupported 'qwen3_vl' VLM model type")
	{Text: "not supported", Pattern: regexp.MustCompile(`(?i)\bmodel type \S+ (is )?not supported`), Class: failure.ClassModelLoadFailed},
	{Name: "python/unsupported-quoted-model-type", Text: "unsupported", Pattern: regexp.MustCompile(`(?i)\bunsupported ['"\x60][\w.-]+['"\x60] (\w+ )?model (type|architecture)\b`), Class: failure.ClassModelLoadFailed},
	{Text: "for architecture", Pattern: regexp.MustCompile(`(?i)(can ?not|could not|unable to|failed to) f(ou|i)nd? .{0,40}for architectures?\b`), Class: failure.ClassModelLoadFailed},
	{Text: "does not appear to have a file named", Class: failure.ClassModelLoadFailed},
	// the library's error type, whatever it wraps (a short header, an
	// OS error: the errno later in the line names that)
	{Text: "SafetensorError", Class: failure.ClassModelLoadFailed, Tier: TierHint},
	{Text: "Error(s) in loading state_dict", Class: failure.ClassModelLoadFailed},
	{Text: "HFValidationError", Class: failure.ClassModelLoadFailed},
	{Text: "Unrecognized model in", Class: failure.ClassModelLoadFailed},
	{Text: "Unsupported model type", Class: failure.ClassModelLoadFailed},
	{Text: "No model architectures are specified", Class: failure.ClassModelLoadFailed},
	{Text: "Invalid repository ID or local directory", Class: failure.ClassModelLoadFailed},
	{Text: "LocalEntryNotFoundError", Class: failure.ClassModelLoadFailed},
	{Text: "We couldn't connect to", Pattern: regexp.MustCompile(`huggingface`), Class: failure.ClassModelLoadFailed},
	{Text: "Cannot find any model weights", Class: failure.ClassModelLoadFailed},
	// Xinference: every GPU is taken by other models.
	{Text: "No available slot found for the model", Class: failure.ClassAcceleratorBusy, Phase: failure.PhaseLaunch},
	{Text: "No model weights found", Class: failure.ClassModelLoadFailed},
	// vLLM inspects the architecture in a subprocess and relays its
	// traceback after this header: the subprocess's exception says why
	{Text: "Error in inspecting model architecture", Class: failure.ClassModelLoadFailed, Tier: TierHint},
	{Text: "failed to be inspected", Class: failure.ClassModelLoadFailed, Tier: TierHint},
	{Text: "must be divisible by", Pattern: regexp.MustCompile(`(?i)(heads|num_heads|attention heads|hidden.size|vocab).{0,80}must be divisible by`), Class: failure.ClassModelLoadFailed},
	// a size setting's granularity check (exllamav2 generator/dynamic.py:
	// "cache.max_seq_len must be multiple of 256, received 2047",
	// "max_chunk_size must be multiple of 256, received None"): the value
	// given, or one derived from it, is refused; an assertion, so a defect
	// of the engine is the other reading
	{Text: "multiple of", Pattern: regexp.MustCompile(`(?i)\b\w*(size|len|length|tokens)\b.{0,20}\bmust be (a )?multiple of \d+`),
		Class: failure.ClassInvalidConfiguration, Or: failure.ClassEngineDied},
	{Text: "could not load model", Pattern: regexp.MustCompile(`(?i)no such file or directory|not found`), Class: failure.ClassModelLoadFailed},
	// LocalAI: the gRPC backend process died before answering (its own
	// stderr, relayed, says why when it said anything)
	{Text: "could not load model", Pattern: regexp.MustCompile(`rpc error: code = Unavailable desc = error reading from server: EOF`), Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "could not load model", Class: failure.ClassModelLoadFailed, Tier: TierHint, Summary: true},
	{Text: "is greater than the derived max_model_len", Class: failure.ClassContextExceedsKV},
	// vLLM's scheduler configuration check (vllm/config.py
	// SchedulerConfig._verify_args: "max_num_batched_tokens (N) is smaller
	// than max_model_len (M). This effectively limits the maximum sequence
	// length to max_num_batched_tokens ... Please increase
	// max_num_batched_tokens or decrease max_model_len."): the flags given
	// disagree, before any device work
	{Name: "python/vllm-batched-tokens-below-max-model-len", Text: "is smaller than max_model_len", Pattern: regexp.MustCompile(`max_num_batched_tokens \(\d+\) is smaller than max_model_len`), Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	// SGLang's scheduler (python/sglang/srt/managers/schedule_batch.py,
	// retract_decode; sglang-jax the same): the KV pool cannot hold even
	// one running request after every other was retracted
	{Text: "No space left for only one request", Class: failure.ClassContextExceedsKV},
	// SGLang's token pool has no slots for the batch's tokens
	// (python/sglang/srt/mem_cache/common.py alloc_token_slots, older
	// schedule_batch.py: "Prefill out of memory. Try to lower your batch
	// size.", "Decode ...", "Out of memory. ..."): the KV memory ran out
	{Text: "out of memory. Try to lower your batch size", Class: failure.ClassGPUOOM},
	// the KV cache budget left after the weights is below zero (vLLM and
	// its platform plugins log it at INFO): a hint, the engine's own error
	// after it ("No available memory for the cache blocks") says more, but
	// some platforms' engine cores die without one
	{Text: "KV cache memory", Pattern: regexp.MustCompile(`(?i)KV cache memory:? -\d`), Class: failure.ClassGPUOOM, Phase: failure.PhaseKVInit, Tier: TierHint},
	{Text: "Unrecognized configuration class", Class: failure.ClassModelLoadFailed},
	// the engine reads a field the model's configuration class has not
	// ("AttributeError: 'Mistral3Config' object has no attribute
	// 'hidden_size'"): a transformers PretrainedConfig subclass of an
	// architecture this engine version does not read (a multimodal
	// config whose text fields sit under text_config)
	{Name: "python/config-lacks-attribute", Text: "object has no attribute", Pattern: regexp.MustCompile(`'\w+Config' object has no attribute '\w+'`), Class: failure.ClassModelLoadFailed},
	{Text: "does not exist", Pattern: regexp.MustCompile(`(?i)weight \S+ does not exist`), Class: failure.ClassModelLoadFailed},
	{Text: "failed loading model", Class: failure.ClassModelLoadFailed, Tier: TierHint, Summary: true},
	{Text: "DownloadError", Class: failure.ClassModelLoadFailed, Tier: TierHint},
	{Text: "trust_remote_code", Pattern: regexp.MustCompile(`(?i)(requires|set the option|execute the configuration).{0,80}trust_remote_code`), Class: failure.ClassModelLoadFailed},
	// gpu_oom raised by the Python stacks
	{Text: "Not enough memory", Class: failure.ClassGPUOOM},
	{Text: "Insufficient memory", Pattern: regexp.MustCompile(`(?i)(gpu|cuda|kv|mem_fraction|memory pool)`), Class: failure.ClassGPUOOM},
	// warmup_failed
	{Text: "raph", Also: "cuda", Pattern: regexp.MustCompile(`(?i)cuda ?graph.*(fail|error)`), Class: failure.ClassWarmupFailed},
	{Text: "Error in memory profiling", Class: failure.ClassWarmupFailed},
	// a summary that names the step and no cause (LMDeploy's executors:
	// ray_executor.py "Warmup failed.", then the traceback of what the
	// workers met, and "RuntimeError: Warmup failed."): the block's
	// exception line states the cause and a rule's class for it stands
	{Text: "Warmup failed", Class: failure.ClassWarmupFailed, Tier: TierHint, Summary: true},
	// SGLang's "Initialization failed. warmup error: Traceback ...": the
	// block's exception line says what the warmup request met
	{Text: "warmup error", Class: failure.ClassWarmupFailed, Summary: true},
	{Text: "Unable to warmup model", Class: failure.ClassWarmupFailed},
	{Text: "operation not permitted when stream is capturing", Class: failure.ClassWarmupFailed},
	{Text: "Method Warmup encountered an error", Class: failure.ClassWarmupFailed, Tier: TierHint, Summary: true},
	{Text: "profile run", Pattern: regexp.MustCompile(`(?i)(failed|error).{0,20}profile run`), Class: failure.ClassWarmupFailed},
	// crashes while serving, refined by context; hints, so that the
	// exception block they introduce can name the cause.
	{Text: "Scheduler hit an exception", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	// vLLM's engine core reporting its own death (v1/engine/core.py
	// run_engine_core: "EngineCore encountered a fatal error.", then the
	// API server's EngineDeadError): the API server may still exit 0 after
	// it, but the engine is gone (Fatal)
	{Text: "EngineCore encountered a fatal error", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint, Summary: true},
	// a vLLM worker's busy loop (v1/executor/multiproc_executor.py
	// worker_busy_loop: "WorkerProc hit an exception.", then its
	// traceback): the engine core's fatal error after it only relays it
	{Text: "WorkerProc hit an exception", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "EngineDeadError", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	// vLLM V0's API server seeing its engine process gone
	// (engine/multiprocessing/client.py run_heartbeat_loop:
	// RuntimeError(f"Engine process (pid {pid}) died.")): Fatal as its
	// V1 EngineDeadError; the engine's own last line says why
	{Text: "Engine process (pid", Also: ") died", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "Engine loop has died", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	// vLLM V0's AsyncLLMEngine loop ended by an exception
	// (engine/async_llm_engine.py _log_task_completion: logger.error("Engine
	// background task failed", exc_info=e), then AsyncEngineDeadError):
	// every later request fails; its traceback's exception line says why
	{Text: "Engine background task failed", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "AsyncLLM output_handler failed", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "AsyncLLMEngine has failed", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "TokenizerManager hit an exception", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "Method Prefill encountered an error", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	{Text: "Method Decode encountered an error", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	// a thread of the engine died of an exception nobody caught (Python's
	// threading.excepthook: "Exception in thread Thread-4 (_func):"):
	// the serving loop (LMDeploy's TurboMind forward thread, TensorRT-LLM's
	// executor loop, mlx_lm's generation thread) is gone, whatever the
	// HTTP server in front of it still answers; the block's exception
	// line says what it met
	{Text: "Exception in thread ", Pattern: regexp.MustCompile(`^\s*Exception in thread [^:]*:\s*$`), Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	// TensorRT-LLM's executor (tensorrt_llm/_torch/pyexecutor/py_executor.py,
	// _event_loop_wrapper: logger.error(f"Error in event loop: {e}"), then
	// raise): the loop that runs every request ends
	{Text: "Error in event loop", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
})

// brokenInstallStep is the advice of an import that failed.
const brokenInstallStep = "The engine's installation is broken: a module or a name it imports is missing, usually " +
	"packages out of step (a kernel library such as aiter, flash-attn or a grammar backend built for another version). " +
	"Reinstall the engine with the versions it pins (its requirements or its container image), or install the missing package."

// devicePluginStep is the advice when the PyTorch bridge of a device
// type is not installed.
const devicePluginStep = "The engine was asked for a device type whose vendor plugin is not installed (dlinfer, torch_npu, " +
	"habana_frameworks, intel_extension_for_pytorch...): install the plugin the engine's docs name for that device, " +
	"in the version the engine pins, or start the engine for the device this host has (its --device flag)."

// deviceQueryStep is the advice when the GPU runtime refuses the first
// query of a device it lists.
const deviceQueryStep = "The GPU is listed but its runtime refused the first query of its memory: check that the " +
	"process may use the device (in a container /dev/kfd and /dev/dri for ROCm with the video/render groups, " +
	"/dev/nvidia* for CUDA), HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES, and that the driver matches the runtime " +
	"the engine was built with."

// pythonFrameHints name the component of a traceback frame (file paths
// and function names).
var pythonFrameHints = []FrameHint{
	// CUDA IPC between the GPUs of one run (custom all-reduce workspaces)
	{Text: "cudaipcopenmemhandle", Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	{Text: "_ipc_utils", Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	{Text: "custom_all_reduce", Class: failure.ClassHostCapability, NextStep: peerAccessStep},
	// the first query of the device's free memory (torch.cuda.mem_get_info,
	// hipMemGetInfo) refused with a generic error: the device is listed
	// but this process cannot use it
	{Text: "mem_get_info", Class: failure.ClassAcceleratorUnavailable, NextStep: deviceQueryStep},
	{Text: "marlin", Class: failure.ClassQuantKernelFailed},
	{Text: "/quantization/", Class: failure.ClassQuantKernelFailed},
	{Text: "awq", Class: failure.ClassQuantKernelFailed},
	{Text: "gptq", Class: failure.ClassQuantKernelFailed},
	{Text: "exllama", Class: failure.ClassQuantKernelFailed},
	{Text: "machete", Class: failure.ClassQuantKernelFailed},
	{Text: "bitsandbytes", Class: failure.ClassQuantKernelFailed},
	{Text: "xgrammar", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "outlines", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "llguidance", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "guidance", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "lm_format_enforcer", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "structured_output", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "guided_decoding", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "constrained/", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "grammar", Class: failure.ClassStructuredOutputCrash, From: failure.PhaseReadyWait, Early: failure.ClassInvalidConfiguration},
	{Text: "chat_template", Class: failure.ClassTokenizerTemplate},
	{Text: "chat_utils", Class: failure.ClassTokenizerTemplate},
	// SGLang's template manager (srt/managers/template_manager.py) loads
	// and inspects the model's chat template at start
	{Text: "template_manager", Class: failure.ClassTokenizerTemplate},
	{Text: "jinja2", Class: failure.ClassTokenizerTemplate},
	{Text: "tokenization_", Class: failure.ClassTokenizerTemplate},
	{Text: "/tokenizer.py", Class: failure.ClassTokenizerTemplate},
	{Text: "get_tokenizer", Class: failure.ClassTokenizerTemplate},
	// a CUDA graph's code: captured in the warm-up, then replayed by every
	// step that serves (vLLM's compilation/cuda_graph.py CUDAGraphWrapper
	// __call__, SGLang's cuda_graph_runner replay), so it names the class
	// only up to the warm-up (FrameHint.Until)
	{Text: "cuda_graph", Class: failure.ClassWarmupFailed, Until: failure.PhaseWarmup},
	{Text: "cudagraph", Class: failure.ClassWarmupFailed, Until: failure.PhaseWarmup},
	{Text: "capture_model", Class: failure.ClassWarmupFailed},
	{Text: "profile_run", Class: failure.ClassWarmupFailed},
	{Text: "determine_available_memory", Class: failure.ClassWarmupFailed},
	{Text: "_wait_and_warmup", Class: failure.ClassWarmupFailed},
	// a model's own modelling code (TGI's custom_modeling, vLLM's
	// model_executor/models, SGLang's srt/models): built while the model
	// loads, run again by every warmup step and request, so it names the
	// class only up to load (FrameHint.Until)
	{Text: "custom_modeling", Class: failure.ClassModelLoadFailed, Until: failure.PhaseLoad},
	{Text: "model_executor/models/", Class: failure.ClassModelLoadFailed, Until: failure.PhaseLoad},
	{Text: "srt/models/", Class: failure.ClassModelLoadFailed, Until: failure.PhaseLoad},
	{Text: "model_loader", Class: failure.ClassModelLoadFailed},
	{Text: "load_weights", Class: failure.ClassModelLoadFailed},
	{Text: "weight_utils", Class: failure.ClassModelLoadFailed},
	{Text: "huggingface_hub", Class: failure.ClassModelLoadFailed},
	{Text: "configuration_auto", Class: failure.ClassModelLoadFailed},
	// transformers' config class (PretrainedConfig.__getattribute__ and
	// its kin in configuration_utils modules): the engine reading the
	// model's configuration with a transformers that cannot give what it
	// asks (an attribute the model's config lacks or stores per layer);
	// model code reads the config again in warmup and requests, so only
	// up to load
	{Text: "configuration_utils", Class: failure.ClassModelLoadFailed, Until: failure.PhaseLoad},
}

// pythonFramePhases name the step a traceback frame belongs to: an
// exception raised below such a frame happened in that phase (when it is
// later than the last marker's).
var pythonFramePhases = []FramePhase{
	// snapshot_download fetches the weights (load); a single
	// hf_hub_download is as often the config fetched while the arguments
	// are checked (launch), so it names no phase
	{Text: "from_pretrained", Phase: failure.PhaseLoad},
	{Text: "snapshot_download", Phase: failure.PhaseLoad},
	// the weight files listed or fetched from the hub (TGI's
	// utils/hub.py weight_files / weight_hub_files, vLLM's and SGLang's
	// weight_utils download_weights_from_hf) and the model loader itself
	// (vLLM's get_model_architecture, a worker's load_model)
	{Text: "in weight_files", Phase: failure.PhaseLoad},
	{Text: "in weight_hub_files", Phase: failure.PhaseLoad},
	{Text: "download_weights_from_hf", Phase: failure.PhaseLoad},
	{Text: "in get_model_architecture", Phase: failure.PhaseLoad},
	{Text: "in load_model", Phase: failure.PhaseLoad},
	// llama-cpp-python's server loading its model before it listens
	// (llama_cpp/server/model.py load_llama_from_model_settings, then
	// llama.py's Llama.__init__ building _internals.LlamaModel)
	{Text: "in load_llama_from_model_settings", Phase: failure.PhaseLoad},
	// the model's classes are built from its config (LMDeploy's
	// build_model_agent, _build_model, build_patched_model)
	{Text: "build_model", Phase: failure.PhaseLoad},
	{Text: "init_memory_pool", Phase: failure.PhaseKVInit},
	// MLC LLM's engine sizing its KV cache (cpp/serve/config.cc,
	// InferrableEngineConfig::InferForKVCache), in a TVM traceback
	{Text: "inferforkvcache", Phase: failure.PhaseKVInit},
	{Text: "initialize_kv_cache", Phase: failure.PhaseKVInit},
	{Text: "_initialize_kv_caches", Phase: failure.PhaseKVInit},
	// the memory profile that sizes the KV cache (vLLM's
	// determine_available_memory, V0's determine_num_available_blocks):
	// its dummy forward runs through the model's warm-up helpers
	// (vllm-fork's hpu_model_runner profile_run → warmup_scenario), still
	// kv_init
	{Text: "determine_available_memory", Phase: failure.PhaseKVInit, Holds: true},
	{Text: "determine_num_available_blocks", Phase: failure.PhaseKVInit, Holds: true},
	{Text: "init_cuda_graphs", Phase: failure.PhaseWarmup},
	{Text: "capture_model", Phase: failure.PhaseWarmup},
	{Text: "warmup", Phase: failure.PhaseWarmup},
	// vLLM's workers compile and capture after the KV cache is allocated
	// (v1/worker/gpu_worker.py compile_or_warm_up_model, its sampler's
	// dummy run)
	{Text: "warm_up", Phase: failure.PhaseWarmup},
}

// ggmlSignatures are llama.cpp's (and so Ollama's runner's) errors.
var ggmlSignatures = family("ggml", []Rule{
	// the CPU's vector length is not the one the build's kernels assume
	// (ARM SVE: "GGML_ASSERT: ggml.c:21763: svcntb() == QK8_0" on a 128-bit
	// SVE core; RISC-V V: __riscv_vlenb()): the host, not the model
	// a GGUF tensor type id beyond the types this build knows (gguf.c:
	// "GGML_ASSERT(0 <= info->type && info->type < GGML_TYPE_COUNT)"):
	// the file's format is newer than the build
	{Name: "ggml/assert-tensor-type", Text: "GGML_ASSERT", Pattern: regexp.MustCompile(`GGML_ASSERT.*\btype < GGML_TYPE_COUNT\b`), Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad},
	// a device asked for by index that ggml's registry does not have
	// ("GGML_ASSERT(index < ggml_backend_dev_count()) failed",
	// ggml-backend-reg.cpp): the accelerator is not visible to this build
	{Name: "ggml/assert-device-index", Text: "GGML_ASSERT", Pattern: regexp.MustCompile(`GGML_ASSERT\(\w+ < ggml_backend_(dev|reg)_count\(\)\)`), Class: failure.ClassAcceleratorUnavailable},
	{Name: "ggml/assert-vector-length", Text: "GGML_ASSERT", Pattern: regexp.MustCompile(`GGML_ASSERT.*\b(svcnt[bhwd]|__riscv_vlenb|ggml_cpu_get_sve_cnt)\(\)`), Class: failure.ClassHostCapability, NextStep: sigillStep},
	// Notices ggml prints and goes on after (llama.cpp@f6d77a1
	// ggml/src/ggml-cuda/ggml-cuda.cu: ggml_cuda_host_malloc's pinned
	// memory warning, ggml_cuda_init's "failed to initialize CUDA" before
	// the CPU backend takes over).
	{Text: "of pinned memory", Pattern: regexp.MustCompile(`(?i)failed to allocate [\d.]+ MiB of pinned memory`), Class: failure.ClassHostCapability, Tier: TierHint, Notice: true},
	{Name: "ggml/ggml-cuda-init-failed-to-initialize-cuda-no-cuda-capable-device", Text: "ggml_cuda_init: failed to initialize",
		Pattern: regexp.MustCompile(`ggml_cuda_init: failed to initialize (CUDA|ROCm|MUSA): no \w+-capable device`),
		Class:   failure.ClassAcceleratorUnavailable, Tier: TierHint, Notice: true},
	// ggml_abort (llama.cpp ggml/src/ggml.c; GGML_ASSERT and GGML_ABORT
	// in ggml/include/ggml.h) prints "FILE:LINE: MESSAGE", a failed
	// assertion's message "GGML_ASSERT(COND) failed", then a backtrace and
	// abort(): that line is the root cause, whatever frames follow or text
	// precedes it on the line (KoboldCpp's token counter). It names where
	// the engine stopped, not why: a crash, refined by context (warmup,
	// a grammar in use).
	// (before mid-2024 ggml printed "GGML_ASSERT: FILE:LINE: COND")
	{Name: "ggml/assert-failed", Text: "GGML_ASSERT", Pattern: ggmlAssertLine, Lookup: ggmlAbort, Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	// A GGML_ABORT with another message, from ggml's sources or
	// llama.cpp's ("llama.cpp:11968: The current context does not support
	// K-shift"); not a backend's "CUDA error" (ggml_cuda_error's abort),
	// which only ends the runtime's own error lines printed beside it.
	{Name: "ggml/abort", Text: "ggml", Pattern: ggmlAbortLine, Lookup: ggmlAbort, Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Name: "ggml/abort-llama", Text: "llama", Also: ".cpp:", Pattern: ggmlAbortLine, Lookup: ggmlAbort, Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	// ggml's own host allocation (llama.cpp@3074b50 ggml/src/ggml.c,
	// ggml_aligned_malloc): names the size before the CPU buffer fails
	{Text: "ggml_aligned_malloc: insufficient memory", Class: failure.ClassHostOOM},
	{Text: "cpu_buffer_type_alloc_buffer: failed to allocate", Class: failure.ClassHostOOM},
	{Text: "unknown model architecture", Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad},
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
	// the context's summary: the allocator's line before it names the
	// device and the size ("allocating 66.50 MiB on device 0: cudaMalloc
	// failed"), so it explains only when no such line came first
	{Text: "failed to allocate compute buffers", Class: failure.ClassGPUOOM, Tier: TierHint},
	{Text: "couldn't bind HTTP server socket", Class: failure.ClassPortInUse},
	{Text: "error parsing grammar", Class: failure.ClassStructuredOutputFailOpen, Phase: failure.PhaseInference},
	{Text: "failed to parse grammar", Class: failure.ClassStructuredOutputFailOpen, Phase: failure.PhaseInference},
	{Text: "error initializing grammar sampler", Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	// the grammar sampler left with no stack that accepts the token the
	// model wrote (llama.cpp@0433293 src/llama-grammar.cpp,
	// llama_grammar_accept_token / accept_str: a std::runtime_error
	// "Unexpected empty grammar stack after accepting piece: P (N)"):
	// uncaught in the sampler it aborts the server (C++'s "terminate
	// called after throwing ...", then "what():  ..."; libc++'s
	// "terminating due to uncaught exception of type std::runtime_error:
	// ..."), caught by the server it fails the request (structuredRefine)
	{Text: "Unexpected empty grammar stack", Class: failure.ClassStructuredOutputCrash, Phase: failure.PhaseInference},
	{Text: "at row", Pattern: regexp.MustCompile(`at row \d+, column \d+`), Class: failure.ClassTokenizerTemplate},
	{Text: "exceeds the available context size", Class: failure.ClassContextExceedsKV},
	{Text: "input is too large to process", Class: failure.ClassContextExceedsKV},
	// the server's retry with a smaller batch (tools/server: "failed to
	// find free space in the KV cache, retrying with smaller batch size"):
	// a notice, it goes on; its failure, when the batch cannot shrink,
	// is the lines below
	{Name: "ggml/kv-cache-full-retrying", Text: "failed to find free space in the KV cache", Also: "retrying with smaller batch", Class: failure.ClassContextExceedsKV, Tier: TierHint, Notice: true},
	{Text: "failed to find free space in the KV cache", Class: failure.ClassContextExceedsKV},
	// the server's decode of a batch the KV cache has no room for
	// (llama.cpp@aa6192d tools/server/server.cpp) and the error the request
	// gets; llama_context::decode's warning before it is a notice (the
	// server retries with half the batch first)
	{Text: "KV cache is full - try increasing it", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseInference},
	{Text: "Input prompt is too big compared to KV size", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseInference},
	{Text: "failed to find a memory slot for batch of size", Class: failure.ClassContextExceedsKV, Tier: TierHint, Notice: true},
	{Text: "chat template", Pattern: regexp.MustCompile(`(?i)(failed to|unable to|error).{0,30}(parse|apply|render|format).{0,20}chat template|chat template.{0,40}(error|failed|not supported|unsupported)`), Class: failure.ClassTokenizerTemplate},
	{Text: "this instruction set", Class: failure.ClassHostCapability},
	// a summary that ends in its own restatement ("Error loading model X:
	// Failed to load model.", LM Studio) names no cause
	{Name: "ggml/summary-failed-to-load-model", Text: "failed to load model", Pattern: regexp.MustCompile(`(?i)failed to load model\.?\s*$`),
		Class: failure.ClassModelLoadFailed, Tier: TierHint, Summary: true},
	// ggml-vulkan's pipeline refused by the driver, relayed by the loader
	// ("error loading model: vk::Device::createComputePipeline:
	// ErrorUnknown"): the device's, not the model's
	{Text: "createComputePipeline", Pattern: regexp.MustCompile(`createComputePipeline: Error(Unknown|InitializationFailed|FeatureNotPresent)`), Class: failure.ClassGPUArchUnsupported},
	// the device lost while the loader uploaded the weights ("error
	// loading model: vk::Queue::submit: ErrorDeviceLost"): the GPU was
	// reset under the engine, not a model it cannot read (model_load_failed
	// was wrong strongly at first sight, r5)
	{Name: "ggml/device-lost-while-loading", Text: "error loading model", Pattern: regexp.MustCompile(`(?i)error loading model: .*(ErrorDeviceLost|DEVICE_LOST)`), Class: failure.ClassEngineDied, Fatal: true, NextStep: gpuResetStep},
	// LM Studio's summary of its engine process's end ("Failed to load
	// model M: Error loading model. (Exit code: 18446744072635812000).
	// Unknown error."): the code says only that the engine died (there a
	// fast fail, 0xC0000409 printed as a rounded float), not why; the
	// engine's own error line before it, when any, is the cause
	// (model_load_failed was wrong strongly at first sight, r8). An error
	// tier, so that the generic rule below does not take the line, but
	// weak: the line names no cause
	{Name: "ggml/summary-error-loading-model-exit-code", Text: "error loading model", Pattern: regexp.MustCompile(`(?i)error loading model\.\s*\(exit code: -?\d+\)`),
		Class: failure.ClassEngineDied, Summary: true, Fatal: true, Weak: true},
	{Text: "error loading model", Class: failure.ClassModelLoadFailed},
	{Text: "failed to load model", Class: failure.ClassModelLoadFailed, Tier: TierHint, Summary: true},
})

// ggmlAbortLine is ggml_abort's "FILE:LINE: MESSAGE" for a source file
// of ggml or llama.cpp (a path through a ggml or llama folder).
var ggmlAbortLine = regexp.MustCompile(`(?:ggml|llama)[^\s:]*\.(?:c|cpp|cu|cuh|m|h):\d+: (.+)$`)

// ggmlAssertLine is a failed GGML_ASSERT, either form; the submatch is
// the condition.
var ggmlAssertLine = regexp.MustCompile(`GGML_ASSERT(?:\((.*)\) failed|: \S+:\d+: (.*))`)

// backendErrorAbort is the message of ggml's abort after a backend
// runtime's error ("CUDA error", "ROCm error", "SYCL error"; the old
// assertion's !"CUDA error").
var backendErrorAbort = regexp.MustCompile(`^!?"?\w+ error"?\s*$`)

// ggmlAbort gives a ggml abort or assertion line its class unless its
// message is a backend runtime's (backendErrorAbort).
func ggmlAbort(m []string) (failure.Class, bool) {
	msg := m[1]
	if msg == "" && len(m) > 2 {
		msg = m[2]
	}
	return failure.ClassEngineDied, !backendErrorAbort.MatchString(msg)
}

// ggmlWrappers restate a llama.cpp failure explained by an earlier line.
var ggmlWrappers = []string{
	"exiting due to model loading error",
	"llama_model_load_from_file_impl: failed to load model",
	"llama_load_model_from_file: failed to load model",
	"srv    load_model: failed to load model",
	"cleaning up before exit",
	// ggml-sycl's exception report: the file and line of the check; the
	// failed call is on the line after it ("SYCL error: CHECK_TRY_ERROR(...)")
	"Exception caught at file:",
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
	// uvicorn's report of a request whose ASGI handler raised
	// (encode/uvicorn uvicorn/protocols/http/h11_impl.py and httptools_impl.py
	// run_asgi: logger.error("Exception in ASGI application\n", exc_info=exc)):
	// only a request runs the application, so once the server is up the
	// traceback after it is that request's (a worker behind its own API,
	// FastChat's model worker, logs no access line for the request first)
	{Text: "Exception in ASGI application", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
}

// num is a regexp fragment for a decimal number that may be negative.
const num = `(-?[\d.]+)`
