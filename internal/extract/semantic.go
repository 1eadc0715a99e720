package extract

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/eval"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// SemanticSchema tags a cached production result.
const SemanticSchema = "hiro.semantic-side/v1"

// Target is one server the semantic gate extracts through.
type Target struct {
	// Backend is the profile name (provenance and output directory name).
	Backend string `json:"backend"`
	// BaseURL is the server root (hiro appends /v1); Model the model id.
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// Client, when set, sends the requests (llm.NewForProfile: the
	// profile's key, CA file and overload policy); nil means
	// SemanticParams.NewClient(BaseURL).
	Client Chatter `json:"-"`
}

// Floors are the absolute minimums the candidate must reach. Each is a
// rate in [0, 1] as package eval computes it (overall, micro-averaged).
type Floors struct {
	MinF1          float64 `json:"min_f1"`
	MinGrounding   float64 `json:"min_grounding"`
	MinSchemaValid float64 `json:"min_schema_valid"`
}

// SemanticParams configure RunSemantic. The plan gives Floors and
// Tolerance; the qualify code gives the targets and ProductionFingerprint.
type SemanticParams struct {
	// CorpusDir is a frozen corpus (verified before anything is sent).
	CorpusDir string
	// Candidate and Production are the servers compared.
	Candidate  Target
	Production Target
	// ProductionFingerprint identifies production's artifact and
	// configuration (e.g. artifact manifest digest + profile hash), given
	// by the caller; it is part of the cache key.
	ProductionFingerprint string
	// WorkDir receives the candidate's extraction directory
	// (WorkDir/candidate-<backend>); required. Give each campaign its own:
	// an earlier run there is resumed, and one made with another model is
	// refused (ErrRunMismatch).
	WorkDir string
	// CacheDir holds production results by fingerprint: the extraction
	// directory production-<key>/ and production-<key>.json. Empty: no
	// cache, production runs under WorkDir.
	CacheDir string
	// Floors and Tolerance decide: every compared rate (F1, grounding,
	// schema-valid) must be >= its floor and >= production's minus
	// Tolerance (absolute, e.g. 0.05).
	Floors    Floors
	Tolerance float64
	// Threshold is eval's similarity threshold; 0 means eval.DefaultThreshold.
	Threshold float64
	// Extraction settings for both sides; zero values take the defaults
	// of Options (MaxRepairs: 0 means DefaultMaxRepairs here, -1 none).
	Concurrency    int
	MaxRepairs     int
	MaxTokens      int
	RequestTimeout time.Duration
	// NewClient makes the client of a base URL; nil means llm.New.
	NewClient func(baseURL string) Chatter `json:"-"`
}

// SemanticFingerprint is what production's cached result is keyed on.
type SemanticFingerprint struct {
	PromptHash   string `json:"prompt_hash"`
	SchemaHash   string `json:"schema_hash"`
	CorpusDigest string `json:"corpus_digest"`
	// Production is the caller's ProductionFingerprint; ProductionModel the
	// model id asked; Settings the extraction and scoring settings.
	Production      string `json:"production"`
	ProductionModel string `json:"production_model"`
	Settings        string `json:"settings"`
	// Key is the hex SHA-256 over the fields above.
	Key string `json:"key"`
}

// SideResult is one side's extraction and scores.
type SideResult struct {
	Schema string `json:"schema"`
	Target Target `json:"target"`
	// Fingerprint is set on production's side.
	Fingerprint *SemanticFingerprint `json:"fingerprint,omitempty"`
	// OutDir is the extraction directory (claims.jsonl, rejects.jsonl...).
	OutDir string `json:"out_dir"`
	// Stats totals the extraction; Report is eval's scoring.
	Stats  Stats        `json:"stats"`
	Report *eval.Report `json:"report"`
}

// Check is one comparison of the gate.
type Check struct {
	// Name is "<measure> floor" or "<measure> vs production", measure one
	// of f1, grounding_rate, schema_valid_rate; or "documents finished".
	Name string `json:"name"`
	// Value is the candidate's; Limit the least value that passes.
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Passed bool    `json:"passed"`
}

// DocDiff is one document's scores side by side (candidate − production).
type DocDiff struct {
	DocID               string  `json:"doc_id"`
	CandidateF1         float64 `json:"candidate_f1"`
	ProductionF1        float64 `json:"production_f1"`
	DeltaF1             float64 `json:"delta_f1"`
	CandidateGrounding  float64 `json:"candidate_grounding_rate"`
	ProductionGrounding float64 `json:"production_grounding_rate"`
	DeltaGrounding      float64 `json:"delta_grounding_rate"`
	CandidateClaims     int     `json:"candidate_claims"`
	ProductionClaims    int     `json:"production_claims"`
}

// SemanticResult is the semantic gate's evidence: both score sets, the
// per-document differences, every check and the outcome.
type SemanticResult struct {
	// Passed is true when every check passed; Reasons lists the failed
	// checks in words (empty when passed).
	Passed  bool     `json:"passed"`
	Reasons []string `json:"reasons"`
	Checks  []Check  `json:"checks"`
	// Floors and Tolerance as given.
	Floors    Floors  `json:"floors"`
	Tolerance float64 `json:"tolerance"`
	// CorpusName and CorpusDigest identify the frozen corpus.
	CorpusName   string `json:"corpus_name"`
	CorpusDigest string `json:"corpus_digest"`
	// ProductionCached is true when production's result came from the
	// cache (its fingerprint matched) and production was not asked.
	ProductionCached bool       `json:"production_cached"`
	Candidate        SideResult `json:"candidate"`
	Production       SideResult `json:"production"`
	Differences      []DocDiff  `json:"differences"`
}

// ErrProductionIncomplete means production could not extract every
// document (a request failed): its scores would not be a fair baseline.
var ErrProductionIncomplete = errors.New("production extraction incomplete")

// RunSemantic runs extraction on the corpus through production (unless a
// cached result with the same fingerprint exists) and through the
// candidate, scores both with package eval, and compares them. Errors are
// for the harness (bad corpus, unwritable directories, ctx ending,
// production failing requests); a candidate that does badly is a result
// with Passed false, not an error.
func RunSemantic(ctx context.Context, p SemanticParams) (*SemanticResult, error) {
	if p.WorkDir == "" {
		return nil, errors.New("semantic: no work directory")
	}
	if p.Candidate.Model == "" || p.Production.Model == "" || p.Candidate.BaseURL == "" || p.Production.BaseURL == "" {
		return nil, errors.New("semantic: candidate and production need a base URL and a model")
	}
	if p.Tolerance < 0 || p.Tolerance > 1 {
		return nil, fmt.Errorf("semantic: tolerance %v: must be in [0, 1]", p.Tolerance)
	}
	p.fillDefaults()
	c, err := corpus.Load(p.CorpusDir)
	if err != nil {
		return nil, fmt.Errorf("semantic: %w", err)
	}
	fp := semanticFingerprint(c, p)
	res := &SemanticResult{Floors: p.Floors, Tolerance: p.Tolerance, CorpusName: c.Manifest.Name, CorpusDigest: c.Manifest.Digest, Reasons: []string{}}

	prod, cached, err := productionSide(ctx, c, p, fp)
	if err != nil {
		return nil, err
	}
	res.Production, res.ProductionCached = *prod, cached
	cand, err := runSide(ctx, c, p, p.Candidate, filepath.Join(p.WorkDir, "candidate-"+safeName(p.Candidate.Backend)))
	if err != nil {
		return nil, fmt.Errorf("semantic: candidate: %w", err)
	}
	res.Candidate = *cand
	res.compare()
	return res, nil
}

// productionSide returns production's extraction and scores: from the
// cache when p.CacheDir holds a result with fingerprint fp (cached true,
// nothing sent), else by asking production, caching the result when
// p.CacheDir is set. An incomplete production run is an error.
func productionSide(ctx context.Context, c *corpus.Corpus, p SemanticParams, fp SemanticFingerprint) (*SideResult, bool, error) {
	prodDir := filepath.Join(p.WorkDir, "production-"+safeName(p.Production.Backend))
	cacheFile := ""
	if p.CacheDir != "" {
		prodDir = filepath.Join(p.CacheDir, "production-"+fp.Key[:16])
		cacheFile = prodDir + ".json"
		if side, ok := readCachedSide(cacheFile, fp.Key); ok {
			return side, true, nil
		}
	}
	side, err := runSide(ctx, c, p, p.Production, prodDir)
	if err != nil {
		return nil, false, fmt.Errorf("semantic: production: %w", err)
	}
	if side.Stats.DocumentsFailed > 0 {
		return nil, false, fmt.Errorf("semantic: %w: %d documents had failed requests (see %s)", ErrProductionIncomplete, side.Stats.DocumentsFailed, filepath.Join(prodDir, RejectsFile))
	}
	side.Fingerprint = &fp
	if cacheFile != "" {
		b, _ := json.MarshalIndent(side, "", "  ")
		if err := corpus.WriteFileAtomic(cacheFile, append(b, '\n')); err != nil {
			return nil, false, fmt.Errorf("semantic: cache production result: %w", err)
		}
	}
	return side, false, nil
}

// runSide extracts the corpus through t into dir and scores it.
func runSide(ctx context.Context, c *corpus.Corpus, p SemanticParams, t Target, dir string) (*SideResult, error) {
	client := t.Client
	if client == nil {
		client = p.NewClient(t.BaseURL)
	}
	opts := Options{Client: client, Backend: t.Backend, BaseURL: t.BaseURL, Model: t.Model, OutDir: dir,
		Concurrency: p.Concurrency, MaxRepairs: p.MaxRepairs, MaxTokens: p.MaxTokens}
	opts.RequestTimeout = p.RequestTimeout
	sum, err := Run(ctx, c.Docs, opts)
	if err != nil {
		return nil, err
	}
	rep, err := eval.EvaluateFiles(c.Dir, filepath.Join(dir, ClaimsFile), p.Threshold)
	if err != nil {
		return nil, err
	}
	return &SideResult{Schema: SemanticSchema, Target: t, OutDir: dir, Stats: sum.Stats, Report: rep}, nil
}

// compare fills the checks, reasons, outcome and per-document differences.
func (r *SemanticResult) compare() {
	cand, prod := r.Candidate.Report, r.Production.Report
	sv := func(rep *eval.Report) float64 {
		if rep.SchemaValidRate == nil {
			return 0
		}
		return *rep.SchemaValidRate
	}
	measures := []struct {
		name        string
		c, p, floor float64
	}{
		{"f1", cand.Overall.F1, prod.Overall.F1, r.Floors.MinF1},
		{"grounding_rate", cand.Overall.GroundingRate, prod.Overall.GroundingRate, r.Floors.MinGrounding},
		{"schema_valid_rate", sv(cand), sv(prod), r.Floors.MinSchemaValid},
	}
	add := func(name string, value, limit float64) {
		ok := value >= limit-1e-9
		r.Checks = append(r.Checks, Check{Name: name, Value: value, Limit: limit, Passed: ok})
		if !ok {
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s: candidate %.4f is below %.4f", name, value, limit))
		}
	}
	for _, m := range measures {
		add(m.name+" floor", m.c, m.floor)
		add(m.name+" vs production", m.c, round4(m.p-r.Tolerance))
	}
	// A document the candidate could not finish is a failure of its own.
	st := r.Candidate.Stats
	finished := 1.0
	if n := st.DocumentsDone + st.DocumentsFailed; n > 0 {
		finished = float64(st.DocumentsDone) / float64(n)
	}
	add("documents finished", finished, 1)
	r.Passed = len(r.Reasons) == 0
	prodDocs := map[string]eval.DocScores{}
	for _, d := range prod.Documents {
		prodDocs[d.DocID] = d
	}
	r.Differences = []DocDiff{}
	for _, d := range cand.Documents {
		pd := prodDocs[d.DocID]
		r.Differences = append(r.Differences, DocDiff{
			DocID: d.DocID, CandidateF1: d.F1, ProductionF1: pd.F1, DeltaF1: round4(d.F1 - pd.F1),
			CandidateGrounding: d.GroundingRate, ProductionGrounding: pd.GroundingRate, DeltaGrounding: round4(d.GroundingRate - pd.GroundingRate),
			CandidateClaims: d.Predicted, ProductionClaims: pd.Predicted,
		})
	}
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// semanticFingerprint computes production's cache key.
func semanticFingerprint(c *corpus.Corpus, p SemanticParams) SemanticFingerprint {
	fp := SemanticFingerprint{
		PromptHash: prompt.Hash(), SchemaHash: prompt.SchemaHash(), CorpusDigest: c.Manifest.Digest,
		Production: p.ProductionFingerprint, ProductionModel: p.Production.Model,
		Settings: strings.Join([]string{"repairs=" + strconv.Itoa(p.MaxRepairs), "max_tokens=" + strconv.Itoa(p.MaxTokens),
			"threshold=" + strconv.FormatFloat(p.Threshold, 'g', -1, 64)}, ","),
	}
	h := sha256.New()
	for _, s := range []string{fp.PromptHash, fp.SchemaHash, fp.CorpusDigest, fp.Production, fp.ProductionModel, fp.Settings} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	fp.Key = hex.EncodeToString(h.Sum(nil))
	return fp
}

// readCachedSide returns the cached production side when its key matches.
func readCachedSide(path, key string) (*SideResult, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false // absent or unreadable: run production again
	}
	var s SideResult
	if json.Unmarshal(b, &s) != nil || s.Schema != SemanticSchema || s.Fingerprint == nil || s.Fingerprint.Key != key || s.Report == nil {
		return nil, false
	}
	return &s, true
}

// safeName keeps a backend name usable as a directory name.
func safeName(s string) string {
	if s == "" {
		return "unnamed"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 || r == ':' {
			return '_'
		}
		return r
	}, s)
}

// repairs maps SemanticParams.MaxRepairs to Options.MaxRepairs: 0 is the
// default, a negative value means no repair.
func repairs(n int) int {
	switch {
	case n == 0:
		return DefaultMaxRepairs
	case n < 0:
		return 0
	}
	return n
}

// fillDefaults sets the eval threshold, the repair count and the client
// maker where the caller left them zero.
func (p *SemanticParams) fillDefaults() {
	if p.Threshold == 0 {
		p.Threshold = eval.DefaultThreshold
	}
	p.MaxRepairs = repairs(p.MaxRepairs)
	if p.NewClient == nil {
		p.NewClient = func(u string) Chatter { return llm.New(u, nil) }
	}
}
