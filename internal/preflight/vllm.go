package preflight

import (
	"fmt"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// Stated overheads of a vLLM/SGLang launch per device, beside weights and
// KV cache: memory outside PyTorch's allocator (CUDA context, NCCL,
// cuBLAS), CUDA graphs (none with --enforce-eager), from the ranges
// vLLM's own startup log prints ("non-torch memory", "Graph capturing
// finished ... took X GiB") in public reports; and the activation peak
// of the profiling run, estimated from the model's shape.
const (
	vllmNonTorchLow, vllmNonTorchHigh = 512 << 20, 1536 << 20
	vllmGraphsLow, vllmGraphsHigh     = 256 << 20, 1 << 30
	// vllmProfileTokens is the batch vLLM profiles activations with
	// (max_num_batched_tokens' common default).
	vllmProfileTokens = 2048
)

// estimateSafetensors estimates a vLLM or SGLang launch per device from
// the artifact's safetensors headers and config.json: weights split over
// tensor × pipeline parallel devices, the KV cache of one sequence of
// the full context (the least the engine must hold: it refuses to start
// otherwise), the activation peak of its profiling batch, CUDA graphs
// and non-torch memory. totalBytes is one device's total memory (0 when
// unknown): the engine reserves GPUMemoryUtilization of it.
func estimateSafetensors(dir string, l Launch, totalBytes uint64) (*evidence.MemoryEstimate, *ModelConfig, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	w, err := ReadSafetensors(dir)
	if err != nil {
		return nil, cfg, err
	}
	devs := uint64(l.Devices())
	ctx := l.ContextTokens
	if ctx <= 0 {
		ctx = cfg.MaxPositionEmbeddings
	}
	if ctx <= 0 {
		return nil, cfg, fmt.Errorf("%s: no --max-model-len and no max_position_embeddings in config.json", dir)
	}
	kvElem := dtypeSize(cfg.TorchDType)
	if l.CacheType != "" && l.CacheType != "auto" {
		kvElem = cacheBytes(l.CacheType)
	}
	kvPerToken := uint64(cfg.NumHiddenLayers) * uint64(cfg.NumKeyValueHeads*cfg.HeadDim) * 2 * kvElem
	// Per device: layers split over pipeline stages, KV heads over tensor
	// parallel ranks (replicated when there are more ranks than heads).
	kvHeadsPerRank := max(1, cfg.NumKeyValueHeads/max(1, l.TensorParallel))
	kvPerTokenDev := uint64(ceilDiv(cfg.NumHiddenLayers, max(1, l.PipelineParallel))) * uint64(kvHeadsPerRank*cfg.HeadDim) * 2 * kvElem
	weights := w.Total / devs
	act := uint64(vllmProfileTokens) * uint64(cfg.IntermediateSize*4+cfg.HiddenSize*8+cfg.VocabSize*4) / uint64(max(1, l.TensorParallel))
	kv := uint64(ctx) * kvPerTokenDev
	graphsLow, graphsHigh := uint64(vllmGraphsLow), uint64(vllmGraphsHigh)
	if l.EnforceEager {
		graphsLow, graphsHigh = 0, 0
	}
	quant := cfg.QuantMethod(l)
	wnote := fmt.Sprintf("%s over %d device(s)", bytesByDType(w), devs)
	if quant != "" {
		wnote += ", " + quantText(cfg, quant)
	}
	m := &evidence.MemoryEstimate{Format: "safetensors", Architecture: cfg.ModelType, Layers: cfg.NumHiddenLayers,
		KVHeads: cfg.NumKeyValueHeads, HeadDim: cfg.HeadDim, ContextTokens: ctx, Parallel: max(1, l.Parallel),
		KVBytesPerToken: kvPerToken, Devices: int(devs),
		Overhead: fmt.Sprintf("non-torch memory %d–%d MiB, CUDA graphs %d–%d MiB (ranges vLLM's startup log prints in public reports), activations for a %d-token profiling batch",
			vllmNonTorchLow>>20, vllmNonTorchHigh>>20, graphsLow>>20, graphsHigh>>20, vllmProfileTokens)}
	m.Parts = []evidence.MemoryPart{
		{Name: "weights", Bytes: weights, Note: wnote},
		{Name: "kv_cache", Bytes: kv, Note: fmt.Sprintf("one sequence of %d tokens (from %s), %d bytes per token per device", ctx, l.ContextFrom, kvPerTokenDev)},
		{Name: "activations", Bytes: act, Note: fmt.Sprintf("profiling batch of %d tokens", vllmProfileTokens)},
		{Name: "cuda_graphs", Bytes: graphsHigh, Note: fmt.Sprintf("%d–%d MiB", graphsLow>>20, graphsHigh>>20)},
		{Name: "non_torch", Bytes: vllmNonTorchHigh, Note: fmt.Sprintf("%d–%d MiB", vllmNonTorchLow>>20, vllmNonTorchHigh>>20)},
	}
	m.LowBytes = weights + kv + act + graphsLow + vllmNonTorchLow
	m.HighBytes = weights + kv + act + graphsHigh + vllmNonTorchHigh
	if totalBytes > 0 {
		m.ReservedBytes = uint64(l.GPUMemoryUtilization * float64(totalBytes))
	}
	m.Policy = fmt.Sprintf("%s reserves %.2f of each device's memory (%s) and fits weights, activations and the KV cache inside it; %d device(s) (tensor parallel %d × pipeline parallel %d)",
		l.Engine, l.GPUMemoryUtilization, gib(m.ReservedBytes), devs, max(1, l.TensorParallel), max(1, l.PipelineParallel))
	return m, cfg, nil
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func bytesByDType(w *Weights) string {
	s := ""
	for _, dt := range sortedKeys(w.BytesByDType) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s %s", dt, gib(w.BytesByDType[dt]))
	}
	return s
}

func quantText(c *ModelConfig, method string) string {
	s := method
	if q := c.Quantization; q != nil {
		if q.Bits > 0 {
			s += fmt.Sprintf(" %d-bit", q.Bits)
		}
		if q.GroupSize > 0 {
			s += fmt.Sprintf(", group size %d", q.GroupSize)
		}
	}
	return s
}

// gib formats bytes as GiB with two decimals.
func gib(b uint64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }
