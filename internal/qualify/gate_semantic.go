package qualify

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/llm"
)

// profileClient returns the extraction client of profile p
// (llm.NewForProfile: its key, CA file and overload policy). A profile
// whose key cannot be read gets a client that fails every request with
// that configuration error, so the gate records it.
func profileClient(p *config.Profile) extract.Chatter {
	c, err := llm.NewForProfile(p)
	if err != nil {
		return failingChatter{err}
	}
	return c
}

// failingChatter answers every request with err.
type failingChatter struct{ err error }

func (f failingChatter) Chat(context.Context, llm.Request) (*llm.Reply, error) { return nil, f.err }

// KindSemantic compares extraction through the candidate with production's.
const KindSemantic = "semantic"

func init() {
	registerKind(Kind{Name: KindSemantic, Rank: 70, Title: "Semantic quality against production", NeedsCandidate: true, New: func() Gate { return &SemanticGate{} }})
}

// SemanticGate is a semantic gate's section: extraction on a frozen corpus
// through the candidate and through production, scored and compared. Its
// result is an evidence.SemanticResult.
type SemanticGate struct {
	plainBound
	// Corpus is a frozen corpus directory (relative to the plan).
	Corpus string `toml:"corpus"`
	// Floors: every rate must reach its floor (fractions in [0, 1]).
	MinF1          float64 `toml:"min_f1"`
	MinGrounding   float64 `toml:"min_grounding"`
	MinSchemaValid float64 `toml:"min_schema_valid"`
	// Tolerance: the candidate may be worse than production by at most
	// this much on each rate (absolute, in [0, 1]).
	Tolerance float64 `toml:"tolerance"`
	// Concurrency is the extraction's parallel requests; default 1.
	Concurrency int `toml:"concurrency"`
	// MaxRepairs bounds repair retries per sentence (nil: extract's default).
	MaxRepairs *int `toml:"max_repairs"`
	// MaxTokens bounds each reply (0: extract's default).
	MaxTokens int `toml:"max_tokens"`
	// RequestTimeout bounds each request; default DefaultRequestTimeout.
	RequestTimeout config.Duration `toml:"request_timeout"`

	// baseline is production's side computed before production stopped
	// (an error when it could not be had); nil: computed when reached.
	baseline any
}

// Validate checks every number and that the corpus verifies.
func (g *SemanticGate) Validate(v *Validation) {
	if g.Corpus == "" && !v.Spec.Skip {
		v.Errorf("corpus", "missing; name a frozen corpus directory (hiro corpus import ...)")
	}
	g.Corpus = v.Resolve(g.Corpus)
	for _, f := range []struct {
		key string
		x   float64
	}{{"min_f1", g.MinF1}, {"min_grounding", g.MinGrounding}, {"min_schema_valid", g.MinSchemaValid}, {"tolerance", g.Tolerance}} {
		if math.IsNaN(f.x) || f.x < 0 || f.x > 1 {
			v.Errorf(f.key, "%v: use a fraction between 0 and 1", f.x)
		}
	}
	switch {
	case g.Concurrency == 0:
		g.Concurrency = 1
	case g.Concurrency < 1 || g.Concurrency > MaxConcurrency:
		v.Errorf("concurrency", "%d: use 1 to %d parallel requests", g.Concurrency, MaxConcurrency)
	}
	if g.MaxRepairs != nil && (*g.MaxRepairs < 0 || *g.MaxRepairs > 5) {
		v.Errorf("max_repairs", "%d: use 0 to 5", *g.MaxRepairs)
	}
	if g.MaxTokens < 0 || g.MaxTokens > MaxGateMaxTokens {
		v.Errorf("max_tokens", "%d: use 1 to %d tokens (leave it out for the default)", g.MaxTokens, MaxGateMaxTokens)
	}
	switch {
	case g.RequestTimeout.Duration < 0:
		v.Errorf("request_timeout", "%s is negative; give a positive bound such as \"60s\"", g.RequestTimeout.Duration)
	case g.RequestTimeout.Duration == 0:
		g.RequestTimeout.Duration = DefaultRequestTimeout
	}
	if g.Corpus == "" || v.Spec.Skip {
		return
	}
	if st, err := os.Stat(g.Corpus); err != nil || !st.IsDir() {
		v.Errorf("corpus", "%s is not a directory; freeze a corpus first (hiro corpus import ...) and point corpus at it", g.Corpus)
		return
	}
	if rep, err := corpus.Verify(g.Corpus); err != nil {
		v.Errorf("corpus", "%s is not a frozen corpus: %v", g.Corpus, err)
	} else if !rep.OK {
		v.Errorf("corpus", "%s does not verify against its manifest: %s", g.Corpus, strings.Join(rep.Problems(), "; "))
	}
}

// Fingerprint records the corpus manifest's digest.
func (g *SemanticGate) Fingerprint(fp *evidence.Fingerprints) {
	if g.Corpus == "" {
		return
	}
	if m, err := corpus.ReadManifest(g.Corpus); err == nil {
		fp.Corpus = m.Digest
	}
}

// params builds the extraction comparison; the candidate target is filled
// when the candidate is ready.
func (g *SemanticGate) params(h *Handle) extract.SemanticParams {
	p := extract.SemanticParams{
		CorpusDir:             g.Corpus,
		ProductionFingerprint: h.ProductionFingerprint,
		WorkDir:               filepath.Join(h.Dir, "semantic", h.GateID),
		CacheDir:              filepath.Join(h.StateDir, "semantic-cache"),
		Floors:                extract.Floors{MinF1: g.MinF1, MinGrounding: g.MinGrounding, MinSchemaValid: g.MinSchemaValid},
		Tolerance:             g.Tolerance,
		Concurrency:           g.Concurrency,
		MaxTokens:             g.MaxTokens,
		MaxRepairs:            semanticRepairs(g.MaxRepairs),
		RequestTimeout:        g.RequestTimeout.Duration,
	}
	if h.Production != nil {
		p.Production = extract.Target{Backend: h.Production.Name, BaseURL: h.Production.BaseURL, Model: h.Production.Model, Client: profileClient(h.Production)}
	}
	return p
}

// Prepare computes production's baseline while production still serves,
// or finds it cached under the same fingerprint. Only an exclusive
// candidate needs this up front (production is stopped while the
// candidate runs); otherwise Run asks production itself, so a campaign
// that fails early costs production nothing. A baseline that cannot be
// had is remembered and makes Run a harness error.
func (g *SemanticGate) Prepare(ctx context.Context, h *Handle, prodReady bool) error {
	g.baseline = nil
	if !h.Exclusive {
		return nil
	}
	if h.Production == nil {
		g.baseline = fmt.Errorf("no production profile to compare with")
		return nil
	}
	h.Logf("production baseline: extracting corpus %s through %s (cached results are reused)", filepath.Base(g.Corpus), h.Production.Name)
	t0 := time.Now()
	side, cached, err := extract.PrepareProduction(ctx, g.params(h))
	h.Waited(t0)
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("interrupted while computing production's baseline: %w", context.Cause(ctx))
	case err != nil:
		if !prodReady {
			err = fmt.Errorf("production was not ready before the campaign and no cached baseline matches: %w", err)
		}
		g.baseline = err
		h.Logf("production baseline unavailable: %v", err)
	default:
		g.baseline = side
		how := "computed"
		if cached {
			how = "reused from the cache"
		}
		h.Logf("production baseline %s: F1 %.3f, grounding %.3f", how, side.Report.Overall.F1, side.Report.Overall.GroundingRate)
	}
	return nil
}

// Run extracts through the candidate and compares with production.
func (g *SemanticGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	r, err := h.Ready()
	if err != nil {
		return err
	}
	if err, ok := g.baseline.(error); ok {
		return harnessErr("production's baseline for %s is unavailable: %v", g.Corpus, err)
	}
	if h.Production == nil {
		return harnessErr("no production profile to compare with")
	}
	p := g.params(h)
	p.Candidate = extract.Target{Backend: h.Candidate.Name, BaseURL: r.Profile.BaseURL, Model: r.Profile.Model, Client: profileClient(r.Profile)}
	t0 := time.Now()
	res, err := extract.RunSemantic(ctx, p)
	h.Waited(t0)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return harnessErr("%v", err)
	}
	eg.Semantic = semanticEvidence(res)
	if !res.Passed {
		return fmt.Errorf("semantic checks failed: %s", strings.Join(res.Reasons, "; "))
	}
	return nil
}

// semanticEvidence is the typed evidence of a comparison.
func semanticEvidence(res *extract.SemanticResult) *evidence.SemanticResult {
	cand, prod := res.Candidate.Report.Overall, res.Production.Report.Overall
	out := &evidence.SemanticResult{
		Summary: fmt.Sprintf("Corpus %s (%d documents): candidate F1 %.3f, grounding %.3f; production F1 %.3f, grounding %.3f (tolerance %.2f%s).",
			res.CorpusName, len(res.Differences), cand.F1, cand.GroundingRate, prod.F1, prod.GroundingRate, res.Tolerance, cachedNote(res.ProductionCached)),
		Passed: res.Passed, Reasons: res.Reasons, Tolerance: res.Tolerance,
		Floors:     evidence.SemanticFloors(res.Floors),
		CorpusName: res.CorpusName, CorpusDigest: res.CorpusDigest, ProductionCached: res.ProductionCached,
		CandidateScores: evidence.Scores(cand), ProductionScores: evidence.Scores(prod),
		CandidateStats: evidence.ExtractionStats(res.Candidate.Stats), ProductionStats: evidence.ExtractionStats(res.Production.Stats),
		Paths: &evidence.SemanticPaths{Candidate: res.Candidate.OutDir, Production: res.Production.OutDir},
	}
	for _, c := range res.Checks {
		out.Checks = append(out.Checks, evidence.SemanticCheck(c))
	}
	for _, d := range res.Differences {
		out.Differences = append(out.Differences, evidence.DocDiff(d))
	}
	if out.Reasons == nil {
		out.Reasons = []string{}
	}
	return out
}

// Describe is the comparison's summary sentence.
func (g *SemanticGate) Describe(eg *evidence.Gate) []string {
	if eg.Semantic == nil || eg.Semantic.Summary == "" {
		return nil
	}
	return []string{eg.Semantic.Summary}
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
