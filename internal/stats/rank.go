package stats

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// RankTest is a Mann-Whitney (Wilcoxon rank-sum) test of x against y with
// the Hodges-Lehmann estimate of the shift x − y and its interval.
type RankTest struct {
	// U is the Mann-Whitney statistic of x: the number of pairs (xi, yj)
	// with xi > yj, ties counting one half (R's wilcox.test W).
	U float64
	// Z is the normal approximation's statistic (tie-corrected variance,
	// continuity correction of 1/2 towards the mean); P its two-sided
	// p-value.
	Z, P float64
	// Shift is the Hodges-Lehmann estimate of x − y: the median of all
	// pairwise differences xi − yj.
	Shift float64
	// Lower and Upper are the two-sided interval of the shift at
	// Confidence (Moses' order statistics of the pairwise differences,
	// normal approximation).
	Lower, Upper float64
	Confidence   float64
}

// MannWhitney tests whether x and y come from the same distribution and
// estimates the shift x − y with its interval at confidence (two-sided).
// Both samples need at least one value; the interval needs a few each
// (with too few it spans all pairwise differences).
func MannWhitney(x, y []float64, confidence float64) (RankTest, error) {
	n, m := len(x), len(y)
	if n == 0 || m == 0 {
		return RankTest{}, fmt.Errorf("stats: Mann-Whitney: %d and %d values; both samples need at least one", n, m)
	}
	if !(confidence > 0 && confidence < 1) {
		return RankTest{}, fmt.Errorf("stats: Mann-Whitney: confidence %v: use a fraction between 0 and 1", confidence)
	}
	t := RankTest{Confidence: confidence}
	// Ranks of the pooled sample, ties given their mean rank.
	type v struct {
		x    float64
		isX  bool
		rank float64
	}
	all := make([]v, 0, n+m)
	for _, a := range x {
		all = append(all, v{x: a, isX: true})
	}
	for _, b := range y {
		all = append(all, v{x: b})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].x < all[j].x })
	var rx, ties float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].x == all[i].x {
			j++
		}
		r := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			if all[k].isX {
				rx += r
			}
		}
		c := float64(j - i)
		ties += c*c*c - c
		i = j
	}
	fn, fm := float64(n), float64(m)
	t.U = rx - fn*(fn+1)/2
	mean := fn * fm / 2
	N := fn + fm
	variance := fn * fm / 12 * ((N + 1) - ties/(N*(N-1)))
	if variance > 0 {
		dev := t.U - mean
		dev -= math.Copysign(math.Min(0.5, math.Abs(dev)), dev)
		t.Z = dev / math.Sqrt(variance)
		t.P = 2 * distuv.UnitNormal.Survival(math.Abs(t.Z))
	} else {
		t.P = 1
	}
	// Hodges-Lehmann: the pairwise differences, sorted.
	d := make([]float64, 0, n*m)
	for _, a := range x {
		for _, b := range y {
			d = append(d, a-b)
		}
	}
	sort.Float64s(d)
	t.Shift = median(d)
	// Moses: the interval is [d(C), d(nm+1−C)] (1-based) with
	// C = nm/2 − z·sqrt(nm(n+m+1)/12), rounded down, at least 1.
	z := distuv.UnitNormal.Quantile(1 - (1-confidence)/2)
	c := int(math.Floor(mean - z*math.Sqrt(fn*fm*(N+1)/12)))
	if c < 1 {
		c = 1
	}
	t.Lower, t.Upper = d[c-1], d[len(d)-c]
	return t, nil
}

// median of sorted values: the middle one, or the mean of the two middle
// ones.
func median(s []float64) float64 {
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}
