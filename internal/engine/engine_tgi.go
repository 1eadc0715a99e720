package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// TGI (Hugging Face text-generation-inference): a Rust launcher starts
// Python shards (text-generation-server), then the Rust router, which
// serves HTTP; GET /health answers 200 once the model is warmed up.
// /v1/models lists the model id. Texts from the launcher's and router's
// tracing lines at huggingface/text-generation-inference
// db931fcf42da018a3657580c64bf2720f167f9ab (launcher/src/main.rs,
// router/src/server.rs): "Starting download process.", "Starting shard",
// "Shard ready in", "Warming up model", "Setting max batch total tokens
// to", "Connected", "Shard complete standard error output:" (the shard's
// own stderr relayed), "Shard process was signaled to shutdown with
// signal N", "Shard N failed to start", "Webserver Crashed".
func init() {
	register(&Engine{
		Kind:       "tgi",
		HealthPath: "/health",
		health:     statusHealth,
		markers: joinLists([]Marker{
			{Text: "text_generation_router", Pattern: regexp.MustCompile(`\b(chat_completions|generate|generate_stream|completions)\{`), Phase: failure.PhaseInference},
			{Text: "Method Prefill", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// the router's line for a request served (server.rs: "Success",
			// in its text or JSON log)
			{Text: "Success", Pattern: regexp.MustCompile(`"message":"Success".{0,40}"target":"text_generation_router|text_generation_router::server: \S+: Success`),
				Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Method Decode", Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: "Connected", Phase: failure.PhaseReadyWait, After: failure.PhaseWarmup},
			{Text: "Starting HTTP server", Phase: failure.PhaseReadyWait},
			{Text: "Setting max batch total tokens", Phase: failure.PhaseWarmup},
			{Text: "Warming up model", Phase: failure.PhaseWarmup},
			{Text: "Starting Webserver", Phase: failure.PhaseKernelSetup},
			{Text: "Shard ready in", Phase: failure.PhaseKernelSetup},
			// a shard's gRPC server on its unix socket, not the HTTP
			// server (the generic "Server started" would read it so)
			{Text: "Server started at unix://", Phase: failure.PhaseKernelSetup},
			{Text: "Waiting for shard to be ready", Phase: failure.PhaseLoad},
			{Text: "Starting shard", Phase: failure.PhaseLoad},
			// the launcher's download step comes before any shard starts:
			// it is still launch (a hub refusal is no load failure)
			{Text: "Successfully downloaded weights", Phase: failure.PhaseLoad},
		}, genericMarkers),
		signatures: joinLists([]Rule{
			// the shards' own assertion when --num-shard exceeds the GPUs visible
			{Text: "Each process is one gpu", Class: failure.ClassAcceleratorUnavailable},
			{Text: "Not enough memory to handle", Class: failure.ClassGPUOOM},
			{Text: "requires Flash Attention", Class: failure.ClassGPUArchUnsupported},
			{Text: "max_batch_prefill_tokens", Pattern: regexp.MustCompile(`(?i)(lower|too (large|high|small)|not enough)`), Class: failure.ClassContextExceedsKV},
			{Text: "text-generation-server not found in PATH", Class: failure.ClassEngineDied},
			// the launcher's check of its own arguments before any shard starts
			// (launcher/src/main.rs: Err(LauncherError::ArgumentValidation(
			// "`max_input_tokens`(N) must be < `max_total_tokens`(M)")))
			{Text: "ArgumentValidation(", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
			{Text: "Download encountered an error", Class: failure.ClassModelLoadFailed, Tier: TierHint},
			// the launcher's word that a shard died (launcher/src/main.rs:
			// "Shard {rank} crashed"): a crash that names no cause, its
			// class refined by what was served (a grammar request's crash is
			// structured_output_crash)
			{Name: "tgi/shard-crashed", Text: "crashed", Pattern: regexp.MustCompile(`\bShard \d+ crashed`), Class: failure.ClassEngineDied, Crash: true, Tier: TierHint, Summary: true},
		}, pythonSignatures, hostFamilies),
		frameHints:  pythonFrameHints,
		framePhases: pythonFramePhases,
		wrappers: joinLists(pythonWrappers, []string{
			"Shard complete standard error output",
			// the launcher's summary of a shard's end: the shard's own stderr,
			// relayed before it, says why
			"failed to start",
			"Error: ShardCannotStart",
			"Webserver Crashed",
			"Shutting down shards",
		}),
		facts: joinLists(shardFacts, []FactParser{
			{Trigger: "Setting max batch total tokens to", Pattern: regexp.MustCompile(`Setting max batch total tokens to (\d+)`), Names: []string{"max_batch_total_tokens"}},
		}),
		devices: pythonDevices,
		nextSteps: map[failure.Class]string{
			failure.ClassHostCapability: "TGI's shards need shared memory and NCCL between the GPUs: run the container with " +
				"--shm-size 1g (or more); where that is not possible, NCCL_SHM_DISABLE=1; with --num-shard over GPUs without " +
				"peer-to-peer access, NCCL_P2P_DISABLE=1; --disable-custom-kernels avoids TGI's own CUDA kernels.",
			failure.ClassGPUOOM: "GPU memory ran out: lower TGI's --max-batch-prefill-tokens, --max-batch-total-tokens or " +
				"--max-total-tokens, use a quantized model (--quantize), or more GPUs (--num-shard).",
			failure.ClassContextExceedsKV: "The batch or the request does not fit: lower --max-batch-prefill-tokens / --max-input-tokens.",
			failure.ClassModelLoadFailed: "TGI could not load the model: check --model-id and the files; --num-shard must divide " +
				"the model's attention heads.",
			failure.ClassGPUArchUnsupported: "This GPU lacks a kernel TGI needs (Flash Attention needs Ampere or newer for sharded " +
				"models): run unsharded (--num-shard 1), on a newer GPU, or with another engine.",
		},
	})
}
