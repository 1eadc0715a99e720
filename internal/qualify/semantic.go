package qualify

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/extract"
)

// corpusDigest returns the frozen corpus's manifest digest.
func corpusDigest(dir string) (string, error) {
	m, err := corpus.ReadManifest(dir)
	if err != nil {
		return "", err
	}
	return m.Digest, nil
}

// semanticParams builds the extraction comparison of a semantic gate; the
// candidate target is filled when the candidate is ready.
func (c *campaign) semanticParams(spec *GateSpec) extract.SemanticParams {
	return extract.SemanticParams{
		CorpusDir:             spec.Corpus,
		Production:            extract.Target{Backend: c.prod.Name, BaseURL: c.prod.BaseURL, Model: c.prod.Model},
		ProductionFingerprint: c.ev.Production.ConfigHashBefore,
		WorkDir:               filepath.Join(c.dir, "semantic", spec.ID),
		CacheDir:              filepath.Join(c.cfg.StateDir, "semantic-cache"),
		Floors:                extract.Floors{MinF1: spec.MinF1, MinGrounding: spec.MinGrounding, MinSchemaValid: spec.MinSchemaValid},
		Tolerance:             spec.Tolerance,
		Concurrency:           spec.Concurrency,
		MaxTokens:             spec.MaxTokens,
		MaxRepairs:            semanticRepairs(spec.MaxRepairs),
		RequestTimeout:        spec.RequestTimeout.Duration,
	}
}

// semanticBaselines computes production's extraction on each semantic
// gate's corpus while production still serves, or finds it cached under
// the same fingerprint. Only an exclusive candidate needs this up front
// (production is stopped while the candidate runs); otherwise the
// semantic gate asks production itself when it is reached, so a campaign
// that fails early costs production nothing. A baseline that cannot be
// had is remembered and makes its gate a harness error.
func (c *campaign) semanticBaselines(ctx context.Context, prodReady bool) error {
	if !*c.plan.Exclusive {
		return nil
	}
	for _, spec := range c.plan.Gates {
		if spec.Kind != KindSemantic || spec.Skip {
			continue
		}
		if c.prod == nil {
			c.baseline[spec.ID] = fmt.Errorf("no production profile to compare with")
			continue
		}
		c.out.line("[%s] production baseline: extracting corpus %s through %s (cached results are reused)", spec.ID, filepath.Base(spec.Corpus), c.prod.Name)
		t0 := time.Now()
		side, cached, err := extract.PrepareProduction(ctx, c.semanticParams(spec))
		c.engineWait += time.Since(t0)
		switch {
		case ctx.Err() != nil:
			return fmt.Errorf("interrupted while computing production's baseline: %w", context.Cause(ctx))
		case err != nil:
			if !prodReady {
				err = fmt.Errorf("production was not ready before the campaign and no cached baseline matches: %w", err)
			}
			c.baseline[spec.ID] = err
			c.out.line("[%s] production baseline unavailable: %v", spec.ID, err)
		default:
			c.baseline[spec.ID] = side
			how := "computed"
			if cached {
				how = "reused from the cache"
			}
			c.out.line("[%s] production baseline %s: F1 %.3f, grounding %.3f", spec.ID, how, side.Report.Overall.F1, side.Report.Overall.GroundingRate)
		}
	}
	return nil
}

func (c *campaign) gateSemantic(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	if c.proc == nil || c.procRung == nil {
		return harnessErr("no ready candidate (the semantic gate needs a passed launch gate)")
	}
	if err, ok := c.baseline[spec.ID].(error); ok {
		return harnessErr("production's baseline for %s is unavailable: %v", spec.Corpus, err)
	}
	p := c.semanticParams(spec)
	p.Candidate = extract.Target{Backend: c.candidate.Name, BaseURL: c.procRung.Profile.BaseURL, Model: c.procRung.Profile.Model}
	t0 := time.Now()
	res, err := extract.RunSemantic(ctx, p)
	c.engineWait += time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return harnessErr("%v", err)
	}
	b, _ := json.Marshal(res)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	cand, prod := res.Candidate.Report.Overall, res.Production.Report.Overall
	m["summary"] = fmt.Sprintf("Corpus %s (%d documents): candidate F1 %.3f, grounding %.3f; production F1 %.3f, grounding %.3f (tolerance %.2f%s).",
		res.CorpusName, len(res.Differences), cand.F1, cand.GroundingRate, prod.F1, prod.GroundingRate, res.Tolerance, cachedNote(res.ProductionCached))
	delete(m, "candidate")
	delete(m, "production")
	m["candidate_scores"] = res.Candidate.Report.Overall
	m["production_scores"] = res.Production.Report.Overall
	m["candidate_stats"] = res.Candidate.Stats
	m["production_stats"] = res.Production.Stats
	m["paths"] = map[string]string{"candidate": res.Candidate.OutDir, "production": res.Production.OutDir}
	g.Result = m
	if !res.Passed {
		return fmt.Errorf("semantic checks failed: %s", strings.Join(res.Reasons, "; "))
	}
	return nil
}

func cachedNote(cached bool) string {
	if cached {
		return "; production's result reused by fingerprint"
	}
	return ""
}

// semanticRepairs maps the plan's max_repairs (nil: extract's default) to
// SemanticParams.MaxRepairs, where 0 means the default and -1 none.
func semanticRepairs(n *int) int {
	switch {
	case n == nil:
		return 0
	case *n == 0:
		return -1
	}
	return *n
}
