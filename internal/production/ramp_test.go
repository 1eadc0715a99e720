package production_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/production"
)

// A record of a switch at once has no "ramp" key (records written before
// progressive activation read the same); a progressive one keeps its
// ramp, signed with the rest, and reads it back.
func TestRecordKeepsTheRampOnlyWhenThereIsOne(t *testing.T) {
	cfg := setup(t)
	a, err := production.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeFailed, Config: cfg.Path,
		From: &a.Snapshot, To: production.Snap(variant(cfg), "v1-runner", "activation")}
	if err := production.Append(plain); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(plain.Path)
	if err != nil || strings.Contains(string(b), `"ramp"`) {
		t.Fatalf("a record without a ramp names one: %v\n%s", err, b)
	}
	end := time.Now().UTC()
	r := &evidence.RampResult{Candidate: "cand", Production: "prod", Steps: []float64{0.1, 1}, Soak: "5m0s", MinRequests: 150,
		State: evidence.RampReversed, Step: 1, Reason: "reversed at 100 %: error_rate", StartedAt: end.Add(-time.Minute), EndedAt: &end,
		History: []evidence.RampStep{{Share: 0.1, Decision: evidence.RampAdvance}, {Share: 1, Decision: evidence.RampReverse,
			Candidate: evidence.RampSample{Requests: 4, Errors: 4}, Checks: []evidence.RampCheck{{Measure: "error_rate", Candidate: 1, Lower: 0.47, Upper: 1, Limit: 0.02, Outcome: "failed"}}}}}
	ramped := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeFailed, Config: cfg.Path,
		From: &a.Snapshot, To: production.Snap(variant(cfg), "v1-runner", "activation"), Ramp: r, Error: r.Reason}
	if err := production.Append(ramped); err != nil {
		t.Fatal(err)
	}
	h, err := production.History(cfg.Path)
	if err != nil || len(h) != 2 {
		t.Fatalf("history: %d records, %v", len(h), err)
	}
	got := h[1].Ramp
	if got == nil || got.State != evidence.RampReversed || len(got.History) != 2 || got.History[1].Checks[0].Lower != 0.47 || got.History[1].Candidate.Errors != 4 {
		t.Fatalf("the ramp read back: %+v", got)
	}
	if h[0].Ramp != nil {
		t.Errorf("the plain record reads back a ramp: %+v", h[0].Ramp)
	}
}
