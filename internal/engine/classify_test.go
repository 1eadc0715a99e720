package engine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/failure"
)

func mustLookup(t testing.TB, kind string) *Engine {
	t.Helper()
	e, err := Lookup(kind)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// feed gives lines to a new tracker of kind.
func feed(t testing.TB, kind string, lines ...string) *Tracker {
	tr := mustLookup(t, kind).NewTracker()
	for _, l := range lines {
		tr.Feed(l)
	}
	return tr
}

var llamaLoading = []string{
	"main: loading model",
	"srv    load_model: loading model '/m/tiny.gguf'",
	"main: model loaded",
	"main: server is listening on http://127.0.0.1:8080 - starting the main loop",
}

func TestIdentityMismatch(t *testing.T) {
	tr := feed(t, "llamacpp", llamaLoading...)
	f := tr.Classify(Outcome{Kind: OutcomeIdentityMismatch, ExpectedModel: "qwen-7b",
		ReportedModels: []string{"other-model", "x"}, Elapsed: 1500 * time.Millisecond})
	if f.Class != failure.ClassIdentityMismatch || f.Phase != failure.PhaseReadyWait {
		t.Fatalf("got %s/%s", f.Class, f.Phase)
	}
	if f.Detail["expected_model"] != "qwen-7b" {
		t.Errorf("detail expected_model = %v", f.Detail["expected_model"])
	}
	rep, _ := f.Detail["reported_models"].([]string)
	if len(rep) != 2 || rep[0] != "other-model" {
		t.Errorf("detail reported_models = %v", f.Detail["reported_models"])
	}
	if !strings.Contains(f.RootCause, `"qwen-7b"`) || !strings.Contains(f.RootCause, `"other-model"`) {
		t.Errorf("root cause %q lacks both ids", f.RootCause)
	}
	if f.SecondsSinceStart != 1.5 {
		t.Errorf("seconds since start = %v", f.SecondsSinceStart)
	}
	if !strings.Contains(f.NextStep, "--served-model-name") {
		t.Errorf("next step %q", f.NextStep)
	}
}

// A did-you-mean makes the next step a fix of the profile's model name
// first (issue 26, T3); no close name keeps the engine's own step.
func TestIdentityMismatchTypoStepFixesTheName(t *testing.T) {
	tr := feed(t, "llamacpp", llamaLoading...)
	f := tr.Classify(Outcome{Kind: OutcomeIdentityMismatch, ExpectedModel: "qwen-7bb", ReportedModels: []string{"qwen-7b"}})
	if !strings.HasPrefix(f.NextStep, `The profile's model "qwen-7bb" is close to "qwen-7b"`) || !strings.Contains(f.NextStep, "--alias") {
		t.Errorf("next step %q: want the name fix first, then the engine's step", f.NextStep)
	}
	if ModelAbsent(f) {
		t.Errorf("a mismatch without the store's word is marked model-absent: %v", f.Detail)
	}
	f = tr.Classify(Outcome{Kind: OutcomeIdentityMismatch, ExpectedModel: "qwen-7b", ReportedModels: []string{"llama-70b-instruct"}})
	if f.NextStep != NextStep(failure.ClassIdentityMismatch) {
		t.Errorf("next step %q without a did-you-mean", f.NextStep)
	}
}

func TestCompletionTemplate400(t *testing.T) {
	tr := feed(t, "vllm", "INFO 01-01 00:00:00 [api_server.py:1] Application startup complete.")
	f := tr.Classify(Outcome{Kind: OutcomeCompletionFailed, Status: 400,
		Message: "As of transformers v4.44, default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one."})
	if f.Class != failure.ClassTokenizerTemplate || f.Phase != failure.PhaseReadyWait {
		t.Fatalf("got %s/%s", f.Class, f.Phase)
	}
	if !strings.Contains(f.RootCause, "HTTP 400") || !strings.Contains(f.RootCause, "chat template") {
		t.Errorf("root cause %q", f.RootCause)
	}
}

func TestCompletion500AndHang(t *testing.T) {
	for _, o := range []Outcome{
		{Kind: OutcomeCompletionFailed, Status: 500, Message: "internal error"},
		{Kind: OutcomeCompletionFailed, Status: 0, Timeout: 10 * time.Second, Message: "context deadline exceeded"},
		{Kind: OutcomeCompletionFailed, Status: 400, Message: "max_tokens must be positive"},
	} {
		tr := feed(t, "llamacpp", llamaLoading...)
		f := tr.Classify(o)
		if f.Class != failure.ClassProbeFailed || f.Phase != failure.PhaseReadyWait {
			t.Errorf("%+v: got %s/%s", o, f.Class, f.Phase)
		}
		if o.Status != 0 && !strings.Contains(f.RootCause, o.Message) {
			t.Errorf("root cause %q lacks %q", f.RootCause, o.Message)
		}
		if o.Status == 0 && !strings.Contains(f.RootCause, "no answer within 10s") {
			t.Errorf("root cause %q", f.RootCause)
		}
	}
}

// A known signature in the log explains a failed completion better than
// engine_died (Ollama's server outlives its failed runner).
func TestSignatureWinsOverCompletionFailure(t *testing.T) {
	tr := feed(t, "ollama",
		`time=x level=INFO source=server.go:383 msg="starting llama server" cmd="/x runner --ctx-size 2048"`,
		`ggml_cuda_init: failed to initialize CUDA: CUDA driver version is insufficient for CUDA runtime version`)
	f := tr.Classify(Outcome{Kind: OutcomeCompletionFailed, Status: 500, Message: "llama runner process has terminated"})
	if f.Class != failure.ClassDriverMismatch || f.Phase != failure.PhaseLoad {
		t.Fatalf("got %s/%s", f.Class, f.Phase)
	}
	if !strings.Contains(f.Detail["completion"].(string), "HTTP 500") {
		t.Errorf("detail %v", f.Detail)
	}
}

func TestTimeouts(t *testing.T) {
	lines := []string{
		"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [gpu_model_runner.py:1] Starting to load model m...",
		"Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:10<00:10,  5.00s/it]",
	}
	tr := feed(t, "vllm", lines...)
	f := tr.Classify(Outcome{Kind: OutcomeReadyTimeout, Timeout: 600 * time.Second, Elapsed: 600 * time.Second,
		Health: &HealthResult{State: HealthDown, Path: "/health", Message: "connection refused"}})
	if f.Class != failure.ClassReadyTimeout || f.Phase != failure.PhaseLoad {
		t.Fatalf("got %s/%s", f.Class, f.Phase)
	}
	if f.Detail["timeout"] != "ready" || f.Detail["timeout_seconds"] != 600.0 {
		t.Errorf("detail %v", f.Detail)
	}
	if !strings.Contains(f.RootCause, "10m0s") || !strings.Contains(f.RootCause, "connection refused") {
		t.Errorf("root cause %q", f.RootCause)
	}
	if f.Facts["shards_loaded"] != 2 || f.Facts["shards_total"] != 4 {
		t.Errorf("facts %v", f.Facts)
	}

	tr = feed(t, "vllm", lines...)
	f = tr.Classify(Outcome{Kind: OutcomeStallTimeout, Timeout: 90 * time.Second})
	if f.Class != failure.ClassReadyTimeout || f.Phase != failure.PhaseLoad || f.Detail["timeout"] != "stall" {
		t.Fatalf("got %s/%s %v", f.Class, f.Phase, f.Detail)
	}
	if !strings.Contains(f.RootCause, "no log output for 1m30s") {
		t.Errorf("root cause %q", f.RootCause)
	}

	// Nothing logged at all: still launch.
	f = mustLookup(t, "sglang").NewTracker().Classify(Outcome{Kind: OutcomeStallTimeout, Timeout: time.Second})
	if f.Phase != failure.PhaseLaunch || f.LogTail != nil {
		t.Errorf("empty log: phase %s, tail %v", f.Phase, f.LogTail)
	}
}

func TestPortInUseBeforeLaunch(t *testing.T) {
	f := mustLookup(t, "ollama").NewTracker().Classify(Outcome{Kind: OutcomePortInUse, Address: "127.0.0.1:11434", Message: "held by pid 42"})
	if f.Class != failure.ClassPortInUse || f.Phase != failure.PhasePrereq {
		t.Fatalf("got %s/%s", f.Class, f.Phase)
	}
	if !strings.Contains(f.RootCause, "127.0.0.1:11434") || !strings.Contains(f.RootCause, "pid 42") {
		t.Errorf("root cause %q", f.RootCause)
	}
	if !strings.Contains(f.NextStep, "port") {
		t.Errorf("next step %q", f.NextStep)
	}
}

func TestHealthFailed(t *testing.T) {
	tr := feed(t, "vllm", "(APIServer pid=1) INFO 01-01 00:00:00 [launcher.py:1] Application startup complete.")
	f := tr.Classify(Outcome{Kind: OutcomeHealthFailed,
		Health: &HealthResult{State: HealthDown, Path: "/health", StatusCode: 503, Message: "engine core is dead"}})
	if f.Class != failure.ClassEngineDied || f.Phase != failure.PhaseReadyWait {
		t.Fatalf("got %s/%s", f.Class, f.Phase)
	}
	if !strings.Contains(f.RootCause, "HTTP 503") || !strings.Contains(f.RootCause, "engine core is dead") {
		t.Errorf("root cause %q", f.RootCause)
	}
	// Health passed but the model list failed: the message is the cause.
	f = feed(t, "llamacpp", llamaLoading...).Classify(Outcome{Kind: OutcomeHealthFailed,
		Health: &HealthResult{State: HealthReady, Path: "/health", StatusCode: 200}, Message: "listing models: HTTP 404"})
	if f.RootCause != "listing models: HTTP 404" || f.Phase != failure.PhaseReadyWait {
		t.Errorf("models failure: %s %q", f.Phase, f.RootCause)
	}
}

// Any exit before ready is a failure, exit 0 included; with no signature
// the first error line is the root cause, never a wrapper or frame.
func TestExitWithoutSignature(t *testing.T) {
	tr := feed(t, "vllm",
		"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [gpu_model_runner.py:1] Starting to load model m...",
		"(EngineCore_DP0 pid=1) ERROR 01-01 00:00:01 [core.py:708] EngineCore failed to start.",
		"(EngineCore_DP0 pid=1) ERROR 01-01 00:00:01 [core.py:708] Traceback (most recent call last):",
		`(EngineCore_DP0 pid=1) ERROR 01-01 00:00:01 [core.py:708]   File "x.py", line 1, in f`,
		"(EngineCore_DP0 pid=1) ERROR 01-01 00:00:01 [core.py:708] KeyError: 'lm_head.weight'",
		"(APIServer pid=2) RuntimeError: Engine core initialization failed. See root cause above.")
	f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)})
	// an exception no rule explains, raised while the model loads: the
	// load failed (stepFailures), said with no confidence
	if f.Class != failure.ClassModelLoadFailed || f.Phase != failure.PhaseLoad || f.Confidence != failure.ConfidenceNone {
		t.Fatalf("got %s/%s %s", f.Class, f.Phase, f.Confidence)
	}
	if !strings.HasSuffix(f.RootCause, "KeyError: 'lm_head.weight'") {
		t.Errorf("root cause %q", f.RootCause)
	}
	if f.ExitCode == nil || *f.ExitCode != 0 {
		t.Errorf("exit code %v", f.ExitCode)
	}

	f = feed(t, "llamacpp", "main: loading model").Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)})
	if f.Class != failure.ClassEngineDied || !strings.Contains(f.RootCause, "exited with code 0 before ready") {
		t.Errorf("clean exit: %s %q", f.Class, f.RootCause)
	}
}

// A hint-tier line explains only until an engine error line arrives.
func TestHintTier(t *testing.T) {
	tr := feed(t, "vllm",
		"NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.")
	if c, _, ok := tr.Signature(); !ok || c != failure.ClassGPUArchUnsupported {
		t.Fatalf("hint not kept: %v %v", c, ok)
	}
	tr.Feed("ERROR 01-01 00:00:00 [core.py:1] RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB")
	c, line, _ := tr.Signature()
	if c != failure.ClassGPUOOM || !strings.Contains(line, "CUDA out of memory") {
		t.Fatalf("error tier did not replace the hint: %s %q", c, line)
	}
	tr.Feed("RuntimeError: CUDA error: no kernel image is available for execution on the device")
	if c, _, _ := tr.Signature(); c != failure.ClassGPUOOM {
		t.Fatalf("a later error line displaced the first: %s", c)
	}
}

func TestMarkersAndFacts(t *testing.T) {
	tr := feed(t, "vllm",
		"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [x.py:1] Starting to load model m...",
		"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [x.py:1] Loading weights took 5.50 seconds",
		"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [x.py:1] Model loading took 4.1 GiB and 6.0 seconds",
		"(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [x.py:1] GPU KV cache size: 123,456 tokens",
	)
	if tr.Phase() != failure.PhaseKVInit {
		t.Errorf("phase %s, want kv_init (the KV cache is allocated after its size is logged)", tr.Phase())
	}
	tr.Feed("(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [x.py:1] Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%")
	if tr.Phase() != failure.PhaseWarmup {
		t.Errorf("phase %s, want warmup", tr.Phase())
	}
	want := map[string]float64{"weights_load_seconds": 5.5, "model_memory_gib": 4.1, "model_load_seconds": 6, "kv_cache_tokens": 123456}
	got := tr.Facts()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("fact %s = %v, want %v", k, got[k], v)
		}
	}
	tr.Feed("(APIServer pid=2) INFO 01-01 00:00:00 [launcher.py:1] Application startup complete.")
	if tr.Phase() != failure.PhaseReadyWait {
		t.Errorf("phase %s, want ready_wait", tr.Phase())
	}

	o := feed(t, "ollama", `time=x level=INFO msg="starting llama server"`, `time=x level=INFO msg="llama runner started in 0.26 seconds"`)
	if o.Phase() != failure.PhaseReadyWait || o.Facts()["runner_start_seconds"] != 0.26 {
		t.Errorf("ollama: phase %s facts %v", o.Phase(), o.Facts())
	}
	s := feed(t, "sglang", "[2025] Load weight begin. avail mem=70.00 GB", "[2025] Load weight end. type=Llama, dtype=torch.bfloat16, avail mem=55.00 GB, mem usage=14.99 GB.")
	if s.Phase() != failure.PhaseKernelSetup || s.Facts()["model_memory_gib"] != 14.99 {
		t.Errorf("sglang: phase %s facts %v", s.Phase(), s.Facts())
	}
}

// Progress bars redrawn with carriage returns count as separate lines;
// the last drawn value wins.
func TestCarriageReturns(t *testing.T) {
	tr := feed(t, "vllm", "Loading safetensors checkpoint shards:   0% Completed | 0/4\rLoading safetensors checkpoint shards:  75% Completed | 3/4\r\n")
	if tr.Facts()["shards_loaded"] != 3 || tr.Lines() != 2 {
		t.Errorf("facts %v lines %d", tr.Facts(), tr.Lines())
	}
}

func TestTailRing(t *testing.T) {
	tr := mustLookup(t, "openai").NewTracker()
	n := failure.DefaultTailLines + 15
	for i := 0; i < n; i++ {
		tr.Feed("line " + strings.Repeat("x", i%3) + string(rune('a'+i%26)))
	}
	tail := tr.Tail()
	if len(tail) != failure.DefaultTailLines {
		t.Fatalf("tail has %d lines", len(tail))
	}
	if want := "line " + strings.Repeat("x", (n-1)%3) + string(rune('a'+(n-1)%26)); tail[len(tail)-1] != want {
		t.Errorf("last %q, want %q", tail[len(tail)-1], want)
	}
	if want := "line " + strings.Repeat("x", 15%3) + string(rune('a'+15%26)); tail[0] != want {
		t.Errorf("first %q, want %q", tail[0], want)
	}
	long := strings.Repeat("y", 10000)
	tr.Feed(long)
	if got := tr.Tail(); len(got[len(got)-1]) > maxStoredLine+3 {
		t.Errorf("long line stored with %d bytes", len(got[len(got)-1]))
	}
}

func TestExitInfoFrom(t *testing.T) {
	cmd := exec.Command("sh", "-c", "kill -KILL $$")
	_ = cmd.Run()
	if x := ExitInfoFrom(cmd.ProcessState); x.Signal != "KILL" || x.Code != nil {
		t.Errorf("killed: %+v", x)
	}
	cmd = exec.Command("sh", "-c", "exit 3")
	_ = cmd.Run()
	if x := ExitInfoFrom(cmd.ProcessState); x.Code == nil || *x.Code != 3 || x.String() != "exited with code 3" {
		t.Errorf("exit 3: %+v", x)
	}
	if ExitInfoFrom(nil).Known() {
		t.Error("nil state is known")
	}
}

func TestEveryClassHasNextStep(t *testing.T) {
	for _, c := range failure.Classes {
		if NextStep(c) == "" {
			t.Errorf("class %s has no next step", c)
		}
	}
	if s := mustLookup(t, "vllm").NextStep(failure.ClassHostCapability); !strings.Contains(s, "VLLM_USE_V2_MODEL_RUNNER=0") {
		t.Errorf("vllm host_capability next step %q", s)
	}
}

// stdout and stderr readers feed one tracker while the owner classifies.
func TestTrackerConcurrentFeed(t *testing.T) {
	tr := mustLookup(t, "vllm").NewTracker()
	done := make(chan struct{})
	for g := 0; g < 2; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < 500; i++ {
				tr.Feed("(EngineCore_DP0 pid=1) INFO 01-01 00:00:00 [x.py:1] Loading weights took 1.00 seconds")
				_ = tr.Classify(Outcome{Kind: OutcomeExited})
			}
		}()
	}
	<-done
	<-done
	if tr.Lines() != 1000 || tr.Phase() != failure.PhaseKernelSetup || len(tr.Tail()) != failure.DefaultTailLines {
		t.Errorf("lines %d phase %s tail %d", tr.Lines(), tr.Phase(), len(tr.Tail()))
	}
}

// TestKVShortfallFacts: vLLM's KV cache check states both sides of the
// shortfall (V0: tokens; V1: GiB and the estimated length), and the next
// step of context_exceeds_kv names only facts such lines give.
func TestKVShortfallFacts(t *testing.T) {
	v0 := feed(t, "vllm", "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (7344). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
	v1 := feed(t, "vllm", "(EngineCore_DP0 pid=7) ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.47 GiB). Based on the available memory, the estimated maximum model length is 77584. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
	for name, c := range map[string]struct {
		tr   *Tracker
		want map[string]float64
	}{
		"v0": {v0, map[string]float64{"max_model_len": 32768, "kv_cache_tokens": 7344}},
		"v1": {v1, map[string]float64{"max_model_len": 131072, "kv_cache_needed_gib": 16, "kv_cache_memory_gib": 9.47, "suggested_max_model_len": 77584}},
	} {
		got := c.tr.Facts()
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: fact %s = %v, want %v (facts %v)", name, k, got[k], v, got)
			}
		}
		if cl, _, _ := c.tr.Signature(); cl != failure.ClassContextExceedsKV {
			t.Errorf("%s: class %s, want context_exceeds_kv", name, cl)
		}
	}
	step := NextStep(failure.ClassContextExceedsKV)
	for _, fact := range []string{"suggested_max_model_len", "kv_cache_tokens"} {
		if !strings.Contains(step, fact) {
			t.Errorf("next step %q does not name %s", step, fact)
		}
	}
}

// TensorRT-LLM's check that the paged KV cache holds one sequence states
// the cache's size in tokens (kv_cache_tokens), also inside Triton's
// per-model load failure line.
func TestTRTLLMKVTooSmallFact(t *testing.T) {
	for _, kind := range []string{"trtllm", "openai"} {
		tr := feed(t, kind, "E0306 16:40:07.708802 117 backend_model.cc:691] ERROR: Failed to create instance: unexpected error when creating "+
			"modelInstanceState: maxTokensInPagedKvCache (29184) must be large enough to process at least 1 sequence to completion "+
			"(i.e. must be larger than beam_width (1) * tokensPerBlock (128) * maxBlocksPerSeq (272))")
		if got := tr.Facts()["kv_cache_tokens"]; got != 29184 {
			t.Errorf("%s: kv_cache_tokens = %v, want 29184", kind, got)
		}
	}
}

// A server that said it listens and went on, never ready, no request
// and no failing line: another process answers on its port
// (outcome/listening-never-reached, weak); a request served, or a death,
// is not that.
func TestListeningNeverReached(t *testing.T) {
	up := []string{
		"srv    load_model: model loaded",
		"srv  llama_server: server is listening on http://127.0.0.1:8080 - starting the main loop",
		"srv  update_slots: all slots are idle",
	}
	f := feed(t, "llamacpp", up...).Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)})
	if f.Class != failure.ClassPortInUse || f.Confidence != failure.ConfidenceWeak || f.Rule != "outcome/listening-never-reached" {
		t.Errorf("listening, nothing after: %s %s by %s, want port_in_use weak", f.Class, f.Confidence, f.Rule)
	}
	if f := feed(t, "llamacpp", up...).Classify(Outcome{Kind: OutcomeExited, Exit: Signaled("KILL")}); f.Class == failure.ClassPortInUse {
		t.Errorf("killed after listening: %s, want no port_in_use", f.Class)
	}
	served := append(append([]string(nil), up...), `srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200`)
	if f := feed(t, "llamacpp", served...).Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)}); f.Class == failure.ClassPortInUse {
		t.Errorf("a request served: %s, want no port_in_use", f.Class)
	}
}

// A served log with no failing line whose requests carried a schema (the
// request body or parameters logged) is the schema accepted and not
// honoured (structured_output_fail_open, weak); a grammar backend only
// configured is no request's schema (probe_failed).
func TestServedSchemaNotHonoured(t *testing.T) {
	served := []string{
		"INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
		`INFO:     127.0.0.1:50112 - "POST /v1/chat/completions HTTP/1.1" 200 OK`,
	}
	schema := append([]string{`Received request: {"messages": [...], "response_format": {"type": "json_schema", "json_schema": {"name": "a"}}}`}, served...)
	f := feed(t, "openai", schema...).Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)})
	if f.Class != failure.ClassStructuredOutputFailOpen || f.Confidence != failure.ConfidenceWeak {
		t.Errorf("a schema in a request, no failing line: %s %s, want structured_output_fail_open weak", f.Class, f.Confidence)
	}
	config := append([]string{"INFO 01-01 00:00:00 [arg_utils.py:1] guided_decoding_backend='outlines'"}, served...)
	if f := feed(t, "openai", config...).Classify(Outcome{Kind: OutcomeExited, Exit: Exited(0)}); f.Class != failure.ClassProbeFailed {
		t.Errorf("a grammar backend configured only: %s, want probe_failed", f.Class)
	}
}

// A health check refused with HTTP 401 says its request and status once
// in the root cause, for every engine kind (issue 26: "down GET /health
// HTTP 401: GET /health answered HTTP 401: Unauthorized").
func TestRefusedHealthSaysItsStatusOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	}))
	defer srv.Close()
	for _, kind := range Kinds() {
		e := mustLookup(t, kind)
		h := e.CheckHealth(context.Background(), srv.Client(), srv.URL, "m")
		if h.StatusCode != http.StatusUnauthorized {
			continue // a kind whose health check does not ask over HTTP
		}
		f := e.NewTracker().Classify(Outcome{Kind: OutcomeHealthFailed, Health: &h})
		if n := strings.Count(f.RootCause, "401"); n != 1 || !strings.Contains(f.RootCause, "Unauthorized") {
			t.Errorf("%s: root cause %q says 401 %d times, want once with the server's words", kind, f.RootCause, n)
		}
		if n := strings.Count(f.Detail["last_health"].(string), "401"); n != 1 {
			t.Errorf("%s: last_health %q says 401 %d times", kind, f.Detail["last_health"], n)
		}
	}
}

// An Ollama store's models are named from its manifests as /api/tags
// names them (the default registry's library bare, another namespace or
// host in front); an empty folder is an empty store, a missing one is
// unknown (issue 26, T16: qualify --check's warning).
func TestOllamaStoreModels(t *testing.T) {
	e := mustLookup(t, "ollama")
	dir := t.TempDir()
	for _, p := range []string{"registry.ollama.ai/library/hiro-tiny/latest", "registry.ollama.ai/library/qwen3/8b",
		"registry.ollama.ai/someone/tuned/v2", "hf.co/org/repo-GGUF/Q4_K_M"} {
		f := filepath.Join(dir, "manifests", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names, ok := e.StoreModels(dir)
	want := []string{"hf.co/org/repo-GGUF:Q4_K_M", "hiro-tiny:latest", "qwen3:8b", "someone/tuned:v2"}
	if !ok || !slices.Equal(names, want) {
		t.Errorf("store models %v (ok %v), want %v", names, ok, want)
	}
	if !e.MatchModel("hiro-tiny", names) || e.MatchModel("hiro-tyni", names) {
		t.Errorf("MatchModel over %v", names)
	}
	if names, ok := e.StoreModels(t.TempDir()); !ok || len(names) != 0 {
		t.Errorf("empty folder: %v, %v; want an empty store", names, ok)
	}
	if _, ok := e.StoreModels(filepath.Join(dir, "nope")); ok {
		t.Error("a missing folder is read as a store")
	}
	if _, ok := mustLookup(t, "vllm").StoreModels(dir); ok {
		t.Error("vllm has no model store")
	}
}
