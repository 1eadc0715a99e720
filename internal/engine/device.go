package engine

import (
	"regexp"
	"strconv"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Device kinds of a ServingDevice (failure.Device).
const (
	DeviceGPU     = failure.DeviceGPU
	DevicePartial = failure.DevicePartial
	DeviceCPU     = failure.DeviceCPU
)

// ServingDevice says where an engine serves the model, as its log shows
// it: llama.cpp and Ollama's runner log "offloaded N/M layers to GPU" and
// the device in use; Ollama's server logs the compute it found
// ("inference compute ... library=cuda name=..." or library=cpu, "no
// compatible GPUs were discovered"); vLLM its platform ("Automatically
// detected platform cuda."), SGLang its device argument. The zero value
// means the log did not say. It is the ready verdict's device fact, the
// same record the evidence keeps per attempt.
type ServingDevice = failure.Device

// DeviceRule reads the serving device from a log line: a line containing
// Text and matching Pattern sets the device. Kind is the kind it tells;
// with Kind empty the rule is the layer offload line (submatches: layers
// offloaded, total; or, where the line gives them in the other order,
// submatches named "offloaded" and "total"). Otherwise submatch 1, when
// present, is the device name, and a name of "cpu" means the CPU.
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
	if r.Kind == "" {
		return r.readOffload(m, d)
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
	if softwareDevice(d.Name) && kind != DeviceCPU {
		return false // the listed GPU is the rasteriser: still the CPU
	}
	d.Kind = kind
	if name != "" {
		d.Name = name
	}
	return true
}

// readOffload reads an offload line's submatches m (layers offloaded,
// layers in all; or the named groups "offloaded" and "total").
func (r *DeviceRule) readOffload(m []string, d *ServingDevice) bool {
	ni, ti := 1, 2
	if i := r.Pattern.SubexpIndex("offloaded"); i > 0 {
		ni, ti = i, r.Pattern.SubexpIndex("total")
	}
	n, err1 := strconv.Atoi(m[ni])
	total, err2 := strconv.Atoi(m[ti])
	if err1 != nil || err2 != nil {
		return false
	}
	d.GPULayers, d.TotalLayers = n, total
	switch {
	case n == 0 || softwareDevice(d.Name):
		d.Kind = DeviceCPU
	case n < total:
		d.Kind = DevicePartial
	default:
		d.Kind = DeviceGPU
	}
	return true
}

// softwareDevice reports a device name of a software rasteriser, which
// computes on the CPU.
func softwareDevice(name string) bool { return name == "llvmpipe" || name == "SwiftShader" }

// ggmlDevices: llama.cpp (and Ollama's runner).
var ggmlDevices = []DeviceRule{
	// Mesa's llvmpipe (and Google's SwiftShader) are Vulkan devices that
	// run on the CPU: layers "offloaded" to them are on the CPU
	{Text: "llvmpipe", Pattern: regexp.MustCompile(`\b(llvmpipe)\b`), Kind: DeviceCPU},
	{Text: "SwiftShader", Pattern: regexp.MustCompile(`\b(SwiftShader)\b`), Kind: DeviceCPU},
	{Text: "layers to GPU", Pattern: regexp.MustCompile(`offloaded (\d+)/(\d+) layers to GPU`)},
	{Text: "using device", Pattern: regexp.MustCompile(`using device \S+ \((.+?)\)`), Kind: DeviceGPU},
	{Text: "no usable GPU found", Pattern: regexp.MustCompile(`no usable GPU found`), Kind: DeviceCPU},
	// system_info of a build without a GPU backend (a cuBLAS or hipBLAS
	// build says BLAS = 1)
	{Text: "| BLAS = 0 |", Pattern: regexp.MustCompile(`\| BLAS = 0 \|`), Kind: DeviceCPU},
}

// ollamaDevices: Ollama's server's GPU discovery, and its scheduler's
// placement of the model (msg=offload ... layers.model=9 layers.offload=0:
// with a GPU found but its memory taken, the model goes to the CPU
// without an error).
var ollamaDevices = []DeviceRule{
	{Text: "layers.offload=", Pattern: regexp.MustCompile(`layers\.model=(?P<total>\d+) layers\.offload=(?P<offloaded>\d+)`)},
	{Text: "inference compute", Pattern: regexp.MustCompile(`inference compute.*library=cpu\b`), Kind: DeviceCPU},
	// the name quoted ("NVIDIA GeForce RTX 3090") or one word (0.12 on:
	// name=CUDA0, and name=cpu for the CPU, which read gives DeviceCPU)
	{Text: "inference compute", Pattern: regexp.MustCompile(`inference compute.*library=\w+.*?name="([^"]*[^"\s])"`), Kind: DeviceGPU},
	{Text: "inference compute", Pattern: regexp.MustCompile(`inference compute.*library=\w+.*?name=([^"\s]+)`), Kind: DeviceGPU},
	{Text: "no compatible GPUs were discovered", Pattern: regexp.MustCompile(`no compatible GPUs were discovered`), Kind: DeviceCPU},
}

// pythonDevices: vLLM's platform detection and config, SGLang's and
// other servers' device argument.
var pythonDevices = []DeviceRule{
	{Text: "detected platform", Pattern: regexp.MustCompile(`[Dd]etected platform (\w+)`), Kind: DeviceGPU},
	{Text: "No platform detected", Pattern: regexp.MustCompile(`No platform detected`), Kind: DeviceCPU},
	{Text: "device_config=", Pattern: regexp.MustCompile(`device_config=(\w+)`), Kind: DeviceGPU},
	{Text: "device=", Pattern: regexp.MustCompile(`\bdevice='(\w+)'`), Kind: DeviceGPU},
	// LMDeploy's engine config: device_type='cuda' (or ascend, maca...)
	{Text: "device_type=", Pattern: regexp.MustCompile(`\bdevice_type='(\w+)'`), Kind: DeviceGPU},
}
