package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearson is the exact (Clopper-Pearson) two-sided interval at
// confidence of a binomial proportion with k successes in n trials: the
// α/2 quantile of Beta(k, n−k+1) and the 1−α/2 quantile of Beta(k+1, n−k),
// α = 1 − confidence; 0 as lower bound when k = 0, 1 as upper when k = n.
func ClopperPearson(k, n int, confidence float64) (lo, hi float64, err error) {
	if n <= 0 || k < 0 || k > n {
		return 0, 0, fmt.Errorf("stats: Clopper-Pearson: %d successes of %d trials; want 0 <= k <= n and n > 0", k, n)
	}
	if !(confidence > 0 && confidence < 1) {
		return 0, 0, fmt.Errorf("stats: Clopper-Pearson: confidence %v: use a fraction between 0 and 1", confidence)
	}
	a := 1 - confidence
	lo, hi = 0, 1
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(a / 2)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - a/2)
	}
	return math.Max(0, lo), math.Min(1, hi), nil
}
