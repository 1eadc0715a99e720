package extract

import (
	"context"
	"errors"
	"fmt"

	"github.com/hiro-dev/hiro/internal/corpus"
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
	p.fillDefaults()
	c, err := corpus.Load(p.CorpusDir)
	if err != nil {
		return nil, false, fmt.Errorf("semantic: %w", err)
	}
	return productionSide(ctx, c, p, semanticFingerprint(c, p))
}
