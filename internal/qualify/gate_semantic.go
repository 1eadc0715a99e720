package qualify

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
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/eval"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
	"github.com/hiro-dev/hiro/internal/stats"
	"github.com/hiro-dev/hiro/internal/termtext"
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
	RegisterKind(Kind{Name: KindSemantic, Rank: 70, Title: "Semantic quality against production", NeedsCandidate: true, New: func() Gate { return &SemanticGate{} }})
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
	// this much on each rate (absolute, in (0, 1]): the margin of each
	// measure's non-inferiority test. Required: a margin of 0 can never
	// be shown for a candidate equal to production.
	Tolerance float64 `toml:"tolerance"`
	// Confidence is each bound's one-sided confidence (default
	// stats.DefaultConfidence, 0.95); Resamples the paired bootstrap's
	// resamples (default stats.DefaultResamples, at least
	// MinSemanticResamples).
	Confidence float64 `toml:"confidence"`
	Resamples  int     `toml:"resamples"`
	// Concurrency is the extraction's parallel requests; default 1.
	Concurrency int `toml:"concurrency"`
	// MaxRepairs bounds repair retries per sentence (nil:
	// extract.DefaultMaxRepairs; 0: none).
	MaxRepairs *int `toml:"max_repairs"`
	// MaxTokens bounds each reply (0: extract's default).
	MaxTokens int `toml:"max_tokens"`
	// RequestTimeout bounds each request; default DefaultRequestTimeout.
	// A production request that runs past it is sent once more with a
	// fresh bound before production's side is called incomplete.
	RequestTimeout config.Duration `toml:"request_timeout"`
	// Temperature is the extraction's sampling temperature on both sides,
	// 0 to 2 (0, the default: greedy, as hiro extract).
	Temperature float64 `toml:"temperature"`
	// Replicates is how many times each side extracts the corpus
	// (default 1, at most MaxSemanticReplicates), replicate k sending seed
	// extract.Seed+k−1; more than one needs a temperature above 0 (greedy
	// replies repeat). A document's shares are pooled over its replicates
	// and the bootstrap still resamples documents: replicates shrink the
	// part of the per-document spread that is sampling noise, which only
	// more documents would shrink otherwise.
	Replicates int `toml:"replicates"`

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
	if g.Tolerance == 0 && !v.Spec.Skip {
		v.Errorf("tolerance", "missing or 0: it is the margin of the non-inferiority test against production, and a margin of 0 can never be shown for a candidate as good as production; set the largest drop you accept on each rate, e.g. tolerance = 0.05")
	}
	switch {
	case g.Confidence == 0:
		g.Confidence = stats.DefaultConfidence
	case math.IsNaN(g.Confidence) || g.Confidence < 0.8 || g.Confidence >= 1:
		v.Errorf("confidence", "%v: use a one-sided confidence between 0.8 and 0.999 (default 0.95)", g.Confidence)
	}
	switch {
	case g.Resamples == 0:
		g.Resamples = stats.DefaultResamples
	case g.Resamples < MinSemanticResamples || g.Resamples > 1000000:
		v.Errorf("resamples", "%d: use %d to 1000000 bootstrap resamples (default %d)", g.Resamples, MinSemanticResamples, stats.DefaultResamples)
	}
	switch {
	case g.Concurrency == 0:
		g.Concurrency = 1
	case g.Concurrency < 1 || g.Concurrency > MaxConcurrency:
		v.Errorf("concurrency", "%d: use 1 to %d parallel requests", g.Concurrency, MaxConcurrency)
	}
	switch {
	case math.IsNaN(g.Temperature) || g.Temperature < 0 || g.Temperature > 2:
		v.Errorf("temperature", "%v: use 0 (greedy, the default) to 2", g.Temperature)
	case g.Replicates == 0:
		g.Replicates = 1
	case g.Replicates < 1 || g.Replicates > MaxSemanticReplicates:
		v.Errorf("replicates", "%d: use 1 to %d extractions of the corpus per side", g.Replicates, MaxSemanticReplicates)
	case g.Replicates > 1 && g.Temperature == 0:
		v.Errorf("replicates", "%d replicates at temperature 0 repeat the same greedy replies; set temperature (e.g. 0.7) to sample, or leave replicates out", g.Replicates)
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
	if st, err := os.Stat(g.Corpus); err != nil {
		// ReadManifest names the missing folder and the nearest one.
		_, merr := corpus.ReadManifest(g.Corpus)
		if merr == nil {
			merr = err
		}
		v.Errorf("corpus", "%v; 'hiro corpus freeze DIR' makes one from a folder of documents (docs/corpus.md)", merr)
		return
	} else if !st.IsDir() {
		v.Errorf("corpus", "%s is a file; point corpus at a frozen corpus's folder (the one holding %s, docs/corpus.md)", g.Corpus, corpus.ManifestFile)
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

// Semantic comparison: production's side (cached by fingerprint), the
// candidate's side, and the checks. Both sides are extracted by package
// extract and scored by package eval; the pass/fail and the cache are the
// gate's.

// SemanticSideSchema tags a cached production side (v2 added the
// per-document replies; a v1 cache is computed again).
const SemanticSideSchema = "hiro.semantic-side/v2"

// MinSemanticResamples is the fewest bootstrap resamples a semantic gate
// accepts.
const MinSemanticResamples = 10000

// MaxSemanticReplicates is the most extractions of the corpus per side a
// semantic gate accepts (replicates).
const MaxSemanticReplicates = 10

// semanticTarget is one server the gate extracts through.
type semanticTarget struct {
	Backend string `json:"backend"`
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// profile builds the client (its key, CA file and overload policy).
	profile *config.Profile
	// timeoutRetries is extract.Options.TimeoutRetries: production's side
	// sends a request that ran past request_timeout once more
	// (productionTimeoutRetries), the candidate's none (its slowness is
	// evidence).
	timeoutRetries int
}

// productionTimeoutRetries is how often a production request that ran
// past the gate's request_timeout is sent again, with a fresh bound,
// before production's side is called incomplete (issue 26, F9: one
// reply slowed by a loaded machine aborted the campaign).
const productionTimeoutRetries = 1

// baselineKey is what production's cached side is keyed on: the prompt,
// the schema, the corpus, production's configuration and model, and the
// extraction and scoring settings. Key is the hex SHA-256 over the rest.
type baselineKey struct {
	PromptHash      string `json:"prompt_hash"`
	SchemaHash      string `json:"schema_hash"`
	CorpusDigest    string `json:"corpus_digest"`
	Production      string `json:"production"`
	ProductionModel string `json:"production_model"`
	Settings        string `json:"settings"`
	Key             string `json:"key"`
}

// semanticSide is one side's extraction and scores; production's is
// cached as JSON in the state directory.
type semanticSide struct {
	Schema      string         `json:"schema"`
	Target      semanticTarget `json:"target"`
	Fingerprint *baselineKey   `json:"fingerprint,omitempty"`
	OutDir      string         `json:"out_dir"`
	Stats       extract.Stats  `json:"stats"`
	Report      *eval.Report   `json:"report"`
	// ReplicateDirs are the replicates' extraction directories (under
	// OutDir) when there is more than one; Report, Stats and Replies are
	// then pooled over them.
	ReplicateDirs []string `json:"replicate_dirs,omitempty"`
	// Replies are each document's replies and schema-valid replies (its
	// latest checkpoint), by document id: the schema-valid rate's shares.
	Replies map[string][2]int `json:"replies"`
}

// repairs is the extraction's repair count: max_repairs, else
// extract.DefaultMaxRepairs.
func (g *SemanticGate) repairs() int {
	if g.MaxRepairs == nil {
		return extract.DefaultMaxRepairs
	}
	return *g.MaxRepairs
}

// baselineKey computes production's cache key.
func (g *SemanticGate) baselineKey(c *corpus.Corpus, h *Handle) baselineKey {
	k := baselineKey{
		PromptHash: prompt.Hash(), SchemaHash: prompt.SchemaHash(), CorpusDigest: c.Manifest.Digest,
		Production: h.ProductionFingerprint, ProductionModel: h.Production.Model,
		Settings: strings.Join(g.settings(), ","),
	}
	sum := sha256.New()
	for _, s := range []string{k.PromptHash, k.SchemaHash, k.CorpusDigest, k.Production, k.ProductionModel, k.Settings} {
		sum.Write([]byte(s))
		sum.Write([]byte{0})
	}
	k.Key = hex.EncodeToString(sum.Sum(nil))
	return k
}

// settings are the extraction and scoring settings production's cached
// side depends on (sampling only when not the default, so that keys of
// greedy single runs stay as they were).
func (g *SemanticGate) settings() []string {
	s := []string{"repairs=" + strconv.Itoa(g.repairs()), "max_tokens=" + strconv.Itoa(g.MaxTokens),
		"threshold=" + strconv.FormatFloat(eval.DefaultThreshold, 'g', -1, 64)}
	if g.Temperature != 0 || g.Replicates > 1 {
		s = append(s, "temperature="+strconv.FormatFloat(g.Temperature, 'g', -1, 64), "replicates="+strconv.Itoa(g.Replicates))
	}
	return s
}

// baselineDir is where production's side under key is extracted in
// stateDir; its cache is that path plus ".json".
func baselineDir(stateDir string, key baselineKey) string {
	return filepath.Join(stateDir, "semantic-cache", "production-"+key.Key[:16])
}

// readCachedSide returns production's cached side in file when it is
// whole and has key; nil otherwise.
func readCachedSide(file string, key baselineKey) *semanticSide {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	var s semanticSide
	if json.Unmarshal(b, &s) != nil || s.Schema != SemanticSideSchema || s.Fingerprint == nil || s.Fingerprint.Key != key.Key || s.Report == nil || s.Replies == nil {
		return nil
	}
	return &s
}

// cachedBaseline reports whether production's side of this gate is
// cached in stateDir for prod's present configuration (the key a run
// would compute): the gate then sends production nothing. A corpus that
// does not load has no cached side.
func (g *SemanticGate) cachedBaseline(prod *config.Profile, stateDir string) bool {
	c, err := corpus.Load(g.Corpus)
	if err != nil {
		return false
	}
	fp, _ := ProductionConfigHash(prod)
	key := g.baselineKey(c, &Handle{Production: prod, ProductionFingerprint: fp})
	return readCachedSide(baselineDir(stateDir, key)+".json", key) != nil
}

// errProductionIncomplete means production could not extract every
// document: its scores would not be a fair baseline.
var errProductionIncomplete = errors.New("production extraction incomplete")

// productionSide returns production's side: from the cache in the state
// directory when a side with the same key is there (cached true, nothing
// sent), else by asking production and caching the result. An incomplete
// production run is an error.
func (g *SemanticGate) productionSide(ctx context.Context, c *corpus.Corpus, h *Handle) (*semanticSide, bool, error) {
	key := g.baselineKey(c, h)
	dir := baselineDir(h.StateDir, key)
	cacheFile := dir + ".json"
	if s := readCachedSide(cacheFile, key); s != nil {
		return s, true, nil
	}
	p := h.Production
	side, err := g.runSide(ctx, c, semanticTarget{Backend: p.Name, BaseURL: p.BaseURL, Model: p.Model, profile: p, timeoutRetries: productionTimeoutRetries}, dir, h)
	if err != nil {
		return nil, false, fmt.Errorf("semantic: production: %w", err)
	}
	if side.Stats.DocumentsFailed > 0 {
		return nil, false, fmt.Errorf("semantic: %w: %s had failed requests%s (see %s)", errProductionIncomplete,
			account.Plural(side.Stats.DocumentsFailed, "document", "documents"), g.timeoutHint(dir), filepath.Join(dir, extract.RejectsFile))
	}
	side.Fingerprint = &key
	b, _ := json.MarshalIndent(side, "", "  ")
	if err := corpus.WriteFileAtomic(cacheFile, append(b, '\n')); err != nil {
		return nil, false, fmt.Errorf("semantic: cache production result: %w", err)
	}
	return side, false, nil
}

// timeoutHint says, when requests of production's extraction in dir
// failed for running past the gate's request_timeout twice (the first
// time and once more, productionTimeoutRetries), how many and what to raise
// (a loaded machine's replies are slow, not wrong); "" otherwise.
func (g *SemanticGate) timeoutHint(dir string) string {
	rs, err := extract.ReadCurrentRejects(dir)
	if err != nil {
		return ""
	}
	n := 0
	for _, r := range rs {
		for _, why := range r.Reasons {
			if why.Code == extract.ReasonRequestFailed && (strings.Contains(why.Detail, "deadline exceeded") || strings.Contains(why.Detail, "timeout")) {
				n++
				break
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %s ran past the gate's request_timeout (%s), were sent once more with a fresh bound and ran past it again: raise request_timeout in the plan's semantic gate (slow replies on a loaded machine)",
		account.Plural(n, "request", "requests"), g.RequestTimeout.Duration)
}

// runSide extracts the corpus through t into dir (each replicate into
// dir/replicate-K when there are several) and scores it, pooling the
// replicates (eval.Pool); a progress line per finished document goes to
// h (a corpus through a model on a CPU takes minutes), and a heartbeat
// line with the sentences done when no line was written for
// sideHeartbeatEvery.
func (g *SemanticGate) runSide(ctx context.Context, c *corpus.Corpus, t semanticTarget, dir string, h *Handle) (*semanticSide, error) {
	if g.Replicates <= 1 {
		return g.runReplicate(ctx, c, t, dir, h, extract.Seed, t.Backend)
	}
	out := &semanticSide{Schema: SemanticSideSchema, Target: t, OutDir: dir, Replies: map[string][2]int{}}
	var reports []*eval.Report
	for k := range g.Replicates {
		sub := filepath.Join(dir, fmt.Sprintf("replicate-%d", k+1))
		r, err := g.runReplicate(ctx, c, t, sub, h, extract.Seed+int64(k), fmt.Sprintf("%s (replicate %d/%d)", t.Backend, k+1, g.Replicates))
		if err != nil {
			return nil, err
		}
		out.ReplicateDirs = append(out.ReplicateDirs, sub)
		out.Stats.Add(r.Stats)
		for id, n := range r.Replies {
			p := out.Replies[id]
			out.Replies[id] = [2]int{p[0] + n[0], p[1] + n[1]}
		}
		reports = append(reports, r.Report)
	}
	var err error
	if out.Report, err = eval.Pool(reports...); err != nil {
		return nil, err
	}
	return out, nil
}

// runReplicate is one extraction of the corpus through t into dir with
// the gate's temperature and the given seed, scored; label names it in
// the progress lines.
func (g *SemanticGate) runReplicate(ctx context.Context, c *corpus.Corpus, t semanticTarget, dir string, h *Handle, seed int64, label string) (*semanticSide, error) {
	onCommit, hb, stop := ExtractionLines(t.Backend, label, len(c.Docs), func(s string) { h.Logf("%s", s) })
	defer stop()
	sum, err := extract.Run(ctx, c.Docs, extract.Options{Client: profileClient(t.profile), Backend: t.Backend, BaseURL: t.BaseURL, Model: t.Model,
		OutDir: dir, Concurrency: g.Concurrency, MaxRepairs: g.repairs(), MaxTokens: g.MaxTokens, RequestTimeout: g.RequestTimeout.Duration,
		TimeoutRetries: t.timeoutRetries, OnCommit: onCommit, Progress: hb, Temperature: g.Temperature, Seed: seed})
	if err != nil {
		return nil, err
	}
	rep, err := eval.EvaluateFiles(c.Dir, filepath.Join(dir, extract.ClaimsFile), 0)
	if err != nil {
		return nil, err
	}
	prog, err := extract.ReadCurrentProgress(dir)
	if err != nil {
		return nil, err
	}
	replies := map[string][2]int{}
	for id, p := range prog {
		replies[id] = [2]int{p.Replies, p.SchemaValid}
	}
	return &semanticSide{Schema: SemanticSideSchema, Target: t, OutDir: dir, Stats: sum.Stats, Report: rep, Replies: replies}, nil
}

// ExtractionLines are the progress lines of one extraction of total
// documents, written through logf as plain lines (a terminal or not): on a
// resume first what the earlier run left ("prod: 8 of 48 documents done
// from the interrupted run, resuming 40"), then one per finished document
// counting on from those ("prod: document 9/48 (bakery) done: 1 claim, 3
// rejects, about 4 min left ...", label naming it), and a heartbeat with
// the sentences done whenever no line was written for sideHeartbeatEvery
// (15 s). Pass onCommit and progress as the run's
// extract.Options OnCommit and Progress; call stop when the run returns.
// The semantic gate and 'hiro extract' both use it.
func ExtractionLines(backend, label string, total int, logf func(string)) (onCommit func(extract.DocProgress), progress extract.Progress, stop func()) {
	hb := &sideProgress{backend: backend, label: label, docsTotal: total, start: time.Now(), logf: logf}
	hb.noteLine(hb.start)
	onCommit = func(dp extract.DocProgress) {
		now := time.Now()
		logf(docProgressLine(label, int(hb.docsDone.Add(1)), total, dp) + hb.eta(now))
		hb.noteLine(now)
	}
	done := make(chan struct{})
	go hb.beat(done, sideHeartbeatEvery, logf)
	var once sync.Once
	return onCommit, hb, func() { once.Do(func() { close(done) }) }
}

// sideHeartbeatEvery is how long a side's extraction may go without a
// progress line before it says how far it is: one document through a
// model on a loaded CPU takes a minute or more, and a silent minute
// reads as a hang.
var sideHeartbeatEvery = 15 * time.Second

// sideProgress counts one side's extracted sentences (it is the run's
// extract.Progress) and finished documents, for the heartbeat line.
type sideProgress struct {
	backend         string
	docsTotal       int
	label           string       // names the side in the resume line
	logf            func(string) // the resume line; nil writes none
	start           time.Time
	docsDone        atomic.Int64
	sentences, done atomic.Int64
	lastLine        atomic.Int64 // unix nanoseconds of the last line written
}

// Start counts the documents an earlier run finished as done (a resume
// reuses them) and says so in a line before the first new one.
func (p *sideProgress) Start(total, reused int) {
	p.sentences.Store(int64(total))
	p.docsDone.Store(int64(reused))
	if reused > 0 && p.logf != nil {
		p.logf(resumeLine(p.label, reused, p.docsTotal))
		p.noteLine(time.Now())
	}
}
func (p *sideProgress) Add(n int) { p.done.Add(int64(n)) }
func (p *sideProgress) Finish()   {}

// resumeLine says what a resumed extraction reuses: "prod: 8 of 48
// documents done from the interrupted run, resuming 40"; with nothing
// left, "prod: 48 of 48 documents done by an earlier run, nothing left to
// extract".
func resumeLine(backend string, reused, total int) string {
	if reused >= total {
		return fmt.Sprintf("%s: %d of %s done by an earlier run, nothing left to extract", backend, reused, account.Plural(total, "document", "documents"))
	}
	return fmt.Sprintf("%s: %d of %s done from the interrupted run, resuming %d", backend, reused, account.Plural(total, "document", "documents"), total-reused)
}

// noteLine records that a progress line was written at now.
func (p *sideProgress) noteLine(now time.Time) { p.lastLine.Store(now.UnixNano()) }

// line is the heartbeat: "prod: 12 of 48 sentences extracted (2 of 5
// documents done), 1m10s so far, about 4 min left for this side at this
// rate".
func (p *sideProgress) line(now time.Time) string {
	return fmt.Sprintf("%s: %d of %d sentences extracted (%d of %d documents done), %s so far%s", p.backend,
		p.done.Load(), p.sentences.Load(), p.docsDone.Load(), p.docsTotal, now.Sub(p.start).Round(time.Second), p.eta(now))
}

// eta is the side's time left at its rate so far, in sentences:
// ", about 4 min left for this side at this rate"; "" before the first
// sentence is done and after the last.
func (p *sideProgress) eta(now time.Time) string {
	return etaText(now.Sub(p.start), p.done.Load(), p.sentences.Load())
}

// etaText is eta's words for done of total after elapsed.
func etaText(elapsed time.Duration, done, total int64) string {
	if done <= 0 || done >= total || elapsed <= 0 {
		return ""
	}
	left := time.Duration(float64(elapsed) * float64(total-done) / float64(done))
	return ", about " + roughDuration(left) + " left for this side at this rate"
}

// roughDuration is d as a person estimates it: seconds under a minute,
// whole minutes under an hour, then hours and minutes ("1h05m").
func roughDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(1, int(d.Round(time.Second)/time.Second)))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
	m := int(d.Round(time.Minute) / time.Minute)
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}

// beat writes the heartbeat line through logf whenever no line was
// written for every, until stop is closed.
func (p *sideProgress) beat(stop <-chan struct{}, every time.Duration, logf func(string)) {
	t := time.NewTicker(every / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			if now.Sub(time.Unix(0, p.lastLine.Load())) >= every {
				logf(p.line(now))
				p.noteLine(now)
			}
		}
	}
}

// docProgressLine is the progress line of one finished document of a
// side: "cand: document 2/5 (bakery) done: 1 claim, 3 rejects".
func docProgressLine(backend string, n, total int, dp extract.DocProgress) string {
	return fmt.Sprintf("%s: document %d/%d (%s) %s: %s, %s", backend, n, total, dp.DocID, dp.Status,
		account.Plural(dp.Claims, "claim", "claims"), account.Plural(dp.Rejects, "reject", "rejects"))
}

// Prepare computes production's baseline while production still serves,
// or finds it cached under the same key. Only an exclusive candidate needs
// this up front (production is stopped while the candidate runs);
// otherwise Run asks production itself, so a campaign that fails early
// costs production nothing. A baseline that cannot be had is remembered
// and makes Run a harness error.
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
	side, cached, err := g.loadAndRunProduction(ctx, h)
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

func (g *SemanticGate) loadAndRunProduction(ctx context.Context, h *Handle) (*semanticSide, bool, error) {
	c, err := corpus.Load(g.Corpus)
	if err != nil {
		return nil, false, fmt.Errorf("semantic: %w", err)
	}
	return g.productionSide(ctx, c, h)
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
	t0 := time.Now()
	defer h.Waited(t0)
	pctx, release := h.guardProduction(ctx)
	prod, cached, err := g.loadAndRunProduction(pctx, h)
	release()
	if lost := h.lostProduction(pctx, err); lost != nil && ctx.Err() == nil {
		return lost
	}
	if err == nil {
		var c *corpus.Corpus
		if c, err = corpus.Load(g.Corpus); err == nil {
			var cand *semanticSide
			cand, err = g.runSide(ctx, c, semanticTarget{Backend: h.Candidate.Name, BaseURL: r.Profile.BaseURL, Model: r.Profile.Model, profile: r.Profile},
				semanticCandidateDir(h.Dir, h.GateID, h.Candidate.Name), h)
			if err != nil {
				err = fmt.Errorf("semantic: candidate: %w", err)
			} else {
				eg.Semantic, err = g.compare(c, cand, prod, cached, seedParts(h.Fingerprints))
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return harnessErr("%v", err)
	}
	switch eg.Semantic.Outcome {
	case evidence.StatusFailed:
		return fmt.Errorf("semantic checks failed: %s", strings.Join(eg.Semantic.Reasons, "; "))
	case evidence.StatusInconclusive:
		return fmt.Errorf("%w: %s", ErrInconclusive, strings.Join(eg.Semantic.Reasons, "; "))
	}
	return nil
}

// seedParts are the input fingerprints the comparisons' seeds derive
// from (stats.SeedFrom, with the measure's name): the same plan, prompts,
// schemas, corpus, artifact, candidate profile and production
// configuration give the same seeds, so the same per-document scores give
// the same intervals byte for byte.
func seedParts(fp *evidence.Fingerprints) []string {
	if fp == nil {
		return nil
	}
	return []string{fp.Plan, fp.Prompts, fp.Schemas, fp.Corpus, fp.ArtifactManifest, fp.CandidateProfile, fp.ProductionConfigBefore}
}

// semanticSeeding is StatMethod.Seeding's text.
const semanticSeeding = "each measure's seed is the first 16 bytes of SHA-256(\"hiro.stats/seed\", then the fingerprints plan, prompts, schemas, corpus, artifact_manifest, candidate_profile, production_config_before and the measure's name, each followed by a zero byte); PCG generator"

// semanticTest is StatMethod.Test's text.
const semanticTest = "paired bootstrap over documents of the micro-averaged difference (candidate - production), expanded percentile bounds (each the level quantile, level = Φ(-sqrt(n/(n-1))·t_{n-1}(confidence)), Hesterberg 2015); one-sided non-inferiority with the tolerance as margin: passed when the lower bound is above -margin, failed when the upper bound is below it, else inconclusive"

// compare decides: every rate (F1, grounding, schema-valid) must reach
// its floor, the candidate must finish every document, and each rate is
// tested for non-inferiority against production's with the tolerance as
// margin (paired bootstrap over documents, package stats). The outcome
// is failed when a floor, the documents or a test failed, inconclusive
// when none failed and a test could not decide, else passed.
func (g *SemanticGate) compare(c *corpus.Corpus, cand, prod *semanticSide, cached bool, seed []string) (*evidence.SemanticResult, error) {
	cs, ps := cand.Report.Overall, prod.Report.Overall
	r := &evidence.SemanticResult{
		Floors:    evidence.SemanticFloors{MinF1: g.MinF1, MinGrounding: g.MinGrounding, MinSchemaValid: g.MinSchemaValid},
		Tolerance: g.Tolerance, CorpusName: c.Manifest.Name, CorpusDigest: c.Manifest.Digest, ProductionCached: cached,
		CandidateScores: evidence.Scores(cs), ProductionScores: evidence.Scores(ps),
		CandidateStats: evidence.ExtractionStats(cand.Stats), ProductionStats: evidence.ExtractionStats(prod.Stats),
		Paths:   &evidence.SemanticPaths{Candidate: cand.OutDir, Production: prod.OutDir},
		Reasons: []string{}, Checks: []evidence.SemanticCheck{}, Differences: []evidence.DocDiff{},
		Method: &evidence.StatMethod{Test: semanticTest, Resamples: g.Resamples, Confidence: g.Confidence, Power: stats.DefaultPower, Seeding: semanticSeeding,
			Temperature: g.Temperature},
	}
	if g.Replicates > 1 {
		r.Method.Replicates = g.Replicates
	}
	sv := func(rep *eval.Report) float64 {
		if rep.SchemaValidRate == nil {
			return 0
		}
		return *rep.SchemaValidRate
	}
	failed := false
	add := func(name string, value, limit float64) {
		ok := value >= limit-1e-9
		r.Checks = append(r.Checks, evidence.SemanticCheck{Name: name, Value: value, Limit: limit, Passed: ok})
		if !ok {
			failed = true
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s: candidate %.4f is below %.4f", name, value, limit))
		}
	}
	add("f1 floor", cs.F1, g.MinF1)
	add("grounding_rate floor", cs.GroundingRate, g.MinGrounding)
	add("schema_valid_rate floor", sv(cand.Report), g.MinSchemaValid)
	// A document the candidate could not finish is a failure of its own.
	finished := 1.0
	if n := cand.Stats.DocumentsDone + cand.Stats.DocumentsFailed; n > 0 {
		finished = float64(cand.Stats.DocumentsDone) / float64(n)
	}
	add("documents finished", finished, 1)
	prodDocs := map[string]eval.DocScores{}
	for _, d := range prod.Report.Documents {
		prodDocs[d.DocID] = d
	}
	var shares [3][2][]stats.Ratio // measure, side (candidate, production)
	for _, d := range cand.Report.Documents {
		pd, ok := prodDocs[d.DocID]
		cc, pc := docCounts(d.Scores, cand.Replies[d.DocID]), docCounts(pd.Scores, prod.Replies[d.DocID])
		r.Differences = append(r.Differences, evidence.DocDiff{
			DocID: d.DocID, CandidateF1: d.F1, ProductionF1: pd.F1, DeltaF1: round4(d.F1 - pd.F1),
			CandidateGrounding: d.GroundingRate, ProductionGrounding: pd.GroundingRate, DeltaGrounding: round4(d.GroundingRate - pd.GroundingRate),
			CandidateClaims: d.Predicted, ProductionClaims: pd.Predicted, CandidateCounts: cc, ProductionCounts: pc,
		})
		if !ok {
			continue // production has no score for it: no pair
		}
		for side, k := range []*evidence.DocCounts{cc, pc} {
			shares[0][side] = append(shares[0][side], stats.Ratio{Num: float64(2 * k.Matched), Den: float64(k.Predicted + k.Gold)})
			shares[1][side] = append(shares[1][side], stats.Ratio{Num: float64(k.Grounded), Den: float64(k.Predicted)})
			shares[2][side] = append(shares[2][side], stats.Ratio{Num: float64(k.SchemaValid), Den: float64(k.Replies)})
		}
	}
	undecided := false
	for i, m := range semanticMeasures {
		cmp, err := g.compareMeasure(m, shares[i][0], shares[i][1], seed)
		if err != nil {
			return nil, fmt.Errorf("semantic: %s: %w", m, err)
		}
		r.Comparisons = append(r.Comparisons, cmp)
		switch cmp.Outcome {
		case evidence.StatusFailed:
			failed = true
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s vs production: %s", m, cmp.Decision))
		case evidence.StatusInconclusive:
			undecided = true
			r.Reasons = append(r.Reasons, fmt.Sprintf("%s vs production: %s", m, cmp.Decision))
		}
	}
	switch {
	case failed:
		r.Outcome = evidence.StatusFailed
	case undecided:
		r.Outcome = evidence.StatusInconclusive
	default:
		r.Outcome = evidence.StatusPassed
	}
	r.Passed = r.Outcome == evidence.StatusPassed
	r.CandidateRejects = topRejects(cand.extractionDirs()...)
	r.ProductionRejects = topRejects(prod.extractionDirs()...)
	r.Summary = fmt.Sprintf("Corpus %s (%s): candidate F1 %.3f, grounding %.3f; production F1 %.3f, grounding %.3f (tolerance %.2f%s).",
		r.CorpusName, termtext.Plural(len(r.Differences), "document", "documents"), cs.F1, cs.GroundingRate, ps.F1, ps.GroundingRate, r.Tolerance, cachedNote(cached))
	return r, nil
}

// semanticMeasures are the gated measures, in the order of compare's
// shares.
var semanticMeasures = []string{"f1", "grounding_rate", "schema_valid_rate"}

// docCounts are one side's counts on one document (replies: replies and
// schema-valid replies).
func docCounts(s eval.Scores, replies [2]int) *evidence.DocCounts {
	return &evidence.DocCounts{Predicted: s.Predicted, Gold: s.Gold, Matched: s.Matched, Grounded: s.Grounded, Replies: replies[0], SchemaValid: replies[1]}
}

// compareMeasure is one measure's non-inferiority test.
func (g *SemanticGate) compareMeasure(measure string, cand, prod []stats.Ratio, seed []string) (evidence.Comparison, error) {
	sd := stats.SeedFrom(append(append([]string{}, seed...), measure)...)
	d, err := stats.PairedBootstrap(cand, prod, stats.Options{Resamples: g.Resamples, Confidence: g.Confidence, Seed: sd})
	if err != nil {
		return evidence.Comparison{}, err
	}
	out := stats.NonInferior(d, g.Tolerance)
	// An undecided comparison says how many documents would decide at
	// the difference it observed; a decided one, how many a candidate
	// truly equal to production needs (the plan for the next corpus).
	need := stats.DocumentsNeeded(d.PerDocumentSD(), g.Tolerance, d.Confidence, stats.DefaultPower)
	if out == stats.Inconclusive {
		need = stats.DocumentsToDecide(d, g.Tolerance)
	}
	return evidence.Comparison{
		Measure: measure, Candidate: round6(d.Candidate), Production: round6(d.Production), Difference: round6(d.Estimate),
		Lower: round6(d.Lower), Upper: round6(d.Upper), Level: round6(d.Level), StandardError: round6(d.SE), Margin: g.Tolerance,
		Outcome: string(out), Decision: decisionWords(d, g.Tolerance, out), Seed: sd.String(),
		DocumentsNeeded: need,
		DetectableDrop:  round6(stats.DetectableDrop(d.PerDocumentSD(), d.Documents, d.Confidence, stats.DefaultPower)),
		SampleSize:      stats.SampleSizeSentence(d, g.Tolerance),
	}, nil
}

// decisionWords says a comparison's decision in words.
func decisionWords(d stats.Difference, margin float64, out stats.Outcome) string {
	conf := fmt.Sprintf("%.0f %%", 100*d.Confidence)
	switch out {
	case stats.Passed:
		return fmt.Sprintf("no worse than production by more than %.2f: at %s confidence the difference is at least %s", margin, conf, stats.Signed(d.Lower, 3))
	case stats.Failed:
		return fmt.Sprintf("worse than production by more than %.2f: at %s confidence the difference is at most %s", margin, conf, stats.Signed(d.Upper, 3))
	}
	if k := stats.MinDocuments(d.Confidence); d.Documents < k {
		return fmt.Sprintf("cannot tell: %s %s fewer than the %d a paired comparison at %s needs to decide anything",
			termtext.Plural(d.Documents, "document", "documents"), plural(d.Documents, "is", "are"), k, conf)
	}
	return fmt.Sprintf("cannot tell: the difference lies between %s and %s (%s bounds), which holds the margin %s; more documents would decide", stats.Signed(d.Lower, 3), stats.Signed(d.Upper, 3), conf, stats.Signed(-margin, 2))
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// safeName keeps a backend name usable as a directory name.
// semanticCandidateDir is the folder of the semantic gate's candidate
// extraction in the campaign's evidence folder dir:
// semantic/<gate id>/candidate-<profile>, without stutters (issue 26,
// T20): a gate whose id is its kind (a [[gates]] without id) gets no
// folder of its own (semantic/candidate-<profile>), and a profile named
// candidate-... is not prefixed again (semantic/candidate-weak, not
// semantic/semantic/candidate-candidate-weak). The evidence records the
// folder (semantic.paths.candidate) and its readers take it from there,
// so evidence written under the older layout still finds its files.
func semanticCandidateDir(dir, gateID, profile string) string {
	dir = filepath.Join(dir, "semantic")
	if gateID != "" && gateID != "semantic" {
		dir = filepath.Join(dir, gateID)
	}
	name := safeName(profile)
	if name != "candidate" && !strings.HasPrefix(name, "candidate-") {
		name = "candidate-" + name
	}
	return filepath.Join(dir, name)
}

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

func cachedNote(cached bool) string {
	if cached {
		return "; production's result reused by fingerprint"
	}
	return ""
}

// extractionDirs are the side's extraction directories: its replicates'
// else OutDir.
func (s *semanticSide) extractionDirs() []string {
	if len(s.ReplicateDirs) > 0 {
		return s.ReplicateDirs
	}
	return []string{s.OutDir}
}

// maxRejectReasons is how many reject reasons the evidence keeps per side.
const maxRejectReasons = 5

// topRejects counts the reason codes of the current rejects in
// extraction directories (superseded ones left out), most frequent
// first, each with its first example; nil when there are none or they
// cannot be read.
func topRejects(dirs ...string) []evidence.RejectReason {
	var rs []extract.Reject
	for _, dir := range dirs {
		if dir == "" {
			return nil
		}
		r, err := extract.ReadCurrentRejects(dir)
		if err != nil {
			return nil
		}
		rs = append(rs, r...)
	}
	idx := map[string]int{}
	var out []evidence.RejectReason
	for _, r := range rs {
		for _, why := range r.Reasons {
			i, ok := idx[why.Code]
			if !ok {
				ex := why.Detail
				if t := strings.TrimSpace(r.Text); t != "" {
					ex = fmt.Sprintf("%q: %s", t, why.Detail)
				}
				i = len(out)
				idx[why.Code] = i
				out = append(out, evidence.RejectReason{Code: why.Code, Example: ex})
			}
			out[i].Count++
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	if len(out) > maxRejectReasons {
		out = out[:maxRejectReasons]
	}
	return out
}

// productionRerun: the production side is the gate's first step, and
// the only one a loss of production cuts short (guardProduction), so a
// re-run redoes production's extraction (documents it finished before
// the loss are kept, failed ones redone) and then runs the candidate's
// side for the first time.
func (g *SemanticGate) productionRerun() string {
	return "its production side (production's extraction of the corpus; the candidate's side had not started)"
}
