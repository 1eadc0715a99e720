package engine

import "github.com/hiro-dev/hiro/internal/failure"

// llama.cpp's llama-server: GET /health answers 503 {"error":{"message":
// "Loading model"}} while loading, 200 once the model is loaded.
func init() {
	register(&Engine{
		Kind:       "llamacpp",
		HealthPath: "/health",
		health:     statusHealth,
		markers: []Marker{
			{"model loaded", failure.PhaseReadyWait},
			{"loading model", failure.PhaseLoad},
		},
		signatures: joinLists(ggmlSignatures, cudaSignatures),
		wrappers:   ggmlWrappers,
		facts:      ggmlFacts,
		nextSteps: map[failure.Class]string{
			failure.ClassGPUOOM: "GPU memory ran out: lower --ctx-size, offload fewer layers (--n-gpu-layers), " +
				"quantize the KV cache (--cache-type-k q8_0), or use a smaller quant of the model.",
		},
	})
}
