package engine

import (
	"strings"

	"github.com/hiro-dev/hiro/internal/failure"
)

// koboldcpp: KoboldCpp, a llama.cpp derivative with a Python launcher and
// its own HTTP server (KoboldAI and OpenAI-compatible APIs). The server
// answers only once the model is loaded, so health is GET /v1/models
// answering 200; it names the model "koboldcpp/<file name>". Texts from
// LostRuins/koboldcpp at 2da346a5ff2cfd1debac59066553d45d098e95a4
// (koboldcpp.py: "Loading model:", "Load Text Model OK", "Starting Kobold
// API on port", "Please connect to custom endpoint at"; "Processing
// Prompt" and "Generating (" for a request), ggml's lines otherwise.
func init() {
	register(&Engine{
		Kind:        "koboldcpp",
		HealthPath:  "/v1/models",
		health:      modelsHealth,
		normalizeID: func(id string) string { return strings.TrimPrefix(id, "koboldcpp/") },
		markers: joinLists([]Marker{
			{Text: "Processing Prompt", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Generating (", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Please connect to custom endpoint at", Phase: failure.PhaseReadyWait},
			{Text: "Starting Kobold API on port", Phase: failure.PhaseReadyWait},
			{Text: "Starting OpenAI Compatible API on port", Phase: failure.PhaseReadyWait},
			// newer releases warm the model up after loading it, before the
			// API starts ("Starting model warm up, please wait a moment...")
			{Text: "Starting model warm up", Phase: failure.PhaseWarmup},
			{Text: "Load Text Model OK", Phase: failure.PhaseKVInit},
			{Text: "Loading model:", Phase: failure.PhaseLoad},
			{Text: "Loading Text Model:", Phase: failure.PhaseLoad},
		}, ggmlMarkers, genericMarkers),
		signatures: joinLists([]Rule{
			// the launcher's VRAM query (nvidia-smi, rocminfo) that found no
			// GPU it can size (koboldcpp.py: "Unable to detect VRAM, please
			// set layers manually."), the default (CPU) backend picked next
			// when no GPU library answers: the server comes up, on the CPU
			// if nothing else is chosen, so the accelerator is what failed,
			// at launch; weak (a Vulkan backend chosen by hand still runs
			// on the GPU) and a notice (an error line after it says more)
			{Text: "Unable to detect VRAM", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint, Notice: true, Weak: true},
		}, ggmlSignatures, hostFamilies),
		wrappers: ggmlWrappers,
		facts:    ggmlFacts,
		devices:  ggmlDevices,
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower --contextsize or --gpulayers, a smaller --blasbatchsize, " +
				"or use a smaller quant of the model.",
			failure.ClassHostCapability: "The CPU lacks an instruction this KoboldCpp build uses (AVX2): start it with " +
				"--noavx2 or --failsafe, or use the build for older CPUs.",
		},
	})
}
