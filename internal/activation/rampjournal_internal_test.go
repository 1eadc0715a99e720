package activation

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/journal"
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

// One request is "1 request" in a ramp step's words (issue 26, T2).
func TestSampleWordsOneRequestAgrees(t *testing.T) {
	if got := sampleWords(evidence.RampSample{Requests: 1}); !strings.HasPrefix(got, "1 request, 0 failed") {
		t.Errorf("sampleWords of one request = %q", got)
	}
}
