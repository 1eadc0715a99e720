package shadow

import (
	"strings"
	"testing"
)

// A run that scored one pair says "1 pair scored" (issue 26, T2).
func TestDecideOnePairAgrees(t *testing.T) {
	r := &Result{Pairs: 1, MinPairs: 5, Sampled: 1}
	decide(r)
	if len(r.Reasons) != 1 || r.Reasons[0] != "1 pair scored, fewer than the 5 a decision needs" {
		t.Errorf("reasons %q", r.Reasons)
	}
	if !strings.HasPrefix(r.Summary, "inconclusive: 1 pair of 1 sampled") {
		t.Errorf("summary %q", r.Summary)
	}
}
