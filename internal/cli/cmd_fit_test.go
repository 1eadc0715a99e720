package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/doctor/doctortest"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/fixture"
	"github.com/hiro-dev/hiro/internal/gguf"
)

// fitConfig writes a configuration whose profile cand serves the header
// of a llama-3.1-8b q8_0 GGUF (sparse, no weights) through Ollama at
// num_ctx 8192: about 9.6 GiB.
func fitConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	_ = os.Mkdir(model, 0o755)
	f, err := fixture.ShapeFile(fixture.Shapes["llama-3.1-8b"], gguf.Q8_0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteSparseFile(filepath.Join(model, "model.gguf")); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(model, "Modelfile"), []byte("FROM ./model.gguf\nPARAMETER num_ctx 8192\n"), 0o644)
	cfg := filepath.Join(dir, "hiro.toml")
	_ = os.WriteFile(cfg, []byte(`state_dir = "state"
[backends.cand]
engine = "ollama"
command = "ollama"
args = ["serve"]
port = 11999
model = "llama-3.1-8b"
artifact_dir = "model"
exclusive_accelerator = true
[backends.cand.env]
OLLAMA_HOST = "127.0.0.1:11999"
OLLAMA_NUM_PARALLEL = "1"
HOME = "home"
`), 0o644)
	return cfg
}

// 'hiro fit' on the busy H200 (1536 MiB free): does not fit, by how much,
// what would make it fit; exit 1. With recorded facts of a free H200: it
// fits; exit 0. --json is the evidence's Prediction.
func TestFitCommand(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "examples", "gpu", "results", "failures"))
	doctortest.FakeNvidiaSMI(t, doctortest.SMI{
		QueryGPU:  filepath.Join(dir, "busy.query-gpu.csv"),
		QueryApps: filepath.Join(dir, "busy.query-apps.csv"),
		Plain:     filepath.Join(dir, "busy.nvidia-smi.txt"),
	})
	cfg := fitConfig(t)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "fit", "cand"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"predicted failure (gpu_oom, rule preflight/memory-fit)", "fit: does not fit", "short by", "would fit with: a smaller quantisation", "kv_cache"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	facts := filepath.Join(t.TempDir(), "host.json")
	_ = os.WriteFile(facts, []byte(`{"source":"recorded H200","kernel":"6.8.0","devices":[{"index":0,"name":"NVIDIA H200","total_bytes":150754820096,"free_bytes":150000000000,"compute_capability":"9.0"}]}`), 0o644)
	out.Reset()
	code = Run(context.Background(), []string{"--config", cfg, "fit", "cand", "--json", "--host-facts", facts}, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errb.String())
	}
	var pr evidence.Prediction
	if err := json.Unmarshal(out.Bytes(), &pr); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if !pr.Runs || pr.Fit.Verdict != evidence.FitFits || pr.Memory.ContextTokens != 8192 || pr.HostSource != "recorded H200" {
		t.Errorf("%+v", pr)
	}
	if code := Run(context.Background(), []string{"--config", cfg, "fit", "nope"}, &out, &errb); code != 2 {
		t.Errorf("unknown profile: exit %d", code)
	}
}

// 'hiro fit prod' on the shipped examples/hiro.toml predicts from the
// artifact the example names (with a GPU host's recorded facts: it fits,
// exit 0). A profile that names no artifact gets "cannot predict" with
// what to add (artifact or artifact_dir), under which table of which
// file; exit 1, as documented, and no crash.
func TestFitOnTheExampleAndWithoutAnArtifact(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	code, out, errs := runHiro(t, "--config", filepath.Join("..", "..", "examples", "hiro.toml"), "fit", "prod",
		"--host-facts", filepath.Join("..", "..", "examples", "seed-replay", "seed-host.json"))
	if code != ExitOK || !strings.Contains(out, "prod: predicted to run") || !strings.Contains(out, "gguf, llama") {
		t.Errorf("fit prod on examples/hiro.toml: exit %d\n%s%s", code, out, errs)
	}
	cfg := filepath.Join(t.TempDir(), "hiro.toml")
	must(t, os.WriteFile(cfg, []byte("[backends.prod]\nengine = \"ollama\"\ncommand = \"ollama\"\nport = 11998\nmodel = \"x\"\n[backends.prod.env]\nOLLAMA_HOST = \"127.0.0.1:11998\"\nHOME = \"home\"\n"), 0o644))
	code, out, errs = runHiro(t, "--config", cfg, "fit", "prod")
	for _, want := range []string{"cannot predict: profile prod names no artifact", `add artifact = "path/to/manifest.json"`, `artifact_dir = "path/to/model"`, "under [backends.prod]", "profile: [backends.prod] in " + cfg} {
		if !strings.Contains(out, want) {
			t.Errorf("fit without an artifact lacks %q:\n%s%s", want, out, errs)
		}
	}
	if code != ExitFailed {
		t.Errorf("fit without an artifact: exit %d, want %d (no prediction)", code, ExitFailed)
	}
}

// TestFitOnACPUOnlyHost (issue 26 F7): 'hiro fit prod' on
// examples/hiro.toml against a host without an accelerator (recorded
// facts, so the test says the same on a GPU machine): the profile has no
// requires_accelerator, so Ollama runs it on the CPU; the prediction is
// host memory against MemAvailable, with no CUDA overhead: it fits, exit
// 0. With less memory than it needs: does not fit, exit 1.
func TestFitOnACPUOnlyHost(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	facts := func(avail uint64) string {
		p := filepath.Join(t.TempDir(), "cpu-host.json")
		must(t, os.WriteFile(p, []byte(fmt.Sprintf(`{"source": "a CPU-only host", "kernel": "6.8.0", "arch": "amd64", "device_note": "nvidia-smi not found", "available_bytes": %d, "devices": []}`, avail)), 0o644))
		return p
	}
	example := filepath.Join("..", "..", "examples", "hiro.toml")
	code, out, errs := runHiro(t, "--config", example, "fit", "prod", "--host-facts", facts(16<<30))
	if code != ExitOK || !strings.Contains(out, "prod: predicted to run") || !strings.Contains(out, "host memory (on the CPU)") ||
		!strings.Contains(out, "of host memory needed (the model runs on the CPU), 16.00 GiB available") {
		t.Errorf("fit prod on a CPU-only host: exit %d\n%s%s", code, out, errs)
	}
	for _, bad := range []string{"cannot predict", "CUDA context, cuBLAS", "memory per device"} {
		if strings.Contains(out, bad) {
			t.Errorf("fit prod on a CPU-only host says %q:\n%s", bad, out)
		}
	}
	code, out, errs = runHiro(t, "--config", example, "fit", "prod", "--host-facts", facts(1<<20))
	if code != ExitFailed || !strings.Contains(out, "does not fit") || !strings.Contains(out, "host_oom") {
		t.Errorf("fit prod with 1 MiB available: exit %d\n%s%s", code, out, errs)
	}
}

// TestFitOfAGPUEngineWithoutGPU (trial 10, Q21): `hiro fit` of the seed
// replay's vLLM profile on a host with no GPU named only its stub
// config.json; it now says first that the host shows no GPU and what was
// not checked, and exits 1 as a fit that cannot be judged does (docs/
// qualify.md: "1 when it is predicted not to (or no prediction could be
// made)"). The same profile against the seed host's facts (an RTX 4090)
// never says so.
func TestFitOfAGPUEngineWithoutGPU(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	facts := filepath.Join(t.TempDir(), "cpu-host.json")
	must(t, os.WriteFile(facts, []byte(`{"source": "a CPU-only host", "kernel": "6.8.0", "arch": "amd64", "device_note": "nvidia-smi not found", "available_bytes": 17179869184, "devices": []}`), 0o644))
	seed := filepath.Join("..", "..", "examples", "seed-replay")
	code, out, errs := runHiro(t, "--config", filepath.Join(seed, "hiro.toml"), "fit", "vllm-mistral-awq", "--host-facts", facts)
	first, _, _ := strings.Cut(out, "\n")
	if code != ExitFailed || !strings.HasPrefix(first, "vllm-mistral-awq: cannot predict: the recorded host (a CPU-only host) shows no GPU (nvidia-smi not found), and vLLM serves from one") ||
		!strings.Contains(first, "were not checked") || !strings.Contains(first, "; besides, ") || strings.Contains(out, "predicted failure") {
		t.Errorf("fit of a vLLM profile on a CPU-only host: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runHiro(t, "--config", filepath.Join(seed, "hiro.toml"), "fit", "vllm-mistral-awq", "--host-facts", filepath.Join(seed, "seed-host.json"))
	if strings.Contains(out, "no GPU") {
		t.Errorf("fit against a host with a GPU says no GPU: exit %d\n%s%s", code, out, errs)
	}
}
