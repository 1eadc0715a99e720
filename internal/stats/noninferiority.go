package stats

import (
	"fmt"
	"math"

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
// cannot tell).
func NonInferior(d Difference, margin float64) Outcome {
	switch {
	case d.Lower > -margin:
		return Passed
	case d.Upper < -margin:
		return Failed
	}
	return Inconclusive
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
// tell margin, at d.Confidence and DefaultPower. E.g. "With 5 documents a
// drop smaller than 0.19 cannot be told from noise; about 60 documents
// would show 0.05."
func SampleSizeSentence(d Difference, margin float64) string {
	sd := d.PerDocumentSD()
	if sd == 0 {
		return fmt.Sprintf("The %s differed by the same amount in every resample: more documents would not change the decision.", plural(d.Documents, "document", "documents"))
	}
	drop := DetectableDrop(sd, d.Documents, d.Confidence, DefaultPower)
	need := DocumentsNeeded(sd, margin, d.Confidence, DefaultPower)
	s := fmt.Sprintf("With %s a drop smaller than %.2g cannot be told from noise", plural(d.Documents, "document", "documents"), drop)
	switch {
	case need < 0:
		return s + "; a margin of 0 can never be shown."
	case need <= d.Documents:
		return s + fmt.Sprintf("; these documents are enough to show %.2g (about %d needed).", margin, need)
	}
	return s + fmt.Sprintf("; about %d documents would show %.2g.", need, margin)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}
