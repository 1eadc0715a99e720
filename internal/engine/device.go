package engine

import (
	"regexp"
	"strconv"
)

// Device kinds of a ServingDevice.
const (
	// DeviceGPU: the model is served from an accelerator (all layers
	// offloaded, or a GPU platform with no layer split).
	DeviceGPU = "gpu"
	// DevicePartial: some layers on an accelerator, the rest on the CPU.
	DevicePartial = "partial"
	// DeviceCPU: the model is served by the CPU alone.
	DeviceCPU = "cpu"
)

// ServingDevice says where an engine serves the model, as its log shows
// it: llama.cpp and Ollama's runner log "offloaded N/M layers to GPU" and
// the device in use; Ollama's server logs the compute it found
// ("inference compute ... library=cuda name=..." or library=cpu, "no
// compatible GPUs were discovered"); vLLM its platform ("Automatically
// detected platform cuda."), SGLang its device argument. The zero value
// means the log did not say. It is the ready verdict's device fact.
type ServingDevice struct {
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
func (d ServingDevice) CPUOnly() bool { return d.Kind == DeviceCPU }

// String says where the model is served: "GPU (NVIDIA H200, 29/29
// layers)", "CPU", "unknown".
func (d ServingDevice) String() string {
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
	var extra string
	if d.Name != "" {
		extra = d.Name
	}
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

// DeviceRule reads the serving device from a log line: a line containing
// Text and matching Pattern sets the device. Kind is the kind it tells;
// with Kind empty the rule is the layer offload line (submatches: layers
// offloaded, total). Otherwise submatch 1, when present, is the device
// name, and a name of "cpu" means the CPU.
type DeviceRule struct {
	Text    string
	Pattern *regexp.Regexp
	Kind    string
}

// read applies the rule to line, updating d; it reports a change.
func (r *DeviceRule) read(line string, d *ServingDevice) bool {
	m := r.Pattern.FindStringSubmatch(line)
	if m == nil {
		return false
	}
	if r.Kind == "" { // offload line
		n, err1 := strconv.Atoi(m[1])
		total, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil {
			return false
		}
		d.GPULayers, d.TotalLayers = n, total
		switch {
		case n == 0:
			d.Kind = DeviceCPU
		case n < total:
			d.Kind = DevicePartial
		default:
			d.Kind = DeviceGPU
		}
		return true
	}
	kind := r.Kind
	name := ""
	if len(m) > 1 {
		name = m[1]
		if name == "cpu" || name == "CPU" {
			kind, name = DeviceCPU, ""
		}
	}
	if d.TotalLayers > 0 && kind != DeviceCPU {
		// the offload line is more precise than a device listing
		if name != "" && d.Name == "" {
			d.Name = name
		}
		return false
	}
	d.Kind = kind
	if name != "" {
		d.Name = name
	}
	return true
}

// ggmlDevices: llama.cpp (and Ollama's runner).
var ggmlDevices = []DeviceRule{
	{Text: "layers to GPU", Pattern: regexp.MustCompile(`offloaded (\d+)/(\d+) layers to GPU`)},
	{Text: "using device", Pattern: regexp.MustCompile(`using device \S+ \((.+?)\)`), Kind: DeviceGPU},
	{Text: "no usable GPU found", Pattern: regexp.MustCompile(`no usable GPU found`), Kind: DeviceCPU},
}

// ollamaDevices: Ollama's server's GPU discovery.
var ollamaDevices = []DeviceRule{
	{Text: "inference compute", Pattern: regexp.MustCompile(`inference compute.*library=cpu\b`), Kind: DeviceCPU},
	{Text: "inference compute", Pattern: regexp.MustCompile(`inference compute.*library=\w+.*?name="?([^"]*[^"\s])"?\s`), Kind: DeviceGPU},
	{Text: "no compatible GPUs were discovered", Pattern: regexp.MustCompile(`no compatible GPUs were discovered`), Kind: DeviceCPU},
}

// pythonDevices: vLLM's platform detection and config, SGLang's and
// other servers' device argument.
var pythonDevices = []DeviceRule{
	{Text: "detected platform", Pattern: regexp.MustCompile(`[Dd]etected platform (\w+)`), Kind: DeviceGPU},
	{Text: "No platform detected", Pattern: regexp.MustCompile(`No platform detected`), Kind: DeviceCPU},
	{Text: "device_config=", Pattern: regexp.MustCompile(`device_config=(\w+)`), Kind: DeviceGPU},
	{Text: "device=", Pattern: regexp.MustCompile(`\bdevice='(\w+)'`), Kind: DeviceGPU},
}
