package preflight

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/fixture"
	"github.com/hiro-dev/hiro/internal/gguf"
)

// measuredDir holds the GPU machine's measurements (scripts/gpu/memory.sh).
const measuredDir = "../../examples/gpu/results/memory"

// TestMeasuredMemory replays every load measured on the H200 through
// real CUDA Ollama v0.6.5 (random-weight GGUFs of real shapes, several
// contexts and slots): the estimate for each must be within 10 % of the
// runner's memory from nvidia-smi, and the range's top never below it (a
// "fits" is decided on the top). The llama-3.2-1b rows fitted
// GGMLOverheadBytes; the others test it. bench/preflight-memory.sh prints
// the table with -v.
func TestMeasuredMemory(t *testing.T) {
	f, err := os.Open(filepath.Join(measuredDir, "results.csv"))
	if err != nil {
		t.Skipf("no measurements: %v", err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("results.csv: %v", err)
	}
	types := map[string]gguf.TensorType{"f16": gguf.F16, "q8_0": gguf.Q8_0}
	dirs := map[string]string{}
	host := h200(139, 0)
	t.Logf("| shape | type | num_ctx | slots | predicted MiB (low–high) | actual MiB | error | role |")
	t.Logf("|---|---|---|---|---|---|---|---|")
	for _, r := range rows[1:] {
		shape, typ := r[0], r[1]
		ctx, _ := strconv.Atoi(r[2])
		par, _ := strconv.Atoi(r[3])
		actual, _ := strconv.ParseUint(r[4], 10, 64)
		if dirs[shape] == "" {
			dirs[shape] = t.TempDir()
			sf, err := fixture.ShapeFile(fixture.Shapes[shape], types[typ])
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sf.WriteSparseFile(filepath.Join(dirs[shape], "model.gguf")); err != nil {
				t.Fatal(err)
			}
		}
		p := ollamaProfile(dirs[shape], par)
		p.Env["OLLAMA_CONTEXT_LENGTH"] = strconv.Itoa(ctx)
		pr := Predict(p, host, true)
		if pr.Memory == nil {
			t.Fatalf("%v: %+v", r, pr)
		}
		m := pr.Memory
		point := (m.LowBytes + m.HighBytes) / 2
		e := (float64(point>>20) - float64(actual)) / float64(actual)
		role := "test"
		if shape == "llama-3.2-1b" {
			role = "fit"
		}
		t.Logf("| %s | %s | %d | %d | %d (%d–%d) | %d | %+.1f %% | %s |", shape, typ, ctx, par, point>>20, m.LowBytes>>20, m.HighBytes>>20, actual, e*100, role)
		if e > 0.10 || e < -0.10 {
			t.Errorf("%s ctx %d slots %d: error %.1f %%", shape, ctx, par, e*100)
		}
		if m.HighBytes>>20 < actual {
			t.Errorf("%s ctx %d slots %d: top of range %d MiB below the actual %d MiB: a false fits", shape, ctx, par, m.HighBytes>>20, actual)
		}
	}
	// The busy case: another process left 12288 MiB; the 8B model at
	// 32768 tokens is predicted not to fit (Ollama then offloaded only
	// part of its layers, holder.txt and apps.txt).
	busy := h200(12288.0/1024, 0)
	p := ollamaProfile(dirs["llama-3.1-8b"], 1)
	p.Env["OLLAMA_CONTEXT_LENGTH"] = "32768"
	if pr := Predict(p, busy, true); pr.Fit == nil || pr.Fit.Verdict != evidence.FitDoesNotFit {
		t.Errorf("busy: %+v", pr.Fit)
	} else {
		t.Logf("busy: %s", pr.Fit.Detail)
	}
}
