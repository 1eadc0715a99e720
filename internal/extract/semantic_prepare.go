package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/eval"
	"github.com/hiro-dev/hiro/internal/llm"
)

// PrepareProduction computes production's side of a semantic comparison
// and stores it in p.CacheDir under its fingerprint, so that a later
// RunSemantic with the same parameters reuses it without asking
// production. The qualification campaign calls it while production still
// serves, before an exclusive candidate makes it stop. cached reports that
// a matching result was already there (nothing was sent). p.CacheDir is
// required; p.Candidate is ignored.
func PrepareProduction(ctx context.Context, p SemanticParams) (side *SideResult, cached bool, err error) {
	if p.CacheDir == "" {
		return nil, false, errors.New("semantic: PrepareProduction needs a cache directory")
	}
	if p.Production.Model == "" || p.Production.BaseURL == "" {
		return nil, false, errors.New("semantic: production needs a base URL and a model")
	}
	if p.Threshold == 0 {
		p.Threshold = eval.DefaultThreshold
	}
	p.MaxRepairs = repairs(p.MaxRepairs)
	if p.NewClient == nil {
		p.NewClient = func(u string) Chatter { return llm.New(u, nil) }
	}
	c, err := corpus.Load(p.CorpusDir)
	if err != nil {
		return nil, false, fmt.Errorf("semantic: %w", err)
	}
	fp := semanticFingerprint(c, p)
	prodDir := filepath.Join(p.CacheDir, "production-"+fp.Key[:16])
	cacheFile := prodDir + ".json"
	if s, ok := readCachedSide(cacheFile, fp.Key); ok {
		return s, true, nil
	}
	s, err := runSide(ctx, c, p, p.Production, prodDir)
	if err != nil {
		return nil, false, fmt.Errorf("semantic: production: %w", err)
	}
	if s.Stats.DocumentsFailed > 0 {
		return nil, false, fmt.Errorf("semantic: %w: %d documents had failed requests (see %s)", ErrProductionIncomplete, s.Stats.DocumentsFailed, filepath.Join(prodDir, RejectsFile))
	}
	s.Fingerprint = &fp
	b, _ := json.MarshalIndent(s, "", "  ")
	if err := corpus.WriteFileAtomic(cacheFile, append(b, '\n')); err != nil {
		return nil, false, fmt.Errorf("semantic: cache production result: %w", err)
	}
	return s, false, nil
}
