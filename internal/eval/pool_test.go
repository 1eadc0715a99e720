package eval

import (
	"strings"
	"testing"
)

func poolDoc(id string, pred, gold, matched, grounded int) DocScores {
	s := Scores{Predicted: pred, Gold: gold, Matched: matched, Grounded: grounded}
	s.rates()
	return DocScores{DocID: id, Scores: s}
}

func poolReport(docs ...DocScores) *Report {
	r := &Report{Schema: "s", CorpusDigest: "c", Threshold: 0.5, Matching: "m", Normalization: "n", Documents: docs}
	for _, d := range docs {
		r.Overall.add(d.Scores)
	}
	r.Overall.rates()
	return r
}

// TestPoolSumsRuns: two runs' counts are summed per document and overall
// and the rates recomputed from the sums (pooled F1 2·7/(8+12), not the
// mean of the runs' F1s); a document one run lacks is left out and named
// Missing; a report of another corpus is refused.
func TestPoolSumsRuns(t *testing.T) {
	a := poolReport(poolDoc("x", 4, 6, 4, 4), poolDoc("y", 2, 2, 1, 2))
	b := poolReport(poolDoc("x", 4, 6, 3, 4))
	p, err := Pool(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Documents) != 1 || p.Documents[0].DocID != "x" || p.Documents[0].Matched != 7 || p.Documents[0].Gold != 12 {
		t.Fatalf("documents %+v", p.Documents)
	}
	if p.Overall.Predicted != 8 || p.Overall.Matched != 7 || p.Overall.F1 != round6(14.0/20) || strings.Join(p.Missing, ",") != "y" {
		t.Errorf("overall %+v, missing %v", p.Overall, p.Missing)
	}
	if one, _ := Pool(a); one != a {
		t.Error("one report is not returned as it is")
	}
	c := poolReport(poolDoc("x", 1, 1, 1, 1))
	c.CorpusDigest = "other"
	if _, err := Pool(a, c); err == nil || !strings.Contains(err.Error(), "one corpus") {
		t.Errorf("another corpus: %v", err)
	}
}
