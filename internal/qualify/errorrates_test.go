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
	"sync"
	"sync/atomic"
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
// each side other sampled runs) and A/B trials with a known drop, every
// run an extraction of the corpus through the fake engine with --chat
// claims and --drop-claims (each claim left out by a seeded hash of the
// engine's --drop-seed and the request's sampling seed: the sampling
// noise; a larger share for the weaker side). Runs are paired disjointly
// within each kind of trial; each trial is the gate's own comparison
// (compare). It prints P(failed | A/A), P(inconclusive | A/A),
// P(passed | true drop = tolerance) and the power P(failed | true drop =
// 2·tolerance), each with its Clopper-Pearson interval, and judges each
// goal on that interval (false alarms at most 5 %, passed at a drop of
// the tolerance at most 5 %, power at least 80 %): met, consistent, or
// missed, which fails the test.
//
// Calibration runs (seeds apart from the trials') come first: they give
// the shares whose mean F1 is the noise runs' less the tolerance and less
// twice it, and the per-document spread of the difference at twice the
// tolerance, from which the gate's replicates are chosen the way a user
// would choose them (stats.DocumentsNeeded at the gate's confidence and
// 80 % power, divided by the corpus's documents, rounded up), unless
// HIRO_ERROR_REPLICATES fixes them. The trials' own mean drops are
// printed: the rates are conditional on them.
//
// Slow (hundreds of extraction runs): skipped unless HIRO_ERROR_RATES=1;
// bench/semantic-error-rates.sh runs it. HIRO_ERROR_TRIALS sets the
// trials per kind (default 100; the script passes 200), HIRO_ERROR_NOISE
// (default 0.10) the share of claims each run drops, HIRO_ERROR_REPLICATES the replicates (default:
// chosen from the calibration), HIRO_ERROR_PARALLEL the extraction runs
// at once (default 2), HIRO_ERROR_CORPUS the corpus (default
// corpora/hiro-atlas).
func TestSemanticErrorRates(t *testing.T) {
	if os.Getenv("HIRO_ERROR_RATES") == "" {
		t.Skip("slow benchmark: run bench/semantic-error-rates.sh (HIRO_ERROR_RATES=1)")
	}
	trials := envInt(t, "HIRO_ERROR_TRIALS", 100)
	noise := envFloat(t, "HIRO_ERROR_NOISE", 0.10)
	replicates := envInt(t, "HIRO_ERROR_REPLICATES", 0)
	parallel := envInt(t, "HIRO_ERROR_PARALLEL", 2)
	dir := os.Getenv("HIRO_ERROR_CORPUS")
	if dir == "" {
		dir = "../../corpora/hiro-atlas"
	}
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	const tolerance = 0.05
	// Temperature above 0: the fake engine's pick then follows each
	// replicate's seed, as a sampling model's output would.
	g := &SemanticGate{Tolerance: tolerance, Confidence: stats.DefaultConfidence, Resamples: stats.DefaultResamples, Concurrency: 4, MaxTokens: 256, Temperature: 0.7, Replicates: 1}
	fake := testsupport.MustBuild(testsupport.FakeEnginePkg)
	work := t.TempDir()
	h := NewHandle(nil, nil, work, work, nil)
	var runs atomic.Int64
	type spec struct {
		share float64
		seed  string
	}
	// runAll extracts every spec's side, parallel at a time, in order.
	runAll := func(specs []spec) []*semanticSide {
		out := make([]*semanticSide, len(specs))
		errs := make([]error, len(specs))
		next := make(chan int)
		var wg sync.WaitGroup
		for range parallel {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					out[i], errs[i] = errorRatesRun(t, fake, g, c, h, work, specs[i].share, specs[i].seed, runs.Add(1))
				}
			}()
		}
		for i := range specs {
			next <- i
		}
		close(next)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	t0 := time.Now()
	// Calibration (seeds apart from the trials'). The mean F1 falls with
	// the share of dropped claims, slowly at first (a sentence's two claims
	// may match the same gold claim, so one of them alone is often not
	// missed): a grid of shares (coarseSeeds runs each) brackets each
	// target, then two steps of false position (fineSeeds runs at each
	// point) find the share whose mean F1 is the noise runs' less the drop.
	const coarseSeeds, fineSeeds = 10, 40
	at := func(q float64, n int, name string) []*semanticSide {
		var specs []spec
		for k := range n {
			specs = append(specs, spec{q, fmt.Sprintf("cal-%s-%d", name, k)})
		}
		return runAll(specs)
	}
	noiseRuns := at(noise, fineSeeds, "noise")
	m0 := meanF1(noiseRuns)
	grid, means := []float64{noise}, []float64{m0}
	for q := noise + 0.05; q < 0.951 && means[len(means)-1] > m0-2*tolerance-0.02; q += 0.05 {
		grid, means = append(grid, q), append(means, meanF1(at(q, coarseSeeds, fmt.Sprintf("grid-%.2f", q))))
	}
	var shares [2]float64
	var strong []*semanticSide
	for k, drop := range []float64{tolerance, 2 * tolerance} {
		target := m0 - drop
		j := 1
		for j < len(grid) && means[j] > target {
			j++
		}
		if j == len(grid) {
			t.Fatalf("no share of dropped claims lowers F1 by %.3f (F1 %.3f at %.2f)", drop, means[len(means)-1], grid[len(grid)-1])
		}
		lo, flo, hi, fhi := grid[j-1], means[j-1], grid[j], means[j]
		var q float64
		for step := range 2 {
			q = lo + (flo-target)/(flo-fhi)*(hi-lo)
			ss := at(q, fineSeeds, fmt.Sprintf("drop%d-%d", k+1, step))
			if f := meanF1(ss); f > target {
				lo, flo = q, f
			} else {
				hi, fhi = q, f
			}
			strong = ss
		}
		shares[k] = lo + (flo-target)/(flo-fhi)*(hi-lo)
		t.Logf("calibration: drop %.2f: target F1 %.4f, share %.4f (bracket %.4f at %.4f, %.4f at %.4f)", drop, target, shares[k], lo, flo, hi, fhi)
	}
	t.Logf("calibration: noise mean F1 %.4f (SD %.4f over %d runs); grid %v, means %v", m0, sdF1(noiseRuns), len(noiseRuns), grid, means)
	q1, q2 := shares[0], shares[1]
	// The per-document spread of the F1 difference under the alternative
	// the power is claimed for (a drop of twice the tolerance), from
	// disjoint (noise, drop) pairs, and the replicates it calls for: the
	// power calculation a user makes from the evidence's documents_needed.
	var sumVar float64
	for k := range noiseRuns {
		cmp, err := g.compare(c, strong[k], noiseRuns[k], false, []string{"calibration", strconv.Itoa(k)})
		if err != nil {
			t.Fatal(err)
		}
		sd := cmp.Comparisons[0].StandardError * math.Sqrt(float64(len(c.Docs)))
		sumVar += sd * sd
	}
	sd := math.Sqrt(sumVar / float64(len(noiseRuns)))
	need := stats.DocumentsNeeded(sd, tolerance, g.Confidence, stats.DefaultPower)
	chosen := "chosen from the calibration"
	if replicates == 0 {
		replicates = max(1, (need+len(c.Docs)-1)/len(c.Docs))
	} else {
		chosen = "set by HIRO_ERROR_REPLICATES"
	}
	calibration := runs.Load()
	g.Replicates = replicates
	var specs []spec
	for i := range 2 * trials {
		specs = append(specs, spec{noise, fmt.Sprintf("aa-%d", i)})
	}
	for i := range trials {
		specs = append(specs, spec{q1, fmt.Sprintf("ab1-%d", i)}, spec{q2, fmt.Sprintf("ab2-%d", i)})
	}
	all := runAll(specs)
	base := all[:2*trials]
	weak1, weak2 := make([]*semanticSide, trials), make([]*semanticSide, trials)
	for i := range trials {
		weak1[i], weak2[i] = all[2*trials+2*i], all[2*trials+2*i+1]
	}
	t.Logf("%d extraction runs of %d documents (%d of them calibration) in %s", runs.Load(), len(c.Docs), calibration, time.Since(t0).Round(time.Second))
	ses := map[string]float64{}
	count := func(kind string, prod, cand []*semanticSide) map[string]int {
		out := map[string]int{}
		for i := range cand {
			r, err := g.compare(c, cand[i], prod[i], false, []string{kind, strconv.Itoa(i)})
			if err != nil {
				t.Fatal(err)
			}
			out[r.Outcome]++
			ses[kind] += r.Comparisons[0].StandardError / float64(len(cand))
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
	fmt.Printf("corpus %s: %d documents, %d gold claims; tolerance %.2f, one-sided confidence %.2f, %d resamples, expanded percentile level %.4f\n",
		c.Manifest.Name, len(c.Docs), c.Manifest.GoldClaims, tolerance, g.Confidence, g.Resamples, stats.ExpandedLevel(g.Confidence, len(c.Docs)))
	fmt.Printf("noise: each run drops %.0f %% of its claims (seeded); per-document SD of the F1 difference at a drop of twice the tolerance %.4f (%d calibration pairs): %d documents needed at 80 %% power, so %d replicate(s) per side (%s)\n",
		100*noise, sd, len(noiseRuns), need, replicates, chosen)
	fmt.Printf("mean F1 over the %d A/A sides: %.4f (SD %.4f); calibration noise runs %.4f; mean standard error of the F1 difference: A/A %.4f, drop = tolerance %.4f, drop = 2 x tolerance %.4f\n", len(base), meanF1(base), sdF1(base), m0, ses["aa"], ses["ab1"], ses["ab2"])
	fmt.Printf("A/A, %d trials: P(failed) %s; P(inconclusive) %s; P(passed) %s\n", trials, rate(aa[evidence.StatusFailed]), rate(aa[evidence.StatusInconclusive]), rate(aa[evidence.StatusPassed]))
	d1, d2 := meanF1(base)-meanF1(weak1), meanF1(base)-meanF1(weak2)
	fmt.Printf("A/B, true drop = tolerance (share %.3f, mean F1 drop %.4f), %d trials: P(passed) %s; P(inconclusive) %s; P(failed) %s\n", q1, d1, trials, rate(ab1[evidence.StatusPassed]), rate(ab1[evidence.StatusInconclusive]), rate(ab1[evidence.StatusFailed]))
	fmt.Printf("A/B, true drop = 2 x tolerance (share %.3f, mean F1 drop %.4f), %d trials: power P(failed) %s; P(inconclusive) %s; P(passed) %s\n", q2, d2, trials, rate(ab2[evidence.StatusFailed]), rate(ab2[evidence.StatusInconclusive]), rate(ab2[evidence.StatusPassed]))
	// A goal is judged on the rate's interval: met when the whole interval
	// is on the goal's side, missed when the whole interval is on the
	// other side (the numbers show it), else consistent (the trials
	// cannot tell; at a drop of exactly the tolerance a test of exact
	// level passes 5 % of the time, so that goal can be met only by a
	// conservative test or shown consistent).
	goal := func(name string, k int, limit float64, atMost bool) {
		lo, hi, _ := stats.ClopperPearson(k, trials, 0.95)
		r := float64(k) / float64(trials)
		verdict := "consistent with the goal (the interval holds it)"
		switch {
		case atMost && hi <= limit, !atMost && lo >= limit:
			verdict = "met"
		case atMost && lo > limit, !atMost && hi < limit:
			verdict = "missed"
			t.Errorf("%s = %.3f (%.3f to %.3f): the goal %s %.2f is missed", name, r, lo, hi, map[bool]string{true: "at most", false: "at least"}[atMost], limit)
		}
		fmt.Printf("goal: %s %s %.2f: %.3f (%.3f to %.3f): %s\n", name, map[bool]string{true: "<=", false: ">="}[atMost], limit, r, lo, hi, verdict)
	}
	goal("P(failed | A/A)", aa[evidence.StatusFailed], 0.05, true)
	goal("P(passed | drop = tolerance)", ab1[evidence.StatusPassed], 0.05, true)
	goal("power at twice the tolerance", ab2[evidence.StatusFailed], 0.80, false)
	if math.Abs(d1-tolerance) > 0.01 || math.Abs(d2-2*tolerance) > 0.015 {
		t.Errorf("the injected drops missed their targets: %.4f and %.4f", d1, d2)
	}
}

// sdF1 is the standard deviation of the sides' overall F1.
func sdF1(ss []*semanticSide) float64 {
	m, v := meanF1(ss), 0.0
	for _, x := range ss {
		v += (x.Report.Overall.F1 - m) * (x.Report.Overall.F1 - m)
	}
	return math.Sqrt(v / float64(len(ss)-1))
}

// meanF1 is the mean of the sides' overall F1.
func meanF1(ss []*semanticSide) float64 {
	s := 0.0
	for _, x := range ss {
		s += x.Report.Overall.F1
	}
	return s / float64(len(ss))
}

// errorRatesRun is one side of an error-rate trial: a fake engine
// dropping share of its claims under seed, the corpus extracted through
// it by the gate (its replicates), its extraction files removed.
func errorRatesRun(t *testing.T, fake string, g *SemanticGate, c *corpus.Corpus, h *Handle, work string, share float64, seed string, n int64) (*semanticSide, error) {
	port := testsupport.FreePort(t)
	cmd := exec.Command(fake, "--port", strconv.Itoa(port), "--model", "m", "--chat", "claims",
		"--drop-claims", strconv.FormatFloat(share, 'g', -1, 64), "--drop-seed", seed)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	p := &config.Profile{Name: seed, BaseURL: fmt.Sprintf("http://127.0.0.1:%d", port), Model: "m"}
	if err := waitHealthyErr(p.BaseURL); err != nil {
		return nil, err
	}
	side, err := g.runSide(context.Background(), c, semanticTarget{Backend: seed, BaseURL: p.BaseURL, Model: "m", profile: p}, filepath.Join(work, fmt.Sprintf("run-%d", n)), h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", seed, err)
	}
	_ = os.RemoveAll(side.OutDir)
	side.OutDir, side.ReplicateDirs = "", nil
	return side, nil
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

// waitHealthyErr waits for the fake engine's /health to answer 200.
func waitHealthyErr(base string) error {
	for range 500 {
		if r, err := http.Get(base + "/health"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer /health", base)
}
