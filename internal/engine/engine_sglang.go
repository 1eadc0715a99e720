package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// SGLang: GET /health answers 503 until the server is warmed up, then 200.
func init() {
	register(&Engine{
		Kind:       "sglang",
		HealthPath: "/health",
		health:     statusHealth,
		markers: []Marker{
			{"Load weight begin", failure.PhaseLoad},
			{"Load weight end", failure.PhaseKernelSetup},
			{"Memory pool end", failure.PhaseWarmup},
			{"Capture cuda graph", failure.PhaseWarmup},
			{"The server is fired up and ready to roll", failure.PhaseReadyWait},
		},
		signatures: joinLists([]Signature{
			{Text: "raph", Pattern: regexp.MustCompile(`(?i)cuda ?graph.*(fail|error)`), Class: failure.ClassWarmupFailed},
			{Text: "Not enough memory", Class: failure.ClassGPUOOM},
			{Text: "arlin", Pattern: regexp.MustCompile(`(?i)(error|fail|illegal|exception).*marlin|marlin.*(error|fail|illegal|not supported)`), Class: failure.ClassQuantKernelFailed},
			{Text: "not supported for the current GPU", Class: failure.ClassGPUArchUnsupported},
			{Text: "chat template", Pattern: regexp.MustCompile(`(?i)chat template.*(not set|invalid|error)`), Class: failure.ClassTokenizerTemplate},
		}, cudaSignatures),
		wrappers: joinLists(pythonWrappers, []string{
			"hit an exception",
			"Received sigquit from a child process",
		}),
		facts: joinLists(shardFacts, []FactParser{
			{Trigger: "Load weight end", Pattern: regexp.MustCompile(`mem usage=([\d.]+) GB`), Names: []string{"model_memory_gib"}},
			{Trigger: "#tokens", Pattern: regexp.MustCompile(`KV Cache is allocated\. #tokens: (\d+)`), Names: []string{"kv_cache_tokens"}},
			{Trigger: "max_total_num_tokens", Pattern: regexp.MustCompile(`max_total_num_tokens=(\d+)`), Names: []string{"kv_cache_tokens"}},
			{Trigger: "Capture cuda graph end", Pattern: regexp.MustCompile(`Time elapsed: ([\d.]+) s`), Names: []string{"cuda_graph_seconds"}},
		}),
	})
}
