package preflight

import (
	"fmt"
	"strings"

	gp "github.com/gpustack/gguf-parser-go"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// GGMLOverheadBytes is the device memory llama.cpp and Ollama's runner
// take beyond their own buffers (model, KV cache, compute): the CUDA
// context, cuBLAS workspace and the allocator's slack. 592 MiB is the
// mean of (nvidia-smi's per-process memory − the runner's logged CUDA0
// buffers) over the six llama-3.2-1b runs of docs/qualify.md "Preflight" on an
// H200 (CUDA 13.0 driver, Ollama v0.6.5); those runs fit it, the other
// thirteen test it.
const GGMLOverheadBytes = 592 << 20

// ggmlComputeSlack widens the range's top for the compute buffers, which
// the parser estimates up to 3 % low at long contexts (docs/qualify.md "Preflight").
const ggmlComputeSlack = 0.05

// ggmlBatch is the physical batch llama.cpp and Ollama's runner use
// (--batch-size 512, both defaults).
const ggmlBatch = 512

// estimateGGUF estimates llama.cpp's (and Ollama's runner's) device
// memory for the GGUF at path under l: weights, KV cache and compute
// buffers as gguf-parser-go estimates llama.cpp's allocations, plus
// GGMLOverheadBytes.
func estimateGGUF(path string, l Launch) (*evidence.MemoryEstimate, error) {
	gf, err := gp.ParseGGUFFile(path, gp.SkipLargeMetadata())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a := gf.Architecture()
	if a.Type != "model" && a.Type != "" {
		return nil, fmt.Errorf("%s: a GGUF of type %q, not a model", path, a.Type)
	}
	if a.BlockCount == 0 || a.EmbeddingLength == 0 {
		return nil, fmt.Errorf("%s: the metadata names no layers or embedding width (architecture %q)", path, a.Architecture)
	}
	ctx := l.ContextTokens
	if ctx <= 0 {
		ctx = int(a.MaximumContextLength)
	}
	par := max(1, l.Parallel)
	// llama.cpp's cache holds ctx × slots tokens: Ollama passes num_ctx ×
	// OLLAMA_NUM_PARALLEL as --ctx-size; llama-server's -c already is the
	// total (LaunchOf divided it per slot).
	opts := []gp.GGUFRunEstimateOption{
		gp.WithLLaMACppContextSize(int32(ctx * par)), gp.WithParallelSize(int32(par)),
		gp.WithLLaMACppLogicalBatchSize(ggmlBatch), gp.WithLLaMACppPhysicalBatchSize(ggmlBatch),
	}
	if l.GPULayers >= 0 {
		opts = append(opts, gp.WithLLaMACppOffloadLayers(uint64(l.GPULayers)))
	}
	if l.FlashAttention {
		opts = append(opts, gp.WithFlashAttention())
	}
	if t, ok := ggmlCacheTypes[strings.ToLower(l.CacheType)]; ok {
		opts = append(opts, gp.WithLLaMACppCacheKeyType(t), gp.WithLLaMACppCacheValueType(t))
	}
	e := gf.EstimateLLaMACppRun(opts...)
	kvHeads := int(a.AttentionHeadCountKV)
	if kvHeads == 0 {
		kvHeads = int(a.AttentionHeadCount)
	}
	headDim := int(a.AttentionKeyLength)
	if headDim == 0 && a.AttentionHeadCount > 0 {
		headDim = int(a.EmbeddingLength / a.AttentionHeadCount)
	}
	m := &evidence.MemoryEstimate{Format: "gguf", Architecture: a.Architecture, Layers: int(a.BlockCount),
		KVHeads: kvHeads, HeadDim: headDim, ContextTokens: ctx, Parallel: par, Devices: 1,
		KVBytesPerToken: uint64(a.BlockCount) * uint64(kvHeads*headDim) * 2 * cacheBytes(l.CacheType),
		Policy: fmt.Sprintf("%s: a KV cache of %d tokens: a context of %d per slot (%s) × %d parallel slot(s); %s",
			l.Engine, ctx*par, ctx, l.ContextFrom, par, layersText(l.GPULayers, int(a.BlockCount))),
		Overhead: fmt.Sprintf("%d MiB for the CUDA context and cuBLAS (fitted on Ollama v0.6.5 runs, docs/qualify.md, Preflight); +%.0f %% on the compute buffers at the top of the range",
			GGMLOverheadBytes>>20, ggmlComputeSlack*100)}
	if len(e.Devices) > 0 {
		cpu := e.Devices[0]
		m.HostBytes = uint64(cpu.Weight.Sum() + cpu.KVCache.Sum() + cpu.Computation.Footprint)
	}
	if len(e.Devices) < 2 || l.GPULayers == 0 {
		return onCPU(m, e, a, l), nil
	}
	d := e.Devices[1]
	weights := uint64(d.Weight.Sum())
	kv := uint64(d.KVCache.Sum())
	compute := computeFloor(uint64(d.Computation.Compute+d.Computation.Input+d.Computation.Output), a)
	m.Parts = []evidence.MemoryPart{
		{Name: "weights", Bytes: weights, Note: fmt.Sprintf("%d of %d layers on the device", d.HandleLayers, a.BlockCount)},
		{Name: "kv_cache", Bytes: kv, Note: fmt.Sprintf("%d tokens, %s", ctx*par, cacheName(l.CacheType))},
		{Name: "compute", Bytes: compute, Note: "compute buffers for a 512-token batch"},
		{Name: "overhead", Bytes: GGMLOverheadBytes, Note: "CUDA context, cuBLAS workspace"},
	}
	point := weights + kv + compute + GGMLOverheadBytes
	m.LowBytes = point
	m.HighBytes = point + uint64(float64(compute)*ggmlComputeSlack)
	return m, nil
}

// computeFloor is compute raised to llama.cpp's compute buffer at short
// contexts: the output of one batch, logits and hidden states, batch ×
// (vocabulary + width) × 4 bytes (254.5 MiB for llama-3.2-1b's 128256
// tokens, as its log says), more than the parser's graph estimate.
func computeFloor(compute uint64, a gp.GGUFArchitecture) uint64 {
	return max(compute, uint64(ggmlBatch)*(a.VocabularyLength+a.EmbeddingLength)*4)
}

// onCPU is m for a launch with no layer on an accelerator (a host
// without one, or no layer offloaded): host memory (Devices 0) for the
// weights, KV cache and compute buffers as gguf-parser-go estimates the
// CPU's share, and no CUDA overhead (there is no CUDA context). CheckHostFit
// checks it against the host's available memory.
func onCPU(m *evidence.MemoryEstimate, e gp.LLaMACppRunEstimate, a gp.GGUFArchitecture, l Launch) *evidence.MemoryEstimate {
	cpu := e.Devices[0]
	weights, kv := uint64(cpu.Weight.Sum()), uint64(cpu.KVCache.Sum())
	compute := computeFloor(max(uint64(cpu.Computation.Footprint), uint64(cpu.Computation.Compute+cpu.Computation.Input+cpu.Computation.Output)), a)
	m.Devices = 0
	m.Parts = []evidence.MemoryPart{
		{Name: "weights", Bytes: weights, Note: fmt.Sprintf("all %d layers in host memory", a.BlockCount)},
		{Name: "kv_cache", Bytes: kv, Note: fmt.Sprintf("%d tokens, %s", m.ContextTokens*m.Parallel, cacheName(l.CacheType))},
		{Name: "compute", Bytes: compute, Note: "compute buffers for a 512-token batch"},
	}
	m.LowBytes = weights + kv + compute
	m.HighBytes = m.LowBytes + uint64(float64(compute)*ggmlComputeSlack)
	m.HostBytes = m.HighBytes
	m.Policy = strings.Replace(m.Policy, layersText(l.GPULayers, int(a.BlockCount)), "every layer on the CPU", 1)
	m.Overhead = fmt.Sprintf("none counted: the model runs on the CPU, with no CUDA context; +%.0f %% on the compute buffers at the top of the range", ggmlComputeSlack*100)
	return m
}

var ggmlCacheTypes = map[string]gp.GGMLType{"f16": gp.GGMLTypeF16, "f32": gp.GGMLTypeF32, "q8_0": gp.GGMLTypeQ8_0, "q4_0": gp.GGMLTypeQ4_0, "q4_1": gp.GGMLTypeQ4_1, "q5_0": gp.GGMLTypeQ5_0, "q5_1": gp.GGMLTypeQ5_1}

// cacheBytes is the bytes per element of a KV cache type (block types
// rounded to their average).
func cacheBytes(t string) uint64 {
	switch strings.ToLower(t) {
	case "f32", "float32":
		return 4
	case "q8_0", "fp8", "fp8_e4m3", "fp8_e5m2", "int8":
		return 1
	case "q4_0", "q4_1", "q5_0", "q5_1":
		return 1 // a lower bound of ~0.6: counted as one byte
	}
	return 2
}

func cacheName(t string) string {
	if t == "" || t == "auto" {
		return "the model's dtype"
	}
	return t + " cache"
}

func layersText(n, total int) string {
	if n < 0 || n >= total {
		return fmt.Sprintf("all %d layers offloaded", total)
	}
	return fmt.Sprintf("%d of %d layers offloaded", n, total)
}
