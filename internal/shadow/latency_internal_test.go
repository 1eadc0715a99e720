package shadow

import (
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
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
	if got := LatencyShiftText(slow); !strings.HasPrefix(got, "shift candidate - production +50.0 ms, 95 % [") ||
		!strings.HasSuffix(got, "(Hodges-Lehmann: the centre of the 7 pairs' candidate - production latency differences; negative: the candidate is faster)") ||
		slow.LatencyShift.Pairs != 7 {
		t.Errorf("slower candidate: %q", got)
	}
	if !strings.Contains(slow.Summary, "latency shift (Hodges-Lehmann of the paired differences, candidate - production) +50.0 ms") {
		t.Errorf("summary %q", slow.Summary)
	}
	// Seven pairs whose medians say the candidate is faster (100 against
	// 110 ms) while the pairs say slower (+10 three times, -10 once, +890
	// three times): the median of their 28 Walsh averages is +450 ms.
	odd := run([]int{100, 100, 100, 100, 1000, 1000, 1000}, []int{90, 90, 90, 110, 110, 110, 110})
	got := LatencyShiftText(odd)
	if !strings.HasPrefix(got, "shift candidate - production +450.0 ms") ||
		!strings.HasSuffix(got, "; the medians differ by -10.0 ms: on few or skewed latencies the two can differ in sign") {
		t.Errorf("shift against the medians: %q", got)
	}
	if fast := run([]int{100, 110, 120, 130, 140, 150, 160}, []int{150, 160, 170, 180, 190, 200, 210}); !strings.Contains(LatencyShiftText(fast), "-50.0 ms") ||
		!strings.HasPrefix(LatencyShiftText(fast), "shift candidate - production -50.0 ms") {
		t.Errorf("faster candidate: %q", LatencyShiftText(fast))
	}
	// A run recorded before the pairing (Pairs 0) keeps its own words.
	old := &Result{LatencyShift: &evidence.LatencyShift{ShiftMS: 3, LowerMS: -1, UpperMS: 7, Confidence: 0.95}}
	if got := LatencyShiftText(old); !strings.Contains(got, "(Hodges-Lehmann: the median of every candidate - production latency difference;") {
		t.Errorf("unpaired record: %q", got)
	}
}
