package qualify

import (
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// Fingerprints returns the digests of a campaign's inputs as they are
// now: the plan, the prompts, the structured-output schema (the product's,
// or a gate's schema file), the semantic corpus and the artifact manifest
// (each gate kind that has inputs fills its own: Fingerprinter), and the
// candidate profile (nil: left empty). The campaign records them when it
// starts; 'hiro activate' computes them again and refuses on any
// difference. An input that cannot be read is left empty (and so differs
// from a recorded digest).
func Fingerprints(plan *Plan, candidate *config.Profile) evidence.Fingerprints {
	fp := evidence.Fingerprints{Plan: plan.Digest, Prompts: prompt.Hash(), Schemas: prompt.SchemaHash(),
		Files: map[string]string{plan.Path: plan.Digest}}
	if candidate != nil {
		fp.CandidateProfile = candidate.Hash()
	}
	for _, g := range plan.Gates {
		if f, ok := g.Gate.(Fingerprinter); ok && !g.Skip {
			f.Fingerprint(&fp)
		}
	}
	return fp
}
