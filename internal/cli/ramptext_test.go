package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// `hiro status` shows a ramp's step and share, each step's live
// comparison and, once it ended, why.
func TestStatusShowsTheRamp(t *testing.T) {
	var b strings.Builder
	printRamp(&b, nil, "prod")
	if b.Len() != 0 {
		t.Fatalf("no ramp printed %q", b.String())
	}
	res := &evidence.RampResult{Candidate: "cand", Production: "prod", Steps: []float64{0.01, 0.25, 1}, State: evidence.RampRamping, Step: 1, Share: 0.25, StartedAt: time.Now(),
		History: []evidence.RampStep{
			{Share: 0.01, Decision: evidence.RampAdvance, Reason: "150 candidate requests at 1 %: every check passed", Candidate: evidence.RampSample{Requests: 150}, Production: evidence.RampSample{Requests: 14850, Latency: &evidence.Percentiles{P50: 1.25}}},
			{Share: 0.25, Decision: evidence.RampHold, Reason: "soaking: 10s of 5m0s served", Candidate: evidence.RampSample{Requests: 40, Errors: 1, Checked: 39, Invalid: 2}},
		}}
	printRamp(&b, &control.RampStatus{Active: true, Result: res}, "prod")
	out := b.String()
	for _, want := range []string{
		"ramp        prod → cand, ramping: step 2 of 3, 25 % of production's requests to cand",
		"  1 %       candidate 150 requests, 0 failed; production 14850 requests, 0 failed, p50 1.2 ms: advance (150 candidate requests at 1 %: every check passed)",
		"  25 %      candidate 40 requests, 1 failed, 2 of 39 checked invalid; production 0 requests, 0 failed: hold (soaking",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "resent") {
		t.Errorf("a ramp that resent nothing says it did:\n%s", out)
	}
	res.State, res.Share, res.Reason = evidence.RampReversed, 0, "reversed at 25 %: error_rate: candidate 0.500"
	res.Resent, res.CutMidReply = 3, 1
	b.Reset()
	printRamp(&b, &control.RampStatus{Result: res}, "prod")
	if !strings.Contains(b.String(), "reversed: step 2 of 3, 0 % of production's requests") || !strings.Contains(b.String(), "            reversed at 25 %: error_rate") ||
		!strings.Contains(b.String(), "3 of the candidate's requests failed before any byte of a reply and were resent to prod; 1 reply cut mid-way") {
		t.Errorf("reversed ramp:\n%s", b.String())
	}
}

// A completed ramp after a rollback (production is the old backend
// again) says it ended and that no request goes to its candidate (trial
// 10, Q20: "100 % of production's requests to cand" stood below a
// production switched back); while its candidate is production, nothing
// is added.
func TestStatusSaysACompletedRampWasUndone(t *testing.T) {
	res := &evidence.RampResult{Candidate: "cand", Production: "prod", Steps: []float64{0.5, 1}, State: evidence.RampCompleted, Step: 1, Share: 1, StartedAt: time.Now()}
	var b strings.Builder
	printRamp(&b, &control.RampStatus{Result: res}, "prod")
	if !strings.Contains(b.String(), "ended: production is prod now (a rollback or another switch since), so none of its requests go to cand") {
		t.Errorf("after a rollback:\n%s", b.String())
	}
	b.Reset()
	printRamp(&b, &control.RampStatus{Result: res}, "cand")
	if strings.Contains(b.String(), "ended:") {
		t.Errorf("the ramp's candidate is production: %s", b.String())
	}
}

// A ramp stopped by the operator gives its reason once (trial 12's S11:
// "reverse (hiro rollback)" and then a bare "hiro rollback" line), and a
// step of one request says "1 request".
func TestStatusRampStoppedSaysItsReasonOnce(t *testing.T) {
	res := &evidence.RampResult{Candidate: "cand", Production: "prod", Steps: []float64{0.1, 0.5, 1}, State: evidence.RampStopped, Share: 0, Reason: "hiro rollback", StartedAt: time.Now(),
		History: []evidence.RampStep{{Share: 0.1, Decision: evidence.RampReverse, Reason: "hiro rollback", Candidate: evidence.RampSample{Requests: 1}, Production: evidence.RampSample{Requests: 9}}}}
	var b strings.Builder
	printRamp(&b, &control.RampStatus{Result: res}, "prod")
	out := b.String()
	if n := strings.Count(out, "hiro rollback"); n != 1 {
		t.Errorf("the reason is said %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out, "candidate 1 request, 0 failed; production 9 requests") {
		t.Errorf("one request is not said in the singular:\n%s", out)
	}
}
