package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// tabbyapi: TabbyAPI, a FastAPI/uvicorn server over ExLlamaV2/V3; GET
// /health answers once the server runs, /v1/models lists the loaded
// model. Texts from theroyallab/tabbyAPI at
// e632af41eba68abeadc3437c62674360f2f8cbf1 (main.py, common/model.py,
// backends/exllamav2/model.py: "Loading model:", "Loading with
// autosplit", "Model successfully loaded.", "Starting OAI API",
// "Using configured cache_size").
func init() {
	register(&Engine{
		Kind:       "tabbyapi",
		HealthPath: "/health",
		health:     statusHealth,
		markers: joinLists([]Marker{
			{Text: "Model successfully loaded", Phase: failure.PhaseKernelSetup},
			{Text: "Starting OAI API", Phase: failure.PhaseReadyWait},
			{Text: "cache_size", Phase: failure.PhaseLoad},
			{Text: "Loading with", Phase: failure.PhaseLoad},
			// also inline, on a request naming another model
			{Text: "Loading model:", Phase: failure.PhaseLoad, Reload: true},
		}, genericMarkers),
		signatures: joinLists([]Rule{
			{Text: "Insufficient VRAM", Class: failure.ClassGPUOOM},
			// exllamav2's dynamic generator: a job needs more cache pages
			// than the cache has (prompt plus max_tokens beyond cache_size)
			{Text: "cannot be enqueued", Pattern: regexp.MustCompile(`requires \d+ pages \(only \d+ available\)`), Class: failure.ClassContextExceedsKV},
			{Text: "exllamav2", Also: "version", Class: failure.ClassModelLoadFailed, Tier: TierHint},
			// exllamav2's sampler asserts that the job's filters (its
			// constraints: a JSON schema or grammar through
			// lm-format-enforcer or outlines) left a token to sample
			// (exllamav2/generator/dynamic.py receive_logits): the
			// constrained generation has nowhere to go
			{Text: "Filter excluded all tokens", Class: failure.ClassStructuredOutputCrash, Phase: failure.PhaseInference},
		}, pythonSignatures, hostFamilies),
		// ExLlamaV2/V3 is this engine, not a quant kernel beneath it: its
		// frames name no component
		frameHints:  withoutHints(pythonFrameHints, "exllama"),
		framePhases: pythonFramePhases,
		wrappers:    pythonWrappers,
		facts:       shardFacts,
		// ExLlamaV2/V3 run on CUDA or ROCm GPUs only: a loaded model is
		// served by the GPU.
		devices: joinLists([]DeviceRule{
			{Text: "Model successfully loaded", Pattern: regexp.MustCompile(`Model successfully loaded`), Kind: DeviceGPU},
		}, pythonDevices),
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower max_seq_len or cache_size in config.yml, a quantized cache " +
				"(cache_mode Q4/Q8), a smaller bpw quant, or split over more GPUs (gpu_split).",
		},
	})
}
