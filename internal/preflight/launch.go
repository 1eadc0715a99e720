package preflight

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
)

// Launch is what a profile asks of its engine that memory and capability
// depend on, read from its arguments and environment with each engine's
// documented defaults.
type Launch struct {
	// Engine is the profile's engine kind.
	Engine string
	// ContextTokens is the context per sequence (slot); 0 means the
	// model's trained context. ContextFrom says where it was read.
	ContextTokens int
	ContextFrom   string
	// Parallel is the sequences held at once: llama.cpp's --parallel,
	// Ollama's OLLAMA_NUM_PARALLEL (its KV cache is context × parallel),
	// vLLM's --max-num-seqs (its KV cache is shared, not multiplied).
	Parallel int
	// GPULayers is the layers offloaded to the accelerator; -1 all.
	GPULayers int
	// FlashAttention and CacheType (f16, q8_0, q4_0, fp8, auto) shape the
	// KV cache.
	FlashAttention bool
	CacheType      string
	// GPUMemoryUtilization is vLLM's (default 0.9) or SGLang's
	// --mem-fraction-static (default 0.88): the share of each device the
	// engine takes.
	GPUMemoryUtilization float64
	// TensorParallel and PipelineParallel spread the model over devices.
	TensorParallel, PipelineParallel int
	// Quantization is --quantization when given.
	Quantization string
	// EnforceEager says vLLM captures no CUDA graphs.
	EnforceEager bool
	// VisibleDevices is CUDA_VISIBLE_DEVICES as the profile sets it;
	// HasVisibleDevices says it is set.
	VisibleDevices    string
	HasVisibleDevices bool
	// ModelPath is the model file the arguments name (llama.cpp -m).
	ModelPath string
	// Env is the profile's environment (the rules read variables).
	Env map[string]string
	// RequiresAccelerator is the profile's requires_accelerator, for a
	// server hiro launches on this host (not an unmanaged or remote one).
	RequiresAccelerator bool
}

// Devices is how many accelerators the engine spreads the model over.
func (l Launch) Devices() int { return max(1, l.TensorParallel) * max(1, l.PipelineParallel) }

// LaunchOf reads p's launch settings. modelfile is an Ollama Modelfile of
// the artifact ("" when none), whose PARAMETER num_ctx and num_gpu are the
// model's defaults.
func LaunchOf(p *config.Profile, modelfile string) Launch {
	l := Launch{Engine: p.Engine, Env: p.Env, Parallel: 1, GPULayers: -1, TensorParallel: 1, PipelineParallel: 1}
	l.VisibleDevices, l.HasVisibleDevices = p.Env["CUDA_VISIBLE_DEVICES"]
	l.RequiresAccelerator = p.RequiresAccelerator && !p.Unmanaged && p.Engine != "openai"
	a := argMap(p.Args)
	switch p.Engine {
	case "ollama":
		// Ollama v0.6: OLLAMA_CONTEXT_LENGTH (default 2048), a Modelfile's
		// num_ctx over it; the runner's context is num_ctx ×
		// OLLAMA_NUM_PARALLEL (default 1 when the model alone fits, up to 4).
		l.ContextTokens, l.ContextFrom = 2048, "Ollama's default num_ctx"
		if v, ok := atoi(p.Env["OLLAMA_CONTEXT_LENGTH"]); ok {
			l.ContextTokens, l.ContextFrom = v, "OLLAMA_CONTEXT_LENGTH"
		}
		if mf := modelfileParams(modelfile); mf != nil {
			if v, ok := atoi(mf["num_ctx"]); ok {
				l.ContextTokens, l.ContextFrom = v, "the Modelfile's num_ctx"
			}
			if v, ok := atoi(mf["num_gpu"]); ok && v < 999 {
				l.GPULayers = v
			}
		}
		if v, ok := atoi(p.Env["OLLAMA_NUM_PARALLEL"]); ok && v > 0 {
			l.Parallel = v
		}
		l.FlashAttention = p.Env["OLLAMA_FLASH_ATTENTION"] == "1" || p.Env["OLLAMA_FLASH_ATTENTION"] == "true"
		l.CacheType = "f16"
		if t := p.Env["OLLAMA_KV_CACHE_TYPE"]; t != "" && l.FlashAttention {
			l.CacheType = t
		}
	case "llamacpp":
		// llama-server: -c is the whole cache, shared by --parallel slots.
		l.ContextTokens, l.ContextFrom = 4096, "llama-server's default --ctx-size"
		if v, ok := atoi(first(a, "-c", "--ctx-size")); ok {
			l.ContextTokens, l.ContextFrom = v, "--ctx-size"
		}
		if v, ok := atoi(first(a, "-np", "--parallel")); ok && v > 0 {
			l.Parallel = v
		}
		if l.Parallel > 1 && l.ContextTokens > 0 {
			l.ContextTokens /= l.Parallel
		}
		l.GPULayers = 0
		if v, ok := atoi(first(a, "-ngl", "--n-gpu-layers", "--gpu-layers")); ok {
			l.GPULayers = v
			if v >= 999 {
				l.GPULayers = -1
			}
		}
		_, l.FlashAttention = a["-fa"]
		if _, ok := a["--flash-attn"]; ok {
			l.FlashAttention = true
		}
		l.CacheType = first(a, "-ctk", "--cache-type-k")
		if l.CacheType == "" {
			l.CacheType = "f16"
		}
		l.ModelPath = first(a, "-m", "--model")
	case "vllm", "sglang":
		l.GPUMemoryUtilization = 0.9
		if p.Engine == "sglang" {
			l.GPUMemoryUtilization = 0.88
		}
		if v, err := strconv.ParseFloat(first(a, "--gpu-memory-utilization", "--mem-fraction-static"), 64); err == nil && v > 0 && v <= 1 {
			l.GPUMemoryUtilization = v
		}
		l.ContextFrom = "the model's max_position_embeddings"
		if v, ok := atoi(first(a, "--max-model-len", "--context-length")); ok {
			l.ContextTokens, l.ContextFrom = v, "--max-model-len"
		}
		if v, ok := atoi(first(a, "-tp", "--tensor-parallel-size", "--tp", "--tp-size")); ok && v > 0 {
			l.TensorParallel = v
		}
		if v, ok := atoi(first(a, "-pp", "--pipeline-parallel-size", "--pp", "--pp-size")); ok && v > 0 {
			l.PipelineParallel = v
		}
		l.Quantization = first(a, "--quantization", "-q")
		l.CacheType = first(a, "--kv-cache-dtype")
		if l.CacheType == "" {
			l.CacheType = "auto"
		}
		_, l.EnforceEager = a["--enforce-eager"]
	}
	return l
}

// argMap maps each flag of args to the value after it ("" for a flag
// followed by another flag or nothing); "--flag=value" is split.
func argMap(args []string) map[string]string {
	m := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		if k, v, ok := strings.Cut(a, "="); ok {
			m[k] = v
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			m[a] = args[i+1]
			i++
		} else {
			m[a] = ""
		}
	}
	return m
}

func first(m map[string]string, flags ...string) string {
	for _, f := range flags {
		if v, ok := m[f]; ok {
			return v
		}
	}
	return ""
}

func atoi(s string) (int, bool) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	return v, err == nil
}

// modelfileParams reads the PARAMETER lines of an Ollama Modelfile; nil
// when there is none.
func modelfileParams(path string) map[string]string {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && strings.EqualFold(fs[0], "PARAMETER") {
			m[fs[1]] = fs[2]
		}
	}
	return m
}

// modelfileIn returns the Modelfile of an artifact directory, or "".
func modelfileIn(dir string) string {
	p := filepath.Join(dir, "Modelfile")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
