package preflight

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
)

// Rule is one host capability a runner or kernel needs, as data, in the
// classifier's table format: the embedded engine.Rule carries what every
// rule of hiro's tables has (Name, family/slug, unique across this table
// and the classifier's: TestRuleNamesAcrossTables; Family; the Class a
// launch without the capability ends in; NextStep; Source, the public
// document or code that states the need). Where a log rule matches a
// line, a capability rule checks structured facts (a compute capability,
// a kernel release, model shapes), so it adds a predicate; its matching
// fields (Text, Pattern, Signals...) stay empty. Family here is the
// engine kind the rule applies to, or "" for every engine.
type Rule struct {
	engine.Rule
	// Needs says the capability in words.
	Needs string
	// Check says whether the rule applies to the launch and, when it
	// does, whether the host has the capability, with the figures.
	Check func(c *Context) (applies, ok bool, detail string)
}

// Context is what a capability rule reads: the launch, the host, the
// devices the engine will see and, for safetensors models, config.json.
type Context struct {
	Launch  Launch
	Host    *Host
	Devices []Device
	Model   *ModelConfig
}

// quant is the model's quantisation method ("awq", "gptq", "fp8", "").
func (c *Context) quant() string {
	if c.Model == nil {
		return strings.ToLower(c.Launch.Quantization)
	}
	return c.Model.QuantMethod(c.Launch)
}

// minCC is the lowest compute capability among the visible devices, as
// major*10+minor; ok false when none is known.
func (c *Context) minCC() (int, string, bool) {
	best, name, ok := 0, "", false
	for _, d := range c.Devices {
		cc, good := parseCC(d.ComputeCapability)
		if good && (!ok || cc < best) {
			best, name, ok = cc, d.Name+" (compute capability "+d.ComputeCapability+")", true
		}
	}
	return best, name, ok
}

func parseCC(s string) (int, bool) {
	maj, min, ok := strings.Cut(strings.TrimSpace(s), ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil {
		return 0, false
	}
	return a*10 + b, true
}

// Marlin's tile constraints (vLLM marlin_utils: GPTQ_MARLIN_MIN_THREAD_N,
// GPTQ_MARLIN_MIN_THREAD_K).
const (
	marlinMinN = 64
	marlinMinK = 128
)

// Rules is the host capability table, walked in order by Predict.
var Rules = []Rule{
	{
		Rule: engine.Rule{Name: "vllm/v2-runner-needs-uva", Family: "vllm",
			Class: failure.ClassHostCapability, NextStep: "set VLLM_USE_V2_MODEL_RUNNER=0 (the V1 runner needs no UVA) or run on a native Linux host",
			Source: "vllm-project/vllm vllm/utils (is_pin_memory_available: pinned memory is off under WSL; is_uva_available requires it), and the seed campaign's log"},
		Needs: "vLLM's V2 model runner maps host buffers with unified virtual addressing (UVA), which needs pinned memory; WSL2 offers neither",
		Check: func(c *Context) (bool, bool, string) {
			if v, set := c.Launch.Env["VLLM_USE_V2_MODEL_RUNNER"]; set && (v == "0" || strings.EqualFold(v, "false")) {
				return false, true, ""
			}
			if c.Host.WSL || strings.Contains(strings.ToLower(c.Host.Kernel), "microsoft") {
				return true, false, fmt.Sprintf("the V2 model runner is on (VLLM_USE_V2_MODEL_RUNNER is not 0) and the kernel %s is WSL2's: no UVA", c.Host.Kernel)
			}
			return true, true, "the V2 model runner is on and the kernel " + c.Host.Kernel + " is not WSL2's"
		},
	},
	{
		Rule: engine.Rule{Name: "vllm/marlin-min-compute-capability", Family: "vllm",
			Class: failure.ClassGPUArchUnsupported, NextStep: "serve a non-quantised or FP16 model on this GPU, or use a GPU of compute capability 8.0+",
			Source: "docs.vllm.ai features/quantization/supported_hardware (AWQ/GPTQ Marlin: Ampere and newer); vllm marlin_utils.py check_marlin_supported"},
		Needs: "the Marlin kernels vLLM uses for AWQ/GPTQ 4- and 8-bit weights need compute capability 8.0 (Ampere) or newer",
		Check: func(c *Context) (bool, bool, string) {
			q := c.quant()
			if !strings.Contains(q, "awq") && !strings.Contains(q, "gptq") && !strings.Contains(q, "marlin") {
				return false, true, ""
			}
			cc, name, ok := c.minCC()
			if !ok {
				return false, true, ""
			}
			return true, cc >= 80, fmt.Sprintf("%s weights on %s", q, name)
		},
	},
	{
		Rule: engine.Rule{Name: "vllm/marlin-shape-divisible", Family: "vllm",
			Class: failure.ClassQuantKernelFailed, NextStep: "change --tensor-parallel-size so the layers split evenly, or use a quantisation without Marlin (--quantization awq for the Triton/CUDA AWQ kernels)",
			Source: "vllm-project/vllm vllm/model_executor/layers/quantization/utils/marlin_utils.py (verify_marlin_supports_shape: min_thread_n 64, min_thread_k 128, group_size)"},
		Needs: fmt.Sprintf("Marlin needs each linear layer's per-device output size divisible by %d and input size divisible by %d and by the quantisation group size", marlinMinN, marlinMinK),
		Check: func(c *Context) (bool, bool, string) {
			q := c.quant()
			if c.Model == nil || (!strings.Contains(q, "awq") && !strings.Contains(q, "gptq") && !strings.Contains(q, "marlin")) {
				return false, true, ""
			}
			return marlinShapes(c.Model, max(1, c.Launch.TensorParallel))
		},
	},
	{
		Rule: engine.Rule{Name: "vllm/machete-needs-hopper", Family: "vllm",
			Class: failure.ClassGPUArchUnsupported, NextStep: "leave the kernel choice to vLLM (it picks Marlin below Hopper) or use a Hopper GPU",
			Source: "vllm-project/vllm vllm/model_executor/layers/quantization/kernels/mixed_precision/machete.py (can_implement: capability 90)"},
		Needs: "the Machete mixed-precision kernel runs only on Hopper (compute capability 9.0)",
		Check: func(c *Context) (bool, bool, string) {
			if !strings.Contains(strings.ToLower(c.Launch.Quantization+" "+c.Launch.Env["VLLM_MIXED_PRECISION_KERNEL"]), "machete") {
				return false, true, ""
			}
			cc, name, ok := c.minCC()
			if !ok {
				return false, true, ""
			}
			return true, cc == 90, "Machete on " + name
		},
	},
	{
		Rule: engine.Rule{Name: "vllm/fp8-min-compute-capability", Family: "vllm",
			Class: failure.ClassGPUArchUnsupported, NextStep: "serve a BF16/FP16 or AWQ model on this GPU",
			Source: "docs.vllm.ai features/quantization/fp8 (hardware support) and supported_hardware"},
		Needs: "FP8 weights need compute capability 8.0 or newer (8.9+ computes in FP8; 8.0–8.6 falls back to weight-only FP8 Marlin)",
		Check: func(c *Context) (bool, bool, string) {
			if !strings.Contains(c.quant(), "fp8") {
				return false, true, ""
			}
			cc, name, ok := c.minCC()
			if !ok {
				return false, true, ""
			}
			return true, cc >= 80, "FP8 weights on " + name
		},
	},
	{
		Rule: engine.Rule{Name: "cuda/driver-supports-runtime", Family: "",
			Class: failure.ClassDriverMismatch, NextStep: "update the NVIDIA driver (CUDA 12 needs driver 525 or newer) or use an engine build for the driver's CUDA",
			Source: "NVIDIA CUDA Compatibility guide (minor version compatibility); Ollama v0.6 ships cuda_v12 runners; vLLM wheels are built with CUDA 12"},
		Needs: "the engine's CUDA 12 runtime needs a driver that supports CUDA 12.0 or newer (minor version compatibility within 12.x)",
		Check: func(c *Context) (bool, bool, string) {
			if c.Launch.Engine == "openai" || c.Host.CUDA == "" || len(c.Devices) == 0 {
				return false, true, ""
			}
			maj, _, _ := strings.Cut(c.Host.CUDA, ".")
			m, err := strconv.Atoi(maj)
			if err != nil {
				return false, true, ""
			}
			return true, m >= 12, fmt.Sprintf("driver %s supports CUDA %s", c.Host.Driver, c.Host.CUDA)
		},
	},
	{
		Rule: engine.Rule{Name: "llamacpp/cpu-avx2", Family: "llamacpp",
			Class: failure.ClassHostCapability, NextStep: "build llama.cpp on this host (GGML_NATIVE=ON) or use a build without AVX2",
			Source: "ggml-org/llama.cpp docs/build.md (CPU build options GGML_NATIVE, GGML_AVX2)"},
		Needs: "llama.cpp's x86 release builds use AVX2 (GGML_AVX2) unless built with GGML_NATIVE on the host",
		Check: func(c *Context) (bool, bool, string) {
			if c.Host.Arch != "amd64" || len(c.Host.CPUFlags) == 0 {
				return false, true, ""
			}
			for _, f := range c.Host.CPUFlags {
				if f == "avx2" {
					return true, true, "the CPU has AVX2"
				}
			}
			return true, false, "the CPU's flags have no avx2"
		},
	},
	{
		Rule: engine.Rule{Name: "host/requires-accelerator-none-present", Family: "",
			Class: failure.ClassAcceleratorUnavailable, NextStep: "run it on a host with a GPU (nvidia-smi must list it; in a container, pass the GPUs through, e.g. docker run --gpus all), or remove requires_accelerator from the profile to let it serve from the CPU",
			Source: "hiro's requires_accelerator (docs/failure-classes.md, accelerator_unavailable: CPU serving fails the start); Ollama docs/gpu.md and llama.cpp fall back to the CPU when no GPU is found; vLLM fails with \"No CUDA GPUs are available\""},
		Needs: "a profile with requires_accelerator must find a GPU on the host (nvidia-smi lists one); without one the engine serves from the CPU or fails",
		Check: func(c *Context) (bool, bool, string) {
			if !c.Launch.RequiresAccelerator || len(c.Host.Devices) > 0 {
				return false, true, ""
			}
			note := c.Host.DeviceNote
			if note == "" {
				note = "nvidia-smi lists none"
			}
			return true, false, "the profile has requires_accelerator and the host shows no GPU (" + note + ")"
		},
	},
	{
		Rule: engine.Rule{Name: "cuda/visible-devices", Family: "",
			Class: failure.ClassAcceleratorUnavailable, NextStep: "set CUDA_VISIBLE_DEVICES to a GPU index or UUID that nvidia-smi lists, or unset it",
			Source: "NVIDIA CUDA C Programming Guide, CUDA Environment Variables (CUDA_VISIBLE_DEVICES: an invalid index hides it and every later one)"},
		Needs: "CUDA_VISIBLE_DEVICES must name at least one of the host's GPUs for a profile that needs the accelerator",
		Check: func(c *Context) (bool, bool, string) {
			if !c.Launch.HasVisibleDevices || len(c.Host.Devices) == 0 {
				return false, true, ""
			}
			return true, len(c.Devices) > 0, fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q leaves %d of the host's %d GPUs visible", c.Launch.VisibleDevices, len(c.Devices), len(c.Host.Devices))
		},
	},
}

// marlinShapes checks each linear layer of a llama-style model, split
// over tp ranks (column-parallel q/k/v and gate/up by output, row-parallel
// o and down by input), against Marlin's divisibility.
func marlinShapes(m *ModelConfig, tp int) (bool, bool, string) {
	group := 0
	if m.Quantization != nil && m.Quantization.GroupSize > 0 {
		group = m.Quantization.GroupSize
	}
	q, kv := m.NumAttentionHeads*m.HeadDim, m.NumKeyValueHeads*m.HeadDim
	layers := []struct {
		name    string
		in, out int
	}{
		{"qkv_proj", m.HiddenSize, (q + 2*kv) / tp},
		{"o_proj", q / tp, m.HiddenSize},
		{"gate_up_proj", m.HiddenSize, 2 * m.IntermediateSize / tp},
		{"down_proj", m.IntermediateSize / tp, m.HiddenSize},
	}
	for _, l := range layers {
		if l.in <= 0 || l.out <= 0 {
			continue
		}
		switch {
		case l.out%marlinMinN != 0:
			return true, false, fmt.Sprintf("%s: output size per device %d (tensor parallel %d) is not divisible by %d", l.name, l.out, tp, marlinMinN)
		case l.in%marlinMinK != 0:
			return true, false, fmt.Sprintf("%s: input size per device %d (tensor parallel %d) is not divisible by %d", l.name, l.in, tp, marlinMinK)
		case group > 0 && l.in%group != 0:
			return true, false, fmt.Sprintf("%s: input size per device %d (tensor parallel %d) is not divisible by the group size %d", l.name, l.in, tp, group)
		}
	}
	return true, true, fmt.Sprintf("every linear layer divides into Marlin's tiles at tensor parallel %d", tp)
}
