package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// genericMarkers are the phase lines most servers print in some form,
// used after a kind's own markers (and alone for the openai kind's
// servers hiro has no file for): loading checkpoint shards, weights or
// tensors is load; KV cache or block allocation is kv_init; CUDA graph
// capture, warmup and profiling runs are warmup; a listening HTTP server
// is ready_wait (readiness still checks health, the model id and a real
// completion). A model loading once the server listens is a load on
// demand (Marker.Reload): the phase is load again. Texts are case-sensitive literals, so each common
// capitalisation is listed.
var genericMarkers = []Marker{
	{Text: "Uvicorn running on", Phase: failure.PhaseReadyWait},
	{Text: "Application startup complete", Phase: failure.PhaseReadyWait},
	{Text: "listening on", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
	{Text: "Listening on", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
	{Text: "Serving on http", Phase: failure.PhaseReadyWait},
	{Text: "server started", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
	{Text: "Server started", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
	{Text: "server is ready", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
	// gradio's launch ("Running on local URL:  http://...", its strings
	// RUNNING_LOCALLY) and text-generation-webui's OpenAI extension
	// ("OpenAI-compatible API URL:", extensions/openai/script.py): the
	// web UI and its API listen; only after a load, as they also start
	// before a model is loaded on demand, whose loader's lines do not
	// move the phase back
	{Text: "Running on local URL:", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
	{Text: "OpenAI-compatible API URL:", Phase: failure.PhaseReadyWait, After: failure.PhaseLoad},
	{Text: "apturing CUDA graph", Phase: failure.PhaseWarmup},
	// a device graph captured by any vendor's build ("Capturing ACL graphs
	// for decode", vllm-ascend; "Capture npu graph begin", SGLang's NPU
	// runner; HIP, XPU, MUSA and HPU graphs likewise): warmup
	{Text: "aptur", Pattern: regexp.MustCompile(`\b[Cc]aptur(?:e|ing) (?:[A-Za-z]{2,5} )?graphs?\b`), Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
	{Text: "CUDA graph", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
	{Text: "cuda graph", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
	{Text: "Warming up", Phase: failure.PhaseWarmup},
	{Text: "warming up", Phase: failure.PhaseWarmup},
	{Text: "Warmup", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
	{Text: "warmup", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
	{Text: "profile run", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
	{Text: "profiling run", Phase: failure.PhaseWarmup, After: failure.PhaseLoad},
	{Text: "KV cache", Phase: failure.PhaseKVInit, After: failure.PhaseLoad},
	{Text: "kv cache", Phase: failure.PhaseKVInit, After: failure.PhaseLoad},
	{Text: "num_gpu_blocks", Phase: failure.PhaseKVInit, After: failure.PhaseLoad},
	{Text: "GPU blocks", Phase: failure.PhaseKVInit, After: failure.PhaseLoad},
	{Text: "checkpoint shards", Phase: failure.PhaseLoad},
	// the model's files fetched: a server's own line ("Downloading the
	// tokenizer for", "Downloading model", "Downloading PyTorch weights")
	// and huggingface_hub's snapshot_download progress ("Fetching 4 files")
	{Text: "ownloading", Pattern: regexp.MustCompile(`(?i)\bdownloading (the |pytorch |safetensors )?(model|weights|tokenizer|checkpoint|shards?)\b`), Phase: failure.PhaseLoad},
	{Text: "Fetching ", Pattern: regexp.MustCompile(`Fetching \d+ files`), Phase: failure.PhaseLoad},
	// Xinference's worker fetching a model's files into its cache
	// (xinference/model/llm/llm_family.py: "Caching from Hugging Face:
	// REPO", "Caching from Modelscope: REPO")
	{Text: "Caching from ", Pattern: regexp.MustCompile(`(?i)Caching from (Hugging ?Face|Modelscope|OpenMind|CSGHub)\b`), Phase: failure.PhaseLoad},
	{Text: "Loading checkpoint", Phase: failure.PhaseLoad},
	{Text: "Loading weights", Phase: failure.PhaseLoad},
	{Text: "loading weights", Phase: failure.PhaseLoad},
	{Text: "Loading model", Phase: failure.PhaseLoad, Reload: true},
	{Text: "Loading Model", Phase: failure.PhaseLoad},
	// a loader naming the architecture or format between the words
	// (candle-vllm's "Loading Qwen3 model.", "Loading quantized model from
	// file PATH"): load
	{Text: "oading ", Pattern: regexp.MustCompile(`(?i)\bloading [\w.-]+ model\b`), Phase: failure.PhaseLoad},
	{Text: "Loading engine", Phase: failure.PhaseLoad},
	// per-tensor progress ("loading blk.0.attn_norm.weight to cuda:0")
	{Text: ".weight", Pattern: regexp.MustCompile(`(?i)\bload(ing|ed)? \S+\.weight\b`), Phase: failure.PhaseLoad},
	{Text: "loading model", Pattern: reLoadingModel, Phase: failure.PhaseLoad, Reload: true},
	{Text: "Loading tensors", Phase: failure.PhaseLoad},
	{Text: "load_tensors", Phase: failure.PhaseLoad},
	{Text: "safetensors", Phase: failure.PhaseLoad},
}

// reLoadingModel: "loading model" as words of their own, not the end of
// another word: LocalAI's "Preloading models from PATH" scans model
// configurations at start-up, and "Unloading model" (a server freeing a
// model) or "Downloading model" (the download marker's) load nothing.
var reLoadingModel = regexp.MustCompile(`(?i)(^|[^a-z])(re)?loading model`)
