package failure

import "strconv"

// Phase is the stage of an engine's life in progress when something
// happened. Phases are ordered as listed.
type Phase string

// Phases, in order (docs/design.md "Failure vocabulary").
const (
	PhasePrereq      Phase = "prereq"
	PhaseLaunch      Phase = "launch"
	PhaseLoad        Phase = "load"
	PhaseKernelSetup Phase = "kernel_setup"
	PhaseKVInit      Phase = "kv_init"
	PhaseWarmup      Phase = "warmup"
	PhaseReadyWait   Phase = "ready_wait"
	PhaseReady       Phase = "ready"
	PhaseInference   Phase = "inference"
	PhaseShutdown    Phase = "shutdown"
)

// Phases lists every phase in order.
var Phases = []Phase{PhasePrereq, PhaseLaunch, PhaseLoad, PhaseKernelSetup, PhaseKVInit,
	PhaseWarmup, PhaseReadyWait, PhaseReady, PhaseInference, PhaseShutdown}

// Index returns the phase's position in Phases, or -1 when unknown.
func (p Phase) Index() int {
	for i, q := range Phases {
		if q == p {
			return i
		}
	}
	return -1
}

// Class names why something failed.
type Class string

// Classes (docs/design.md "Failure vocabulary").
const (
	ClassDriverMismatch           Class = "driver_mismatch"
	ClassHostCapability           Class = "host_capability"
	ClassGPUArchUnsupported       Class = "gpu_arch_unsupported"
	ClassPortInUse                Class = "port_in_use"
	ClassAcceleratorBusy          Class = "accelerator_busy"
	ClassModelLoadFailed          Class = "model_load_failed"
	ClassQuantKernelFailed        Class = "quant_kernel_failed"
	ClassGPUOOM                   Class = "gpu_oom"
	ClassContextExceedsKV         Class = "context_exceeds_kv"
	ClassReadyTimeout             Class = "ready_timeout"
	ClassWarmupFailed             Class = "warmup_failed"
	ClassTokenizerTemplate        Class = "tokenizer_template"
	ClassEngineDied               Class = "engine_died"
	ClassIdentityMismatch         Class = "identity_mismatch"
	ClassStructuredOutputRejected Class = "structured_output_rejected"
	ClassStructuredOutputFailOpen Class = "structured_output_fail_open"
	ClassStructuredOutputCrash    Class = "structured_output_crash"
	ClassShutdownLeak             Class = "shutdown_leak"
	// ClassProbeFailed: the server is up and answers, but the bounded
	// probe completion of readiness failed (an HTTP error, no answer in
	// time) or its reply was not the expected one. Phase ready_wait.
	ClassProbeFailed Class = "probe_failed"
	// ClassHostOOM: host memory is too small for the model or its context:
	// an engine's refusal, a CPU buffer allocation failure, or the
	// kernel's OOM killer.
	ClassHostOOM Class = "host_oom"
	// ClassAcceleratorUnavailable: the profile needs an accelerator but
	// the engine found none usable and would serve on CPU (a hidden
	// device, a container without GPUs, missing driver libraries).
	ClassAcceleratorUnavailable Class = "accelerator_unavailable"
	// ClassDiskFull: a file system the engine writes to is full (no space
	// left on a device, a quota exceeded): the model download, the cache,
	// a runner extracted to a temporary folder.
	ClassDiskFull Class = "disk_full"
	// ClassModelAccessDenied: the model hub refused the model (HTTP 401 or
	// 403, a gated repository): a token or accepting the licence is
	// missing. Not a server refusing hiro's own key (that is the
	// endpoint's advice).
	ClassModelAccessDenied Class = "model_access_denied"
	// ClassPermissionDenied: the engine may not read or write a path it
	// needs (a model, a cache folder, a socket): EACCES, EPERM, a
	// read-only file system.
	ClassPermissionDenied Class = "permission_denied"
	// ClassInvalidConfiguration: the engine refused the configuration it
	// was given before it served: a variable it needs is not set ("$HOME
	// is not defined"), a flag or option it does not know, a value it
	// does not accept. The profile (or a plan's variant) is wrong, not
	// the model or the host: a campaign aborts instead of judging the
	// candidate.
	ClassInvalidConfiguration Class = "invalid_configuration"
)

// Classes lists every class.
var Classes = []Class{ClassDriverMismatch, ClassHostCapability, ClassGPUArchUnsupported,
	ClassPortInUse, ClassAcceleratorBusy, ClassModelLoadFailed, ClassQuantKernelFailed,
	ClassGPUOOM, ClassContextExceedsKV, ClassReadyTimeout, ClassWarmupFailed,
	ClassTokenizerTemplate, ClassEngineDied, ClassIdentityMismatch,
	ClassStructuredOutputRejected, ClassStructuredOutputFailOpen,
	ClassStructuredOutputCrash, ClassShutdownLeak, ClassProbeFailed, ClassHostOOM,
	ClassAcceleratorUnavailable, ClassDiskFull, ClassModelAccessDenied, ClassPermissionDenied,
	ClassInvalidConfiguration}

// Known reports whether c is one of Classes.
func (c Class) Known() bool {
	for _, k := range Classes {
		if k == c {
			return true
		}
	}
	return false
}

// Failure is why one attempt failed. It is the "failure" object of
// `hiro backend start --json`, `hiro diagnose --json` and of each launch
// attempt in the evidence.
type Failure struct {
	// Class is the failure class (docs/design.md "Failure vocabulary").
	Class Class `json:"class"`
	// Phase is the phase in progress when the failure happened, read from
	// the last engine log marker seen.
	Phase Phase `json:"phase"`
	// RootCause is the first log line (or probe message) that explains the
	// failure, never a wrapper line such as "Engine core initialization failed".
	RootCause string `json:"root_cause"`
	// ExitCode is the process exit status when it exited by itself; nil when
	// it did not exit or was killed by a signal.
	ExitCode *int `json:"exit_code,omitempty"`
	// Signal is the name of the signal that ended the process ("KILL",
	// "SEGV"), empty otherwise.
	Signal string `json:"signal,omitempty"`
	// SecondsSinceStart is how long after the start the failure was
	// observed, in seconds.
	SecondsSinceStart float64 `json:"seconds_since_start"`
	// LogTail is the last lines of the engine log (at most DefaultTailLines).
	LogTail []string `json:"log_tail,omitempty"`
	// Facts are numbers parsed from the log: weights_load_seconds,
	// shards_loaded, shards_total, model_memory_gib, kv_cache_tokens,
	// kv_cache_memory_gib, suggested_max_model_len, ...
	Facts map[string]float64 `json:"facts,omitempty"`
	// Detail holds extra structured context (e.g. expected and reported
	// model ids for identity_mismatch, leaked pids for shutdown_leak).
	Detail map[string]any `json:"detail,omitempty"`
	// NextStep is a suggested next step for a person, from the class.
	NextStep string `json:"next_step,omitempty"`
	// Rule is the name of the classifier's rule that decided
	// ("cuda/no-kernel-image-is-available", "exit/illegal-instruction",
	// "fallback/engine-died"): a wrong verdict points at one rule.
	// Empty in evidence before v3.
	Rule string `json:"rule,omitempty"`
	// Confidence says how well a rule explains the failure (Confidence);
	// empty in evidence before v3.
	Confidence Confidence `json:"confidence,omitempty"`
	// Classes are the other classes lines of the log point at, when they
	// conflict with Class.
	Classes []Class `json:"classes,omitempty"`
}

// Confidence is how well the classifier's verdict is founded.
type Confidence string

// Confidences.
const (
	// ConfidenceStrong: a specific rule matched the root-cause line, or
	// hiro's own check saw the failure (a taken port, a wrong model id,
	// a timeout, a failed probe).
	ConfidenceStrong Confidence = "strong"
	// ConfidenceWeak: only a generic rule matched (a hint, a warning, a
	// family's catch-all), or the log's lines point at other classes too.
	ConfidenceWeak Confidence = "weak"
	// ConfidenceNone: no rule matched; the class is the fallback
	// (engine_died with the first error line).
	ConfidenceNone Confidence = "none"
)

// Confidences lists every confidence, strongest first.
var Confidences = []Confidence{ConfidenceStrong, ConfidenceWeak, ConfidenceNone}

// DefaultTailLines is how many log lines a Failure keeps in LogTail.
const DefaultTailLines = 40

// Error makes a *Failure usable as an error: "class (phase): root cause".
func (f *Failure) Error() string {
	if f.RootCause == "" {
		return string(f.Class) + " (" + string(f.Phase) + ")"
	}
	return string(f.Class) + " (" + string(f.Phase) + "): " + f.RootCause
}

// Device kinds (Device.Kind).
const (
	// DeviceGPU: the model is served from an accelerator (all layers
	// offloaded, or a GPU platform with no layer split).
	DeviceGPU = "gpu"
	// DevicePartial: some layers on an accelerator, the rest on the CPU.
	DevicePartial = "partial"
	// DeviceCPU: the model is served by the CPU alone.
	DeviceCPU = "cpu"
)

// Device is where an engine serves the model, as its log shows it (read
// by package engine): the ready verdict's device fact, and the evidence's
// per attempt. The zero value means the log did not say.
type Device struct {
	// Kind is DeviceGPU, DevicePartial, DeviceCPU, or "" when unknown.
	Kind string `json:"kind,omitempty"`
	// Name is the accelerator's name or backend as logged ("NVIDIA H200",
	// "CUDA0", "cuda"), when known.
	Name string `json:"name,omitempty"`
	// GPULayers and TotalLayers: layers offloaded to the accelerator, of
	// the model's total (llama.cpp, Ollama); 0 when not logged.
	GPULayers   int `json:"gpu_layers,omitempty"`
	TotalLayers int `json:"total_layers,omitempty"`
	// Evidence is the log line that told (cut to 300 bytes).
	Evidence string `json:"evidence,omitempty"`
}

// CPUOnly reports whether the log shows the model served by the CPU alone.
func (d Device) CPUOnly() bool { return d.Kind == DeviceCPU }

// String says where the model is served: "GPU (NVIDIA H200, 29/29
// layers)", "GPU and CPU (10/29 layers)", "CPU", "unknown".
func (d Device) String() string {
	var s string
	switch d.Kind {
	case DeviceGPU:
		s = "GPU"
	case DevicePartial:
		s = "GPU and CPU"
	case DeviceCPU:
		return "CPU"
	default:
		return "unknown"
	}
	extra := d.Name
	if d.TotalLayers > 0 {
		if extra != "" {
			extra += ", "
		}
		extra += strconv.Itoa(d.GPULayers) + "/" + strconv.Itoa(d.TotalLayers) + " layers"
	}
	if extra != "" {
		s += " (" + extra + ")"
	}
	return s
}
