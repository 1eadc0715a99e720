package activation

import (
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/journal"
	"github.com/hiro-dev/hiro/internal/production"
)

// TestRampJournalStoppedIsNotFailed (trial 12, S14): a ramp the operator
// stopped with hiro rollback was published as a failed live comparison
// ("3 passed · 1 failed", the ramp card "Failed") although its candidate
// answered every request. A stopped ramp is "Stopped", its row
// inconclusive and saying nothing failed; a reversed one stays failed.
func TestRampJournalStoppedIsNotFailed(t *testing.T) {
	r := &evidence.RampResult{Candidate: "twin", Production: "prod", Steps: []float64{0.1, 0.5, 1}, State: evidence.RampStopped, Reason: "hiro rollback"}
	sec, row := rampJournal(r)
	if sec.Status != "Stopped" || row.Status != journal.StatusInconclusive || !strings.Contains(row.Result, "stopped before the comparison decided (nothing failed): hiro rollback") {
		t.Errorf("stopped ramp: section %q, row %q (%s)", sec.Status, row.Status, row.Result)
	}
	r.State, r.Reason = evidence.RampReversed, "reversed at 10 %: error_rate: candidate 0.500"
	if sec, row := rampJournal(r); sec.Status != "Failed" || row.Status != journal.StatusFailed {
		t.Errorf("reversed ramp: section %q, row %q (%s)", sec.Status, row.Status, row.Result)
	}
}

// TestSummaryNamesActionsApartFromRampSteps (findings13 T13): the
// entry said "the 5 steps took 31.132s. The router moved the traffic
// step by step (50 %, 100 %)": the switch's actions and the ramp's
// steps are named apart, each counted.
func TestSummaryNamesActionsApartFromRampSteps(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 13, 20, 45, 0, time.UTC)
	r := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched,
		StartedAt: t0, FinishedAt: t0.Add(31132 * time.Millisecond), To: &production.Snapshot{Name: "twin"},
		Steps: make([]production.Step, 5),
		Ramp:  &evidence.RampResult{State: evidence.RampCompleted, History: []evidence.RampStep{{Share: 0.5}, {Share: 1}}}}
	s := Summary(r)
	for _, want := range []string{"the switch's 5 actions took 31.132s.", "moved the traffic in 2 ramp steps (50 %, 100 %)"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary %q: want %q", s, want)
		}
	}
	if strings.Contains(s, "5 steps") || strings.Contains(s, "step by step") {
		t.Errorf("summary %q still says steps of the switch's actions", s)
	}
	r.Outcome, r.Error, r.Ramp = production.OutcomeFailed, "twin not ready", nil
	r.Steps = []production.Step{{Name: "start", OK: true}, {Name: "verify"}}
	if s := Summary(r); !strings.HasPrefix(s, "The switch stopped after its action verify: twin not ready.") {
		t.Errorf("failed summary %q", s)
	}
}

// One request is "1 request" in a ramp step's words (issue 26, T2).
func TestSampleWordsOneRequestAgrees(t *testing.T) {
	if got := sampleWords(evidence.RampSample{Requests: 1}); !strings.HasPrefix(got, "1 request, 0 failed") {
		t.Errorf("sampleWords of one request = %q", got)
	}
}
