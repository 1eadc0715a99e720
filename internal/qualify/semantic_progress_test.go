package qualify

import (
	"testing"

	"github.com/hiro-dev/hiro/internal/extract"
)

// TestDocProgressLineAgreesInNumber: one claim is "1 claim", not
// "1 claims".
func TestDocProgressLineAgreesInNumber(t *testing.T) {
	for _, tc := range []struct {
		claims, rejects int
		want            string
	}{
		{1, 1, "cand: document 2/5 (bakery) done: 1 claim, 1 reject"},
		{0, 2, "cand: document 2/5 (bakery) done: 0 claims, 2 rejects"},
		{3, 0, "cand: document 2/5 (bakery) done: 3 claims, 0 rejects"},
	} {
		got := docProgressLine("cand", 2, 5, extract.DocProgress{DocID: "bakery", Status: "done", Claims: tc.claims, Rejects: tc.rejects})
		if got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
