package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// mistralrs: mistral.rs's server (Rust, candle); GET /health answers once
// it serves, /v1/models lists the model. Texts from
// EricLBuehler/mistral.rs at 9e922623f24b32d41f3892b74f0eed18707f4e6c
// (mistralrs-server, mistralrs-core: "Loading model `...` on ...",
// "Model loaded.", "Allocating ... MB for PagedAttention KV cache",
// "Server listening on http://" and the older "Serving on http://";
// tracing lines "2024-...Z  INFO target: message"; a panic's message on
// the line after "thread '...' panicked at FILE:LINE:COL:").
func init() {
	register(&Engine{
		Kind:       "mistralrs",
		HealthPath: "/health",
		health:     statusHealth,
		markers: joinLists([]Marker{
			// a request received, and the engine's step of one
			{Text: "Request at ", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "prompt step", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "completion step", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// mistralrs_core::engine logs a failed forward step as "step -
			// Model failed with error: ..." (engine/mod.rs)
			{Text: "engine: step - ", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// the engine's periodic logger (mistralrs_core::engine::logger)
			// with tokens generated: requests were served
			{Text: "Throughput (T/s) ", Pattern: regexp.MustCompile(`Throughput \(T/s\) (?:[1-9]|0\.\d*[1-9])`), Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Server listening on http", Phase: failure.PhaseReadyWait},
			{Text: "Serving on http", Phase: failure.PhaseReadyWait},
			{Text: "Warmup complete", Phase: failure.PhaseReadyWait},
			// mistralrs-core's warm-up request before it serves
			// ("Beginning dummy run.", then "Dummy run completed in ...")
			{Text: "Beginning dummy run", Phase: failure.PhaseWarmup},
			{Text: "for PagedAttention KV cache", Phase: failure.PhaseKVInit},
			{Text: "Using PagedAttention with block size", Phase: failure.PhaseKVInit},
			{Text: "Model loaded", Phase: failure.PhaseKernelSetup},
			{Text: "Loading model", Phase: failure.PhaseLoad},
			{Text: "Model kind is", Phase: failure.PhaseLoad},
			// reads the model's config.json to choose the loader
			{Text: "Auto-detecting model type", Phase: failure.PhaseLoad},
		}, genericMarkers),
		signatures: joinLists([]Rule{
			{Text: "does not fit on the devices", Pattern: regexp.MustCompile(`(?i)\(avail: 0MB\)`), Class: failure.ClassAcceleratorUnavailable},
			{Text: "does not fit on the devices", Class: failure.ClassGPUOOM},
			{Text: "Model failed with error", Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
			// mistralrs-core's warm-up request failed (WARN "Dummy run
			// failed!" after its thread's panic) and the server goes on to
			// listen: the warm-up's class, the panic's message the cause
			{Text: "Dummy run failed", Class: failure.ClassWarmupFailed, Phase: failure.PhaseWarmup, Tier: TierHint, Summary: true},
		}, hostFamilies),
		facts: []FactParser{
			{Trigger: "for PagedAttention KV cache", Pattern: regexp.MustCompile(`Allocating (\d+) MB for PagedAttention KV cache`), Names: []string{"kv_cache_memory_mib"}},
		},
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower --max-seq-len or --max-batch-size, the PagedAttention share " +
				"(--pa-gpu-mem-usage), or use in-situ quantization (--isq) or a smaller model.",
			failure.ClassAcceleratorUnavailable: "mistral.rs sees no usable device memory (0 MB available): use a build " +
				"for this accelerator (--features cuda or metal), make the device visible, or give the device map by hand.",
		},
	})
}
