package shadow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/stats"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// Result is a run's account (the evidence's shadow result).
type Result = evidence.ShadowResult

// Measures the run gates on (ShadowComparison.Measure).
const (
	MeasureSuccess     = "success_rate"
	MeasureSchemaValid = "schema_valid_rate"
	MeasureGrounding   = "grounding_rate"
	MeasureAccepted    = "accepted_claim_rate"
)

// pair is one scored pair.
type pair struct {
	rec        evidence.ShadowPair
	prod, cand side
	// extraction pairs
	pc, cc *claimScore
	match  int
	// structured pairs
	prodValid, candValid bool
	// text pairs
	exact, norm bool
}

// score scores a pair (see the package doc).
func (m *Mirror) score(j *Job, prod, cand side) pair {
	sum := sha256.Sum256(j.Body)
	var hexSum [2 * sha256.Size]byte // one allocation for the string, not two
	hex.Encode(hexSum[:], sum[:])
	p := pair{prod: prod, cand: cand, rec: evidence.ShadowPair{RequestSHA256: string(hexSum[:]), Route: j.Route, Stream: j.Stream,
		RequestBytes: len(j.Body), ProductionStatus: prod.status, CandidateStatus: cand.status,
		ProductionBytes: prod.bytes, CandidateBytes: cand.bytes,
		ProductionTTFTMS: ms(prod.ttfb), CandidateTTFTMS: ms(cand.ttfb), ProductionMS: ms(prod.latency), CandidateMS: ms(cand.latency)}}
	if cand.cut {
		p.rec.CandidateError = fmt.Sprintf("reply over %d bytes", MaxCapture)
	} else {
		p.rec.CandidateError = cand.err
	}
	req := classify(j.Body)
	p.rec.Kind = req.kind
	switch req.kind {
	case KindExtraction:
		pc, cc := claimScore{}, claimScore{}
		if prod.ok() {
			pc = scoreClaims(m.validator, prod.reply, req.src)
		}
		if cand.ok() {
			cc = scoreClaims(m.validator, cand.reply, req.src)
		}
		p.pc, p.cc = &pc, &cc
		p.match = matched(cc.texts, pc.texts)
	case KindStructured:
		p.prodValid = prod.ok() && validJSON(req.schema, prod.reply.text)
		p.candValid = cand.ok() && validJSON(req.schema, cand.reply.text)
	default:
		if prod.ok() && cand.ok() {
			p.exact = prod.reply.text == cand.reply.text
			// Equal texts are equal once normalised: the tokenizer only
			// for those that differ.
			p.norm = p.exact || normalized(prod.reply.text) == normalized(cand.reply.text)
			agree := p.norm
			p.rec.Agree = &agree
		}
	}
	// A run keeps up to MaxPairsLimit pairs: their texts and finish
	// reasons are no longer needed (the account reads statuses,
	// latencies, usage and the scores), and holding them would grow the
	// heap every collection marks, beside the clients' requests.
	p.prod.reply, p.cand.reply = reply{prompt: prod.reply.prompt, completion: prod.reply.completion}, reply{prompt: cand.reply.prompt, completion: cand.reply.completion}
	if p.pc != nil {
		p.pc.texts, p.cc.texts = nil, nil
	}
	return p
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

// Result returns the run's account as it stands (a running run's too).
// Once the run is over (its workers stopped, no production answer
// pending) the account can no longer change: it is computed once (its
// bootstrap reads every pair) and the same *Result is returned after,
// which callers must not modify.
func (m *Mirror) Result() *Result {
	if !m.over.Load() {
		return m.result()
	}
	m.finalMu.Lock()
	defer m.finalMu.Unlock()
	if m.final != nil {
		return m.final
	}
	r := m.result()
	if r.Pending == 0 {
		m.final = r
	}
	return r
}

// result computes the account as it stands.
func (m *Mirror) result() *Result {
	m.mu.Lock()
	pairs := m.pairs.all()
	r := &Result{Candidate: m.cand.Name, Production: m.production, Remote: m.remote, Share: m.cfg.Share, MaxPairs: m.cfg.MaxPairs,
		StartedAt: m.started.UTC(), Ended: m.ended, QueueSize: m.cfg.QueueSize, Workers: m.cfg.Workers,
		MinPairs: m.cfg.MinPairs, Margin: m.cfg.Margin, Resamples: stats.DefaultResamples, Confidence: stats.DefaultConfidence}
	if m.ended != "" {
		t := m.endedAt.UTC()
		r.EndedAt = &t
	}
	m.mu.Unlock()
	if m.cfg.For.Duration > 0 {
		r.Duration = m.cfg.For.Duration.String()
	}
	// The identity of evidence.ShadowResult holds exactly when no
	// request moves between buckets while they are read (after a stop,
	// once production's answers in flight ended: Pending 0).
	r.Seen, r.Sampled, r.Pending = m.seen.Load(), m.sampled.Load(), m.pending.Load()
	r.Queued = int64(len(m.queue)) + m.held.Load()
	r.Dropped, r.TooLarge, r.Mirrored, r.Abandoned, r.Unsent = m.dropped.Load(), m.tooLarge.Load(), m.mirrored.Load(), m.abandoned.Load(), m.unsent.Load()
	summarize(r, pairs)
	return r
}

// summarize fills r's totals, comparisons and outcome from the pairs.
func summarize(r *Result, pairs []pair) {
	r.Pairs = len(pairs)
	var cLat, pLat, cTTFT, pTTFT, dLat []float64           // dLat: candidate - production, pairs both sides answered
	var success, schema, ground, accepted [2][]stats.Ratio // [0] candidate, [1] production
	one := func(b bool) stats.Ratio {
		if b {
			return stats.Ratio{Num: 1, Den: 1}
		}
		return stats.Ratio{Den: 1}
	}
	for _, p := range pairs {
		r.PairRecords = append(r.PairRecords, p.rec)
		co, po := p.cand.ok(), p.prod.ok()
		if !co {
			r.CandidateErrors++
		} else {
			cLat, cTTFT = append(cLat, ms(p.cand.latency)), append(cTTFT, ms(p.cand.ttfb))
			r.CandidateUsage.PromptTokens += p.cand.reply.prompt
			r.CandidateUsage.CompletionTokens += p.cand.reply.completion
		}
		if !po {
			r.ProductionErrors++
		} else {
			pLat, pTTFT = append(pLat, ms(p.prod.latency)), append(pTTFT, ms(p.prod.ttfb))
			r.ProductionUsage.PromptTokens += p.prod.reply.prompt
			r.ProductionUsage.CompletionTokens += p.prod.reply.completion
		}
		if co && po {
			dLat = append(dLat, ms(p.cand.latency)-ms(p.prod.latency))
		}
		success[0], success[1] = append(success[0], one(co)), append(success[1], one(po))
		if !po {
			continue // production's failure is no baseline for quality
		}
		switch p.rec.Kind {
		case KindExtraction:
			e := &r.Extraction
			e.Pairs++
			e.CandidateClaims += p.cc.claims
			e.ProductionClaims += p.pc.claims
			e.CandidateGrounded += p.cc.grounded
			e.ProductionGrounded += p.pc.grounded
			e.CandidateAccepted += p.cc.accepted
			e.ProductionAccepted += p.pc.accepted
			e.Matched += p.match
			if p.cc.schemaValid {
				e.CandidateSchemaValid++
			}
			if p.pc.schemaValid {
				e.ProductionSchemaValid++
			}
			schema[0], schema[1] = append(schema[0], one(p.cc.schemaValid)), append(schema[1], one(p.pc.schemaValid))
			ground[0] = append(ground[0], stats.Ratio{Num: float64(p.cc.grounded), Den: float64(p.cc.claims)})
			ground[1] = append(ground[1], stats.Ratio{Num: float64(p.pc.grounded), Den: float64(p.pc.claims)})
			accepted[0] = append(accepted[0], stats.Ratio{Num: float64(p.cc.accepted), Den: float64(p.cc.claims)})
			accepted[1] = append(accepted[1], stats.Ratio{Num: float64(p.pc.accepted), Den: float64(p.pc.claims)})
		case KindStructured:
			s := &r.Structured
			s.Pairs++
			if p.candValid {
				s.CandidateValid++
			}
			if p.prodValid {
				s.ProductionValid++
			}
			schema[0], schema[1] = append(schema[0], one(p.candValid)), append(schema[1], one(p.prodValid))
		default:
			if co {
				r.Text.Pairs++
				if p.exact {
					r.Text.Exact++
				}
				if p.norm {
					r.Text.Normalized++
				}
			}
		}
	}
	if d := r.Extraction.CandidateAccepted + r.Extraction.ProductionAccepted; d > 0 {
		r.Extraction.Agreement = round6(2 * float64(r.Extraction.Matched) / float64(d))
	}
	r.CandidateTTFT, r.ProductionTTFT = percentiles(cTTFT), percentiles(pTTFT)
	r.CandidateLatency, r.ProductionLatency = percentiles(cLat), percentiles(pLat)
	// The same request went to both sides: the paired differences cancel
	// what varies between requests (a prompt's length), which the two
	// sides' latencies taken apart would carry into the interval.
	if len(dLat) > 0 {
		if rt, err := stats.SignedRank(dLat, stats.DefaultConfidence); err == nil {
			r.LatencyShift = &evidence.LatencyShift{ShiftMS: round6(rt.Shift), LowerMS: round6(rt.Lower), UpperMS: round6(rt.Upper),
				P: round6(rt.P), Confidence: rt.Confidence, Pairs: rt.N}
		}
	}
	r.Comparisons = nil
	for _, c := range []struct {
		measure string
		sides   [2][]stats.Ratio
	}{{MeasureSuccess, success}, {MeasureSchemaValid, schema}, {MeasureGrounding, ground}, {MeasureAccepted, accepted}} {
		if denominators(c.sides) == 0 {
			continue
		}
		seed := stats.SeedFrom("hiro.shadow", r.Candidate, r.Production, r.StartedAt.Format(time.RFC3339Nano), c.measure)
		d, err := stats.PairedBootstrap(c.sides[0], c.sides[1], stats.Options{Seed: seed})
		if err != nil {
			continue
		}
		out, note := stats.NonInferior(d, r.Margin), ""
		if out == stats.Passed {
			if note = rateShortfall(c.sides[0], d.Production-r.Margin); note != "" {
				out = stats.Inconclusive
			}
		}
		r.Comparisons = append(r.Comparisons, evidence.ShadowComparison{Measure: c.measure, Pairs: d.Documents,
			Candidate: round6(d.Candidate), Production: round6(d.Production), Difference: round6(d.Estimate),
			Lower: round6(d.Lower), Upper: round6(d.Upper), Margin: r.Margin, Outcome: string(out), Seed: seed.String(), Note: note})
	}
	decide(r)
}

// rateShortfall says how the candidate's pooled rate (its counts, sum
// Num of sum Den) falls short of floor (production's rate minus the
// margin) at its one-sided Clopper-Pearson lower bound at
// stats.DefaultConfidence; "" when it does not. A paired bootstrap of
// pairs that all agree has bounds of width 0 (30 successes on both
// sides: [+0, +0]), which would pass any margin; the candidate's own
// count bounds what was not seen: 30 of 30 show a rate above 0.905
// only, 150 of 150 one above 0.980.
func rateShortfall(cand []stats.Ratio, floor float64) string {
	var k, n float64
	for _, x := range cand {
		k, n = k+x.Num, n+x.Den
	}
	ki, ni := int(math.Round(k)), int(math.Round(n))
	if ni <= 0 {
		return ""
	}
	lo, _, err := stats.ClopperPearson(ki, ni, 2*stats.DefaultConfidence-1)
	if err != nil {
		return err.Error()
	}
	if lo >= floor {
		return ""
	}
	return fmt.Sprintf("%d of %d show a rate above %.3f only; the margin asks %.3f", ki, ni, lo, floor)
}

// denominators sums both sides' denominators (0: nothing to compare,
// e.g. no claims at all).
func denominators(s [2][]stats.Ratio) float64 {
	var d float64
	for _, side := range s {
		for _, x := range side {
			d += x.Den
		}
	}
	return d
}

// decide sets the outcome: failed when a comparison failed (a drop
// shown at the confidence decides on any number of pairs, as a ramp's
// reversal does: only passing needs MinPairs); else inconclusive below
// MinPairs or when one could not decide; else passed.
func decide(r *Result) {
	r.Reasons = []string{}
	shown := false
	for _, c := range r.Comparisons {
		shown = shown || stats.Outcome(c.Outcome) == stats.Failed
	}
	if r.Pairs < r.MinPairs && !shown {
		r.Outcome = string(stats.Inconclusive)
		r.Reasons = append(r.Reasons, fmt.Sprintf("%s scored, fewer than the %d a decision needs", termtext.Plural(r.Pairs, "pair", "pairs"), r.MinPairs))
	} else {
		r.Outcome = string(stats.Passed)
		for _, c := range r.Comparisons {
			switch stats.Outcome(c.Outcome) {
			case stats.Failed:
				r.Outcome = string(stats.Failed)
				r.Reasons = append(r.Reasons, fmt.Sprintf("%s: candidate %.3f against production %.3f, worse by more than %.3f (upper bound %s)", c.Measure, c.Candidate, c.Production, c.Margin, stats.Signed(c.Upper, 3)))
			case stats.Inconclusive:
				if r.Outcome == string(stats.Passed) {
					r.Outcome = string(stats.Inconclusive)
				}
				why := fmt.Sprintf("bounds %s to %s", stats.Signed(c.Lower, 3), stats.Signed(c.Upper, 3))
				if c.Note != "" {
					why = c.Note
				}
				r.Reasons = append(r.Reasons, fmt.Sprintf("%s: candidate %.3f against production %.3f, the %s cannot tell a drop of %.3f (%s)", c.Measure, c.Candidate, c.Production, termtext.Plural(c.Pairs, "pair", "pairs"), c.Margin, why))
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s of %d sampled (%d dropped, queue full)", r.Outcome, termtext.Plural(r.Pairs, "pair", "pairs"), r.Sampled, r.Dropped)
	fmt.Fprintf(&b, "; candidate errors %d, production errors %d", r.CandidateErrors, r.ProductionErrors)
	if r.Extraction.Pairs > 0 {
		fmt.Fprintf(&b, "; extraction agreement with production %.3f", r.Extraction.Agreement)
	}
	if r.LatencyShift != nil {
		fmt.Fprintf(&b, "; latency shift (Hodges-Lehmann of the paired differences, candidate - production) %s ms", stats.Signed(r.LatencyShift.ShiftMS, 1))
	}
	r.Summary = b.String()
}

// percentiles are p50, p95, p99 and max of xs (ms), nil for none.
func percentiles(xs []float64) *evidence.Percentiles {
	if len(xs) == 0 {
		return nil
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q := func(p float64) float64 { return round6(stat.Quantile(p, stat.Empirical, s, nil)) }
	return &evidence.Percentiles{P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: round6(s[len(s)-1])}
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }
