package engine

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// TestRootCauseByStructure: the root-cause line is found by the shape of
// the log (which line of a block holds the message), for every engine,
// not by its wording.
func TestRootCauseByStructure(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		lines      []string
		exit       ExitInfo
		class      failure.Class
		root       string
	}{
		{"rust panic message is the line after its header", "mistralrs", []string{
			"2026-05-02T09:14:03.118201Z  INFO mistralrs_server_core: Loading model `m` on cuda[0].",
			"thread 'main' panicked at mistralrs-core/src/pipeline/mod.rs:88:14:",
			"the frobnicator is out of widgets",
			"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
		}, Exited(101), failure.ClassEngineDied, "the frobnicator is out of widgets"},
		{"raise from: the innermost exception", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/hub.py", line 1, in get`,
			"requests.exceptions.HTTPError: 403 Forbidden for url: https://example.org/m",
			"",
			"The above exception was the direct cause of the following exception:",
			"",
			"Traceback (most recent call last):",
			`  File "/x/loader.py", line 2, in load`,
			"huggingface_hub.errors.GatedRepoError: 403 Client Error.",
		}, Exited(1), failure.ClassModelAccessDenied, "HTTPError: 403 Forbidden"},
		{"a chain's link that only quotes a value yields to the next that names it", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/table.py", line 1, in lookup`,
			"KeyError: 'widget9'",
			"",
			"During handling of the above exception, another exception occurred:",
			"",
			"Traceback (most recent call last):",
			`  File "/x/table.py", line 3, in lookup`,
			`KeyError: "Unknown widget: widget9. Known widgets: ['w1', 'w2']"`,
		}, Exited(1), failure.ClassEngineDied, "Unknown widget: widget9"},
		{"a logged repeat yields to the exception its last frame raised in Python", "vllm", []string{
			"ERROR 01-01 00:00:00 engine.py:389] Ray does not allocate any GPUs on the widget node.",
			"ERROR 01-01 00:00:00 engine.py:389] Traceback (most recent call last):",
			`ERROR 01-01 00:00:00 engine.py:389]   File "/x/executor.py", line 7, in _init_workers`,
			"ERROR 01-01 00:00:00 engine.py:389]     raise ValueError(",
			"ERROR 01-01 00:00:00 engine.py:389] ValueError: Ray does not allocate any GPUs on the widget node.",
		}, Exited(1), failure.ClassAcceleratorUnavailable, "engine.py:389] ValueError: Ray does not allocate"},
		{"a logged repeat of a native call's exception stays the cause", "vllm", []string{
			"ERROR 01-01 00:00:00 engine.py:389] Ray does not allocate any GPUs on the widget node.",
			"ERROR 01-01 00:00:00 engine.py:389] Traceback (most recent call last):",
			`ERROR 01-01 00:00:00 engine.py:389]   File "/x/executor.py", line 7, in _init_workers`,
			"ERROR 01-01 00:00:00 engine.py:389]     torch._C._widget_init()",
			"ERROR 01-01 00:00:00 engine.py:389] RuntimeError: Ray does not allocate any GPUs on the widget node.",
		}, Exited(1), failure.ClassAcceleratorUnavailable, "engine.py:389] Ray does not allocate"},
		{"a crash line wrapping its exception yields to the exception line below it", "lmdeploy", []string{
			"2024-01-01 00:00:00,000 - lmdeploy - ERROR - request.py:21 - Engine loop failed with error: call widgetOp failed, detail: the widget is round",
			"Traceback (most recent call last):",
			`  File "/x/engine.py", line 9, in async_loop`,
			"    torch.widget(x)",
			"RuntimeError: call widgetOp failed, detail: the widget is round",
		}, Exited(1), failure.ClassEngineDied, "RuntimeError: call widgetOp failed"},
		{"a crash line wrapping a message that only points above stays", "lmdeploy", []string{
			"2024-01-01 00:00:00,000 - lmdeploy - ERROR - request.py:21 - Engine loop failed with error: The Inner error is reported as above. The widget op failed.",
			"Traceback (most recent call last):",
			`  File "/x/engine.py", line 9, in async_loop`,
			"    torch.widget(x)",
			"RuntimeError: The Inner error is reported as above. The widget op failed.",
		}, Exited(1), failure.ClassEngineDied, "Engine loop failed with error: The Inner error"},
		{"a value the next link does not name stays the cause", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/table.py", line 1, in lookup`,
			"KeyError: 'widget9'",
			"",
			"During handling of the above exception, another exception occurred:",
			"",
			"Traceback (most recent call last):",
			`  File "/x/cleanup.py", line 3, in close`,
			"OSError: the frobnicator's socket is closed",
		}, Exited(1), failure.ClassEngineDied, "KeyError: 'widget9'"},
		{"a line closing with the exception's message in parentheses stated it first", "sglang", []string{
			"[2026-01-01 00:00:00 TP1] Error: Failed to open the widget pipe (the widget pipe is closed).",
			"[2026-01-01 00:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):",
			`  File "/x/pipe.py", line 1, in open`,
			"ValueError: the widget pipe is closed",
		}, Signaled("KILL"), failure.ClassEngineDied, "Failed to open the widget pipe"},
		{"a Ray actor's long prefix is stripped: its traceback is a block", "openai", []string{
			"(ServeReplica:app:LLMDeploymentvLLM:org--A-Very-Long-Model-Name-Instruct-AWQ pid=7896, ip=10.0.0.2) (EngineCore_0 pid=8112) ERROR 06-09 16:23:19 [core.py:500] EngineCore failed to start.",
			"(ServeReplica:app:LLMDeploymentvLLM:org--A-Very-Long-Model-Name-Instruct-AWQ pid=7896, ip=10.0.0.2) (EngineCore_0 pid=8112) ERROR 06-09 16:23:19 [core.py:500] Traceback (most recent call last):",
			`(ServeReplica:app:LLMDeploymentvLLM:org--A-Very-Long-Model-Name-Instruct-AWQ pid=7896, ip=10.0.0.2) (EngineCore_0 pid=8112) ERROR 06-09 16:23:19 [core.py:500]   File "/x/hub.py", line 1, in get`,
			"(ServeReplica:app:LLMDeploymentvLLM:org--A-Very-Long-Model-Name-Instruct-AWQ pid=7896, ip=10.0.0.2) (EngineCore_0 pid=8112) ERROR 06-09 16:23:19 [core.py:500]     raise _format(GatedRepoError, message, response) from e",
			"(ServeReplica:app:LLMDeploymentvLLM:org--A-Very-Long-Model-Name-Instruct-AWQ pid=7896, ip=10.0.0.2) (EngineCore_0 pid=8112) ERROR 06-09 16:23:19 [core.py:500] ValueError: the frobnicator is out of widgets",
		}, Exited(1), failure.ClassEngineDied, "ValueError: the frobnicator is out of widgets"},
		{"an exception that says only an HTTP status: its message after the blank line", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/hub.py", line 1, in get`,
			"huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-0)",
			"",
			"Cannot access gated repo for url https://huggingface.co/api/models/m.",
			"Access to model m is restricted. You must have access to it and be authenticated to access it. Please log in.",
		}, Exited(1), failure.ClassModelAccessDenied, "Cannot access gated repo for url"},
		{"a catch report after an indented what() line is the cause, whole", "llamacpp", []string{
			"The program was built for 1 devices",
			"Build program log for 'Intel(R) Arc(TM) A380 Graphics':",
			" -11 (PI_ERROR_BUILD_PROGRAM_FAILURE)Exception caught at file:/src/ggml/src/ggml-sycl.cpp, line:3775",
			"SYCL error: CHECK_TRY_ERROR(op): Exception caught in this line of code.",
		}, Signaled("ABRT"), failure.ClassGPUArchUnsupported, "(PI_ERROR_BUILD_PROGRAM_FAILURE)Exception caught at file:"},
		{"Metal's missing function, not the wrapper's load summary", "openai", []string{
			"ggml_metal_library_compile_pipeline: failed to compile pipeline: base = 'kernel_x', name = 'kernel_x_nsg=4'",
			`ggml_metal_library_compile_pipeline: Error Domain=MTLLibraryErrorDomain Code=5 "Function kernel_x was not found in the library"`,
			`Failed to load model "m". Error: Error loading model.`,
		}, Exited(1), failure.ClassGPUArchUnsupported, "Function kernel_x was not found in the library"},
		{"an error line ending in a colon: the unlevelled line below is its message", "openai", []string{
			"[2026-01-21 08:14:03.118][1][serving][error][servable_initializer.cpp:214] Error during node initialization: Exception from src/widget.cpp:33:",
			"The frobnicator has no 'w9' widget",
			"",
		}, Exited(1), failure.ClassEngineDied, "The frobnicator has no 'w9' widget"},
		{"ggml-cann's short Inner Error header: the code's own line after it", "llamacpp", []string{
			"CANN error: EE9999: Inner Error!",
			"EE9999: [PID: 1] 2025-10-15-14:43:16.351.702 The frobnicator stream is closed.[FUNC:F][FILE:x.cc][LINE:1]",
			"        TraceBack (most recent call last):",
			"/src/ggml/src/ggml-cann/ggml-cann.cpp:69: CANN error",
		}, Signaled("ABRT"), failure.ClassEngineDied, "The frobnicator stream is closed"},
		{"a step header 'Error in ...' yields to its block's exception", "openai", []string{
			"ERROR 11-11 21:14:55 serving_chat.py:158] Error in applying chat template from request",
			"ERROR 11-11 21:14:55 serving_chat.py:158] Traceback (most recent call last):",
			`ERROR 11-11 21:14:55 serving_chat.py:158]   File "/x/jinja2/environment.py", line 1, in compile`,
			"ERROR 11-11 21:14:55 serving_chat.py:158] jinja2.exceptions.TemplateSyntaxError: unexpected '}'",
		}, Exited(1), failure.ClassTokenizerTemplate, "TemplateSyntaxError: unexpected '}'"},
		{"a bare step header yields to a specific rule of another class through a relayed task", "lmdeploy", []string{
			"2026-03-02 09:45:39,118 - lmdeploy - ERROR - ray_executor.py:361 - Warmup failed.",
			"Traceback (most recent call last):",
			`  File "/x/ray_executor.py", line 359, in warmup`,
			"    ray.get([worker.warmup.remote() for worker in self.workers])",
			"ray.exceptions.RayTaskError(OutOfResources): ray::RayWorkerWrapper.warmup() (pid=1, ip=10.0.0.2)",
			`  File "/x/triton/runtime/build.py", line 1, in _init_handles`,
			"triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 81920, Hardware limit: 65536.",
		}, Exited(1), failure.ClassGPUArchUnsupported, "OutOfResources: out of resource: shared memory"},
		{"caused by: the innermost entry", "mistralrs", []string{
			"Error: failed to start the server",
			"",
			"Caused by:",
			"    0: loading the model",
			"    1: reading /models/m/config.json",
			"    2: Permission denied (os error 13)",
		}, Exited(1), failure.ClassPermissionDenied, "Permission denied (os error 13)"},
		{"signal number in a line", "tgi", []string{
			"2024-02-23T10:14:03.528141Z  INFO text_generation_launcher: Starting shard rank=0",
			"2024-02-23T10:14:09.528141Z ERROR text_generation_launcher: Shard process was signaled to shutdown with signal 4",
			"2024-02-23T10:14:09.528141Z ERROR text_generation_launcher: Shard 0 failed to start",
		}, Exited(1), failure.ClassHostCapability, "signal 4"},
		{"a C++ exception's what()", "lmdeploy", []string{
			"terminate called after throwing an instance of 'std::runtime_error'",
			"  what():  [TM][ERROR] CUDA runtime error: out of memory /src/allocator.h:231",
		}, Signaled("ABRT"), failure.ClassGPUOOM, "what():"},
		{"a child's stderr relayed by a wrapper", "openai", []string{
			"11:52PM DBG GRPC(m-127.0.0.1:1): stderr SIGILL: illegal instruction",
			"11:52PM DBG [llama-cpp] Fails: could not load model: rpc error: code = Unavailable desc = error reading from server: EOF",
		}, Exited(1), failure.ClassHostCapability, "stderr SIGILL"},
		{"an error line beats an advisory warning", "vllm", []string{
			"WARNING 01-01 00:00:00 [x.py:1] To avoid CUDA out of memory errors, consider lowering --gpu-memory-utilization.",
			"ERROR 01-01 00:00:01 [x.py:2] PermissionError: [Errno 13] Permission denied: '/root/.cache/huggingface'",
		}, Exited(1), failure.ClassPermissionDenied, "Permission denied"},
		{"advice alone decides nothing", "vllm", []string{
			"WARNING 01-01 00:00:00 [x.py:1] To avoid CUDA out of memory errors, consider lowering --gpu-memory-utilization.",
		}, Exited(1), failure.ClassEngineDied, "exited with code 1"},
		{"a native frame names the crashed component", "openai", []string{
			"*** Terminating app due to uncaught exception 'NSRangeException', reason: 'index 0 beyond bounds for empty array'",
			"\t3   libmlx.dylib    0x0000000104a1f2b0 _ZN3mlx4core5metal6DeviceC2Ev + 152",
		}, Signaled("ABRT"), failure.ClassAcceleratorUnavailable, "NSRangeException"},
		{"a summary header's block: its exception line", "sglang", []string{
			"[2025-10-22 10:26:55] INFO:     Uvicorn running on http://127.0.0.1:9316 (Press CTRL+C to quit)",
			"[2025-10-22 10:28:56] Initialization failed. warmup error: Traceback (most recent call last):",
			`  File "/x/http_server.py", line 1407, in _run_the_first_request`,
			`    assert res.status_code == 200, f"{res=}"`,
			"AssertionError: res=<Response [418]>",
		}, Exited(1), failure.ClassWarmupFailed, "AssertionError: res=<Response [418]>"},
		{"a gRPC error tree yields to the server's own line", "openai", []string{
			`E0705 08:07:40.219476055   79386 chttp2_server.cc:1080]      UNKNOWN:No address added out of total 1 resolved for '0.0.0.0:9001' {created_time:"2024-07-05T08:07:40", children:[UNKNOWN:Address already in use {syscall:"bind", errno:98}]}`,
			"E0705 08:07:40.219789 79386 main.cc:245] failed to start GRPC service: Unavailable - Socket '0.0.0.0:9001' already in use",
		}, Exited(1), failure.ClassPortInUse, "failed to start GRPC service"},
		{"a FastChat worker's relayed traceback", "openai", []string{
			"2024-04-09 10:21:08 | ERROR | stderr | Traceback (most recent call last):",
			`2024-04-09 10:21:08 | ERROR | stderr |   File "/x/loader.py", line 3, in load`,
			`2024-04-09 10:21:08 | ERROR | stderr |     raise FileNotFoundError(f"No safetensors found in {p}")`,
			"2024-04-09 10:21:08 | ERROR | stderr | FileNotFoundError: No safetensors found in /m",
		}, Exited(1), failure.ClassModelLoadFailed, "FileNotFoundError: No safetensors found in /m"},
		{"a first cause, then the crash it led to", "sglang", []string{
			"[2025-03-03 06:49:27] INFO:     10.0.0.21:53320 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
			"[2025-03-03 06:49:28 TP1] Input length (9000 tokens) exceeds the maximum allowed length (8000 tokens).",
			"[2025-03-03 06:49:28 TP1] Scheduler hit an exception: Traceback (most recent call last):",
			`  File "/x/scheduler.py", line 617, in handle_generate_request`,
			"TypeError: '>' not supported between instances of 'NoneType' and 'int'",
		}, Exited(1), failure.ClassContextExceedsKV, "Input length (9000 tokens)"},
		{"a Go panic's first line", "ollama", []string{
			"panic: runtime error: invalid memory address or nil pointer dereference",
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x5a1b2c]",
			"goroutine 1 [running]:",
		}, Exited(2), failure.ClassEngineDied, "panic: runtime error"},
		{"a wrapper's words yield to the cause it quotes", "mistralrs", []string{
			"Serving on http://0.0.0.0:1234.",
			"Model failed with error `DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")`. Please raise an issue.",
		}, Exited(0), failure.ClassGPUOOM, "CUDA_ERROR_OUT_OF_MEMORY"},
		{"frames place a generic CUDA error", "trtllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/tensorrt_llm/_ipc_utils.py", line 95, in open_ipc_memory`,
			"    _raise_if_error(cudart.cudaIpcOpenMemHandle(handle, flags)[0])",
			"RuntimeError: CUDA Runtime API error: <cudaError_t.cudaErrorInvalidDevice: 101>",
		}, Exited(1), failure.ClassHostCapability, "cudaErrorInvalidDevice"},
		{"a broken install is not the model", "sglang", []string{
			"Traceback (most recent call last):",
			`  File "/x/sglang/srt/models/deepseek_v2.py", line 3, in <module>`,
			"ImportError: cannot import name 'fused_x' from 'aiter.ops'",
		}, Signaled("KILL"), failure.ClassEngineDied, "cannot import name"},
		{"a subprocess's failure is not the innermost cause", "vllm", []string{
			"ERROR 01-01 00:00:00 [registry.py:1] Error in inspecting model architecture 'LlamaForCausalLM'",
			"ERROR 01-01 00:00:00 [registry.py:1] Traceback (most recent call last):",
			`ERROR 01-01 00:00:00 [registry.py:1]   File "/x/vllm/model_executor/models/registry.py", line 1, in _run_in_subprocess`,
			"ERROR 01-01 00:00:00 [registry.py:1] subprocess.CalledProcessError: Command '['python3']' returned non-zero exit status 1.",
			"ERROR 01-01 00:00:00 [registry.py:1] The above exception was the direct cause of the following exception:",
			"ERROR 01-01 00:00:00 [registry.py:1] Traceback (most recent call last):",
			`ERROR 01-01 00:00:00 [registry.py:1]   File "/x/vllm/model_executor/layers/rotary_embedding.py", line 1, in f`,
			"ERROR 01-01 00:00:00 [registry.py:1] RuntimeError: HIP error: invalid device function",
		}, Exited(1), failure.ClassGPUArchUnsupported, "HIP error: invalid device function"},
		{"a summary's cause is the child's line before it", "openai", []string{
			"2026-05-07 16:42:48 [DEBUG]",
			" KeyError: 'model_type'",
			"2026-05-07 16:42:48 [ERROR]",
			" [LM STUDIO SERVER] Error loading model m: Failed to load model.",
		}, Exited(0), failure.ClassModelLoadFailed, "KeyError: 'model_type'"},
		{"a ggml abort line, not the backtrace after it", "llamacpp", []string{
			"/x/ggml/src/ggml-backend-meta.cpp:537: GGML_ASSERT(ret.axis != GGML_BACKEND_SPLIT_AXIS_UNKNOWN) failed",
			"/x/libggml-base.so.0(ggml_abort+0x15b)[0x7ff66681785b]",
			"#2  0x000055d4a1c3eb9c in ggml_abort ()",
		}, Signaled("ABRT"), failure.ClassEngineDied, "GGML_ASSERT(ret.axis"},
		{"a backend's bare abort leaves the cause to its runtime's line", "llamacpp", []string{
			"/app/ggml/src/ggml-cuda/ggml-cuda.cu:84: CUDA error",
			"CUDA error: an illegal memory access was encountered",
		}, Signaled("ABRT"), failure.ClassEngineDied, "an illegal memory access"},
		{"a Windows exception code in a line, signed decimal", "openai", []string{
			"[ERROR] llama-server process has terminated with exit code: -1073741795",
		}, Exited(0), failure.ClassHostCapability, "-1073741795"},
		{"a Windows exception code as an unsigned 64-bit number", "openai", []string{
			"[ERROR] llama-server process has terminated with exit code: 18446744072635809821",
		}, Exited(0), failure.ClassHostCapability, "18446744072635809821"},
		{"a wrapper's step words around a Windows code printed as a float64", "openai", []string{
			"[ERROR] llama_model_load: error loading model: the engine process ended, exit code 18446744072635812000",
		}, Exited(0), failure.ClassEngineDied, "18446744072635812000"},
		{"an error line that wraps the traceback after it: its exception line", "trtllm", []string{
			"[07/11/2025-03:15:58] [TRT-LLM] [E] Failed to initialize executor on rank 0: Executor creation failed due to insufficient GPU memory.",
			"Traceback (most recent call last):",
			`  File "/x/tensorrt_llm/_torch/pyexecutor/py_executor_creator.py", line 112, in observe_creation_stage`,
			"    raise RuntimeError(explanation) from e",
			"RuntimeError: Executor creation failed due to insufficient GPU memory.",
		}, Exited(1), failure.ClassGPUOOM, "RuntimeError: Executor creation failed"},
		{"a logger line that repeats the exception stays", "vllm", []string{
			`ERROR 02-11 14:20:32 engine.py:389] nrt_tensor_allocate status=4 message="Allocation Failure"`,
			"ERROR 02-11 14:20:32 engine.py:389] Traceback (most recent call last):",
			`ERROR 02-11 14:20:32 engine.py:389]   File "/x/engine.py", line 380, in run_mp_engine`,
			`ERROR 02-11 14:20:32 engine.py:389] RuntimeError: nrt_tensor_allocate status=4 message="Allocation Failure"`,
		}, Exited(1), failure.ClassGPUOOM, `engine.py:389] nrt_tensor_allocate`},
		{"a rank's traceback under torch.distributed's prefix", "vllm", []string{
			"[rank0]: Traceback (most recent call last):",
			`[rank0]:   File "/x/vllm/model_executor/model_loader/loader.py", line 1, in load_model`,
			"[rank0]:     model.load_weights(weights)",
			"[rank0]: KeyError: 'model.layers.0.mlp.gate.weight'",
		}, Exited(1), failure.ClassModelLoadFailed, "KeyError: 'model.layers.0.mlp.gate.weight'"},
		{"an exception whose message is a traceback: the line that ends it", "openai", []string{
			"Exception in thread Thread-1 (_background_loop):",
			"Traceback (most recent call last):",
			`  File "/x/tvm/_ffi/base.py", line 481, in raise_last_ffi_error`,
			"tvm._ffi.base.TVMError: Traceback (most recent call last):",
			"  1: mlc::llm::serve::EngineImpl::Step()",
			"  0: mlc::llm::serve::ModelImpl::BatchDecode(tvm::runtime::ObjectRef const&)",
			"TVMError: Check failed: (result) is false: Failed to allocate 99121664 bytes with alignment 16 bytes.",
		}, Exited(1), failure.ClassGPUOOM, "Failed to allocate 99121664 bytes"},
		{"a bare AssertionError: the assert statement of its last frame", "sglang", []string{
			"[2025-08-10 10:00:00] Scheduler hit an exception: Traceback (most recent call last):",
			`  File "/x/sglang/srt/layers/moe/fp8.py", line 9, in create_weights`,
			"    assert is_sm100_supported() or is_sm90_supported()",
			"           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
			"AssertionError",
		}, Exited(1), failure.ClassGPUArchUnsupported, "assert is_sm100_supported() or is_sm90_supported()"},
		{"an exception message that goes on below its line", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/triton/compiler/compiler.py", line 80, in make_ir`,
			"triton.compiler.errors.CompilationError: at 1:0:",
			"def _kernel(",
			"^",
			`ValueError("type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')")`,
		}, Exited(1), failure.ClassGPUArchUnsupported, "type fp8e4nv not supported in this architecture"},
		{"a dead thread's exception, not its header", "lmdeploy", []string{
			"Exception in thread Thread-3:",
			"Traceback (most recent call last):",
			`  File "/x/lmdeploy/turbomind/turbomind.py", line 499, in _func`,
			"RuntimeError: [TM][ERROR] CUDA runtime error: invalid argument /lmdeploy/src/turbomind/utils/allocator.h:262",
		}, Exited(0), failure.ClassEngineDied, "CUDA runtime error: invalid argument"},
		{"a loop's error header yields to the exception it restates", "trtllm", []string{
			"[09/03/2026-08:47:22] [TRT-LLM] [RANK 4] [E] Error in event loop: History length cannot exceed capacity",
			"Exception in thread Thread-5 (_event_loop_wrapper):",
			"Traceback (most recent call last):",
			`  File "/x/tensorrt_llm/_torch/pyexecutor/py_executor.py", line 652, in _event_loop_wrapper`,
			"ValueError: History length cannot exceed capacity",
		}, Exited(0), failure.ClassEngineDied, "ValueError: History length cannot exceed capacity"},
		{"an unknown line that states the exception first stays", "trtllm", []string{
			"[06/21/2025-03:55:04] [TRT-LLM] [E] Encountered an error in forward function: boom in gemm",
			"Exception in thread Thread-4 (_executor_loop_overlap):",
			"Traceback (most recent call last):",
			`  File "/x/tensorrt_llm/_torch/pyexecutor/py_executor.py", line 1016, in _executor_loop_overlap`,
			"RuntimeError: boom in gemm",
		}, Exited(0), failure.ClassEngineDied, "Encountered an error in forward function: boom in gemm"},
		{"a relayed worker's C++ what() after its terminate line", "openai", []string{
			"2022-06-08 15:26:49,012 [INFO ] W-9000-m_1.0-stderr MODEL_LOG - terminate called after throwing an instance of 'std::bad_alloc'",
			"2022-06-08 15:26:49,012 [INFO ] W-9000-m_1.0-stderr MODEL_LOG -   what():  std::bad_alloc",
			"2022-06-08 15:26:49,205 [INFO ] W-9000-m_1.0 org.pytorch.serve.wlm.WorkerThread - Retry worker: 9000 in 1 seconds.",
		}, Exited(0), failure.ClassHostOOM, "what():  std::bad_alloc"},
		{"SGLang's token pool without slots for a batch", "sglang", []string{
			"[2026-07-10 02:41:35 TP0] Prefill out of memory. Try to lower your batch size.",
			"[2026-07-10 02:41:35 TP0] Try to allocate 8192 tokens.",
		}, Signaled("QUIT"), failure.ClassGPUOOM, "Prefill out of memory"},
		{"a GGUF tensor type this build does not know", "llamafile", []string{
			"llama.cpp/ggml.c:19663: GGML_ASSERT(0 <= info->type && info->type < GGML_TYPE_COUNT) failed",
		}, Signaled("ABRT"), failure.ClassModelLoadFailed, "GGML_TYPE_COUNT"},
		{"a device index ggml's registry does not have", "llamacpp", []string{
			"/src/llama.cpp/ggml/src/ggml-backend-reg.cpp:335: GGML_ASSERT(index < ggml_backend_dev_count()) failed",
		}, Signaled("ABRT"), failure.ClassAcceleratorUnavailable, "ggml_backend_dev_count"},
		{"ARM SVE's vector length", "llamacpp", []string{
			"GGML_ASSERT: ggml.c:21763: svcntb() == QK8_0",
		}, Signaled("ABRT"), failure.ClassHostCapability, "svcntb() == QK8_0"},
		{"a wrapper's words on a line that names the cause", "openai", []string{
			`Sep 21 16:16:29 WARN  Backend process exited unexpectedly id="m" stderr="0.02.236.346 E srv    load_model: failed to load model, '/models/m.gguf'"`,
			`Sep 21 16:16:29 ERROR Failed to load model modelID="m" error=failed to load model with internal loader: could not load model: rpc error: code = Internal desc = Failed to load model: /models/m.gguf. Error: llama_model_load: error loading model: unknown model architecture: 'spark2_5'; llama_model_load_from_file_impl: failed to load model`,
		}, Exited(0), failure.ClassModelLoadFailed, "unknown model architecture: 'spark2_5'"},
		{"a logged line stays the cause; the handler's block names the phase", "openai", []string{
			"ERROR:root:Model type qwen2_5_vl not supported.",
			"Traceback (most recent call last):",
			`  File "/x/mlx_vlm/utils.py", line 64, in get_model_and_args`,
			"ModuleNotFoundError: No module named 'mlx_vlm.models.qwen2_5_vl'",
			"",
			"During handling of the above exception, another exception occurred:",
			"",
			"Traceback (most recent call last):",
			`  File "/x/mlx_vlm/utils.py", line 160, in load_model`,
			"ValueError: Model type qwen2_5_vl not supported.",
		}, Exited(1), failure.ClassModelLoadFailed, "ERROR:root:Model type qwen2_5_vl not supported."},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.exit})
		if f.Class != c.class || !strings.Contains(f.RootCause, c.root) {
			t.Errorf("%s: %s %q (rule %s), want %s with %q", c.name, f.Class, f.RootCause, f.Rule, c.class, c.root)
		}
		if strings.HasPrefix(c.name, "a logged line stays") && f.Phase != failure.PhaseLoad {
			t.Errorf("%s: phase %s, want load (the handler's load_model frame)", c.name, f.Phase)
		}
	}
}

// TestAfterReadiness: what failed once the server served: a crash line
// that reports its process's death is the engine dying although a
// wrapper outlives it (Ollama's runner); an exception in a request the
// server outlived is a failed request (probe_failed), even when no
// request had succeeded before.
func TestAfterReadiness(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		lines      []string
		class      failure.Class
	}{
		{"a runner's SIGSEGV under a server that stays up", "ollama", []string{
			`[GIN] 2025/04/24 - 05:53:58 | 200 | 18.911542066s |      172.18.0.5 | POST     "/api/generate"`,
			"SIGSEGV: segmentation violation",
			"signal arrived during cgo execution",
			`time=2025-04-24T05:54:35.112Z level=ERROR source=server.go:449 msg="llama runner terminated" error="exit status 2"`,
		}, failure.ClassEngineDied},
		{"a kernel's crash, then the wrapper says the runner ended", "ollama", []string{
			`[GIN] 2025/04/14 - 20:20:32 | 200 |    4.2413769s |       127.0.0.1 | POST     "/api/generate"`,
			"CUDA error: an illegal memory access was encountered",
			`time=2025-04-14T20:20:48.993+08:00 level=ERROR source=server.go:449 msg="llama runner terminated" error="exit status 0xc0000409"`,
		}, failure.ClassEngineDied},
		// a kernel's fault is sticky: the CUDA context serves nothing
		// more (CUDA Runtime API, cudaErrorIllegalAddress), so a server
		// that outlives the line has lost its engine
		{"a kernel's crash the server outlived, no runner death", "ollama", []string{
			`[GIN] 2025/04/14 - 20:20:32 | 200 |    4.2413769s |       127.0.0.1 | POST     "/api/generate"`,
			"CUDA error: an illegal memory access was encountered",
		}, failure.ClassEngineDied},
		{"a 500 and the request's exception", "openai", []string{
			"INFO:     Uvicorn running on http://127.0.0.1:5000 (Press CTRL+C to quit)",
			`INFO:     127.0.0.1:50112 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error`,
			"ERROR:    Exception in ASGI application",
			"Traceback (most recent call last):",
			`  File "/x/starlette/responses.py", line 187, in render`,
			"ValueError: Out of range float values are not JSON compliant",
		}, failure.ClassProbeFailed},
		{"a kernel's assert under TGI's grammar processor, its frames after loguru's mark", "tgi", []string{
			"2024-11-06T09:41:50.101Z  INFO text_generation_router_v3: backends/v3/src/lib.rs:125: Using backend V3",
			`2024-11-06T09:41:58.420Z  INFO chat_completions{total_time="2.1s"}: text_generation_router::server: router/src/server.rs:402: Success`,
			"../aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] Assertion `index out of bounds` failed.",
			"Traceback (most recent call last):",
			`> File "/x/text_generation_server/interceptor.py", line 24, in intercept`,
			"    return await response",
			`  File "/x/text_generation_server/utils/tokens.py", line 328, in __call__`,
			"    _scores = self.grammar_processor(_scores, self.fsm_grammar_states)",
			"RuntimeError: CUDA error: device-side assert triggered",
		}, failure.ClassStructuredOutputCrash},
		{"a kernel's crash under a request vLLM logged with its guided-decoding parameters", "vllm", []string{
			`(APIServer pid=1) INFO 09-02 08:03:58 [logger.py:40] Received request chatcmpl-1: prompt: 'x', params: SamplingParams(n=1, temperature=0.0, max_tokens=64, guided_decoding=GuidedDecodingParams(json={'type': 'object'}, backend=None)), prompt_token_ids: None.`,
			`(APIServer pid=1) INFO:     10.0.0.5:51228 - "POST /v1/chat/completions HTTP/1.1" 200 OK`,
			"(VllmWorker TP1 pid=443) Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:594 'an illegal memory access was encountered'",
		}, failure.ClassStructuredOutputCrash},
		{"a native check in the grammar's token bitmask", "lmdeploy", []string{
			"INFO:     Uvicorn running on http://0.0.0.0:23333 (Press CTRL+C to quit)",
			`INFO:     10.0.3.17:40120 - "POST /v1/chat/completions HTTP/1.1" 200 OK`,
			"[TM][FATAL] kernels/apply_token_bitmask_inplace_cuda.cu(212): Check failed: logits_shape.first ==bitmask_shape.first logits and bitmask must have the same batch size.",
		}, failure.ClassStructuredOutputCrash},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		exit := Exited(0)
		if c.class == failure.ClassStructuredOutputCrash && c.kind != "tgi" {
			exit = Signaled("ABRT")
		}
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: exit})
		if f.Class != c.class || f.Phase != failure.PhaseInference {
			t.Errorf("%s: %s in %s (rule %s, root %q), want %s in inference", c.name, f.Class, f.Phase, f.Rule, f.RootCause, c.class)
		}
	}
}

// TestAdviceFitsTheCause: the next step of a shared family's rule fits
// its cause whatever the engine kind (a bus error in TGI's download is
// shared memory, not vLLM's WSL2 fallback).
func TestAdviceFitsTheCause(t *testing.T) {
	for _, c := range []struct {
		kind, line    string
		exit          ExitInfo
		want, wantNot string
	}{
		{"tgi", "2023-06-13T12:05:44.921433Z ERROR text_generation_launcher: Download process was signaled to shutdown with signal 7:", Exited(1), "--shm-size", "VLLM_"},
		{"vllm", "ERROR 01-01 00:00:00 [x.py:1] RuntimeError: NCCL error: unhandled system error", Exited(1), "NCCL_DEBUG=INFO", "VLLM_USE_V2"},
		{"sglang", "[2025-01-01 00:00:00 TP0] RuntimeError: CUDA error: peer access is not supported between these two devices", Exited(1), "--disable-custom-all-reduce", "WSL2"},
		{"lmdeploy", "[1721216845.6] [h:849 :f] vfs_fuse.c:281 UCX ERROR inotify_add_watch(/tmp) failed: No space left on device", Exited(1), "max_user_watches", "HF_HOME"},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		tr.Feed(c.line)
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.exit})
		if !strings.Contains(f.NextStep, c.want) || strings.Contains(f.NextStep, c.wantNot) {
			t.Errorf("%s %q: %s (rule %s) advises %q, want %q and not %q", c.kind, c.line, f.Class, f.Rule, f.NextStep, c.want, c.wantNot)
		}
	}
}

// TestPhaseFromWhatTheLinesSay: the phase of a failure comes from what
// the engine's lines and frames say it was doing, in every engine: a
// periodic logger with tokens served (mistral.rs), mlx_lm.server's
// prompt progress, MLC's KV cache sizing frame, the CUDA context made
// at launch whatever files were read before it.
func TestPhaseFromWhatTheLinesSay(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		lines      []string
		phase      failure.Phase
		probed     bool // hiro's health check had answered ready: its probe was the request
	}{
		// the KV sizing's memory profile runs the model through helpers
		// named for warm-up (vllm-fork's HPU runner): still kv_init; a
		// capture outside the profile is warmup
		{"a warm-up helper inside the KV sizing's memory profile", "vllm", []string{
			"INFO 01-01 00:00:00 model_runner.py:1] Loading model weights took 4.1 GB",
			"Traceback (most recent call last):",
			`  File "/v/vllm/worker/hpu_worker.py", line 254, in determine_num_available_blocks`,
			"    self.model_runner.profile_run()",
			`  File "/v/vllm/worker/hpu_model_runner.py", line 1527, in warmup_scenario`,
			"    self.execute_model(inputs, kv_caches, warmup_mode=True)",
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
		}, failure.PhaseKVInit, false},
		{"a capture after the KV sizing", "vllm", []string{
			"INFO 01-01 00:00:00 model_runner.py:1] Loading model weights took 4.1 GB",
			"Traceback (most recent call last):",
			`  File "/v/vllm/v1/engine/core.py", line 1, in _initialize_kv_caches`,
			"    self.model_executor.initialize_from_config(kv_cache_configs)",
			`  File "/v/vllm/v1/worker/gpu_worker.py", line 1, in compile_or_warm_up_model`,
			"    self.model_runner.capture_model()",
			"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
		}, failure.PhaseWarmup, false},
		{"a throughput logger with tokens served", "mistralrs", []string{
			"2025-05-27T01:09:52.403004Z  INFO mistralrs_server: Serving on http://0.0.0.0:1234.",
			"2025-05-27T01:10:14.516982Z  INFO mistralrs_core::engine::logger: Throughput (T/s) 38.60, Prefix cache hitrate 0.00%, 0 running, 0 waiting",
			"thread '<unnamed>' panicked at mistralrs-core/src/pipeline/mod.rs:462:35:",
			"Did not get any inputs. This is shocking.",
		}, failure.PhaseInference, true},
		{"a throughput logger with nothing served yet", "mistralrs", []string{
			"2025-05-27T01:09:52.403004Z  INFO mistralrs_server: Serving on http://0.0.0.0:1234.",
			"2025-05-27T01:10:14.516982Z  INFO mistralrs_core::engine::logger: Throughput (T/s) 0.00, Prefix cache hitrate 0.00%, 0 running, 0 waiting",
			"thread '<unnamed>' panicked at mistralrs-core/src/pipeline/mod.rs:462:35:",
			"Did not get any inputs. This is shocking.",
		}, failure.PhaseReadyWait, true},
		// a flag's words in an echo of the engine's arguments are no
		// step (llama-box prints its command line after GPUStack's load)
		{"an arguments echo naming --no-warmup and --kv-cache-dtype", "openai", []string{
			"Downloading Model to directory: /var/lib/gpustack/cache/m",
			"0.00.005.376 I arguments  : llama-box --host 0.0.0.0 --no-warmup --cache-type-k q8_0 --kv-cache-dtype q8_0 --port 40408 --model /m/m.gguf",
			"0.00.476.376 E CANN error: EE1001: 2025-02-24-08:51:37.210.355 The argument is invalid.Reason: rtGetDevMsg execute failed, reason=[context pointer null]",
		}, failure.PhaseLoad, false},
		{"a ggml operation's CUDA error after the KV cache (a derivative's warmup)", "koboldcpp", []string{
			"llama_kv_cache: size = 11776.00 MiB ( 32768 cells,  92 layers,  1/1 seqs), K (f16): 5888.00 MiB, V (f16): 5888.00 MiB",
			"CUDA error: invalid argument",
			"  current device: 0, in function ggml_cuda_mul_mat_id at ggml/src/ggml-cuda/ggml-cuda.cu:2346",
			"ggml/src/ggml-cuda/ggml-cuda.cu:96: CUDA error",
		}, failure.PhaseWarmup, false},
		{"a CUDA error clearing the KV cache's buffer", "koboldcpp", []string{
			"llama_kv_cache: size = 11776.00 MiB ( 32768 cells,  92 layers,  1/1 seqs), K (f16): 5888.00 MiB, V (f16): 5888.00 MiB",
			"CUDA error: invalid argument",
			"  current device: 0, in function ggml_backend_cuda_buffer_clear at ggml/src/ggml-cuda/ggml-cuda.cu:620",
			"ggml/src/ggml-cuda/ggml-cuda.cu:96: CUDA error",
		}, failure.PhaseKVInit, false},
		{"the device allocator's failure the graph allocator's reserve continues", "ollama", []string{
			`time=2025-09-10T14:02:43.512Z level=INFO source=ggml.go:381 msg="model weights" buffer=CUDA0 size="7.3 GiB"`,
			"ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4136.07 MiB on device 0: cudaMalloc failed: out of memory",
			"ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 4336976896",
		}, failure.PhaseKVInit, false},
		{"MLC sizing its KV cache", "openai", []string{
			"Traceback (most recent call last):",
			`  File "/x/cpp/serve/config.cc", line 757, in mlc::llm::serve::InferrableEngineConfig::InferForKVCache(mlc::llm::serve::EngineMode)`,
			"TVMError: Check failed: (output_res.IsOk()) is false: Insufficient GPU memory error: The available single GPU memory is 23669.327 MB",
		}, failure.PhaseKVInit, false},
		{"CUDA's forward compatibility refused after config files were read", "mistralrs", []string{
			"2026-02-03T08:12:40.701103Z  INFO mistralrs_core::pipeline::paths: Found model weight filenames [\"model-00001-of-00005.safetensors\"]",
			`Error: DriverError(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW")`,
		}, failure.PhaseLaunch, false},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		o := Outcome{Kind: OutcomeExited, Exit: Exited(1)}
		if c.probed {
			o.Health = &HealthResult{State: HealthReady}
		}
		f := tr.Classify(o)
		if f.Phase != c.phase {
			t.Errorf("%s: phase %s (rule %s, root %q), want %s", c.name, f.Phase, f.Rule, f.RootCause, c.phase)
		}
	}
}

// TestFailureAfterListenIsARequest: a failure after the server said it
// was up, with no request line, is a request's (inference): a server
// does no device work after it listens but for a request. Not when hiro's
// own health check had answered ready (its probe completion was the
// request: ready_wait), not for the start-up's own failures (a port
// taken at bind time after "Application startup complete"), not for a
// warning (Ollama listens first and warns of the devices it drops), not
// for an error logged before the listen line.
func TestFailureAfterListenIsARequest(t *testing.T) {
	listened := []string{
		"INFO:     Application startup complete.",
		"INFO:     Uvicorn running on http://0.0.0.0:23333 (Press CTRL+C to quit)",
	}
	cudaErr := "RuntimeError: CUDA error: an illegal memory access was encountered"
	for _, c := range []struct {
		name, kind string
		lines      []string
		probed     bool
		phase      failure.Phase
	}{
		{"a CUDA error after uvicorn listens", "lmdeploy", append(listened[:2:2], cudaErr), false, failure.PhaseInference},
		{"an unexplained error after mistral.rs serves", "mistralrs", []string{
			"2025-05-27T01:09:52.403004Z  INFO mistralrs_server: Serving on http://0.0.0.0:1234.",
			"Error: worker thread gone",
		}, false, failure.PhaseInference},
		{"the same while hiro's probe ran", "lmdeploy", append(listened[:2:2], cudaErr), true, failure.PhaseReadyWait},
		{"a port taken at bind time", "openai", []string{listened[0],
			"ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use"}, false, failure.PhaseReadyWait},
		{"Ollama's device warning after it listens", "ollama", []string{
			`time=2025-08-25T09:14:02.127+02:00 level=INFO source=routes.go:1384 msg="Listening on 127.0.0.1:11434 (version 0.11.6)"`,
			`time=2025-08-25T09:14:02.402+02:00 level=WARN source=amd_windows.go:139 msg="amdgpu is not supported (supported types:[])" gpu_type=gfx1103 gpu=0`,
		}, false, failure.PhaseLaunch}, // the rule's own phase: the device was dropped at discovery
		{"KoboldCpp's own warmup after it listens", "koboldcpp", []string{
			"Load Text Model OK: True",
			"Please connect to custom endpoint at http://localhost:5001",
			"Starting model warm up, please wait a moment...",
			"CUDA error: an illegal memory access was encountered",
		}, false, failure.PhaseReadyWait},
		{"an error logged before the listen line", "lmdeploy", append([]string{cudaErr}, listened...), false, failure.PhaseReadyWait},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		o := Outcome{Kind: OutcomeExited, Exit: Exited(1)}
		if c.probed {
			o.Health = &HealthResult{State: HealthReady}
		}
		if f := tr.Classify(o); f.Phase != c.phase {
			t.Errorf("%s: phase %s (class %s, rule %s, root %q), want %s", c.name, f.Phase, f.Class, f.Rule, f.RootCause, c.phase)
		}
	}
}

// TestSummaryTakesTheChildsLine: a wrapper's summary that names no cause
// (TGI's "Shard 0 crashed", SGLang's "scheduler is dead", vLLM's
// "EngineCore encountered a fatal error") gives the first error line
// before it as the root cause, unless that line only says the channel to
// the dead child broke (a gRPC transport error); a C++ terminate line's
// what() message is the cause whatever its words; an exception line a
// worker's logger relayed stays the cause when the parent's traceback
// restates it bare (it adds no words of its own); a thread's death the
// process went on after yields to a later failure.
func TestSummaryTakesTheChildsLine(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		lines      []string
		root       string
	}{
		{"the router's relayed request error before the shard's crash", "tgi", []string{
			"2025-03-17T07:49:36.921507Z  INFO text_generation_router::server: router/src/server.rs:2419: Connected",
			"2025-03-17T07:51:38.200715Z ERROR generate_stream{parameters=..}:infer:send_error: text_generation_router_v3::backend: backends/v3/src/backend.rs:546: Request failed during generation: Server error: CUDA error: an illegal instruction",
			"2025-03-17T07:51:40.101702Z ERROR shard-manager: text_generation_launcher: Shard 0 crashed",
		}, "Request failed during generation"},
		{"a lost channel before the shard's crash", "tgi", []string{
			"2024-04-30T08:24:37.551308Z ERROR batch{batch_size=1}:prefill: text_generation_client: router/client/src/lib.rs:33: Server error: transport error",
			"2024-04-30T08:24:38.203116Z ERROR text_generation_launcher: Shard 0 crashed",
		}, "Shard 0 crashed"},
		{"a what() under terminate before the scheduler's death", "sglang", []string{
			"terminate called after throwing an instance of 'c10::DistBackendError'",
			"  what():  [PG ID 2 PG GUID 3 Rank 0] Process group watchdog thread terminated with exception: HIP error: operation not permitted",
			"[2026-06-25 03:13:09] Rank 0 scheduler is dead. Please check if there are relevant logs.",
		}, "what():  [PG ID 2"},
		{"a worker's relayed exception line, restated bare by the parent's traceback", "vllm", []string{
			"ERROR 06-06 14:09:57 worker_base.py:148] Error executing method init_device. This might cause deadlock in distributed execution.",
			"ERROR 06-06 14:09:57 worker_base.py:148] Traceback (most recent call last):",
			`ERROR 06-06 14:09:57 worker_base.py:148]   File "/x/vllm/worker/worker.py", line 110, in init_device`,
			"ERROR 06-06 14:09:57 worker_base.py:148] RuntimeError: CUDA error: out of memory",
			"Traceback (most recent call last):",
			`  File "/x/vllm/executor/multiproc_gpu_executor.py", line 70, in _init_executor`,
			"RuntimeError: CUDA error: out of memory",
		}, "worker_base.py:148] RuntimeError: CUDA error: out of memory"},
		{"a thread's death the engine went on after, then the engine's own failure", "vllm", []string{
			"(EngineCore pid=84) Exception in thread Thread-2 (_report_usage_worker):",
			"(EngineCore pid=84) Traceback (most recent call last):",
			`(EngineCore pid=84)   File "<frozen os>", line 225, in makedirs`,
			"(EngineCore pid=84) PermissionError: [Errno 13] Permission denied: '/.config'",
			"(EngineCore pid=84) INFO 05-07 14:21:17 [gpu_model_runner.py:4190] Starting to load model Qwen/Qwen3-0.6B...",
			"(EngineCore pid=84) ERROR 05-07 14:22:51 [core.py:1108] PermissionError: [Errno 13] Permission denied: '/.triton'",
		}, "'/.triton'"},
		{"a traceback a warning introduced, then the engine's own failure", "openai", []string{
			"16:36:42-092387 WARNING  Failed to load flash-attention due to the following error:",
			"",
			"Traceback (most recent call last):",
			`  File "/x/modules/exllamav2_hf.py", line 23, in <module>`,
			"ModuleNotFoundError: No module named 'flash_attn'",
			`16:38:21-561203 INFO     Loaded "m" in 100.77 seconds.`,
			"Traceback (most recent call last):",
			`  File "/x/exllamav2/attn.py", line 1045, in forward_torch`,
			"torch.OutOfMemoryError: HIP out of memory. Tried to allocate 3.54 GiB.",
		}, "HIP out of memory"},
		{"a traceback a warning introduced, and nothing after it", "vllm", []string{
			"WARNING 03-10 10:00:00 [utils.py:12] Failed to import the custom kernels due to the following error:",
			"Traceback (most recent call last):",
			`  File "/x/vllm/utils.py", line 10, in <module>`,
			"ModuleNotFoundError: No module named 'flash_attn'",
		}, "No module named 'flash_attn'"},
		{"a thread's death and nothing after it", "vllm", []string{
			"(EngineCore pid=84) Exception in thread Thread-2 (_report_usage_worker):",
			"(EngineCore pid=84) Traceback (most recent call last):",
			`(EngineCore pid=84)   File "<frozen os>", line 225, in makedirs`,
			"(EngineCore pid=84) PermissionError: [Errno 13] Permission denied: '/.config'",
			"(EngineCore pid=84) INFO 05-07 14:21:17 [gpu_model_runner.py:4190] Starting to load model Qwen/Qwen3-0.6B...",
		}, "'/.config'"},
		{"a terminate line and its what(), neither an error word", "llamacpp", []string{
			"terminate called after throwing an instance of 'std::out_of_range'",
			"  what():  vector::_M_range_check: __n (which is 151936) >= this->size() (which is 151936)",
			"srv    operator(): operator(): cleaning up before exit...",
		}, "what():  vector::_M_range_check"},
		{"a what() with no error word", "llamacpp", []string{
			"terminate called after throwing an instance of 'std::runtime_error'",
			`  what():  Unexpected empty grammar stack after accepting piece: "`,
		}, "Unexpected empty grammar stack"},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		if f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)}); !strings.Contains(f.RootCause, c.root) {
			t.Errorf("%s: root %q (rule %s), want it to hold %q", c.name, f.RootCause, f.Rule, c.root)
		}
	}
}

// TestNoDeviceFailsNoLaterThanLoad: a line saying there is no device
// (accelerator_unavailable) logged after the load's last marker is still
// the load's (classCeilings): kernels, the KV cache and warm-up run on a
// device, so none of them is where a missing one fails.
func TestNoDeviceFailsNoLaterThanLoad(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		lines      []string
		exit       ExitInfo
	}{
		// mistral.rs (EricLBuehler/mistral.rs#1056): its builder opens the
		// CUDA device after "Model loaded." (a kernel_setup marker)
		{"mistral.rs builder after the model", "mistralrs", []string{
			"2025-01-12T14:03:55.702904Z  INFO mistralrs_core::pipeline::normal: Loading model `m` on cpu.",
			"2025-01-12T14:04:21.902145Z  INFO mistralrs_server: Model loaded.",
			"thread 'main' panicked at mistralrs-core/src/lib.rs:253:69:",
			`called ` + "`Result::unwrap()`" + ` on an ` + "`Err`" + ` value: WithBacktrace { inner: Cuda(Cuda(DriverError(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"))) }`,
		}, Exited(101)},
		// torch/cuda/__init__.py _lazy_init: "No CUDA GPUs are available",
		// after vLLM's weights line (a kv_init marker)
		{"torch's lazy init after vLLM's weights", "vllm", []string{
			"INFO 01-12 08:36:24 model_runner.py:1025] Loading model weights took 3.7710 GB",
			"RuntimeError: No CUDA GPUs are available",
		}, Exited(1)},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.exit})
		if f.Class != failure.ClassAcceleratorUnavailable || f.Phase != failure.PhaseLoad {
			t.Errorf("%s: %s at %s (rule %s), want accelerator_unavailable at load", c.name, f.Class, f.Phase, f.Rule)
		}
	}
}
