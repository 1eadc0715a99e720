package qualify

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/stats"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// TestSemanticErrorRates measures the semantic gate's error rates (issue
// 23, "Measured error rates"): A/A trials (production against itself,
// each side a different sampled run) and A/B trials with a known drop, at
// least 100 of each, every run an extraction of the corpus through the
// fake engine with --chat claims and --drop-claims (each claim left out
// by a seeded hash: the sampling noise; a larger share for the weaker
// side). Runs are paired disjointly within each kind of trial; each trial
// is the gate's own comparison (compare). It prints P(failed | A/A),
// P(inconclusive | A/A), P(passed | true drop = tolerance) and the power
// P(failed | true drop = 2·tolerance), each with its Clopper-Pearson
// interval, and fails when a goal is missed: false alarms (failed) at
// most 5 %, passed at a drop of the tolerance at most 5 %, power at least
// 80 %.
//
// Slow (hundreds of extraction runs): skipped unless HIRO_ERROR_RATES=1;
// bench/semantic-error-rates.sh runs it. HIRO_ERROR_TRIALS (default 100)
// sets the trials per kind, HIRO_ERROR_NOISE (default 0.10) the share of
// claims each run drops, HIRO_ERROR_CORPUS the corpus (default
// corpora/hiro-atlas).
func TestSemanticErrorRates(t *testing.T) {
	if os.Getenv("HIRO_ERROR_RATES") == "" {
		t.Skip("slow benchmark: run bench/semantic-error-rates.sh (HIRO_ERROR_RATES=1)")
	}
	trials := envInt(t, "HIRO_ERROR_TRIALS", 100)
	noise := envFloat(t, "HIRO_ERROR_NOISE", 0.10)
	dir := os.Getenv("HIRO_ERROR_CORPUS")
	if dir == "" {
		dir = "../../corpora/hiro-atlas"
	}
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const tolerance = 0.05
	g := &SemanticGate{Tolerance: tolerance, Confidence: stats.DefaultConfidence, Resamples: stats.DefaultResamples, Concurrency: 4, MaxTokens: 256}
	fake := testsupport.MustBuild(testsupport.FakeEnginePkg)
	work := t.TempDir()
	h := NewHandle(nil, nil, work, work, nil)
	n := 0
	run := func(share float64, seed string) *semanticSide {
		n++
		port := testsupport.FreePort(t)
		cmd := exec.Command(fake, "--port", strconv.Itoa(port), "--model", "m", "--chat", "claims",
			"--drop-claims", strconv.FormatFloat(share, 'g', -1, 64), "--drop-seed", seed)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		p := &config.Profile{Name: seed, BaseURL: fmt.Sprintf("http://127.0.0.1:%d", port), Model: "m"}
		waitHealthy(t, p.BaseURL)
		side, err := g.runSide(context.Background(), c, semanticTarget{Backend: seed, BaseURL: p.BaseURL, Model: "m", profile: p}, filepath.Join(work, fmt.Sprintf("run-%d", n)), h)
		if err != nil {
			t.Fatal(err)
		}
		_ = os.RemoveAll(side.OutDir)
		side.OutDir = ""
		return side
	}
	// The shares whose mean F1 is the noise runs' less the tolerance and
	// less twice it, calibrated on a grid of shares (calibrationSeeds
	// runs each, seeds apart from the trials') and interpolated linearly.
	const calibrationSeeds = 10
	meanAt := func(q float64) float64 {
		s := 0.0
		for k := range calibrationSeeds {
			s += run(q, fmt.Sprintf("cal-%g-%d", q, k)).Report.Overall.F1
		}
		return s / calibrationSeeds
	}
	var grid, means []float64
	for q := noise; q < 0.951; q += 0.05 {
		grid, means = append(grid, q), append(means, meanAt(q))
	}
	shareFor := func(drop float64) float64 {
		target := means[0] - drop
		for k := 1; k < len(grid); k++ {
			if means[k] <= target {
				f := (means[k-1] - target) / (means[k-1] - means[k])
				return grid[k-1] + f*(grid[k]-grid[k-1])
			}
		}
		t.Fatalf("no share of dropped claims lowers F1 by %.3f (F1 %.3f at %.2f)", drop, means[len(means)-1], grid[len(grid)-1])
		return 0
	}
	q1, q2 := shareFor(tolerance), shareFor(2*tolerance)
	t0 := time.Now()
	base := make([]*semanticSide, 2*trials)
	for i := range base {
		base[i] = run(noise, fmt.Sprintf("aa-%d", i))
	}
	weak1, weak2 := make([]*semanticSide, trials), make([]*semanticSide, trials)
	for i := range trials {
		weak1[i] = run(q1, fmt.Sprintf("ab1-%d", i))
		weak2[i] = run(q2, fmt.Sprintf("ab2-%d", i))
	}
	t.Logf("%d extraction runs of %d documents in %s", n, len(c.Docs), time.Since(t0).Round(time.Second))
	meanF1 := func(ss []*semanticSide) float64 {
		s := 0.0
		for _, x := range ss {
			s += x.Report.Overall.F1
		}
		return s / float64(len(ss))
	}
	count := func(kind string, prod, cand []*semanticSide) map[string]int {
		out := map[string]int{}
		for i := range cand {
			r, err := g.compare(c, cand[i], prod[i], false, []string{kind, strconv.Itoa(i)})
			if err != nil {
				t.Fatal(err)
			}
			out[r.Outcome]++
		}
		return out
	}
	aa := count("aa", base[:trials], base[trials:])
	ab1 := count("ab1", base[:trials], weak1)
	ab2 := count("ab2", base[:trials], weak2)
	rate := func(k int) string {
		lo, hi, err := stats.ClopperPearson(k, trials, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d/%d = %.3f (95 %% Clopper-Pearson %.3f to %.3f)", k, trials, float64(k)/float64(trials), lo, hi)
	}
	fmt.Printf("corpus %s: %d documents, %d gold claims; tolerance %.2f, one-sided confidence %.2f, %d resamples\n", c.Manifest.Name, len(c.Docs), c.Manifest.GoldClaims, tolerance, g.Confidence, g.Resamples)
	fmt.Printf("noise: each run drops %.0f %% of its claims (seeded); mean F1 %.4f over %d runs\n", 100*noise, meanF1(base), len(base))
	fmt.Printf("A/A, %d trials: P(failed) %s; P(inconclusive) %s; P(passed) %s\n", trials, rate(aa[evidence.StatusFailed]), rate(aa[evidence.StatusInconclusive]), rate(aa[evidence.StatusPassed]))
	d1, d2 := meanF1(base)-meanF1(weak1), meanF1(base)-meanF1(weak2)
	fmt.Printf("A/B, true drop = tolerance (share %.3f, mean F1 drop %.4f), %d trials: P(passed) %s; P(inconclusive) %s; P(failed) %s\n", q1, d1, trials, rate(ab1[evidence.StatusPassed]), rate(ab1[evidence.StatusInconclusive]), rate(ab1[evidence.StatusFailed]))
	fmt.Printf("A/B, true drop = 2 x tolerance (share %.3f, mean F1 drop %.4f), %d trials: power P(failed) %s; P(inconclusive) %s; P(passed) %s\n", q2, d2, trials, rate(ab2[evidence.StatusFailed]), rate(ab2[evidence.StatusInconclusive]), rate(ab2[evidence.StatusPassed]))
	if r := float64(aa[evidence.StatusFailed]) / float64(trials); r > 0.05 {
		t.Errorf("false alarms: P(failed | A/A) = %.3f, goal at most 0.05", r)
	}
	if r := float64(ab1[evidence.StatusPassed]) / float64(trials); r > 0.05 {
		t.Errorf("P(passed | drop = tolerance) = %.3f, goal at most 0.05", r)
	}
	if r := float64(ab2[evidence.StatusFailed]) / float64(trials); r < 0.80 {
		t.Errorf("power at twice the tolerance = %.3f, goal at least 0.80", r)
	}
	if math.Abs(d1-tolerance) > 0.01 || math.Abs(d2-2*tolerance) > 0.015 {
		t.Errorf("the injected drops missed their targets: %.4f and %.4f", d1, d2)
	}
}

func envInt(t *testing.T, key string, def int) int {
	if v := os.Getenv(key); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive integer", key, v)
		}
		return n
	}
	return def
}

func envFloat(t *testing.T, key string, def float64) float64 {
	if v := os.Getenv(key); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || f >= 1 {
			t.Fatalf("%s=%q: want a share between 0 and 1", key, v)
		}
		return f
	}
	return def
}

// waitHealthy waits for the fake engine's /health to answer 200.
func waitHealthy(t *testing.T, base string) {
	for range 200 {
		if r, err := http.Get(base + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not answer /health", base)
}
