package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// lmdeploy: InternLM's LMDeploy api_server (FastAPI/uvicorn) over the
// TurboMind (C++) or PyTorch engine; GET /health answers 200 once served.
// Texts from InternLM/lmdeploy at 1263d5cd889b7ad500e85b8eb20401327a4516ab
// (lmdeploy/serve/openai/api_server.py: "HINT:    Please open ... in a
// browser for detailed api usage!!!" once the engine is built;
// lmdeploy/pytorch/engine: "Building CacheEngine with config",
// "Warming up model."; TurboMind's "[TM][ERROR]" lines and its
// BlockManager's block count).
func init() {
	register(&Engine{
		Kind:       "lmdeploy",
		HealthPath: "/health",
		health:     statusHealth,
		markers: joinLists([]Marker{
			{Text: "in a browser for detailed api usage", Phase: failure.PhaseReadyWait},
			{Text: "Warming up model", Phase: failure.PhaseWarmup},
			{Text: "Building GraphRunner and warmup ops", Phase: failure.PhaseWarmup},
			{Text: "[BlockManager]", Phase: failure.PhaseKVInit},
			{Text: "Building CacheEngine", Phase: failure.PhaseKVInit},
			{Text: "model_config:", Phase: failure.PhaseLoad},
			{Text: "model_source:", Phase: failure.PhaseLoad},
			// TurboMind's DEBUG trace of a layer's forward pass
			// ("[TM][DEBUG] void turbomind::UnifiedAttentionLayer::Forward(...)"):
			// the model runs, before readiness its warmup steps
			{Text: "Layer::Forward(", Pattern: regexp.MustCompile(`\bturbomind::\w+Layer::Forward\(`), Phase: failure.PhaseWarmup},
			// TurboMind logs only once the engine builds the model and its
			// weights ("[TM][WARN] ... turbomind.cc:123] ...")
			{Text: "[TM][", Phase: failure.PhaseLoad},
		}, genericMarkers),
		signatures: joinLists([]Rule{
			{Text: "[TM][ERROR]", Pattern: regexp.MustCompile(`(?i)out of memory`), Class: failure.ClassGPUOOM},
			// the PyTorch engine imports the dlinfer plugin only for the
			// devices served through it (ascend, npu, maca, camb) and stops
			// when it is missing ("ModuleNotFoundError: No module named
			// 'dlinfer'", then "<dlinfer> check failed!"): this host has no
			// backend for the --device given, not a broken install of the
			// engine itself (python's generic rule; engine_died was wrong
			// strongly at first sight, r8)
			{Name: "lmdeploy/no-dlinfer", Text: "No module named 'dlinfer", Class: failure.ClassHostCapability,
				NextStep: dlinferStep, Source: "InternLM/lmdeploy lmdeploy/pytorch/check_env/deeplink.py"},
			// TurboMind's Windows build has no barrier between GPUs: its
			// _MSC_VER Barrier checks count == 1 (FT_CHECK, TM_CHECK: "[TM]
			// [ERROR] Assertion fail: ...src/turbomind/models/llama/Barrier.h:20"),
			// so any --tp above 1 stops there
			{Name: "lmdeploy/windows-barrier-one-gpu", Text: "Barrier.h", Pattern: regexp.MustCompile(`Assertion fail: \S*[/\\]turbomind[/\\]models[/\\]llama[/\\]Barrier\.h:\d+|Barrier\.h\D{0,3}\d+.*Check failed: count == 1\b`),
				Class: failure.ClassHostCapability, NextStep: turbomindWindowsTPStep,
				Source: "InternLM/lmdeploy@1263d5c src/turbomind/models/llama/Barrier.h (the _MSC_VER Barrier)"},
			// TurboMind's communicator for --tp above 1 (device_comm.cc:
			// "Unknown communication backend: nccl" when the build has no
			// BUILD_MULTI_GPU && USE_NCCL, its Windows wheels): the build
			// cannot do what the profile asks; weak, the profile's --tp or
			// backend choice is the other reading
			{Name: "lmdeploy/turbomind-no-comm-backend", Text: "Unknown communication backend", Class: failure.ClassHostCapability, Or: failure.ClassInvalidConfiguration,
				NextStep: turbomindCommStep, Source: "InternLM/lmdeploy@1263d5c src/turbomind/comm/device_comm.cc (CreateDeviceCommunicator)"},
			// the PyTorch engine's main loop ended by an exception: the
			// engine that serves every request is gone, whatever the HTTP
			// server still answers (Fatal). Older versions log the message on
			// the line (lmdeploy/pytorch/engine/request.py
			// _raise_exception_on_finish: "Engine loop failed with error:
			// MSG"), a crash line too: the traceback's exception line it
			// wraps states what the loop met (yieldCrash), unless it only
			// points above (heldout-r10a's Ascend "Inner error is reported
			// as above": pointsElsewhere); engine.py at 1263d5c logs none
			// ("Engine main loop failed.", a crash header): its traceback's
			// exception line says why
			{Name: "lmdeploy/engine-loop-failed", Text: "Engine loop failed with error", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
			{Name: "lmdeploy/engine-main-loop-failed", Text: "Engine main loop failed.", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
		}, pythonSignatures, hostFamilies),
		frameHints:  pythonFrameHints,
		framePhases: pythonFramePhases,
		wrappers:    pythonWrappers,
		facts: joinLists(shardFacts, []FactParser{
			{Trigger: "max_block_count", Pattern: regexp.MustCompile(`\[BlockManager\] max_block_count = (\d+)`), Names: []string{"kv_cache_blocks"}},
		}),
		// TurboMind runs on CUDA GPUs only
		devices: joinLists([]DeviceRule{
			{Text: "backend=turbomind", Pattern: regexp.MustCompile(`backend=turbomind`), Kind: DeviceGPU},
		}, pythonDevices),
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower --cache-max-entry-count (the KV cache's share), --session-len " +
				"or --max-batch-size, or use a quantized model (--model-format awq) or more GPUs (--tp).",
		},
	})
}

// turbomindWindowsTPStep is the advice when TurboMind's Windows build is
// asked for more than one GPU.
const turbomindWindowsTPStep = "TurboMind's Windows build runs on one GPU only (it has no barrier between GPUs): use --tp 1 " +
	"on Windows, or run tensor parallel on Linux (or WSL2), or use the PyTorch backend."

// turbomindCommStep is the advice when TurboMind's build has no
// communicator for the --tp asked.
const turbomindCommStep = "This TurboMind build has no communication backend for tensor parallel (its Windows wheels are " +
	"built without NCCL): use --tp 1, or another --communicator the build has, or run on Linux (or WSL2), or use the PyTorch backend."

// dlinferStep is the advice when LMDeploy's dlinfer plugin, the backend
// of its non-CUDA devices, is missing.
const dlinferStep = "LMDeploy serves --device ascend, npu, maca and camb through the dlinfer plugin, which is not " +
	"installed: on a host with that accelerator install the dlinfer build for it (and its vendor's PyTorch); " +
	"otherwise give the device this host has (--device cuda, or none)."
