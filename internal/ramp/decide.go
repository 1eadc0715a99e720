package ramp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/stats"
)

// Measures of a step's checks (evidence.RampCheck.Measure).
const (
	MeasureErrors  = "error_rate"
	MeasureLatency = "latency"
	MeasureInvalid = "invalid_rate"
)

// Outcomes of a check.
const (
	Passed       = "passed"
	Failed       = "failed"
	Inconclusive = "inconclusive"
)

// Sample is one side's live requests in a step. Not safe for concurrent
// use: the router guards it.
type Sample struct {
	Requests, Errors int
	// LatencyMS are the successful requests' end-to-end latencies: a
	// uniform reservoir of at most MaxLatencySamples; Successes counts
	// all of them.
	LatencyMS []float64
	Successes int
	// Checked are the replies that could be checked (extraction and
	// response_format requests), Invalid those that failed their check.
	Checked, Invalid int
}

// Add counts one answered request: failed (5xx, no answer, cut) or not,
// its latency, and whether its reply was checked and found invalid.
func (s *Sample) Add(failed bool, latency time.Duration, checked, invalid bool) {
	s.Requests++
	if failed {
		s.Errors++
		return
	}
	if checked {
		s.Checked++
		if invalid {
			s.Invalid++
		}
	}
	ms := float64(latency.Microseconds()) / 1000
	s.Successes++
	if len(s.LatencyMS) < MaxLatencySamples {
		s.LatencyMS = append(s.LatencyMS, ms)
	} else if i := rand.IntN(s.Successes); i < MaxLatencySamples {
		s.LatencyMS[i] = ms
	}
}

// Merge returns s and o pooled (o's latencies appended up to the bound).
func (s Sample) Merge(o Sample) Sample {
	m := Sample{Requests: s.Requests + o.Requests, Errors: s.Errors + o.Errors, Successes: s.Successes + o.Successes,
		Checked: s.Checked + o.Checked, Invalid: s.Invalid + o.Invalid}
	m.LatencyMS = append(append([]float64(nil), s.LatencyMS...), o.LatencyMS...)
	if len(m.LatencyMS) > MaxLatencySamples {
		m.LatencyMS = m.LatencyMS[len(m.LatencyMS)-MaxLatencySamples:]
	}
	return m
}

// Evidence is the sample as the account keeps it: counts and latency
// percentiles.
func (s Sample) Evidence() evidence.RampSample {
	r := evidence.RampSample{Requests: s.Requests, Errors: s.Errors, Checked: s.Checked, Invalid: s.Invalid}
	if len(s.LatencyMS) > 0 {
		xs := append([]float64(nil), s.LatencyMS...)
		sort.Float64s(xs)
		q := func(p float64) float64 { return xs[min(len(xs)-1, int(p*float64(len(xs))))] }
		r.Latency = &evidence.Percentiles{P50: q(0.5), P95: q(0.95), P99: q(0.99), Max: xs[len(xs)-1]}
	}
	return r
}

// Input is what a step is decided on.
type Input struct {
	// Share is the step's share; Last is true for the last step.
	Share float64
	Last  bool
	// Elapsed is how long the step has served.
	Elapsed time.Duration
	// Candidate and Production are the step's samples; Earlier is
	// production's pooled from the earlier steps, the baseline when the
	// step's own production sample has fewer than MinRequests (at share 1
	// production gets none).
	Candidate, Production, Earlier Sample
	// Down, when not empty, says the candidate failed its watch (a
	// health check, its process's exit, a refused connection): the ramp
	// is reversed without waiting for a comparison.
	Down string
	// Look is the step's look this decision is (1 for the first; 0 reads
	// as 1): its checks are held to LookAlpha(Look), split between them.
	Look int
}

// LookAlpha is the one-sided error a step spends on its look k (k ≥ 1):
// α·6/(π²k²) with α = 1 − DefaultConfidence, whose sum over every look
// is α. A step looks again and again (every health interval) until it
// decides; without a correction each look is another chance of a false
// reversal or a false advance, and over many looks the rate of either
// grows towards 1. Spent this way (a Bonferroni bound over an unbounded
// number of looks) the step's false-reversal and false-advance rates
// stay at most α however many looks it takes; package ramp counts a look
// only when the candidate's requests doubled (or the soak just ended), so
// a step of n requests has spent about log2(n) looks.
func LookAlpha(k int) float64 {
	k = max(k, 1)
	return (1 - DefaultConfidence) * 6 / (math.Pi * math.Pi * float64(k*k))
}

// Decision is what to do with a step.
type Decision struct {
	// Action is evidence.RampAdvance, RampHold, RampReverse or
	// RampComplete; Reason says why in words.
	Action string
	Reason string
	Checks []evidence.RampCheck
}

// Decide is the ramp's decision on a step under policy p (filled): the
// candidate is compared with production on the step's live requests.
//
//   - reverse: the candidate is down, or one check failed: its error or
//     invalid rate's lower bound is above production's rate plus the
//     margin (the invalid rate once production has a checked reply, or
//     at share 1), or its latency shift's lower bound is above the floor
//     (a regression shown at the policy's confidence, however few
//     requests);
//     or the step is still inconclusive after StepTimeout;
//   - hold: the step has served less than Soak, has fewer than
//     MinRequests candidate requests, or a check is inconclusive;
//   - advance (complete on the last step): every check passed: the
//     candidate's rates' upper bounds are within production's plus the
//     margin, and its latency shift's upper bound is within the floor.
func Decide(p Policy, in Input) Decision {
	if in.Down != "" {
		return Decision{Action: evidence.RampReverse, Reason: "the candidate is down: " + in.Down}
	}
	base := in.Production
	if base.Requests < p.MinRequests {
		base = base.Merge(in.Earlier)
	}
	// The look's α split between its checks (error rate, latency, and the
	// invalid rate when replies were checked): any one failing reverses.
	checks := 2
	if in.Candidate.Checked > 0 || base.Checked > 0 {
		checks = 3
	}
	alpha := LookAlpha(in.Look) / float64(checks)
	conf := 1 - 2*alpha // one-sided bounds from a two-sided interval
	d := Decision{}
	d.Checks = append(d.Checks, rateCheck(MeasureErrors, in.Candidate.Errors, in.Candidate.Requests, base.Errors, base.Requests, p, conf))
	if in.Candidate.Checked > 0 || base.Checked > 0 {
		c := rateCheck(MeasureInvalid, in.Candidate.Invalid, in.Candidate.Checked, base.Invalid, base.Checked, p, conf)
		// Production's invalid rate depends on the documents (a hard
		// one trips the validators on any model), so while production
		// still gets requests the candidate's is judged against an
		// observed baseline, not against an assumed 0: until one of
		// production's replies was checked, the check waits. At share 1
		// with no earlier baseline the limit is the margin alone.
		if base.Checked == 0 && in.Share < 1 && c.Outcome == Failed {
			c.Outcome = Inconclusive
		}
		d.Checks = append(d.Checks, c)
	}
	// The rank test is the costly one (its pairwise differences): a rate
	// that failed already decides.
	if d.Checks[0].Outcome != Failed && d.Checks[len(d.Checks)-1].Outcome != Failed {
		d.Checks = append(d.Checks, latencyCheck(in.Candidate.LatencyMS, base.LatencyMS, p, conf))
	}
	for i := range d.Checks {
		d.Checks[i].Alpha = alpha
	}
	var failed, open []string
	for _, c := range d.Checks {
		switch c.Outcome {
		case Failed:
			failed = append(failed, describe(c))
		case Inconclusive:
			open = append(open, c.Measure)
		}
	}
	switch {
	case len(failed) > 0:
		d.Action, d.Reason = evidence.RampReverse, strings.Join(failed, "; ")
	case in.Elapsed < p.Soak.Duration:
		d.Action, d.Reason = evidence.RampHold, fmt.Sprintf("soaking: %s of %s served", in.Elapsed.Round(time.Second), p.Soak.Duration)
	case in.Candidate.Requests < p.MinRequests:
		d.Action, d.Reason = evidence.RampHold, fmt.Sprintf("%d of the %d candidate requests a step advances on", in.Candidate.Requests, p.MinRequests)
	case len(open) > 0:
		var what []string
		for _, c := range d.Checks {
			if c.Outcome != Inconclusive {
				continue
			}
			switch c.Measure {
			case MeasureErrors:
				w := openRate(c, in.Candidate.Errors, in.Candidate.Requests, "failed", "error rate")
				if n := toDecide(in.Candidate.Errors, in.Candidate.Requests, base.Errors, base.Requests, p, conf); n > 0 {
					w += fmt.Sprintf("; at the rates seen it would pass from about %d candidate requests", n)
				}
				what = append(what, w)
			case MeasureInvalid:
				what = append(what, openRate(c, in.Candidate.Invalid, in.Candidate.Checked, "checked replies invalid", "invalid rate"))
			case MeasureLatency:
				what = append(what, openLatency(c, in.Candidate, base, p, checks, conf))
			default:
				what = append(what, c.Measure)
			}
		}
		d.Action, d.Reason = evidence.RampHold, "inconclusive: "+strings.Join(what, "; ")
	case in.Last:
		d.Action, d.Reason = evidence.RampComplete, fmt.Sprintf("%d candidate requests at %s: every check passed", in.Candidate.Requests, Percent(in.Share))
	default:
		d.Action, d.Reason = evidence.RampAdvance, fmt.Sprintf("%d candidate requests at %s: every check passed", in.Candidate.Requests, Percent(in.Share))
	}
	if d.Action == evidence.RampHold && p.StepTimeout.Duration > 0 && in.Elapsed >= p.StepTimeout.Duration {
		d.Action, d.Reason = evidence.RampReverse, fmt.Sprintf("still %s after the step timeout (%s)", d.Reason, p.StepTimeout.Duration)
	}
	return d
}

// openRate says what an inconclusive rate check shows: k of n (what
// they are) bound the candidate's rate (name) below Upper only, against
// the limit the margin asks ("error_rate: 0 of 34 failed show an error
// rate below 0.323 only; the limit is 0.020 (production 0.000 + margin
// 0.020)"); with production's sample still empty, that too.
func openRate(c evidence.RampCheck, k, n int, what, name string) string {
	if n == 0 {
		return fmt.Sprintf("%s: no candidate request counted yet", c.Measure)
	}
	s := fmt.Sprintf("%s: %d of %d %s show %s below %.3f only; the limit is %.3f (production %.3f + margin %.3f)",
		c.Measure, k, n, what, article(name), c.Upper, c.Limit, c.Production, c.Limit-c.Production)
	if c.Lower <= c.Limit && c.Upper <= c.Limit {
		s += "; production has no counted request to compare with yet"
	}
	return s
}

func article(name string) string {
	if strings.IndexAny(name[:1], "aeiou") == 0 {
		return "an " + name
	}
	return "a " + name
}

// rateCheck compares the candidate's rate k/n (errors, or invalid
// replies) with production's pk/pn, both estimated: the difference
// candidate − production has Newcombe's hybrid interval (each side's
// Clopper-Pearson bounds at conf, combined in quadrature), so a low
// production rate by chance does not count against the candidate. The
// check reads the candidate's rate bounded that way (production's rate
// plus the difference's bounds, Lower and Upper) against production's
// rate plus the margin (Limit).
func rateCheck(measure string, k, n, pk, pn int, p Policy, conf float64) evidence.RampCheck {
	c := evidence.RampCheck{Measure: measure, Outcome: Inconclusive, Upper: 1}
	if pn > 0 {
		c.Production = float64(pk) / float64(pn)
	}
	c.Limit = c.Production + p.Margin
	if n == 0 {
		return c
	}
	c.Candidate = float64(k) / float64(n)
	lo, hi, err := stats.ClopperPearson(k, n, conf)
	if err != nil {
		return c
	}
	plo, phi := c.Production, c.Production
	if pn > 0 {
		if plo, phi, err = stats.ClopperPearson(pk, pn, conf); err != nil {
			return c
		}
	}
	d := c.Candidate - c.Production
	c.Lower = c.Production + d - math.Hypot(c.Candidate-lo, phi-c.Production)
	c.Upper = c.Production + d + math.Hypot(hi-c.Candidate, c.Production-plo)
	switch {
	case c.Lower > c.Limit:
		c.Outcome = Failed
	case c.Upper <= c.Limit && pn > 0:
		c.Outcome = Passed
	}
	return c
}

// maxToDecide bounds toDecide's search (candidate requests).
const maxToDecide = 1 << 24

// toDecide estimates after how many candidate requests the rate check of
// k failures in n against production's pk in pn would pass if both sides
// kept the rates seen and production's requests grew in step (pn/n of
// the candidate's): the smallest such count, by doubling and bisection;
// 0 when none up to maxToDecide would (the candidate's rate is at or
// above the limit, or production has no requests). It is what a user
// waiting on a clean step wants to know: 0 errors in 58 requests leave
// the check open until about 435.
func toDecide(k, n, pk, pn int, p Policy, conf float64) int {
	if n == 0 || pn == 0 {
		return 0
	}
	passes := func(m int) bool {
		f := float64(m) / float64(n)
		pm := max(1, int(math.Round(float64(pn)*f)))
		c := rateCheck(MeasureErrors, int(math.Round(float64(k)*f)), m, int(math.Round(float64(pk)*f)), pm, p, conf)
		return c.Outcome == Passed
	}
	least, ok := firstPassing(n, 2*n, passes)
	if !ok {
		return 0
	}
	return least
}

// latencyCheck tests the shift of the candidate's successful latencies
// over production's (Hodges-Lehmann, Moses interval at conf) against the
// floor: the larger of LatencyFloorMS and LatencyFloorShare of
// production's median.
func latencyCheck(cand, prod []float64, p Policy, conf float64) evidence.RampCheck {
	c := evidence.RampCheck{Measure: MeasureLatency, Outcome: Inconclusive}
	c.Candidate, c.Production = medianOf(cand), medianOf(prod)
	c.Limit = max(p.LatencyFloorMS, p.LatencyFloorShare*c.Production)
	if len(cand) < MinLatencySamples || len(prod) < MinLatencySamples {
		return c
	}
	t, err := stats.MannWhitney(cand, prod, conf)
	if err != nil {
		return c
	}
	c.Shift, c.Lower, c.Upper = t.Shift, t.Lower, t.Upper
	switch {
	case t.Lower > c.Limit:
		c.Outcome = Failed
	case t.Upper <= c.Limit:
		c.Outcome = Passed
	}
	return c
}

// openLatency says what an inconclusive latency check shows and what it
// waits for: too few successful requests a side for the test
// (MinLatencySamples), or the shift's interval with its upper bound above
// the floor, and then about how many candidate requests would pass it
// (latencyToDecide), or that none would at the shift seen.
func openLatency(c evidence.RampCheck, cand, base Sample, p Policy, checks int, conf float64) string {
	if len(cand.LatencyMS) < MinLatencySamples || len(base.LatencyMS) < MinLatencySamples {
		return fmt.Sprintf("latency: %d successful candidate and %d production requests; the test reads at least %d a side",
			len(cand.LatencyMS), len(base.LatencyMS), MinLatencySamples)
	}
	s := fmt.Sprintf("latency: candidate median %.1f ms against production %.1f ms, a shift of %.1f ms within [%.1f, %.1f]; it passes once the upper bound is within the floor of %.1f ms (the larger of %g ms and %g %% of production's median)",
		c.Candidate, c.Production, c.Shift, c.Lower, c.Upper, c.Limit, p.LatencyFloorMS, p.LatencyFloorShare*100)
	if n := latencyToDecide(c, cand.Requests, len(cand.LatencyMS), len(base.LatencyMS), checks, conf); n > 0 {
		s += fmt.Sprintf("; at the spread seen it would pass from about %d candidate requests (production's growing in step)", n)
	} else {
		s += "; at the shift seen no count of requests would pass it"
	}
	return s
}

// latencyToDecide estimates after how many candidate requests (n now,
// nc and np latencies a side) the latency check c would pass if both
// sides' latencies kept the spread and shift seen and production's grew
// in step: Moses' interval is the pairwise differences' order statistics
// at nm/2 ∓ z·sqrt(nm(n+m+1)/12), so its upper half-width, as a share of
// the differences, scales by (z'/z)·sqrt((fN+1)/(N+1))/f when both sides
// grow by f (N = nc+np), z' at the look that count reaches (lookAt,
// LookAlpha split between the checks). 0 when the shift is at or above
// the floor (no count passes it) or the interval has no width.
func latencyToDecide(c evidence.RampCheck, n, nc, np, checks int, conf float64) int {
	half := c.Upper - c.Shift
	if n == 0 || c.Shift >= c.Limit || !(half > 0) {
		return 0
	}
	z := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	N := float64(nc + np)
	passes := func(m int) bool {
		f := float64(m) / float64(n)
		zf := distuv.UnitNormal.Quantile(1 - LookAlpha(lookAt(m))/float64(checks))
		return c.Shift+half*(zf/z)*math.Sqrt((f*N+1)/(N+1))/f <= c.Limit
	}
	least, ok := firstPassing(n, 2*n, passes)
	if !ok {
		return 0
	}
	return least
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return (s[(len(s)-1)/2] + s[len(s)/2]) / 2
}

// describe says why a check failed, in words.
func describe(c evidence.RampCheck) string {
	if c.Measure == MeasureLatency {
		return fmt.Sprintf("latency: candidate median %.1f ms against production %.1f ms, slower by %.1f ms (at least %.1f), above the floor of %.1f ms",
			c.Candidate, c.Production, c.Shift, c.Lower, c.Limit)
	}
	return fmt.Sprintf("%s: candidate %.3f against production %.3f, at least %.3f, above the limit %.3f (production + margin)",
		c.Measure, c.Candidate, c.Production, c.Lower, c.Limit)
}

// Percent writes a share as a percentage ("25 %", "0.5 %").
func Percent(share float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", share*100), "0"), ".") + " %"
}
