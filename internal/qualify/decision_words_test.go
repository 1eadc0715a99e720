package qualify

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/stats"
)

// A decisive bound is said as the inclusive bound it is (issue 26 G7: a
// difference of exactly -1.000 was "below -1.000", which it cannot be).
func TestDecisionWordsSayTheBoundInclusive(t *testing.T) {
	d := stats.Difference{Estimate: -1, Lower: -1, Upper: -1, Confidence: 0.95, Documents: 40}
	got := decisionWords(d, 0.05, stats.Failed)
	if !strings.Contains(got, "the difference is at most -1.000") || strings.Contains(got, "below") {
		t.Errorf("failed: %q", got)
	}
	d = stats.Difference{Estimate: 0, Lower: 0, Upper: 0, Confidence: 0.95, Documents: 40}
	if got := decisionWords(d, 0.05, stats.Passed); !strings.Contains(got, "the difference is at least +0.000") || strings.Contains(got, "above") {
		t.Errorf("passed: %q", got)
	}
}

// An undecided comparison writes its bounds and the margin with one minus
// sign, ASCII's (issue 26 N1: "between -0.068 and -0.022 (95 % bounds),
// which holds the margin −0.05" mixed two).
func TestDecisionWordsOneMinusSign(t *testing.T) {
	d := stats.Difference{Estimate: -0.045, Lower: -0.068, Upper: -0.022, Confidence: 0.95, Documents: 48}
	got := decisionWords(d, 0.05, stats.Inconclusive)
	if want := "the difference lies between -0.068 and -0.022 (95 % bounds), which holds the margin -0.05;"; !strings.Contains(got, want) {
		t.Errorf("inconclusive: %q lacks %q", got, want)
	}
	if strings.ContainsRune(got, '\u2212') {
		t.Errorf("inconclusive: %q holds the Unicode minus sign", got)
	}
}

// Counts of 1 agree with their noun in the gates' words (issue 26, T2):
// a corpus of one document "1 document is fewer than ...", a ladder of
// one attempt "bounded to 1 attempt".
func TestGateWordsCountsOfOneAgree(t *testing.T) {
	d := stats.Difference{Confidence: 0.95, Documents: 1, Lower: -1, Upper: 1}
	if got := decisionWords(d, 0.05, stats.Inconclusive); !strings.Contains(got, "cannot tell: 1 document is fewer than") {
		t.Errorf("one document: %q", got)
	}
	d.Documents = 2
	if got := decisionWords(d, 0.05, stats.Inconclusive); !strings.Contains(got, "cannot tell: 2 documents are fewer than") {
		t.Errorf("two documents: %q", got)
	}
	g := &LaunchGate{MaxAttempts: 1, Variants: []*Variant{{Name: "base", Reason: "the profile as written"}}}
	if got := g.Decisions(); len(got) != 2 || !strings.Contains(got[1], "bounded to 1 attempt;") {
		t.Errorf("a ladder of one attempt: %q", got)
	}
}
