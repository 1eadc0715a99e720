package shadow

import (
	"fmt"
	"math"

	"github.com/hiro-dev/hiro/internal/stats"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// LatencyShiftText says a run's latency shift in words a reader can
// check against the medians beside it: what the shift is (candidate −
// production, so below 0 the candidate is faster: the Hodges-Lehmann
// estimate of the paired differences, or for a run recorded before they
// were paired, of every cross difference), its interval at its
// confidence, and, when the medians' difference has the other sign, that
// the two are not the same measure. "" when the run has no shift.
func LatencyShiftText(r *Result) string {
	s := r.LatencyShift
	if s == nil {
		return ""
	}
	what := "the median of every candidate - production latency difference"
	if s.Pairs > 0 {
		what = fmt.Sprintf("the centre of the %s candidate - production latency differences", termtext.Plural(s.Pairs, "pair's", "pairs'"))
	}
	t := fmt.Sprintf("shift candidate - production %s ms, %g %% [%s, %s] (Hodges-Lehmann: %s; negative: the candidate is faster)",
		stats.Signed(s.ShiftMS, 1), math.Round(s.Confidence*1000)/10, stats.Signed(s.LowerMS, 1), stats.Signed(s.UpperMS, 1), what)
	if r.CandidateLatency != nil && r.ProductionLatency != nil {
		if d := r.CandidateLatency.P50 - r.ProductionLatency.P50; d*s.ShiftMS < 0 && math.Abs(d) >= 0.05 && math.Abs(s.ShiftMS) >= 0.05 {
			t += fmt.Sprintf("; the medians differ by %s ms: on few or skewed latencies the two can differ in sign", stats.Signed(d, 1))
		}
	}
	return t
}
