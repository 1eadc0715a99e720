package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// llamafile: Mozilla's single-file llama.cpp build (Cosmopolitan libc); its
// server is llama.cpp's, so GET /health answers 503 while loading, 200
// once loaded, and its log is ggml's. Texts of its own from
// Mozilla-Ocho/llamafile at cfa861a69cb9fb3b1101d1c435ec6c2bfa35365c
// (llamafile/cuda.c, llamafile/metal.c: "support for --gpu nvidia was
// explicitly requested, but it wasn't available"; llama.cpp/server:
// "llama server listening at http://").
func init() {
	register(&Engine{
		Kind:       "llamafile",
		HealthPath: "/health",
		health:     statusHealth,
		markers: joinLists([]Marker{
			// llamafile's own server (llamafiler, v0.8.13 on): one line per
			// request received, "client.cpp:679 IP POST /path".
			{Text: " POST /", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "server listen http", Phase: failure.PhaseReadyWait},
		}, ggmlMarkers, genericMarkers),
		signatures: joinLists([]Rule{
			{Text: "was explicitly requested, but it wasn't available", Class: failure.ClassAcceleratorUnavailable},
			{Text: "prebuilt binaries for GPU support", Class: failure.ClassAcceleratorUnavailable, Tier: TierHint},
			// llamafile compiles its GPU module at start with the host's
			// nvcc (or hipcc, cuda.c: "building ggml-cuda with nvcc"); when
			// that fails it serves on the CPU, or stops when --gpu demanded
			// one (that line then states it): hints
			{Text: "nvcc fatal", After: "gpu module", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint},
			{Text: "returned nonzero exit status", Pattern: regexp.MustCompile(`(nvcc|hipcc|clang\+\+)\S*: returned nonzero exit status`), After: "gpu module",
				Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint},
		}, ggmlSignatures, hostFamilies),
		wrappers: ggmlWrappers,
		facts:    ggmlFacts,
		devices:  ggmlDevices,
		nextSteps: map[failure.Class]string{
			failure.ClassAcceleratorUnavailable: "llamafile found no usable GPU: install the driver and the CUDA or ROCm SDK it " +
				"compiles its GPU module with (or use a llamafile with prebuilt GPU support), make the device visible, or " +
				"drop --gpu to serve on the CPU.",
			failure.ClassHostCapability: "The CPU lacks an instruction this llamafile build uses (SIGILL): use a release " +
				"built for older CPUs, or run on a CPU with AVX2.",
			failure.ClassGPUOOM: "GPU memory ran out: lower -c (context) or -ngl (layers on the GPU), or use a smaller quant.",
		},
	})
}
