package stats

import (
	"math"
	"sort"
	"testing"
)

// Hollander and Wolfe's depression scores (R's wilcox.test example):
// V = 40 over 9 pairs; the normal approximation with continuity
// correction gives z = (40 − 22.5 − 0.5)/sqrt(71.25) and p ≈ 0.0440.
func TestSignedRankHollanderWolfe(t *testing.T) {
	x := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	y := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	r, err := SignedRank(d, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if r.V != 40 || r.N != 9 || r.Nonzero != 9 {
		t.Errorf("V %v over %d (%d nonzero), want 40 over 9", r.V, r.N, r.Nonzero)
	}
	if wantZ := 17 / math.Sqrt(71.25); math.Abs(r.Z-wantZ) > 1e-9 || math.Abs(r.P-0.0440) > 5e-4 {
		t.Errorf("z %v p %v, want z %v and p about 0.0440", r.Z, r.P, wantZ)
	}
	// The estimate is the median of the Walsh averages, by brute force.
	var w []float64
	for i := range d {
		for j := i; j < len(d); j++ {
			w = append(w, (d[i]+d[j])/2)
		}
	}
	sort.Float64s(w)
	if r.Shift != w[len(w)/2] || !(r.Lower < r.Shift && r.Shift < r.Upper) || r.Lower <= 0 {
		t.Errorf("shift %v in [%v, %v]; want the Walsh median %v inside an interval above 0 (p < 0.05)", r.Shift, r.Lower, r.Upper, w[len(w)/2])
	}
}

// What varies between pairs cancels: a candidate 10 ms slower on every
// request, whatever the prompt's length, is +10 ms with a tight interval,
// where the unpaired shift of the same values spans seconds.
func TestSignedRankCancelsWhatVariesBetweenPairs(t *testing.T) {
	prod := []float64{120, 3400, 560, 2100, 90, 1500, 800, 2900}
	cand := make([]float64, len(prod))
	d := make([]float64, len(prod))
	for i, p := range prod {
		cand[i] = p + 10 + float64(i%2) // 10 or 11 ms slower
		d[i] = cand[i] - p
	}
	r, err := SignedRank(d, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := MannWhitney(cand, prod, 0.95)
	if r.Shift < 10 || r.Shift > 11 || r.Lower < 10 || r.Upper > 11 || r.P >= 0.05 {
		t.Errorf("paired: shift %v [%v, %v] p %v; want within [10, 11] and p < 0.05", r.Shift, r.Lower, r.Upper, r.P)
	}
	if u.Upper-u.Lower < 1000 {
		t.Errorf("unpaired interval [%v, %v]: the test's premise (it spans seconds) no longer holds", u.Lower, u.Upper)
	}
}

func TestSignedRankEdges(t *testing.T) {
	if _, err := SignedRank(nil, 0.95); err == nil {
		t.Error("no differences: want an error")
	}
	if _, err := SignedRank([]float64{1}, 1); err == nil {
		t.Error("confidence 1: want an error")
	}
	r, err := SignedRank([]float64{0, 0, 0}, 0.95)
	if err != nil || r.P != 1 || r.Shift != 0 || r.Nonzero != 0 {
		t.Errorf("all zero: %+v, %v; want p 1, shift 0", r, err)
	}
}
