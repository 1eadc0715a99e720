package engine

import (
	"context"
	"fmt"
	"net/http"
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// vLLM: the OpenAI-compatible server answers HTTP only once the engine is
// built, so /health 200 means ready; 503 means the engine core is dead.
func init() {
	register(&Engine{
		Kind:       "vllm",
		HealthPath: "/health",
		health:     vllmHealth,
		markers: []Marker{
			{"Starting to load model", failure.PhaseLoad},
			{"Loading weights took", failure.PhaseKernelSetup},
			{"Model loading took", failure.PhaseKVInit},
			{"GPU KV cache size", failure.PhaseWarmup},
			{"Available KV cache memory", failure.PhaseWarmup},
			{"Application startup complete", failure.PhaseReadyWait},
		},
		signatures: joinLists([]Signature{
			{Text: "UVA is not available", Class: failure.ClassHostCapability},
			{Text: "less than desired GPU memory utilization", Class: failure.ClassAcceleratorBusy},
			// KV sizing errors are raised in kv_init, after "Available KV
			// cache memory" (a warmup marker) was logged.
			{Text: "estimated maximum model length is", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseKVInit},
			{Text: "larger than the maximum number of tokens that can be stored in KV cache", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseKVInit},
			{Text: "larger than the available KV cache memory", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseKVInit},
			{Text: "No available memory for the cache blocks", Class: failure.ClassGPUOOM, Phase: failure.PhaseKVInit},
			{Text: "arlin", Pattern: regexp.MustCompile(`(?i)(error|fail|illegal|exception).*marlin|marlin.*(error|fail|illegal|not supported)`), Class: failure.ClassQuantKernelFailed},
			{Text: "not supported for the current GPU", Class: failure.ClassGPUArchUnsupported},
			{Text: "are not supported for now", Pattern: regexp.MustCompile(`Model architectures? .* (is|are) not supported`), Class: failure.ClassModelLoadFailed},
			{Text: "does not appear to have a file named", Class: failure.ClassModelLoadFailed},
			{Text: "SafetensorError", Class: failure.ClassModelLoadFailed},
			{Text: "raph", Pattern: regexp.MustCompile(`(?i)cuda ?graph.*(fail|error)`), Class: failure.ClassWarmupFailed},
			{Text: "chat template", Pattern: regexp.MustCompile(`(?i)chat template.*(not set|invalid|error)`), Class: failure.ClassTokenizerTemplate},
		}, cudaSignatures),
		wrappers: joinLists(pythonWrappers, []string{
			"Engine core initialization failed",
			"EngineCore failed to start",
			"EngineCore hit an exception",
			"Process EngineCore",
			"Worker failed with error",
		}),
		facts: joinLists(shardFacts, []FactParser{
			{Trigger: "Loading weights took", Pattern: regexp.MustCompile(`Loading weights took ([\d.]+) seconds`), Names: []string{"weights_load_seconds"}},
			{Trigger: "Model loading took", Pattern: regexp.MustCompile(`Model loading took ([\d.]+) GiB(?: and ([\d.]+) seconds)?`), Names: []string{"model_memory_gib", "model_load_seconds"}},
			{Trigger: "Available KV cache memory", Pattern: regexp.MustCompile(`Available KV cache memory: ` + num + ` GiB`), Names: []string{"kv_cache_memory_gib"}},
			{Trigger: "GPU KV cache size", Pattern: regexp.MustCompile(`GPU KV cache size: ([\d,]+) tokens`), Names: []string{"kv_cache_tokens"}},
			{Trigger: "estimated maximum model length is", Pattern: regexp.MustCompile(`estimated maximum model length is (\d+)`), Names: []string{"suggested_max_model_len"}},
			{Trigger: "Free memory on device", Pattern: regexp.MustCompile(`Free memory on device \(([\d.]+)/([\d.]+) GiB\)`), Names: []string{"device_free_gib", "device_total_gib"}},
			{Trigger: "Maximum concurrency", Pattern: regexp.MustCompile(`Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x`), Names: []string{"max_model_len", "max_concurrency"}},
		}),
		nextSteps: map[failure.Class]string{
			failure.ClassHostCapability: "UVA / pinned memory is unavailable on this host (typical of WSL2): use a documented " +
				"fallback that avoids UVA, e.g. VLLM_USE_V2_MODEL_RUNNER=0 (the V1 model runner), or run on native Linux.",
		},
	})
}

func vllmHealth(ctx context.Context, e *Engine, client *http.Client, baseURL, _ string) HealthResult {
	r := HealthResult{Path: e.HealthPath}
	code, body, err := get(ctx, client, baseURL+e.HealthPath)
	r.StatusCode = code
	switch {
	case err != nil:
		r.State, r.Message = HealthDown, err.Error()
	case code == http.StatusOK:
		r.State = HealthReady
	case code == http.StatusServiceUnavailable:
		r.State, r.Message = HealthDown, "engine core is dead (vLLM /health 503)"
	default:
		r.State, r.Message = HealthDown, fmt.Sprintf("GET %s answered HTTP %d: %s", e.HealthPath, code, errorMessage(body))
	}
	return r
}
