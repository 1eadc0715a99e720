package shadow

import (
	"strings"
	"testing"
	"time"
)

// TestLatencyShiftSaysWhatItIs (findings13 T17): `hiro shadow status`
// said "p50 candidate 1168.9 ms, production 1197.3 ms; shift +104.6 ms"
// with no word of what the shift is. The shift is candidate −
// production (a slower candidate is positive, whatever order the
// sides are summarized in), named Hodges-Lehmann, and a shift whose
// sign disagrees with the medians' difference says so.
func TestLatencyShiftSaysWhatItIs(t *testing.T) {
	run := func(cand, prod []int) *Result {
		var pairs []pair
		for i := range cand {
			pairs = append(pairs, pair{cand: side{status: 200, latency: time.Duration(cand[i]) * time.Millisecond},
				prod: side{status: 200, latency: time.Duration(prod[i]) * time.Millisecond}})
		}
		r := &Result{}
		summarize(r, pairs)
		return r
	}
	// A candidate 50 ms slower on every request: positive, no medians note.
	slow := run([]int{150, 160, 170, 180, 190, 200, 210}, []int{100, 110, 120, 130, 140, 150, 160})
	if got := LatencyShiftText(slow); !strings.HasPrefix(got, "shift candidate − production +50.0 ms, 95 % [") ||
		!strings.HasSuffix(got, "(Hodges-Lehmann: the median of every candidate − production latency difference; negative: the candidate is faster)") {
		t.Errorf("slower candidate: %q", got)
	}
	if !strings.Contains(slow.Summary, "latency shift (Hodges-Lehmann, candidate − production) +50.0 ms") {
		t.Errorf("summary %q", slow.Summary)
	}
	// Seven pairs whose medians say the candidate is faster (100 against
	// 110 ms) while most differences say slower: the median of the 49
	// differences is +10 ms.
	odd := run([]int{100, 100, 100, 100, 1000, 1000, 1000}, []int{90, 90, 90, 110, 110, 110, 110})
	got := LatencyShiftText(odd)
	if !strings.HasPrefix(got, "shift candidate − production +10.0 ms") ||
		!strings.HasSuffix(got, "; the medians differ by -10.0 ms: on few or skewed latencies the two can differ in sign") {
		t.Errorf("shift against the medians: %q", got)
	}
	if fast := run([]int{100, 110, 120, 130, 140, 150, 160}, []int{150, 160, 170, 180, 190, 200, 210}); !strings.Contains(LatencyShiftText(fast), "-50.0 ms") ||
		!strings.HasPrefix(LatencyShiftText(fast), "shift candidate − production -50.0 ms") {
		t.Errorf("faster candidate: %q", LatencyShiftText(fast))
	}
}
