package engine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResembleNamesTheWriter: a llama-server log resembles llama.cpp and
// the kinds that share its loader's lines, not vLLM; a vLLM log resembles
// vLLM first.
func TestResembleNamesTheWriter(t *testing.T) {
	llama := []byte("llama_model_loader: loaded meta data with 30 key-value pairs and 291 tensors from /m.gguf\n" +
		"llama_model_load: error loading model: unable to allocate CUDA0 buffer\n")
	rs := Resemble(llama)
	kinds := map[string]bool{}
	for _, r := range rs {
		kinds[r.Kind] = true
	}
	if !kinds["llamacpp"] || kinds["vllm"] || kinds["openai"] {
		t.Fatalf("a llama-server log resembles %+v; want llamacpp among them, not vllm or openai", rs)
	}
	vllm := []byte("INFO 07-31 13:55:35 [api_server.py:1773] vLLM API server version 0.10.0\n" +
		"INFO 07-31 13:55:52 [default_loader.py:262] Loading weights took 1.52 seconds\n")
	if rs := Resemble(vllm); len(rs) == 0 || rs[0].Kind != "vllm" {
		t.Fatalf("a vLLM log resembles %+v; want vllm first", rs)
	}
}

// TestResembleNoFalseHintOnCases: no case of a kind hiro has a file for
// lacks its own kind's lines while holding another kind's: the hint
// diagnose prints then (a log given the wrong --engine) would be wrong.
func TestResembleNoFalseHintOnCases(t *testing.T) {
	for _, c := range loadCases(t) {
		if c.Engine == "openai" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(c.dir, c.Log))
		if err != nil {
			t.Fatal(err)
		}
		rs := Resemble(b)
		own := false
		for _, r := range rs {
			own = own || r.Kind == c.Engine
		}
		if !own && len(rs) > 0 {
			t.Errorf("%s (%s): none of its kind's lines, but %d of %s's (%q): diagnose would hint the wrong engine",
				c.name(), c.Engine, rs[0].Lines, rs[0].Kind, rs[0].Example)
		}
	}
}
