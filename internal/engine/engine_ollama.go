package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Ollama: GET / answers 200 "Ollama is running" once the server is up;
// the model must also be listed by GET /api/tags, where names carry a tag
// ("name:latest"). The server outlives a failed model runner, so a runner
// failure shows in the log (and in the first request), not as an exit.
func init() {
	register(&Engine{
		Kind: "ollama",
		// Ollama's envconfig.Models: $OLLAMA_MODELS, else ~/.ollama/models.
		ModelStoreEnv:     "OLLAMA_MODELS",
		ModelStoreDefault: "~/.ollama/models",
		HealthPath:        "/",
		health:            ollamaHealth,
		storeModels:       ollamaStoreModels,
		normalizeID:       ollamaModelID,
		markers: joinLists([]Marker{
			{Text: "starting llama server", Phase: failure.PhaseLoad},
			// a pull (server/download.go: "downloading DIGEST in N part(s)")
			// fetches the model the load needs
			{Text: `msg="downloading `, Phase: failure.PhaseLoad},
			{Text: `msg="starting runner" cmd=`, Pattern: regexp.MustCompile(`--model `), Phase: failure.PhaseLoad},
			{Text: `msg="loading model"`, Phase: failure.PhaseLoad},
			// the scheduler starting a model's load (server/sched.go DEBUG
			// "loading first model", before the runner is started)
			{Text: `msg="loading first model"`, Phase: failure.PhaseLoad},
			{Text: `msg="model weights"`, Phase: failure.PhaseLoad},
			{Text: `msg="system memory"`, Phase: failure.PhaseLoad},
			{Text: "waiting for llama runner to start responding", Phase: failure.PhaseLoad},
			{Text: "llama runner started", Phase: failure.PhaseReadyWait},
			// before the runner was a process (0.1.x's in-process
			// llm/dyn_ext_server.go: "Initializing llama server", then
			// "Starting llama main loop" once the model is loaded): its
			// main loop serves the request that loaded it
			{Text: "Starting llama main loop", Phase: failure.PhaseReadyWait},
			// a request handed to the loaded runner (server/routes.go's
			// DEBUG "chat request", "generate request"; llm/server.go's
			// "completion request"): a request reached the server, though
			// its access line ([GIN]) is written only when it ends
			{Text: `msg="completion request"`, Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: `msg="chat request"`, Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			{Text: `msg="generate request"`, Phase: failure.PhaseInference, After: failure.PhaseReadyWait},
			// Ollama 0.13+ runs llama-server as its runner (ollama@fb30760
			// llm/llama_server.go): the same steps in its words
			{Text: "starting llama-server", Phase: failure.PhaseLoad},
			{Text: "waiting for llama-server to start responding", Phase: failure.PhaseLoad},
			{Text: "llama-server started in", Phase: failure.PhaseReadyWait},
		}, ggmlMarkers),
		signatures: joinLists([]Rule{
			{Text: "timed out waiting for llama", Pattern: regexp.MustCompile(`timed out waiting for llama[- ](runner|server) to start`), Class: failure.ClassReadyTimeout},
			// llama-server's refusal of a prompt over the context, relayed
			// (llm/llama_server.go); the server goes on
			{Text: "the prompt is longer than the context length", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseInference},
			{Text: "not found, try pulling it first", Class: failure.ClassModelLoadFailed},
			{Text: "pull model manifest", Pattern: regexp.MustCompile(`(?i)pull model manifest: .{0,40}(401|403|unauthorized|forbidden)`), Class: failure.ClassModelAccessDenied},
			{Text: "pull model manifest", Class: failure.ClassModelLoadFailed},
			// discovery dropping a GPU it will not use and going on without it
			// (ollama discover/amd_linux.go WARN "amdgpu is not supported
			// (supported types:[...])", "amdgpu too old"; gpu.go INFO "[0] CUDA
			// GPU is too old. Compute Capability detected: 3.5"): the server
			// serves on what is left, the CPU, so what failed is the
			// accelerator, chosen at launch; the GPU's generation is the
			// line's reason, not the class (as gpuFamily's "falling back to
			// CPU"). Before "no compatible GPUs were discovered" it says the
			// host has a GPU (hostHasNoGPU does not hold). Notices: an error
			// line after them (the CPU runner's own) explains more.
			{Text: "amdgpu is not supported", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint, Notice: true},
			{Text: "amdgpu too old", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint, Notice: true},
			{Text: "CUDA GPU is too old", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint, Notice: true},
			// an AMD GPU without the ROCm libraries Ollama's build looks for
			// (discover/amd_linux.go, amd_windows.go: WARN "amdgpu detected,
			// but no compatible rocm library found.  Either install rocm v6,
			// ...", then "unable to verify rocm library ... no suitable rocm
			// found, falling back to CPU"): the same notice of a CPU fallback
			{Text: "amdgpu detected, but no compatible rocm library found", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint, Notice: true},
			{Text: "no suitable rocm found, falling back to CPU", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint, Notice: true},
			// an integrated GPU discovery found and set aside by default
			// (Ollama 0.12+ discover/runner.go: INFO "dropping integrated
			// GPU; to enable, set OLLAMA_IGPU_ENABLE=1"): the same notice
			{Text: "dropping integrated GPU", Class: failure.ClassAcceleratorUnavailable, Phase: failure.PhaseLaunch, Tier: TierHint, Notice: true,
				NextStep: "Ollama found an integrated GPU and left it out (its default): set OLLAMA_IGPU_ENABLE=1 in the server's environment (with OLLAMA_VULKAN=1 where the build needs Vulkan for it), or serve on a discrete GPU."},
			// the server's rewording of a runner that did not know the model's
			// architecture (llm/server.go: LastErrMsg containing "unknown
			// model" becomes "this model is not supported by your version of
			// Ollama. You may need to upgrade"): the model needs a newer engine
			{Text: "this model is not supported by your version of Ollama", Class: failure.ClassModelLoadFailed, Phase: failure.PhaseLoad,
				NextStep: "This Ollama is older than the model's architecture: upgrade Ollama (or use a model this version knows)."},
			// the runner gone under a request (llm/server.go Completion:
			// fmt.Errorf("POST predict: %v", err) with the connection's EOF
			// or reset): the runner died; its own lines before say why
			{Name: "ollama/post-predict-runner-gone", Text: "POST predict:", Pattern: regexp.MustCompile(`POST predict: .*(EOF|connection reset|connection refused)`), Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
			// Go text/template errors of a Modelfile's TEMPLATE.
			{Text: "template: ", Pattern: regexp.MustCompile(`template: \S*:\d+(:\d+)?: `), Class: failure.ClassTokenizerTemplate},
			// the runner cut a prompt longer than the context and went on
			// (runner.go: WARN "truncating input prompt"): a notice, the
			// cause only when nothing after it explains the failure
			{Text: "truncating input prompt", Class: failure.ClassContextExceedsKV, Phase: failure.PhaseInference, Tier: TierHint, Notice: true},
			{Text: "unable to load model", Class: failure.ClassModelLoadFailed},
			// the runner's death, which the server outlives (Fatal: a crash
			// line before it is the engine dying, not a request failing)
			{Text: "process has terminated: signal: killed", Pattern: regexp.MustCompile(`llama[- ](runner|server) process has terminated: signal: killed`), Class: failure.ClassHostOOM, Tier: TierHint, Fatal: true},
			{Text: "cuda driver library init failure", Class: failure.ClassAcceleratorUnavailable, Tier: TierHint},
			{Text: "unable to load cudart", Class: failure.ClassAcceleratorUnavailable, Tier: TierHint},
			{Text: "process has terminated", Pattern: regexp.MustCompile(`llama[- ](runner|server) process has terminated: exit status`), Class: failure.ClassEngineDied, Tier: TierHint, Fatal: true},
			{Text: "terminated", Pattern: regexp.MustCompile(`llama[- ](runner|server) terminated`), Class: failure.ClassEngineDied, Tier: TierHint, Fatal: true},
			{Text: "model runner has unexpectedly stopped", Class: failure.ClassEngineDied, Tier: TierHint, Fatal: true},
			// The runner died under a request (killed, crashed) while the
			// server stayed up: every open request gets HTTP 500.
			{Text: "llama runner process no longer running", Class: failure.ClassEngineDied, Tier: TierHint, Fatal: true},
		}, ggmlSignatures, hostFamilies),
		wrappers: ggmlWrappers,
		devices:  joinLists(ollamaDevices, ggmlDevices),
		facts: joinLists(ggmlFacts, []FactParser{
			{Trigger: "llama runner started in", Pattern: regexp.MustCompile(`llama runner started in ([\d.]+) seconds`), Names: []string{"runner_start_seconds"}},
			{Trigger: "timed out waiting for llama runner", Pattern: regexp.MustCompile(`progress ([\d.]+)`), Names: []string{"load_progress"}},
			{Trigger: "starting llama server", Pattern: regexp.MustCompile(`--ctx-size (\d+)`), Names: []string{"context_tokens"}},
			{Trigger: "starting llama server", Pattern: regexp.MustCompile(`--n-gpu-layers (\d+)`), Names: []string{"gpu_layers"}},
			// Ollama's own engine logs weights and KV cache per device.
			{Trigger: `msg="model weights"`, Pattern: regexp.MustCompile(`(?:buffer|device)=(\S+) size="([\d.]+) GiB"`), Names: []string{"model_weights_gib"}, PerDevice: true},
			{Trigger: `msg="kv cache"`, Pattern: regexp.MustCompile(`device=(\S+) size="([\d.]+) GiB"`), Names: []string{"kv_cache_gib"}, PerDevice: true},
			{Trigger: `msg="kv cache"`, Pattern: regexp.MustCompile(`device=(\S+) size="([\d.]+) MiB"`), Names: []string{"kv_cache_mib"}, PerDevice: true},
		}),
		nextSteps: map[failure.Class]string{
			failure.ClassReadyTimeout: "Ollama's runner did not start in time: read the log for the runner's last " +
				"lines; raise OLLAMA_LOAD_TIMEOUT if it was still loading, or lower the context (num_ctx) / GPU layers.",
			failure.ClassHostOOM: "Ollama needs more system memory than is free: use a smaller model or quant, lower num_ctx " +
				"(OLLAMA_CONTEXT_LENGTH), set OLLAMA_MAX_LOADED_MODELS=1 / OLLAMA_NUM_PARALLEL=1, or free host memory.",
			failure.ClassGPUOOM: "GPU memory ran out in Ollama's runner: lower num_ctx (OLLAMA_CONTEXT_LENGTH) or num_gpu " +
				"(layers on the GPU), set OLLAMA_FLASH_ATTENTION=1 with OLLAMA_KV_CACHE_TYPE=q8_0, or use a smaller quant.",
			failure.ClassAcceleratorUnavailable: "Ollama found no usable GPU and serves on the CPU: check CUDA_VISIBLE_DEVICES " +
				"(an empty or wrong value hides the GPU), the container's GPU access (--gpus all), and the driver libraries " +
				"(the log's \"inference compute\" line names what was found).",
			failure.ClassPortInUse: "Another process holds Ollama's port (often another ollama serve, or the desktop app): " +
				"stop it or set OLLAMA_HOST to another address:port.",
			failure.ClassContextExceedsKV: "The prompt does not fit the context Ollama gives each request (num_ctx split over " +
				"OLLAMA_NUM_PARALLEL slots; the prompt was truncated): raise num_ctx / OLLAMA_CONTEXT_LENGTH or lower OLLAMA_NUM_PARALLEL.",
			failure.ClassIdentityMismatch: "Ollama does not have the model the profile names (model not found): create it " +
				"in the model store this server reads (its OLLAMA_MODELS folder; scripts/prepare-models.sh DIR creates the " +
				"project's models there, or `ollama create NAME -f Modelfile`, `ollama pull NAME`), or set the profile's model " +
				"to a name `ollama list` shows for that store.",
			failure.ClassModelLoadFailed: "Ollama could not load the model: check the name (ollama list), pull or create it, and " +
				"update Ollama when the model's architecture is newer than the build.",
		},
	})
}

// ollamaStoreModels lists the models of an Ollama store folder from its
// manifests (manifests/HOST/NAMESPACE/MODEL/TAG, as Ollama's
// server/modelpath.go lays them out), named as /api/tags names them:
// "model:tag" for the default registry's library, "namespace/model:tag"
// for another namespace of it, "host/namespace/model:tag" else. A folder
// that exists but holds no manifests is an empty store; one that cannot
// be read is an error.
func ollamaStoreModels(dir string) ([]string, error) {
	if _, err := os.ReadDir(dir); err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "manifests")
	var names []string
	hosts, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		spaces, _ := os.ReadDir(filepath.Join(root, h.Name()))
		for _, ns := range spaces {
			models, _ := os.ReadDir(filepath.Join(root, h.Name(), ns.Name()))
			for _, m := range models {
				tags, _ := os.ReadDir(filepath.Join(root, h.Name(), ns.Name(), m.Name()))
				for _, t := range tags {
					if t.IsDir() {
						continue
					}
					name := m.Name() + ":" + t.Name()
					switch {
					case h.Name() != "registry.ollama.ai":
						name = h.Name() + "/" + ns.Name() + "/" + name
					case ns.Name() != "library":
						name = ns.Name() + "/" + name
					}
					names = append(names, name)
				}
			}
		}
	}
	return names, nil
}

// ollamaModelID gives an untagged name its implicit ":latest" tag.
func ollamaModelID(id string) string {
	if id == "" || strings.Contains(id[strings.LastIndexByte(id, '/')+1:], ":") {
		return id
	}
	return id + ":latest"
}

func ollamaHealth(ctx context.Context, e *Engine, client *http.Client, baseURL, model string) HealthResult {
	r := HealthResult{Path: e.HealthPath}
	code, body, err := get(ctx, client, baseURL+e.HealthPath)
	r.StatusCode = code
	switch {
	case err != nil:
		r.State, r.Message, r.Err = HealthDown, err.Error(), err
		return r
	case code != http.StatusOK:
		r.State, r.Message = HealthDown, fmt.Sprintf("GET / answered HTTP %d: %s", code, errorMessage(body))
		return r
	case !strings.Contains(string(body), "Ollama is running"):
		r.State, r.Message = HealthDown, fmt.Sprintf("GET / answered %q, not \"Ollama is running\": is this Ollama?", errorMessage(body))
		return r
	}
	if model == "" {
		r.State = HealthReady
		return r
	}
	r.Path = "/api/tags"
	code, body, err = get(ctx, client, baseURL+"/api/tags")
	r.StatusCode = code
	if err != nil || code != http.StatusOK {
		r.State = HealthDown
		if err != nil {
			r.Message, r.Err = err.Error(), err
		} else {
			r.Message = fmt.Sprintf("GET /api/tags answered HTTP %d: %s", code, errorMessage(body))
		}
		return r
	}
	var tags struct {
		Models []struct {
			Name  string `json:"name"`
			Model string `json:"model"`
		} `json:"models"`
	}
	if err := json.Unmarshal(body, &tags); err != nil {
		r.State, r.Message = HealthDown, fmt.Sprintf("GET /api/tags: not an Ollama model list: %v", err)
		return r
	}
	names := make([]string, 0, len(tags.Models))
	for _, m := range tags.Models {
		names = append(names, m.Name)
		if m.Model != "" && m.Model != m.Name {
			names = append(names, m.Model)
		}
	}
	if e.MatchModel(model, names) {
		r.State = HealthReady
		return r
	}
	r.State = HealthLoading
	r.ModelMissing, r.Listed = true, names
	r.Message = fmt.Sprintf("model %q is not in /api/tags (listed: %s); create or pull it", model, quoteList(names))
	return r
}

// Ollama unloads a model after its keep-alive without requests, and any
// completion loads it again and restarts the keep-alive. A canary must
// do neither: it is skipped while the model is unloaded, and while it is
// loaded with a finite keep-alive it goes through Ollama's own
// /api/generate with keep_alive set to the time left, so the model
// leaves when it would have without the canary.

// OllamaResidency is what Ollama's /api/ps says about one model.
type OllamaResidency struct {
	// Known is false when /api/ps could not tell (no answer, not 200,
	// not its JSON).
	Known bool
	// Loaded is true when the model is in memory, until Expires (the end
	// of its keep-alive; zero or far ahead: none).
	Loaded  bool
	Expires time.Time
}

// OllamaPS asks the Ollama server at base (through hc, bounded by ctx)
// whether model is loaded and until when, comparing names as Ollama does
// (with or without ":latest").
func OllamaPS(ctx context.Context, hc *http.Client, base, model string) OllamaResidency {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/ps", nil)
	if err != nil {
		return OllamaResidency{}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return OllamaResidency{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return OllamaResidency{}
	}
	var ps struct {
		Models []struct {
			Name      string    `json:"name"`
			Model     string    `json:"model"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"models"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ps) != nil {
		return OllamaResidency{}
	}
	e := registry["ollama"]
	for _, m := range ps.Models {
		if e.MatchModel(model, []string{m.Name, m.Model}) {
			return OllamaResidency{Known: true, Loaded: true, Expires: m.ExpiresAt}
		}
	}
	return OllamaResidency{Known: true}
}

// CanaryKeepAlive says how a canary may probe a model of residency r,
// left as it is, at now: skip, when not empty, says why no canary is made
// (unloaded, or about to be); keepAlive > 0 is the keep_alive its
// /api/generate request must carry (OllamaGenerate); 0 with no skip: any
// canary (no finite keep-alive, or residency unknown).
func (r OllamaResidency) CanaryKeepAlive(now time.Time) (keepAlive time.Duration, skip string) {
	if r.Known && !r.Loaded {
		return 0, "the model is not loaded (keep-alive expired); a canary would reload it"
	}
	if r.Loaded && !r.Expires.IsZero() && r.Expires.Sub(now) < 24*time.Hour {
		if keepAlive = r.Expires.Sub(now); keepAlive < time.Second {
			return 0, "the model is about to be unloaded (keep-alive); a canary would keep it"
		}
	}
	return keepAlive, ""
}

// OllamaGenerate sends prompt to model through Ollama's /api/generate at
// base (not streamed, temperature 0, at most maxTokens, keep_alive
// keepAlive in whole seconds). It returns the HTTP status and the trimmed
// reply, or Ollama's error message (msg) for another status; err is a
// request that got no answer.
func OllamaGenerate(ctx context.Context, hc *http.Client, base, model, prompt string, maxTokens int, keepAlive time.Duration) (status int, reply, msg string, err error) {
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "stream": false,
		"keep_alive": fmt.Sprintf("%ds", int(keepAlive.Seconds())),
		"options":    map[string]any{"num_predict": maxTokens, "temperature": 0}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Response string `json:"response"`
		Error    string `json:"error"`
	}
	_ = json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusOK {
		msg = out.Error
		if msg == "" {
			msg = strings.TrimSpace(string(b))
		}
		return resp.StatusCode, "", msg, nil
	}
	return resp.StatusCode, strings.TrimSpace(out.Response), "", nil
}
