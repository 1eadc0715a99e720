package stats

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// Outcome is a non-inferiority decision.
type Outcome string

// Outcomes of NonInferior (the gate vocabulary's passed, failed and
// inconclusive).
const (
	Passed       Outcome = "passed"
	Failed       Outcome = "failed"
	Inconclusive Outcome = "inconclusive"
)

// NonInferior decides whether the candidate is no worse than production
// by more than margin (≥ 0, in the measure's unit), from the one-sided
// bounds of d: Passed when d.Lower > −margin (at d.Confidence the drop is
// smaller than the margin), Failed when d.Upper < −margin (at d.Confidence
// the drop is larger than the margin), else Inconclusive (the documents
// cannot tell). Fewer than MinDocuments(d.Confidence) documents are
// always Inconclusive, however narrow their bounds.
func NonInferior(d Difference, margin float64) Outcome {
	switch {
	case d.Documents < MinDocuments(d.Confidence):
		return Inconclusive
	case d.Lower > -margin:
		return Passed
	case d.Upper < -margin:
		return Failed
	}
	return Inconclusive
}

// MinDocuments is the fewest paired documents from which a one-sided
// decision at confidence can be drawn at all: the smallest n with
// 0.5^n ≤ 1 − confidence (5 at 95 %, 7 at 99 %; 0 for a confidence of 0,
// a Difference built without one). With fewer, even documents that all
// favour one side leave a sign test above its error (0.5^4 = 6.25 % >
// 5 %); a bootstrap's bounds on them are an artefact of the few
// documents (one document resamples to itself: bounds of width 0).
func MinDocuments(confidence float64) int {
	if confidence <= 0 {
		return 0
	}
	return int(math.Ceil(math.Log(1-confidence)/math.Log(0.5) - 1e-9))
}

// zSum is z(confidence) + z(power): the one-sided normal quantiles of the
// test's confidence and the power aimed at.
func zSum(confidence, power float64) float64 {
	return distuv.UnitNormal.Quantile(confidence) + distuv.UnitNormal.Quantile(power)
}

// PerDocumentSD is the standard deviation of one document's contribution
// to the difference, from the bootstrap: SE·sqrt(documents) (the SE of a
// mean of n independent documents is SD/sqrt(n)).
func (d Difference) PerDocumentSD() float64 {
	return d.SE * math.Sqrt(float64(d.Documents))
}

// DocumentsNeeded is how many documents a non-inferiority test at
// confidence (one-sided) needs to pass, with the given power, a candidate
// truly equal to production when the margin is margin and one document's
// contribution to the difference has standard deviation sd: the normal
// approximation n = ((z_conf + z_power)·sd / margin)², rounded up. It is 0
// when sd is 0 (any number of documents tells) and -1 when margin is not
// positive (no number does).
func DocumentsNeeded(sd, margin, confidence, power float64) int {
	if margin <= 0 {
		return -1
	}
	if sd == 0 {
		return 0
	}
	z := zSum(confidence, power)
	return int(math.Ceil(math.Pow(z*sd/margin, 2) - 1e-9))
}

// DocumentsToDecide is how many documents would decide, with
// DefaultPower, a comparison whose true difference were the one observed
// in d (d.Estimate, with d's per-document spread): n = ((z_conf +
// z_power)·sd / |Estimate + margin|)², rounded up and at least
// MinDocuments; -1 when the estimate lies on −margin (no number is
// expected to). It is the figure for an undecided comparison, whose
// estimate is often near the margin; DocumentsNeeded plans for a
// candidate truly equal to production.
func DocumentsToDecide(d Difference, margin float64) int {
	gap := math.Abs(d.Estimate + margin)
	if gap < 1e-9 {
		return -1
	}
	n := int(math.Ceil(math.Pow(zSum(d.Confidence, DefaultPower)*d.PerDocumentSD()/gap, 2) - 1e-9))
	return max(n, MinDocuments(d.Confidence))
}

// DetectableDrop is the smallest margin that n documents tell at
// confidence and power when one document's contribution has standard
// deviation sd: (z_conf + z_power)·sd/sqrt(n) (DocumentsNeeded inverted).
func DetectableDrop(sd float64, n int, confidence, power float64) float64 {
	if n <= 0 {
		return math.Inf(1)
	}
	return zSum(confidence, power) * sd / math.Sqrt(float64(n))
}

// SampleSizeSentence is the one sentence a report gives from d: how large
// a drop its documents can tell from noise and how many documents would
// tell margin, at d.Confidence and DefaultPower; for an undecided
// comparison, how many would decide at the difference observed. E.g.
// "With 5 documents a drop smaller than 0.19 cannot be told from noise;
// about 60 documents would show 0.05."
func SampleSizeSentence(d Difference, margin float64) string {
	docs := plural(d.Documents, "document", "documents")
	if k := MinDocuments(d.Confidence); d.Documents < k {
		return fmt.Sprintf("%s cannot decide anything at %.0f %%: a paired comparison needs at least %d (even %s that all agree leave a sign test at %.3g).",
			upper(docs), 100*d.Confidence, k, docs, math.Pow(0.5, float64(d.Documents)))
	}
	sd := d.PerDocumentSD()
	if sd == 0 {
		return fmt.Sprintf("Every resample of the %s gave the same difference (%s): these documents show no spread, which more documents may still show.", docs, Signed(d.Estimate, 3))
	}
	drop := DetectableDrop(sd, d.Documents, d.Confidence, DefaultPower)
	need := DocumentsNeeded(sd, margin, d.Confidence, DefaultPower)
	s := fmt.Sprintf("With %s a drop smaller than %.2g cannot be told from noise", docs, drop)
	switch {
	case need < 0:
		return s + "; a margin of 0 can never be shown."
	case NonInferior(d, margin) == Inconclusive:
		if n := DocumentsToDecide(d, margin); n > 0 {
			return s + fmt.Sprintf("; at the difference observed (%s, the margin %s) about %d documents would decide.", Signed(d.Estimate, 3), Signed(-margin, -1), n)
		}
		return s + fmt.Sprintf("; the difference observed (%s) lies on the margin: no number of documents is expected to decide.", Signed(d.Estimate, 3))
	case need <= d.Documents:
		return s + fmt.Sprintf("; these documents are enough to show %.2g (about %d needed).", margin, need)
	}
	return s + fmt.Sprintf("; about %d documents would show %.2g.", need, margin)
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
