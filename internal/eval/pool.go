package eval

import (
	"fmt"
	"sort"
)

// Pool combines reports of several runs over the same corpus (replicates:
// the same documents extracted again with another sampling seed) into one
// report whose counts are the runs' sums, document by document and
// overall, and whose rates are recomputed from the sums: the pooled
// micro-average, over documents and runs. One report is returned as it
// is. The schema-valid rate is pooled when every report has one (else
// null); ClaimsSHA256 is left empty (no one file holds the claims); a
// document missing from any run is Missing. Reports of different corpora
// or scoring methods are an error.
func Pool(reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("eval: pool: no reports")
	}
	if len(reports) == 1 {
		return reports[0], nil
	}
	first := reports[0]
	out := &Report{Schema: first.Schema, CorpusName: first.CorpusName, CorpusDigest: first.CorpusDigest,
		Threshold: first.Threshold, Normalization: first.Normalization, Matching: first.Matching}
	docs := map[string]*DocScores{}
	seen := map[string]int{}
	validRate := true
	missing := map[string]bool{}
	for i, r := range reports {
		if r.CorpusDigest != first.CorpusDigest || r.Threshold != first.Threshold || r.Matching != first.Matching || r.Normalization != first.Normalization {
			return nil, fmt.Errorf("eval: pool: report %d scores corpus %s (threshold %v, %s) and report 1 corpus %s (threshold %v, %s); pool runs of one corpus and method only",
				i+1, r.CorpusDigest, r.Threshold, r.Matching, first.CorpusDigest, first.Threshold, first.Matching)
		}
		for _, d := range r.Documents {
			p := docs[d.DocID]
			if p == nil {
				p = &DocScores{DocID: d.DocID}
				docs[d.DocID] = p
			}
			p.Scores.add(d.Scores)
			seen[d.DocID]++
		}
		for _, m := range r.Missing {
			missing[m] = true
		}
		out.Overall.add(r.Overall)
		out.Replies += r.Replies
		out.SchemaValidReplies += r.SchemaValidReplies
		validRate = validRate && r.SchemaValidRate != nil
		out.UncommittedClaims += r.UncommittedClaims
	}
	for id, n := range seen {
		if n < len(reports) {
			missing[id] = true
		}
	}
	for id, d := range docs {
		if missing[id] {
			out.Overall.sub(d.Scores)
			continue
		}
		d.Scores.rates()
		out.Documents = append(out.Documents, *d)
	}
	sort.Slice(out.Documents, func(i, j int) bool { return out.Documents[i].DocID < out.Documents[j].DocID })
	for id := range missing {
		out.Missing = append(out.Missing, id)
	}
	sort.Strings(out.Missing)
	out.Overall.rates()
	if validRate {
		rate := ratio(out.SchemaValidReplies, out.Replies)
		out.SchemaValidRate = &rate
	}
	return out, nil
}

// add sums o's counts into s (rates are recomputed by rates).
func (s *Scores) add(o Scores) {
	s.Predicted += o.Predicted
	s.Gold += o.Gold
	s.Matched += o.Matched
	s.Grounded += o.Grounded
	s.Duplicates += o.Duplicates
}

// sub takes o's counts out of s.
func (s *Scores) sub(o Scores) {
	s.Predicted -= o.Predicted
	s.Gold -= o.Gold
	s.Matched -= o.Matched
	s.Grounded -= o.Grounded
	s.Duplicates -= o.Duplicates
}
