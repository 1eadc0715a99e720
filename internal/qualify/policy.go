package qualify

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// NeverActivates lists, one sentence each, the kinds of the activation
// policy require (config.Activation.Require) that no gate of p can
// satisfy (none of that kind, or only ones the plan skips): a campaign of
// p can never activate its candidate. Empty when p can.
func (p *Plan) NeverActivates(require []string) []string {
	var out []string
	missing, skipped := p.uncovered(require)
	for _, req := range missing {
		if skipped[req] {
			out = append(out, fmt.Sprintf("its %s gate is skipped", req))
		} else {
			out = append(out, fmt.Sprintf("it has no %s gate", req))
		}
	}
	return out
}

// NotJudged are the kinds of require (the activation policy) that the
// plan has no gate of, or only skipped ones: what a verdict of this plan
// does not judge (evidence.Evidence.NotJudged), in require's order.
func (p *Plan) NotJudged(require []string) []string {
	missing, _ := p.uncovered(require)
	return missing
}

// uncovered returns the kinds of require no unskipped gate of the plan
// satisfies (config.Satisfies), and which of them only skipped gates do.
func (p *Plan) uncovered(require []string) (missing []string, onlySkipped map[string]bool) {
	onlySkipped = map[string]bool{}
	for _, req := range require {
		found, skipped := false, false
		for _, g := range p.Gates {
			if !config.Satisfies(req, g.Kind) {
				continue
			}
			if g.Skip {
				skipped = true
				continue
			}
			found = true
		}
		if !found {
			missing = append(missing, req)
			onlySkipped[req] = skipped
		}
	}
	return missing, onlySkipped
}

// CorpusWarnings are the plan's semantic gates whose corpus has fewer
// documents than the latest campaign on that corpus (same digest, in the
// plan's evidence folder) said a decision needs: one sentence each, with
// the campaign's id, the measure whose need is the largest (the number
// is that measure's, evidence.Comparison.DocumentsNeeded) and, when
// another measure failed and so decided that campaign's gate, that
// measure with its own need.
func (p *Plan) CorpusWarnings() []string {
	var out []string
	for _, spec := range p.Gates {
		g, ok := spec.Gate.(*SemanticGate)
		if !ok || spec.Skip || g.Corpus == "" {
			continue
		}
		m, err := corpus.ReadManifest(g.Corpus)
		if err != nil {
			continue
		}
		n := lastNeed(p.EvidenceDir, m.Digest)
		if n.need <= m.Documents {
			continue
		}
		w := fmt.Sprintf("gate %s: corpus %s has %s, but campaign %s on it said about %d are needed to tell a drop of the tolerance in %s", spec.ID, m.Name, termtext.Plural(m.Documents, "document", "documents"), n.id, n.need, n.measure)
		if n.decided != "" && n.decided != n.measure {
			w += fmt.Sprintf(" (%s decided that campaign's gate: it failed, and needed %s)", n.decided, neededWords(n.decidedNeed))
		}
		out = append(out, w+"; freeze a larger corpus or expect inconclusive")
	}
	return out
}

// neededWords is a comparison's DocumentsNeeded in words: "about N
// documents", or, for -1, that no count would decide.
func neededWords(n int) string {
	if n < 0 {
		return "no count of documents decides it"
	}
	return fmt.Sprintf("about %d", n)
}

// corpusNeed is what lastNeed found: the campaign, its measure of the
// largest DocumentsNeeded with that number, and the first failed measure
// (the one that decided its gate; empty when none failed) with its own.
type corpusNeed struct {
	id, measure, decided string
	need, decidedNeed    int
}

// lastNeed reads the campaigns under dir (newest id first) and returns
// the first one with a semantic gate on the corpus digest, with the
// measure that needs the most documents of any of its comparisons; need
// 0 when none says.
func lastNeed(dir, digest string) corpusNeed {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return corpusNeed{}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() > ents[j].Name() })
	for _, d := range ents {
		if !d.IsDir() {
			continue
		}
		e, err := evidence.Load(filepath.Join(dir, d.Name(), evidence.PublicFile))
		if err != nil {
			continue
		}
		for _, g := range e.Gates {
			if g.Semantic == nil || g.Semantic.CorpusDigest != digest || len(g.Semantic.Comparisons) == 0 {
				continue
			}
			n := corpusNeed{id: e.ID}
			for _, c := range g.Semantic.Comparisons {
				if c.DocumentsNeeded > n.need {
					n.need, n.measure = c.DocumentsNeeded, c.Measure
				}
				if c.Outcome == evidence.StatusFailed && n.decided == "" {
					n.decided, n.decidedNeed = c.Measure, c.DocumentsNeeded
				}
			}
			return n
		}
	}
	return corpusNeed{}
}
