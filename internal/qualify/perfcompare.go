package qualify

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/stats"
)

// Defaults of a request gate's comparison with production.
const (
	// DefaultLatencyMargin is the slowdown still accepted, as a share of
	// production's median latency (10 %).
	DefaultLatencyMargin = 0.10
	// DefaultThroughputMargin is the drop in per-request output tokens/s
	// still accepted, as a share of production's mean (10 %).
	DefaultThroughputMargin = 0.10
	// MinComparedRequests is the fewest successful requests per side a
	// comparison decides on; with fewer it is inconclusive.
	MinComparedRequests = 5
)

// PerfCompare are the keys a request gate (sequential, concurrency) has
// for comparing the candidate with production on the same requests:
// every request is sent to both, interleaved, and latency, time to first
// token and per-request throughput are each judged against production's
// with a margin, as the semantic gate judges quality (docs/qualify.md
// "Performance against production").
type PerfCompare struct {
	// CompareWithProduction turns the comparison on (default off). It is
	// skipped, and says so, when production is stopped for an exclusive
	// candidate.
	CompareWithProduction bool `toml:"compare_with_production"`
	// LatencyMargin is the slowdown of latency and TTFT still accepted,
	// a share in (0, 1) of production's median (default
	// DefaultLatencyMargin, 0.10).
	LatencyMargin float64 `toml:"latency_margin"`
	// ThroughputMargin is the drop in per-request output tokens/s still
	// accepted, a share in (0, 1) of production's mean (default
	// DefaultThroughputMargin, 0.10).
	ThroughputMargin float64 `toml:"throughput_margin"`
	// Confidence is each bound's one-sided confidence (default
	// stats.DefaultConfidence).
	Confidence float64 `toml:"confidence"`
}

// validate checks the margins and confidence and fills the defaults.
func (p *PerfCompare) validate(v *Validation) {
	for _, m := range []struct {
		key  string
		x    *float64
		dflt float64
	}{{"latency_margin", &p.LatencyMargin, DefaultLatencyMargin}, {"throughput_margin", &p.ThroughputMargin, DefaultThroughputMargin}} {
		switch {
		case *m.x == 0:
			*m.x = m.dflt
		case math.IsNaN(*m.x) || *m.x < 0 || *m.x >= 1:
			v.Errorf(m.key, "%v: use a share between 0 and 1 of production's figure (default %v)", *m.x, m.dflt)
		}
	}
	switch {
	case p.Confidence == 0:
		p.Confidence = stats.DefaultConfidence
	case math.IsNaN(p.Confidence) || p.Confidence < 0.8 || p.Confidence >= 1:
		v.Errorf("confidence", "%v: use a one-sided confidence between 0.8 and 0.999 (default 0.95)", p.Confidence)
	}
}

// productionClient is production's client when the comparison is on
// and production serves; skipped says why there is none otherwise ("":
// the comparison is off).
func (p *PerfCompare) productionClient(h *Handle) (cl *llm.Client, model, skipped string, err error) {
	switch {
	case !p.CompareWithProduction:
		return nil, "", "", nil
	case h.Exclusive:
		return nil, "", "production is stopped while an exclusive candidate runs: no comparison", nil
	case h.Production == nil:
		return nil, "", "no production profile to compare with", nil
	}
	c, err := llm.NewForProfile(h.Production)
	if err != nil {
		return nil, "", "", harnessErr("production client: %v", err)
	}
	return c, h.Production.Model, "", nil
}

// productionName is production's profile name, "" without one.
func productionName(h *Handle) string {
	if h.Production == nil {
		return ""
	}
	return h.Production.Name
}

// comparison is what a request gate records: the judged comparison
// when production was asked (asked), the reason when it could not be
// (skipped), nil when the comparison is off.
func (p *PerfCompare) comparison(h *Handle, asked bool, skipped string, cand, prod *perfSample, interleaving string) *evidence.PerformanceComparison {
	switch {
	case asked:
		return p.compare(h, cand, prod, interleaving)
	case skipped != "":
		return &evidence.PerformanceComparison{Production: productionName(h), Skipped: skipped}
	}
	return nil
}

// perfSample is one side's successful requests: latency and TTFT (ms)
// and output tokens/s (completion tokens over latency, when the server
// reports usage), in request order, and the failed requests.
type perfSample struct {
	lat, ttft, tps   []float64
	requests, errors int
}

func (s *perfSample) add(r *llm.Reply, err error) {
	s.requests++
	if err != nil {
		s.errors++
		return
	}
	s.lat = append(s.lat, ms(r.Latency))
	s.ttft = append(s.ttft, ms(r.TTFT))
	if r.HasUsage && r.Latency > 0 {
		s.tps = append(s.tps, float64(r.Usage.CompletionTokens)/r.Latency.Seconds())
	}
}

// compare judges the candidate's sample against production's: latency
// and TTFT by Mann-Whitney with the Hodges-Lehmann shift and Moses'
// bounds at two-sided 2c−1 (each bound one-sided c), the margin a share
// of production's median; throughput by the bootstrap bounds of the
// ratio of means, the limit 1 − margin. Seeds come from the evidence's
// fingerprints, the gate and the measure.
func (p *PerfCompare) compare(h *Handle, cand, prod *perfSample, interleaving string) *evidence.PerformanceComparison {
	pc := &evidence.PerformanceComparison{Production: productionName(h), Interleaving: interleaving, Requests: prod.requests, Errors: prod.errors,
		LatenciesMS: rounded(prod.lat), TTFTsMS: rounded(prod.ttft), CandidateTokensPerSecond: rounded(cand.tps), ProductionTokensPerSecond: rounded(prod.tps),
		Confidence: p.Confidence, LatencyMargin: p.LatencyMargin, ThroughputMargin: p.ThroughputMargin, Resamples: stats.DefaultResamples}
	if prod.errors > 0 {
		pc.Outcome = evidence.StatusInconclusive
		pc.Reasons = []string{fmt.Sprintf("production failed %d of its %d requests: no fair comparison", prod.errors, prod.requests)}
		return pc
	}
	if len(cand.lat) < MinComparedRequests || len(prod.lat) < MinComparedRequests {
		pc.Outcome = evidence.StatusInconclusive
		pc.Reasons = []string{fmt.Sprintf("%d and %d successful requests: a comparison needs at least %d on each side", len(cand.lat), len(prod.lat), MinComparedRequests)}
		return pc
	}
	pc.Measures = append(pc.Measures, p.latency("latency_ms", cand.lat, prod.lat))
	if positive(cand.ttft) && positive(prod.ttft) {
		pc.Measures = append(pc.Measures, p.latency("ttft_ms", cand.ttft, prod.ttft))
	}
	if len(cand.tps) >= MinComparedRequests && len(prod.tps) >= MinComparedRequests {
		seed := stats.SeedFrom(append(seedParts(h.Fingerprints), "hiro.performance", h.GateID, "output_tokens_per_second")...)
		pc.Measures = append(pc.Measures, p.throughput(cand.tps, prod.tps, seed))
	}
	pc.Outcome = evidence.StatusPassed
	for _, m := range pc.Measures {
		switch m.Outcome {
		case evidence.StatusFailed:
			pc.Outcome = evidence.StatusFailed
			pc.Reasons = append(pc.Reasons, perfMeasureName(m.Measure)+": "+m.Decision)
		case evidence.StatusInconclusive:
			if pc.Outcome == evidence.StatusPassed {
				pc.Outcome = evidence.StatusInconclusive
			}
			pc.Reasons = append(pc.Reasons, perfMeasureName(m.Measure)+": "+m.Decision)
		}
	}
	return pc
}

// latency is one latency measure's rank test.
func (p *PerfCompare) latency(measure string, cand, prod []float64) evidence.PerformanceMeasure {
	m := evidence.PerformanceMeasure{Measure: measure, Test: "mann-whitney", Candidate: round3(medianOf(cand)), Production: round3(medianOf(prod))}
	limit := p.LatencyMargin * medianOf(prod)
	m.Limit = round3(limit)
	rt, err := stats.MannWhitney(cand, prod, 2*p.Confidence-1)
	if err != nil { // both samples are non-empty: not reached
		m.Outcome, m.Decision = evidence.StatusInconclusive, err.Error()
		return m
	}
	m.Estimate, m.Lower, m.Upper, m.P = round3(rt.Shift), round3(rt.Lower), round3(rt.Upper), round6(rt.P)
	conf := fmt.Sprintf("%.0f %%", 100*p.Confidence)
	margin := fmt.Sprintf("%s (%.0f %% of production's median %s)", msText(limit), 100*p.LatencyMargin, msText(m.Production))
	switch {
	case rt.Upper < limit:
		m.Outcome = evidence.StatusPassed
		m.Decision = fmt.Sprintf("not slower than production by more than %s: at %s confidence the shift is at most %s", margin, conf, signedMS(rt.Upper))
	case rt.Lower > limit:
		m.Outcome = evidence.StatusFailed
		m.Decision = fmt.Sprintf("slower than production by more than %s: at %s confidence the shift is above %s", margin, conf, signedMS(rt.Lower))
	default:
		m.Outcome = evidence.StatusInconclusive
		m.Decision = fmt.Sprintf("cannot tell: the shift lies between %s and %s (%s bounds), which holds the margin %s; more requests would decide", signedMS(rt.Lower), signedMS(rt.Upper), conf, margin)
	}
	return m
}

// throughput is the per-request throughput's ratio interval.
func (p *PerfCompare) throughput(cand, prod []float64, seed stats.Seed) evidence.PerformanceMeasure {
	m := evidence.PerformanceMeasure{Measure: "output_tokens_per_second", Test: "ratio-bootstrap", Candidate: round3(mean(cand)), Production: round3(mean(prod)), Seed: seed.String()}
	limit := 1 - p.ThroughputMargin
	m.Limit = round6(limit)
	iv, err := stats.RatioInterval(cand, prod, stats.Options{Confidence: p.Confidence, Seed: seed})
	if err != nil { // production's mean is 0: no ratio
		m.Outcome, m.Decision = evidence.StatusInconclusive, err.Error()
		return m
	}
	m.Estimate, m.Lower, m.Upper = round6(iv.Estimate), round6(iv.Lower), round6(iv.Upper)
	conf := fmt.Sprintf("%.0f %%", 100*p.Confidence)
	switch {
	case iv.Lower > limit:
		m.Outcome = evidence.StatusPassed
		m.Decision = fmt.Sprintf("at least %.2f of production's throughput: at %s confidence the ratio is above %.3f", limit, conf, iv.Lower)
	case iv.Upper < limit:
		m.Outcome = evidence.StatusFailed
		m.Decision = fmt.Sprintf("below %.2f of production's throughput: at %s confidence the ratio is under %.3f", limit, conf, iv.Upper)
	default:
		m.Outcome = evidence.StatusInconclusive
		m.Decision = fmt.Sprintf("cannot tell: the ratio lies between %.3f and %.3f (%s bounds), which holds the limit %.2f; more requests would decide", iv.Lower, iv.Upper, conf, limit)
	}
	return m
}

// perfVerdict is the gate's error for a comparison that did not pass
// (nil when it passed or was skipped).
func perfVerdict(pc *evidence.PerformanceComparison) error {
	if pc == nil {
		return nil
	}
	switch pc.Outcome {
	case evidence.StatusFailed:
		return fmt.Errorf("performance against production failed: %s", strings.Join(pc.Reasons, "; "))
	case evidence.StatusInconclusive:
		return fmt.Errorf("%w: performance against production: %s", ErrInconclusive, strings.Join(pc.Reasons, "; "))
	}
	return nil
}

// perfMeasureName is a performance measure in prose.
func perfMeasureName(m string) string {
	switch m {
	case "latency_ms":
		return "end-to-end latency"
	case "ttft_ms":
		return "time to first token"
	case "output_tokens_per_second":
		return "output tokens/s per request"
	}
	return m
}

func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	return (s[(n-1)/2] + s[n/2]) / 2
}

func positive(xs []float64) bool {
	for _, x := range xs {
		if x > 0 {
			return true
		}
	}
	return false
}

func msText(x float64) string { return fmt.Sprintf("%.1f ms", x) }

func signedMS(x float64) string { return stats.Signed(x, 1) + " ms" }
