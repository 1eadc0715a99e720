package evidence

import "github.com/hiro-dev/hiro/internal/failure"

// OutcomePredictedFailure is an attempt's Outcome when the preflight
// predicted it cannot run (memory fit or a host capability) and it was
// not launched: production was not stopped for it.
const OutcomePredictedFailure = "predicted_failure"

// Fit verdicts of a memory check (Prediction.Fit.Verdict).
const (
	FitFits                    = "fits"
	FitOnlyIfProductionStopped = "fits_only_if_production_stopped"
	FitDoesNotFit              = "does_not_fit"
	FitCannotPredict           = "cannot_predict"
)

// Prediction is what the preflight (package preflight) said about one
// launch attempt before anything was started or stopped: the memory
// estimate from the artifact, its fit against the host, and the host
// capability rules that applied.
type Prediction struct {
	// Runs says the attempt is predicted to fit and run; false with Class
	// and Rule set when it is predicted to fail, false with CannotPredict
	// when nothing could be said (the attempt is launched as without a
	// preflight).
	Runs          bool   `json:"runs"`
	CannotPredict string `json:"cannot_predict,omitempty"`
	// Class and Rule name the predicted failure (a failure class, and the
	// capability rule or memory check that predicted it); Reason says it
	// with the figures.
	Class  failure.Class `json:"class,omitempty"`
	Rule   string        `json:"rule,omitempty"`
	Reason string        `json:"reason,omitempty"`
	// Memory is the estimate and Fit its check against the host.
	Memory *MemoryEstimate `json:"memory,omitempty"`
	Fit    *FitCheck       `json:"fit,omitempty"`
	// Capabilities are the capability rules that applied, passed or not.
	Capabilities []CapabilityCheck `json:"capabilities,omitempty"`
	// HostSource says where the host facts came from ("this host", or a
	// recorded facts file for a replay).
	HostSource string `json:"host_source,omitempty"`
}

// MemoryEstimate is accelerator memory a launch needs, per device the
// engine uses, in bytes, as a range with its parts.
type MemoryEstimate struct {
	// Format is the artifact's format (gguf, safetensors); Architecture
	// the model's (llama, mistral, ...).
	Format       string `json:"format"`
	Architecture string `json:"architecture,omitempty"`
	// Layers, KVHeads and HeadDim are the model's shape the KV cache
	// follows; ContextTokens the tokens per sequence and Parallel the
	// sequences (slots) the engine is set to hold.
	Layers        int `json:"layers,omitempty"`
	KVHeads       int `json:"kv_heads,omitempty"`
	HeadDim       int `json:"head_dim,omitempty"`
	ContextTokens int `json:"context_tokens,omitempty"`
	Parallel      int `json:"parallel,omitempty"`
	// KVBytesPerToken is layers × KV heads × head dim × 2 × the cache
	// dtype's bytes (the whole model; per device divide by Devices).
	KVBytesPerToken uint64 `json:"kv_bytes_per_token,omitempty"`
	// Devices is how many accelerators the engine spreads the model over
	// (tensor parallel × pipeline parallel, or 1); 0: the model runs on
	// the CPU, and the parts and bounds are host memory.
	Devices int `json:"devices"`
	// Policy is the engine's own memory policy in words (vLLM's
	// gpu_memory_utilization share of each device; llama.cpp/Ollama's
	// context × parallel slots, offloaded layers).
	Policy string `json:"policy,omitempty"`
	// Parts add up to the estimate per device (weights, KV cache,
	// compute buffers, the stated overhead).
	Parts []MemoryPart `json:"parts"`
	// ReservedBytes is what the engine takes from each device up front
	// whatever the model needs (vLLM: gpu_memory_utilization × total);
	// 0 when it takes only what it needs.
	ReservedBytes uint64 `json:"reserved_bytes,omitempty"`
	// LowBytes and HighBytes bound what the engine takes per device.
	LowBytes  uint64 `json:"low_bytes"`
	HighBytes uint64 `json:"high_bytes"`
	// HostBytes is host memory the launch needs beside (CPU layers).
	HostBytes uint64 `json:"host_bytes,omitempty"`
	// Overhead states the overhead and where its figure comes from.
	Overhead string `json:"overhead,omitempty"`
}

// MemoryPart is one part of a memory estimate, bytes per device.
type MemoryPart struct {
	Name  string `json:"name"`
	Bytes uint64 `json:"bytes"`
	Note  string `json:"note,omitempty"`
}

// FitCheck is a memory estimate against the host's free memory.
type FitCheck struct {
	// Verdict is fits, fits_only_if_production_stopped, does_not_fit or
	// cannot_predict.
	Verdict string `json:"verdict"`
	// Device is the index (as the engine sees it) of the device that
	// decided (-1: host memory, a launch on the CPU); NeedBytes what it needs there, FreeBytes what is free now
	// and FreeIfStoppedBytes with production stopped.
	Device             int    `json:"device"`
	NeedBytes          uint64 `json:"need_bytes"`
	FreeBytes          uint64 `json:"free_bytes"`
	FreeIfStoppedBytes uint64 `json:"free_if_stopped_bytes,omitempty"`
	// ShortBytes is by how much it does not fit.
	ShortBytes uint64 `json:"short_bytes,omitempty"`
	// Detail says it in one sentence with the figures; Suggestions what
	// would make it fit.
	Detail      string   `json:"detail"`
	Suggestions []string `json:"suggestions,omitempty"`
}

// CapabilityCheck is one host capability rule applied to a launch.
type CapabilityCheck struct {
	Rule   string        `json:"rule"`
	OK     bool          `json:"ok"`
	Class  failure.Class `json:"class,omitempty"`
	Detail string        `json:"detail"`
	Source string        `json:"source"`
}

// PreflightRun is how the campaign's preflight ran.
type PreflightRun struct {
	// Enabled is false when --no-preflight launched every attempt
	// without a prediction.
	Enabled bool `json:"enabled"`
	// HostSource says which host facts the predictions used ("this
	// host", or a recorded facts file).
	HostSource string `json:"host_source,omitempty"`
}
