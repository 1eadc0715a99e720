package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// SGLang: GET /health answers 503 until the server is warmed up, then 200.
// The server sends itself one warmup request before it logs "fired up";
// batch lines before ready are that warmup, not served requests.
func init() {
	register(&Engine{
		Kind:       "sglang",
		HealthPath: "/health",
		health:     statusHealth,
		markers: []Marker{
			{Text: "Prefill batch", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Decode batch", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Load weight begin", Phase: failure.PhaseLoad},
			{Text: "Load weight end", Phase: failure.PhaseKernelSetup},
			{Text: "Memory pool end", Phase: failure.PhaseWarmup},
			{Text: "KV Cache is allocated", Phase: failure.PhaseKVInit},
			{Text: "Capture cuda graph", Phase: failure.PhaseWarmup},
			{Text: "The server is fired up and ready to roll", Phase: failure.PhaseReadyWait},
		},
		signatures: joinLists([]Rule{
			{Text: "not supported for the current GPU", Class: failure.ClassGPUArchUnsupported},
			{Text: "mem-fraction-static", Pattern: regexp.MustCompile(`(?i)(not enough|insufficient|out of).{0,40}memory`), Class: failure.ClassGPUOOM},
			{Text: "max_total_num_tokens", Pattern: regexp.MustCompile(`(?i)(too small|<=? 0|is 0|must be)`), Class: failure.ClassContextExceedsKV},
			{Text: "is longer than the model's context length", Class: failure.ClassContextExceedsKV},
			// the scheduler's check of a request against the KV pool
			// (scheduler.py: "Input length (N tokens) exceeds the maximum
			// allowed length (M tokens)"), often before a crash it causes
			{Text: "exceeds the maximum allowed length", Pattern: regexp.MustCompile(`(?i)input length \(\d+ tokens\) exceeds the maximum allowed length`), Class: failure.ClassContextExceedsKV},
			{Text: "alloc_req_slots runs out of memory", Class: failure.ClassGPUOOM},
			// the KV token pool exhausted with nothing left to evict
			// (sglang@2752c82 python/sglang/srt/mem_cache/common.py:
			// "Prefill out of memory. Try to lower your batch size.", "Decode
			// out of memory. Try to lower your batch size."). The scheduler's
			// retraction warnings ("KV cache pool is full. Retract requests.",
			// "Decode out of memory happened.") are not failures: it goes on.
			{Text: "out of memory", Pattern: regexp.MustCompile(`(?i)\b(Prefill|Decode) out of memory(\. Try| even| under)`), Class: failure.ClassGPUOOM},
			// the launcher's report of a scheduler child that died before
			// it said ready (entrypoints/engine.py): the child's own line,
			// when it printed one, explains more
			{Text: "scheduler is dead", Class: failure.ClassEngineDied, Tier: TierHint, Fatal: true, Summary: true},
			// the scheduler's watchdog: a forward step that never finished
			// (a hung collective, a stuck kernel); where it hung says more
			{Text: "Scheduler watchdog timeout", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
		}, pythonSignatures, hostFamilies),
		frameHints:  pythonFrameHints,
		framePhases: pythonFramePhases,
		wrappers: joinLists(pythonWrappers, []string{
			"Received sigquit from a child process",
		}),
		facts: joinLists(shardFacts, []FactParser{
			{Trigger: "Load weight end", Pattern: regexp.MustCompile(`mem usage=([\d.]+) GB`), Names: []string{"model_memory_gib"}},
			{Trigger: "#tokens", Pattern: regexp.MustCompile(`KV Cache is allocated\. #tokens: (\d+)`), Names: []string{"kv_cache_tokens"}},
			{Trigger: "max_total_num_tokens", Pattern: regexp.MustCompile(`max_total_num_tokens=(\d+)`), Names: []string{"kv_cache_tokens"}},
			{Trigger: "Capture cuda graph end", Pattern: regexp.MustCompile(`Time elapsed: ([\d.]+) s`), Names: []string{"cuda_graph_seconds"}},
			{Trigger: "Load weight begin", Pattern: regexp.MustCompile(`avail mem=([\d.]+) GB`), Names: []string{"device_free_gib"}},
		}),
		devices: joinLists(pythonDevices, []DeviceRule{
			{Text: "Load weight begin", Pattern: regexp.MustCompile(`Load weight begin\. avail mem=`), Kind: DeviceGPU},
		}),
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower --mem-fraction-static or --context-length, lower " +
				"--cuda-graph-max-bs / --max-running-requests, or use more GPUs (--tp).",
			failure.ClassWarmupFailed: "CUDA graph capture failed: retry with --disable-cuda-graph or a smaller " +
				"--cuda-graph-max-bs.",
			failure.ClassStructuredOutputCrash: "A structured request crashed SGLang's scheduler: try another grammar backend " +
				"(--grammar-backend outlines or llguidance instead of xgrammar), another SGLang version, and validate schemas before sending.",
			failure.ClassStructuredOutputRejected: "SGLang's grammar backend refused the schema: try another --grammar-backend " +
				"(xgrammar, outlines, llguidance) or simplify the schema.",
			failure.ClassTokenizerTemplate: "The chat template is missing or broken: give one with --chat-template (a file or " +
				"a built-in name), or use the model's instruct variant.",
			failure.ClassQuantKernelFailed: "A quantization kernel failed: try another --quantization method (e.g. awq or gptq " +
				"instead of a Marlin variant), a different --tp, or another quant of the model.",
		},
	})
}
