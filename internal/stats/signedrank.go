package stats

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// SignedRankTest is a Wilcoxon signed-rank test of paired differences
// d_i = x_i − y_i against 0, with the Hodges-Lehmann estimate of their
// centre and its interval: the paired counterpart of RankTest, for
// samples whose i-th values belong together (the same request sent to a
// candidate and to production), so that what varies between pairs (a
// prompt's length) cancels.
type SignedRankTest struct {
	// N is the number of pairs; Nonzero those whose difference is not 0
	// (the test ranks only these, Wilcoxon's rule for zeros).
	N, Nonzero int
	// V is the sum of the ranks of |d_i| over the positive d_i (R's
	// wilcox.test V), ties given their mean rank.
	V float64
	// Z is the normal approximation's statistic (tie-corrected variance,
	// continuity correction of 1/2 towards the mean); P its two-sided
	// p-value (1 when every difference is 0).
	Z, P float64
	// Shift is the Hodges-Lehmann estimate of the centre of d: the median
	// of the Walsh averages (d_i + d_j)/2, i ≤ j.
	Shift float64
	// Lower and Upper are the two-sided interval of Shift at Confidence:
	// the Walsh averages of order C and M+1−C (M = N(N+1)/2, C from the
	// continuity-corrected normal approximation of V's critical value;
	// with too few pairs it spans them all).
	Lower, Upper float64
	Confidence   float64
}

// SignedRank tests paired differences d against 0 and estimates their
// centre with its interval at confidence (two-sided). d needs at least
// one value; confidence is a fraction in (0, 1).
func SignedRank(d []float64, confidence float64) (SignedRankTest, error) {
	n := len(d)
	if n == 0 {
		return SignedRankTest{}, fmt.Errorf("stats: signed-rank: no paired differences; the test needs at least one")
	}
	if !(confidence > 0 && confidence < 1) {
		return SignedRankTest{}, fmt.Errorf("stats: signed-rank: confidence %v: use a fraction between 0 and 1", confidence)
	}
	t := SignedRankTest{N: n, Confidence: confidence, P: 1}
	// The test: ranks of |d_i| over the nonzero differences.
	type a struct {
		abs float64
		pos bool
	}
	var nz []a
	for _, x := range d {
		if x != 0 {
			nz = append(nz, a{math.Abs(x), x > 0})
		}
	}
	sort.SliceStable(nz, func(i, j int) bool { return nz[i].abs < nz[j].abs })
	var ties float64
	for i := 0; i < len(nz); {
		j := i
		for j < len(nz) && nz[j].abs == nz[i].abs {
			j++
		}
		r := float64(i+j+1) / 2
		for k := i; k < j; k++ {
			if nz[k].pos {
				t.V += r
			}
		}
		c := float64(j - i)
		ties += c*c*c - c
		i = j
	}
	t.Nonzero = len(nz)
	m := float64(t.Nonzero)
	mean := m * (m + 1) / 4
	if variance := m*(m+1)*(2*m+1)/24 - ties/48; variance > 0 {
		dev := t.V - mean
		dev -= math.Copysign(math.Min(0.5, math.Abs(dev)), dev)
		t.Z = dev / math.Sqrt(variance)
		t.P = 2 * distuv.UnitNormal.Survival(math.Abs(t.Z))
	}
	// Hodges-Lehmann: the Walsh averages of every difference, sorted.
	w := make([]float64, 0, n*(n+1)/2)
	for i := 0; i < n; i++ {
		for j := i; j < n; j++ {
			w = append(w, (d[i]+d[j])/2)
		}
	}
	sort.Float64s(w)
	t.Shift = median(w)
	fn := float64(n)
	z := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	// c is the normal approximation, continuity-corrected as the test is,
	// of the largest V whose lower tail is at most (1−confidence)/2; the
	// interval starts at the Walsh average of order c+1, so that it
	// excludes 0 about when P is below 1−confidence.
	c := int(math.Floor(fn*(fn+1)/4-z*math.Sqrt(fn*(fn+1)*(2*fn+1)/24)-0.5)) + 1
	if c < 1 {
		c = 1
	}
	t.Lower, t.Upper = w[c-1], w[len(w)-c]
	return t, nil
}
