package preflight

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/fixture"
	"github.com/hiro-dev/hiro/internal/gguf"
)

const gibB = uint64(1) << 30

// shapeGGUF writes the header of a real-shape GGUF (sparse, no weights)
// in a fresh artifact directory with an Ollama Modelfile.
func shapeGGUF(t *testing.T, shape string, typ gguf.TensorType, numCtx int) string {
	t.Helper()
	dir := t.TempDir()
	f, err := fixture.ShapeFile(fixture.Shapes[shape], typ)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteSparseFile(filepath.Join(dir, "model.gguf")); err != nil {
		t.Fatal(err)
	}
	mf := "FROM ./model.gguf\n"
	if numCtx > 0 {
		mf += fmt.Sprintf("PARAMETER num_ctx %d\n", numCtx)
	}
	if err := os.WriteFile(filepath.Join(dir, "Modelfile"), []byte(mf), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func h200(freeGiB, prodGiB float64) *Host {
	return &Host{Source: "test", Kernel: "6.8.0-45-generic", Arch: "amd64", CUDA: "13.0", Driver: "580.159",
		Devices: []Device{{Index: 0, Name: "NVIDIA H200", TotalBytes: 143771 << 20, FreeBytes: uint64(freeGiB * float64(gibB)),
			ComputeCapability: "9.0", ProductionBytes: uint64(prodGiB * float64(gibB))}}}
}

func ollamaProfile(dir string, parallel int) *config.Profile {
	return &config.Profile{Name: "cand", Engine: "ollama", ArtifactDir: dir,
		Env: map[string]string{"OLLAMA_NUM_PARALLEL": fmt.Sprint(parallel)}}
}

// The 8B shape at 8192 tokens, one slot: measured 9782 MiB on an H200
// (examples/gpu/results/memory); the estimate's range must hold it
// within 10 %.
func TestGGUFEstimateRealShape(t *testing.T) {
	dir := shapeGGUF(t, "llama-3.1-8b", gguf.Q8_0, 8192)
	pr := Predict(ollamaProfile(dir, 1), h200(100, 0), true)
	if pr.CannotPredict != "" || pr.Memory == nil {
		t.Fatalf("no estimate: %+v", pr)
	}
	m := pr.Memory
	if m.Layers != 32 || m.KVHeads != 8 || m.HeadDim != 128 || m.ContextTokens != 8192 {
		t.Errorf("shape %+v", m)
	}
	if m.KVBytesPerToken != 32*8*128*2*2 {
		t.Errorf("KV bytes per token %d, want %d", m.KVBytesPerToken, 32*8*128*2*2)
	}
	const measured = 9782 << 20
	for _, b := range []uint64{m.LowBytes, m.HighBytes} {
		if e := relErr(b, measured); e > 0.10 {
			t.Errorf("estimate %d MiB, measured %d MiB: error %.1f %%", b>>20, measured>>20, e*100)
		}
	}
	if pr.Fit.Verdict != evidence.FitFits || !pr.Runs {
		t.Errorf("fit %+v", pr.Fit)
	}
	names := map[string]bool{}
	for _, p := range m.Parts {
		names[p.Name] = true
	}
	for _, n := range []string{"weights", "kv_cache", "compute", "overhead"} {
		if !names[n] {
			t.Errorf("part %s missing: %+v", n, m.Parts)
		}
	}
}

func relErr(a, b uint64) float64 {
	d := float64(a) - float64(b)
	if d < 0 {
		d = -d
	}
	return d / float64(b)
}

// Parallel slots multiply Ollama's KV cache: 4 slots of 8192 tokens hold
// as much as one slot of 32768.
func TestGGUFParallelSlots(t *testing.T) {
	dir := shapeGGUF(t, "llama-3.2-1b", gguf.F16, 8192)
	one := Predict(ollamaProfile(dir, 1), h200(100, 0), true).Memory
	four := Predict(ollamaProfile(dir, 4), h200(100, 0), true).Memory
	kv := func(m *evidence.MemoryEstimate) uint64 {
		for _, p := range m.Parts {
			if p.Name == "kv_cache" {
				return p.Bytes
			}
		}
		return 0
	}
	if kv(four) != 4*kv(one) || kv(one) != 256<<20 {
		t.Errorf("KV one slot %d MiB, four %d MiB; want 256 and 1024", kv(one)>>20, kv(four)>>20)
	}
}

func TestFitVerdicts(t *testing.T) {
	dir := shapeGGUF(t, "llama-3.1-8b", gguf.Q8_0, 32768) // about 14.4 GiB
	for _, c := range []struct {
		name            string
		free, prod      float64
		exclusive, runs bool
		verdict         string
		class           failure.Class
	}{
		{"fits", 40, 0, false, true, evidence.FitFits, ""},
		{"only if stopped, exclusive", 8, 20, true, true, evidence.FitOnlyIfProductionStopped, ""},
		{"only if stopped, beside production", 8, 20, false, false, evidence.FitOnlyIfProductionStopped, failure.ClassAcceleratorBusy},
		{"does not fit", 10, 2, true, false, evidence.FitDoesNotFit, failure.ClassGPUOOM},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr := Predict(ollamaProfile(dir, 1), h200(c.free, c.prod), c.exclusive)
			if pr.Fit == nil || pr.Fit.Verdict != c.verdict || pr.Runs != c.runs || pr.Class != c.class {
				t.Fatalf("got runs=%v class=%q fit=%+v", pr.Runs, pr.Class, pr.Fit)
			}
			if c.verdict == evidence.FitDoesNotFit {
				if pr.Fit.ShortBytes == 0 || len(pr.Fit.Suggestions) == 0 || !strings.Contains(pr.Fit.Suggestions[0], "tokens per slot") {
					t.Errorf("no figure or suggestion: %+v", pr.Fit)
				}
				if pr.Rule != RuleMemoryFit || !strings.Contains(pr.Reason, "short by") {
					t.Errorf("rule %q reason %q", pr.Rule, pr.Reason)
				}
			}
		})
	}
}

// stTensor is one tensor of a safetensors header fixture.
type stTensor struct {
	dtype string
	shape []uint64
}

// writeSafetensors writes a safetensors header for ts and extends the
// file to its full size without data (sparse).
func writeSafetensors(t *testing.T, path string, ts map[string]stTensor) {
	t.Helper()
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	sort.Strings(names)
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var off uint64
	for _, n := range names {
		x := ts[n]
		size := dtypeBytes[x.dtype]
		for _, d := range x.shape {
			size *= d
		}
		hdr[n] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []uint64{off, off + size}}
		off += size
	}
	b, _ := json.Marshal(hdr)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_ = binary.Write(f, binary.LittleEndian, uint64(len(b)))
	_, _ = f.Write(b)
	if err := f.Truncate(int64(8 + len(b) + int(off))); err != nil {
		t.Fatal(err)
	}
}

// awqLlama writes an AWQ 4-bit (group 128) checkpoint of a llama shape:
// qweight int32 [in, out/8], qzeros int32 [in/128, out/8], scales f16
// [in/128, out] per linear layer, as AutoAWQ lays them out.
func awqLlama(t *testing.T, hidden, inter, layers, heads, kvHeads, vocab int) string {
	t.Helper()
	dir := t.TempDir()
	hd := hidden / heads
	cfg := map[string]any{"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "hidden_size": hidden,
		"intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kvHeads,
		"max_position_embeddings": 4096, "vocab_size": vocab, "torch_dtype": "float16",
		"quantization_config": map[string]any{"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"}}
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ts := map[string]stTensor{
		"model.embed_tokens.weight": {"F16", []uint64{uint64(vocab), uint64(hidden)}},
		"lm_head.weight":            {"F16", []uint64{uint64(vocab), uint64(hidden)}},
		"model.norm.weight":         {"F16", []uint64{uint64(hidden)}},
	}
	lin := func(name string, in, out int) {
		ts[name+".qweight"] = stTensor{"I32", []uint64{uint64(in), uint64(out / 8)}}
		ts[name+".qzeros"] = stTensor{"I32", []uint64{uint64(in / 128), uint64(out / 8)}}
		ts[name+".scales"] = stTensor{"F16", []uint64{uint64(in / 128), uint64(out)}}
	}
	for i := 0; i < layers; i++ {
		p := fmt.Sprintf("model.layers.%d.", i)
		lin(p+"self_attn.q_proj", hidden, heads*hd)
		lin(p+"self_attn.k_proj", hidden, kvHeads*hd)
		lin(p+"self_attn.v_proj", hidden, kvHeads*hd)
		lin(p+"self_attn.o_proj", heads*hd, hidden)
		lin(p+"mlp.gate_proj", hidden, inter)
		lin(p+"mlp.up_proj", hidden, inter)
		lin(p+"mlp.down_proj", inter, hidden)
		ts[p+"input_layernorm.weight"] = stTensor{"F16", []uint64{uint64(hidden)}}
		ts[p+"post_attention_layernorm.weight"] = stTensor{"F16", []uint64{uint64(hidden)}}
	}
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), ts)
	return dir
}

func vllmProfile(dir string, args ...string) *config.Profile {
	return &config.Profile{Name: "vllm-cand", Engine: "vllm", ArtifactDir: dir, Args: append([]string{"serve", "m"}, args...), Env: map[string]string{"VLLM_USE_V2_MODEL_RUNNER": "0"}}
}

// Llama-2-7B's shape, AWQ 4-bit: about 3.9 GB of weights; at tensor
// parallel 4, down_proj's input per device is 11008/4 = 2752, not a
// multiple of Marlin's 128: the Marlin rule predicts the repack failure.
func TestSafetensorsAWQAndMarlinShape(t *testing.T) {
	dir := awqLlama(t, 4096, 11008, 32, 32, 32, 32000)
	pr := Predict(vllmProfile(dir, "--max-model-len", "4096"), h200(130, 0), true)
	if pr.CannotPredict != "" || !pr.Runs {
		t.Fatalf("tp 1: %+v", pr)
	}
	w := pr.Memory.Parts[0]
	if w.Name != "weights" || w.Bytes < 3_500_000_000 || w.Bytes > 4_200_000_000 || !strings.Contains(w.Note, "awq 4-bit, group size 128") {
		t.Errorf("weights %+v", w)
	}
	// KV: 32 layers × 32 KV heads × 128 × 2 × 2 bytes = 512 KiB per token.
	if pr.Memory.KVBytesPerToken != 512<<10 {
		t.Errorf("KV per token %d", pr.Memory.KVBytesPerToken)
	}
	if want := 0.9 * float64(143771<<20); pr.Memory.ReservedBytes != uint64(want) {
		t.Errorf("reserved %d", pr.Memory.ReservedBytes)
	}
	h := h200(130, 0)
	h.Devices = append(h.Devices, h.Devices[0], h.Devices[0], h.Devices[0])
	pr = Predict(vllmProfile(dir, "--tensor-parallel-size", "4"), h, true)
	if pr.Runs || pr.Rule != "vllm/marlin-shape-divisible" || pr.Class != failure.ClassQuantKernelFailed || !strings.Contains(pr.Reason, "down_proj: input size per device 2752") {
		t.Fatalf("tp 4: %+v", pr)
	}
	// On a Turing GPU (7.5) Marlin does not run at all.
	h = h200(130, 0)
	h.Devices[0].ComputeCapability, h.Devices[0].Name = "7.5", "Tesla T4"
	if pr := Predict(vllmProfile(dir), h, true); pr.Rule != "vllm/marlin-min-compute-capability" || pr.Class != failure.ClassGPUArchUnsupported {
		t.Errorf("T4: %+v", pr)
	}
}

// vLLM takes gpu_memory_utilization of the device whatever the model
// needs: on a 24 GiB card with 20 GiB free (production holds 4) it fits
// only with production stopped; a context whose KV cache does not fit in
// the reservation is predicted as context_exceeds_kv.
func TestVLLMReservation(t *testing.T) {
	dir := awqLlama(t, 4096, 11008, 32, 32, 32, 32000)
	h := &Host{Source: "test", Kernel: "6.8.0", CUDA: "12.4", Devices: []Device{{Name: "RTX 4090", TotalBytes: 24 * gibB, FreeBytes: 20 * gibB, ProductionBytes: 4 * gibB, ComputeCapability: "8.9"}}}
	pr := Predict(vllmProfile(dir, "--max-model-len", "4096"), h, true)
	if pr.Fit == nil || pr.Fit.Verdict != evidence.FitOnlyIfProductionStopped || !pr.Runs {
		t.Fatalf("%+v %+v", pr, pr.Fit)
	}
	pr = Predict(vllmProfile(dir, "--max-model-len", "65536"), h, true)
	if pr.Runs || pr.Class != failure.ClassContextExceedsKV || !strings.Contains(strings.Join(pr.Fit.Suggestions, " "), "--max-model-len") {
		t.Fatalf("%+v %+v", pr, pr.Fit)
	}
}

// Tensor and pipeline parallel divide weights and KV cache per device; a
// launch over more devices than CUDA_VISIBLE_DEVICES leaves does not fit.
func TestParallelDevices(t *testing.T) {
	dir := awqLlama(t, 4096, 11008, 32, 32, 32, 32000)
	h := h200(130, 0)
	h.Devices = append(h.Devices, h.Devices[0])
	one := Predict(vllmProfile(dir, "--max-model-len", "4096"), h, true).Memory
	two := Predict(vllmProfile(dir, "--max-model-len", "4096", "-tp", "2"), h, true).Memory
	if two.Devices != 2 || two.Parts[0].Bytes != one.Parts[0].Bytes/2 || two.Parts[1].Bytes != one.Parts[1].Bytes/2 {
		t.Errorf("tp 2: %+v vs %+v", two.Parts[:2], one.Parts[:2])
	}
	pp := Predict(vllmProfile(dir, "--max-model-len", "4096", "--pipeline-parallel-size", "2"), h, true).Memory
	if pp.Parts[1].Bytes != one.Parts[1].Bytes/2 {
		t.Errorf("pp 2 KV %d, tp 1 %d", pp.Parts[1].Bytes, one.Parts[1].Bytes)
	}
	p := vllmProfile(dir, "-tp", "2")
	p.Env["CUDA_VISIBLE_DEVICES"] = "1"
	if pr := Predict(p, h, true); pr.Runs || pr.Fit == nil || !strings.Contains(pr.Fit.Detail, "engine sees 1") {
		t.Errorf("tp 2 on one visible device: %+v", pr)
	}
	p.Env["CUDA_VISIBLE_DEVICES"] = "-1"
	if pr := Predict(p, h, true); pr.Rule != "cuda/visible-devices" || pr.Class != failure.ClassAcceleratorUnavailable {
		t.Errorf("hidden: %+v", pr)
	}
	h.Devices[0].MIG = true
	if pr := Predict(vllmProfile(dir), h, true); pr.Runs || !strings.Contains(pr.CannotPredict, "MIG") {
		t.Errorf("MIG: %+v", pr)
	}
}

// The seed host: WSL2 kernel, RTX 5090, driver 576.88. The V2 runner is
// predicted to fail there; the V1 variant is not stopped by that rule.
func TestWSL2UVA(t *testing.T) {
	h := &Host{Source: "seed", Kernel: "6.6.87.2-microsoft-standard-WSL2", WSL: true, Driver: "576.88", CUDA: "12.9",
		Devices: []Device{{Name: "NVIDIA GeForce RTX 5090", TotalBytes: 32607 << 20, FreeBytes: 30 * gibB, ComputeCapability: "12.0"}}}
	dir := awqLlama(t, 4096, 11008, 32, 32, 32, 32000)
	p := vllmProfile(dir)
	delete(p.Env, "VLLM_USE_V2_MODEL_RUNNER")
	pr := Predict(p, h, true)
	if pr.Runs || pr.Rule != "vllm/v2-runner-needs-uva" || pr.Class != failure.ClassHostCapability || !strings.Contains(pr.Reason, "WSL2") {
		t.Fatalf("%+v", pr)
	}
	p.Env["VLLM_USE_V2_MODEL_RUNNER"] = "0"
	if pr := Predict(p, h, true); pr.Rule == "vllm/v2-runner-needs-uva" {
		t.Errorf("V1 runner: %+v", pr)
	}
}

// Bad input is "cannot predict: ...", never a fit.
func TestCannotPredict(t *testing.T) {
	good := awqLlama(t, 4096, 11008, 2, 32, 32, 32000)
	noConfig := t.TempDir()
	writeSafetensors(t, filepath.Join(noConfig, "model.safetensors"), map[string]stTensor{"w": {"F16", []uint64{4, 4}}})
	badDType := t.TempDir()
	copyFile(t, filepath.Join(good, "config.json"), filepath.Join(badDType, "config.json"))
	writeSafetensors(t, filepath.Join(badDType, "model.safetensors"), map[string]stTensor{"w": {"F16", []uint64{4, 4}}})
	rewrite(t, filepath.Join(badDType, "model.safetensors"), `"F16"`, `"Q3_K"`)
	truncated := t.TempDir()
	copyFile(t, filepath.Join(good, "config.json"), filepath.Join(truncated, "config.json"))
	_ = os.WriteFile(filepath.Join(truncated, "model.safetensors"), []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, '{'}, 0o644)
	badGGUF := t.TempDir()
	_ = os.WriteFile(filepath.Join(badGGUF, "model.gguf"), []byte("GGUF\x03\x00\x00\x00trunc"), 0o644)
	for _, c := range []struct {
		name, dir, want string
		engine          string
	}{
		{"missing config.json", noConfig, "no config.json", "vllm"},
		{"unknown dtype", badDType, `unknown dtype "Q3_K"`, "vllm"},
		{"truncated header", truncated, "truncated safetensors header", "vllm"},
		{"truncated gguf", badGGUF, "model.gguf", "ollama"},
		{"missing artifact dir", filepath.Join(noConfig, "nope"), "is missing", "vllm"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := vllmProfile(c.dir)
			p.Engine = c.engine
			pr := Predict(p, h200(100, 0), true)
			if pr.Runs || pr.Fit != nil || !strings.HasPrefix(pr.CannotPredict, "cannot predict: ") || !strings.Contains(pr.CannotPredict, c.want) {
				t.Fatalf("%+v", pr)
			}
		})
	}
	if pr := Predict(&config.Profile{Name: "x", Engine: "ollama"}, h200(1, 0), true); !strings.Contains(pr.CannotPredict, "names no artifact") {
		t.Errorf("no artifact: %+v", pr)
	}
}

// TestLlamacppModelIdIsNoPath: a llama.cpp profile whose args' --model
// is a model id, not a file (a fake engine's "m1"), cannot be predicted
// because there is no GGUF to read, said so, never "open /workdir/m1: no
// such file" as if a configured path were wrong (trial 10 Q3); with an
// artifact folder beside it, the artifact tells the shape instead.
func TestLlamacppModelIdIsNoPath(t *testing.T) {
	wd := t.TempDir()
	p := &config.Profile{Name: "base", Engine: "llamacpp", Workdir: wd, Args: []string{"--port", "1", "--model", "m1"}}
	pr := Predict(p, h200(100, 0), true)
	if want := `cannot predict: no GGUF to read: the model "m1" that profile base's args give (-m/--model) is no file`; !strings.HasPrefix(pr.CannotPredict, want) ||
		strings.Contains(pr.CannotPredict, "open file") {
		t.Errorf("model id: %q, want it to start %q", pr.CannotPredict, want)
	}
	p.ArtifactDir = awqLlama(t, 4096, 11008, 2, 32, 32, 32000)
	if pr := Predict(p, h200(100, 0), true); strings.Contains(pr.CannotPredict, "m1") {
		t.Errorf("with an artifact folder: %+v", pr)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	b, _ := os.ReadFile(path)
	n := binary.LittleEndian.Uint64(b)
	hdr := strings.Replace(string(b[8:8+n]), old, new, 1)
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	out = append(append(out, hdr...), b[8+n:]...)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVisibleDevices(t *testing.T) {
	h := &Host{Devices: []Device{{Index: 0, UUID: "GPU-aaa", Name: "a"}, {Index: 1, UUID: "GPU-bbb", Name: "b"}}}
	for _, c := range []struct {
		v    string
		want string
	}{{"1", "b"}, {"1,0", "b a"}, {"GPU-bbb", "b"}, {"0,7,1", "a"}, {"-1", ""}, {"", ""}} {
		ds, err := h.Visible(c.v, true)
		var names []string
		for _, d := range ds {
			names = append(names, d.Name)
		}
		if err != nil || strings.Join(names, " ") != c.want {
			t.Errorf("%q: %v %v, want %q", c.v, names, err, c.want)
		}
	}
	if _, err := h.Visible("MIG-123", true); err == nil {
		t.Error("a MIG slice's memory is not known")
	}
}

// Every capability rule is named family/slug, names its public source
// and concludes a class of the failure vocabulary.
func TestRulesTable(t *testing.T) {
	seen := map[string]bool{}
	known := map[failure.Class]bool{}
	for _, c := range failure.Classes {
		known[c] = true
	}
	for _, r := range Rules {
		fam, _, ok := strings.Cut(r.Name, "/")
		if !ok || seen[r.Name] || (r.Family != "" && fam != r.Family) {
			t.Errorf("rule %q: want a unique family/slug name (family %q)", r.Name, r.Family)
		}
		seen[r.Name] = true
		if r.Source == "" || r.Needs == "" || r.NextStep == "" || r.Check == nil || !known[r.Class] {
			t.Errorf("rule %s: source, needs, next step, check and a known class are required", r.Name)
		}
	}
}

// The capability table and the classifier's are one table format: no
// capability rule takes a name the classifier's tables use, and none
// sets the fields a log or exit rule matches with.
func TestRuleNamesAcrossTables(t *testing.T) {
	classifier := map[string]bool{}
	for _, n := range engine.RuleNames() {
		classifier[n] = true
	}
	if !classifier["cuda/no-kernel-image-is-available"] {
		t.Fatal("engine.RuleNames lacks the classifier's rules")
	}
	for _, r := range Rules {
		if classifier[r.Name] {
			t.Errorf("capability rule %s takes a name of the classifier's tables", r.Name)
		}
		if r.Text != "" || r.Pattern != nil || len(r.Signals) > 0 || len(r.Codes) > 0 {
			t.Errorf("capability rule %s sets a log or exit rule's matching fields (Predict reads only Check)", r.Name)
		}
	}
}

// The CPU and driver rules read the host's facts.
func TestHostRules(t *testing.T) {
	dir := shapeGGUF(t, "llama-3.2-1b", gguf.F16, 2048)
	p := &config.Profile{Name: "l", Engine: "llamacpp", Args: []string{"-m", filepath.Join(dir, "model.gguf"), "-ngl", "99"}}
	h := h200(100, 0)
	h.CPUFlags = []string{"sse4_2", "avx"}
	if pr := Predict(p, h, true); pr.Rule != "llamacpp/cpu-avx2" || pr.Class != failure.ClassHostCapability {
		t.Errorf("no avx2: %+v", pr)
	}
	h.CPUFlags = append(h.CPUFlags, "avx2")
	h.CUDA = "11.8"
	if pr := Predict(p, h, true); pr.Rule != "cuda/driver-supports-runtime" || pr.Class != failure.ClassDriverMismatch {
		t.Errorf("CUDA 11.8 driver: %+v", pr)
	}
	h.CUDA = "12.2"
	pr := Predict(p, h, true)
	if !pr.Runs || pr.Memory == nil || pr.Memory.ContextTokens != 4096 {
		t.Errorf("llama-server defaults: %+v", pr)
	}
}

// A profile that requires the accelerator, on a host that shows no GPU,
// is predicted to fail (accelerator_unavailable) before anything is
// launched, whatever its artifact; without requires_accelerator, or
// unmanaged, or on a host with a GPU, the rule does not apply.
func TestRequiresAcceleratorWithoutAGPU(t *testing.T) {
	const rule = "host/requires-accelerator-none-present"
	p := &config.Profile{Name: "gpu", Engine: "ollama", RequiresAccelerator: true}
	bare := &Host{Source: "this host", DeviceNote: "nvidia-smi not found"}
	pr := Predict(p, bare, true)
	if pr.Runs || pr.Rule != rule || pr.Class != failure.ClassAcceleratorUnavailable || !strings.Contains(pr.Reason, "nvidia-smi not found") || !strings.Contains(pr.Reason, "remove requires_accelerator") {
		t.Fatalf("requires_accelerator, no GPU: %+v", pr)
	}
	p.RequiresAccelerator = false
	if pr := Predict(p, bare, true); pr.Rule == rule {
		t.Errorf("without requires_accelerator: %+v", pr)
	}
	p.RequiresAccelerator, p.Unmanaged = true, true
	if pr := Predict(p, bare, true); pr.Rule == rule {
		t.Errorf("an unmanaged profile (not launched here): %+v", pr)
	}
	p.Unmanaged = false
	if pr := Predict(p, h200(100, 0), true); pr.Rule == rule {
		t.Errorf("a host with a GPU: %+v", pr)
	}
}

// TestCPUHostPredictsAgainstHostMemory (issue 26 F7): on a host without
// an accelerator, a GGUF profile without requires_accelerator runs on
// the CPU: the estimate is host memory with no CUDA overhead, checked
// against the host's available memory: it fits (Runs), or does not fit
// by how much, with no advice about GPU layers; never "cannot predict:
// no accelerator is visible".
func TestCPUHostPredictsAgainstHostMemory(t *testing.T) {
	dir := shapeGGUF(t, "llama-3.2-1b", gguf.F16, 8192)
	cpuHost := func(availGiB float64) *Host {
		return &Host{Source: "test", Kernel: "6.8.0", Arch: "amd64", DeviceNote: "nvidia-smi not found", AvailableBytes: uint64(availGiB * float64(gibB))}
	}
	pr := Predict(ollamaProfile(dir, 1), cpuHost(16), false)
	if pr.CannotPredict != "" || pr.Memory == nil || pr.Fit == nil {
		t.Fatalf("no prediction on a CPU host: %+v", pr)
	}
	m := pr.Memory
	if !pr.Runs || pr.Fit.Verdict != evidence.FitFits || pr.Fit.Device != -1 || m.Devices != 0 || pr.Fit.FreeBytes != 16*gibB {
		t.Errorf("runs %v, fit %+v, devices %d; want fits against 16 GiB of host memory", pr.Runs, pr.Fit, m.Devices)
	}
	var sum uint64
	for _, p := range m.Parts {
		if p.Name == "overhead" || strings.Contains(p.Note, "CUDA") {
			t.Errorf("a CUDA overhead on a CPU host: %+v", p)
		}
		sum += p.Bytes
	}
	// 1B at F16 is about 2.3 GiB of weights; 8192 tokens of KV 256 MiB.
	if sum != m.LowBytes || m.LowBytes < 2*gibB || m.HighBytes < m.LowBytes || strings.Contains(m.Overhead, "CUDA context and") {
		t.Errorf("host estimate %d–%d MiB, parts sum %d MiB, overhead %q", m.LowBytes>>20, m.HighBytes>>20, sum>>20, m.Overhead)
	}
	if d := strings.Join(Describe(pr), "\n"); !strings.Contains(d, "host memory (on the CPU)") || !strings.Contains(d, "GiB available") {
		t.Errorf("Describe:\n%s", d)
	}
	small := Predict(ollamaProfile(dir, 1), cpuHost(1), false)
	if small.Runs || small.Fit == nil || small.Fit.Verdict != evidence.FitDoesNotFit || small.Fit.ShortBytes == 0 || small.Class != failure.ClassHostOOM {
		t.Fatalf("1 GiB available: %+v %+v", small, small.Fit)
	}
	for _, s := range small.Fit.Suggestions {
		if strings.Contains(s, "GPU") {
			t.Errorf("GPU advice on a CPU host: %q", s)
		}
	}
	if unknown := Predict(ollamaProfile(dir, 1), cpuHost(0), false); unknown.Runs || unknown.CannotPredict == "" {
		t.Errorf("unknown host memory: %+v", unknown)
	}
}

// TestGPUEngineOnAHostWithoutGPU (trial 10, Q21): `hiro fit` of a vLLM
// profile on a host whose facts list no GPU said nothing of the GPU: a
// complete artifact gave "no accelerator is visible to the engine", a
// stub one only its config.json's missing keys. The prediction now
// says first that the host shows no GPU, what was not checked (the
// memory fit, the GPU rules) and what to do, and adds the artifact's
// own problem; it is still "cannot predict", never a predicted failure
// (a CPU build may serve: the launch is made as before). A host with a
// GPU, or a GGUF engine on the CPU host, never says it.
func TestGPUEngineOnAHostWithoutGPU(t *testing.T) {
	cpuHost := &Host{Source: "this host", Kernel: "6.8.0", Arch: "amd64", DeviceNote: "nvidia-smi not found", AvailableBytes: 16 * gibB}
	good := awqLlama(t, 4096, 11008, 2, 32, 32, 32000)
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "config.json"), []byte(`{"model_type": "mistral"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir, besides string
		engine             string
	}{
		{"vllm, complete artifact", good, "", "vllm"},
		{"vllm, stub config.json", stub, "num_hidden_layers, num_attention_heads or hidden_size missing", "vllm"},
		{"sglang", good, "", "sglang"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := vllmProfile(c.dir)
			p.Engine = c.engine
			pr := Predict(p, cpuHost, true)
			got := pr.CannotPredict
			for _, want := range []string{"cannot predict: this host shows no GPU (nvidia-smi not found)", "memory fit", "were not checked", "--host-facts"} {
				if !strings.Contains(got, want) {
					t.Errorf("missing %q in %q", want, got)
				}
			}
			if pr.Runs || pr.Rule != "" || pr.Class != "" || pr.Fit != nil {
				t.Errorf("not a cannot-predict: %+v", pr)
			}
			if c.besides != "" && !strings.Contains(got, "; besides, ") || !strings.Contains(got, c.besides) {
				t.Errorf("the artifact's own problem (%q) is not said: %q", c.besides, got)
			}
			if c.besides == "" && strings.Contains(got, "besides") {
				t.Errorf("a problem of a complete artifact: %q", got)
			}
		})
	}
	if pr := Predict(vllmProfile(good), h200(130, 0), true); strings.Contains(pr.CannotPredict, "no GPU") || !pr.Runs {
		t.Errorf("a host with a GPU: %+v", pr)
	}
	if pr := Predict(ollamaProfile(shapeGGUF(t, "llama-3.2-1b", gguf.F16, 2048), 1), cpuHost, false); pr.CannotPredict != "" || !pr.Runs {
		t.Errorf("a GGUF engine on the CPU host: %+v", pr)
	}
}
