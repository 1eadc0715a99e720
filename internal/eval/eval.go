package eval

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hiro-dev/hiro/internal/corpus"
)

// ReportSchema tags the report JSON.
const ReportSchema = "hiro.eval/v1"

// DefaultThreshold is the minimum similarity for a predicted claim to
// match a gold claim: token F1 of 0.5 means at least half the tokens agree
// both ways (e.g. "The bridge cost 310 million euros" against "The Halden
// Bridge cost 310 million euros" is 0.92; "The bridge is long" against
// the same gold is 0.33).
const DefaultThreshold = 0.5

// Normalization describes the similarity for the report.
const Normalization = "tokens: maximal runs of letters and digits after folding curly quotes and dashes, collapsing white space and lower-casing (corpus.Tokens); similarity: F1 of the token multisets, 2*|common| / (|predicted| + |gold|)"

// Matching describes the matching for the report.
const Matching = "one-to-one within each document, greedy: all pairs with similarity >= threshold sorted by similarity (descending), then predicted index, then gold index (both ascending, file order); a pair is taken when neither claim is matched yet"

// PredictedClaim is the part of a claims.jsonl line that scoring reads.
type PredictedClaim struct {
	DocID         string  `json:"doc_id"`
	SentenceIndex int     `json:"sentence_index"`
	SentenceSpan  *[2]int `json:"sentence_span"`
	Text          string  `json:"text"`
	Quote         string  `json:"quote"`
	// Line is the claim's line number in its file (1-based), 0 when the
	// claim did not come from a file.
	Line int `json:"-"`
}

// RunStats is the part of extract's stats.json that scoring reads: the
// replies counts, and what tells whether the file still describes the
// claims beside it (Claims, Checkpoints, ClaimsBytes; nil when absent, as
// in a stats.json of an older hiro, which has no checkpoints).
type RunStats struct {
	Replies            int    `json:"replies"`
	SchemaValidReplies int    `json:"schema_valid_replies"`
	Claims             *int   `json:"claims"`
	Checkpoints        *int   `json:"checkpoints"`
	ClaimsBytes        *int64 `json:"claims_bytes"`
}

// Scores are one set of measures. Rates with a zero denominator are 0.
type Scores struct {
	// Predicted and Gold claims, and Matched pairs (one-to-one).
	Predicted int `json:"predicted"`
	Gold      int `json:"gold"`
	Matched   int `json:"matched"`
	// Precision = Matched/Predicted; Coverage = Matched/Gold (recall);
	// F1 their harmonic mean.
	Precision float64 `json:"precision"`
	Coverage  float64 `json:"coverage"`
	F1        float64 `json:"f1"`
	// Grounded claims have their quote in the source: in the sentence at
	// sentence_span when it is a valid span of the document, else anywhere
	// in the document (exact or white space/case normalised).
	// GroundingRate = Grounded/Predicted.
	Grounded      int     `json:"grounded"`
	GroundingRate float64 `json:"grounding_rate"`
	// Duplicates are claims whose normalised text (corpus.NormalizeClaim)
	// equals an earlier claim of the same document; DuplicateRate =
	// Duplicates/Predicted.
	Duplicates    int     `json:"duplicates"`
	DuplicateRate float64 `json:"duplicate_rate"`
}

// DocScores are one document's scores.
type DocScores struct {
	DocID string `json:"doc_id"`
	Scores
}

// Report is the output of Evaluate. Same inputs, same bytes: documents are
// sorted by id, rates rounded to 6 decimals, no time or path is included.
type Report struct {
	Schema string `json:"schema"`
	// Corpus names the corpus (manifest name and digest); ClaimsSHA256 is
	// the digest of the claims scored: the file, up to the last checkpoint
	// of progress.jsonl when one is beside it (see UncommittedClaims).
	CorpusName   string `json:"corpus_name"`
	CorpusDigest string `json:"corpus_digest"`
	ClaimsSHA256 string `json:"claims_sha256,omitempty"`
	// Threshold, Normalization and Matching state the method.
	Threshold     float64 `json:"threshold"`
	Normalization string  `json:"normalization"`
	Matching      string  `json:"matching"`
	// Overall is micro-averaged: counts summed over documents, then rates.
	Overall Scores `json:"overall"`
	// Replies and SchemaValidReplies come from the run's stats.json;
	// SchemaValidRate is their ratio, null when no stats file was found
	// or when it does not describe the claims scored (StatsIgnored).
	Replies            int      `json:"replies"`
	SchemaValidReplies int      `json:"schema_valid_replies"`
	SchemaValidRate    *float64 `json:"schema_valid_rate"`
	// StatsIgnored says why the stats.json beside the claims was not
	// used: its counts disagree with the claims and progress.jsonl beside
	// it (a later extract run was killed before it rewrote stats.json,
	// or the files come from different runs).
	StatsIgnored string `json:"stats_ignored,omitempty"`
	// UncommittedClaims counts claim lines after the last checkpoint of
	// progress.jsonl (a document written in part by a run that was
	// killed): they are not scored, and the next extract run drops them.
	UncommittedClaims int `json:"uncommitted_claims,omitempty"`
	// Documents has every document of the corpus that was scored, sorted
	// by id.
	Documents []DocScores `json:"documents"`
	// Missing lists, sorted, the corpus's documents that the run beside
	// the claims file (its progress.jsonl) has no finished extraction
	// record of: a sharded run's other shards, an unfinished run. They are
	// left out of Documents and Overall (scoring them would count their
	// gold claims as missed); absent when every document has a record, or
	// when no progress.jsonl is beside the claims (then every document is
	// scored). See Options.ScoreMissing.
	Missing []string `json:"missing,omitempty"`
}

// ProgressFile is the name of the extraction's per-document record file
// (package extract's progress.jsonl) that EvaluateFiles reads beside the
// claims file to tell a document with no claims from one never extracted.
const ProgressFile = "progress.jsonl"

// Options are EvaluateFiles' choices.
type Options struct {
	// Threshold is the similarity a match needs; 0 means DefaultThreshold.
	Threshold float64
	// ScoreMissing scores documents with no extraction record as
	// extracted with no claims (every gold claim missed) instead of
	// leaving them out; they are still listed in Report.Missing.
	ScoreMissing bool
}

// Similarity is the token F1 of a and b (see Normalization), in [0, 1].
func Similarity(a, b string) float64 { return tokenF1(corpus.Tokens(a), corpus.Tokens(b)) }

func tokenF1(a, b []string) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	count := map[string]int{}
	for _, t := range a {
		count[t]++
	}
	common := 0
	for _, t := range b {
		if count[t] > 0 {
			count[t]--
			common++
		}
	}
	return 2 * float64(common) / float64(len(a)+len(b))
}

// Pair is one matched predicted/gold pair (indexes within the document's
// lists, in file order).
type Pair struct {
	Pred, Gold int
	Score      float64
}

// Match pairs predicted with gold claims one-to-one (see Matching).
func Match(pred, gold []string, threshold float64) []Pair {
	pt := make([][]string, len(pred))
	for i, p := range pred {
		pt[i] = corpus.Tokens(p)
	}
	gt := make([][]string, len(gold))
	for j, g := range gold {
		gt[j] = corpus.Tokens(g)
	}
	var cands []Pair
	for i := range pt {
		for j := range gt {
			if s := tokenF1(pt[i], gt[j]); s >= threshold && s > 0 {
				cands = append(cands, Pair{i, j, s})
			}
		}
	}
	sort.Slice(cands, func(a, b int) bool {
		x, y := cands[a], cands[b]
		if x.Score != y.Score {
			return x.Score > y.Score
		}
		if x.Pred != y.Pred {
			return x.Pred < y.Pred
		}
		return x.Gold < y.Gold
	})
	usedP, usedG := map[int]bool{}, map[int]bool{}
	var out []Pair
	for _, c := range cands {
		if !usedP[c.Pred] && !usedG[c.Gold] {
			usedP[c.Pred], usedG[c.Gold] = true, true
			out = append(out, c)
		}
	}
	return out
}

// Evaluate scores claims against c's gold. stats may be nil (no
// schema-valid rate). A claim for a document the corpus does not have is
// an error: the claims come from another corpus.
func Evaluate(c *corpus.Corpus, claims []PredictedClaim, stats *RunStats, threshold float64) (*Report, error) {
	return evaluate(c, claims, stats, threshold, nil, false)
}

// evaluate is Evaluate; done, when not nil, holds the documents with a
// finished extraction record: the others are reported as Missing and,
// unless scoreMissing, not scored.
func evaluate(c *corpus.Corpus, claims []PredictedClaim, stats *RunStats, threshold float64, done map[string]bool, scoreMissing bool) (*Report, error) {
	if !(threshold > 0 && threshold <= 1) { // NaN too
		return nil, fmt.Errorf("threshold %v: must be in (0, 1]", threshold)
	}
	docs := map[string]corpus.Document{}
	for _, d := range c.Docs {
		docs[d.ID] = d
	}
	pred := map[string][]PredictedClaim{}
	for i, p := range claims {
		if _, ok := docs[p.DocID]; !ok {
			return nil, fmt.Errorf("%s is for document %q, which corpus %s does not have: score claims against the corpus they were extracted from", claimWhere(i, p), p.DocID, c.Manifest.Name)
		}
		if sp := p.SentenceSpan; sp != nil && sp[1] > len(docs[p.DocID].Text) {
			return nil, fmt.Errorf("%s: sentence_span [%d, %d] ends after document %q (%d bytes): the claims were not extracted from this corpus's text", claimWhere(i, p), sp[0], sp[1], p.DocID, len(docs[p.DocID].Text))
		}
		pred[p.DocID] = append(pred[p.DocID], p)
	}
	gold := map[string][]string{}
	for _, g := range c.Gold {
		gold[g.DocID] = append(gold[g.DocID], g.Text)
	}
	r := &Report{Schema: ReportSchema, CorpusName: c.Manifest.Name, CorpusDigest: c.Manifest.Digest,
		Threshold: threshold, Normalization: Normalization, Matching: Matching, Documents: []DocScores{}}
	var tot Scores
	for _, d := range c.Docs {
		if done != nil && !done[d.ID] && len(pred[d.ID]) == 0 {
			r.Missing = append(r.Missing, d.ID)
			if !scoreMissing {
				continue
			}
		}
		ps := pred[d.ID]
		texts := make([]string, len(ps))
		for i, p := range ps {
			texts[i] = p.Text
		}
		s := Scores{Predicted: len(ps), Gold: len(gold[d.ID]), Matched: len(Match(texts, gold[d.ID], threshold))}
		seen := map[string]bool{}
		src := string(d.Text)
		for _, p := range ps {
			where := src
			if sp := p.SentenceSpan; sp != nil && sp[0] >= 0 && sp[0] <= sp[1] && sp[1] <= len(src) {
				where = src[sp[0]:sp[1]]
			}
			if _, _, _, ok := corpus.FindQuote(where, p.Quote); ok {
				s.Grounded++
			}
			k := corpus.NormalizeClaim(p.Text)
			if seen[k] {
				s.Duplicates++
			}
			seen[k] = true
		}
		s.rates()
		r.Documents = append(r.Documents, DocScores{DocID: d.ID, Scores: s})
		tot.Predicted += s.Predicted
		tot.Gold += s.Gold
		tot.Matched += s.Matched
		tot.Grounded += s.Grounded
		tot.Duplicates += s.Duplicates
	}
	tot.rates()
	r.Overall = tot
	sort.Strings(r.Missing)
	if stats != nil {
		r.Replies, r.SchemaValidReplies = stats.Replies, stats.SchemaValidReplies
		rate := ratio(stats.SchemaValidReplies, stats.Replies)
		r.SchemaValidRate = &rate
	}
	return r, nil
}

// claimWhere names claim i for messages: its line when it has one.
func claimWhere(i int, p PredictedClaim) string {
	if p.Line > 0 {
		return fmt.Sprintf("claim on line %d", p.Line)
	}
	return fmt.Sprintf("claim %d", i+1)
}

func (s *Scores) rates() {
	s.Precision = ratio(s.Matched, s.Predicted)
	s.Coverage = ratio(s.Matched, s.Gold)
	if s.Precision+s.Coverage > 0 {
		s.F1 = round6(2 * s.Precision * s.Coverage / (s.Precision + s.Coverage))
	}
	s.GroundingRate = ratio(s.Grounded, s.Predicted)
	s.DuplicateRate = ratio(s.Duplicates, s.Predicted)
}

// ratio is n/d rounded to 6 decimals, 0 when d is 0.
func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return round6(float64(n) / float64(d))
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// EvaluateFiles loads and verifies the corpus at corpusDir, reads the
// claims at claimsPath and, when present, stats.json beside it, and scores
// them with threshold (0 means DefaultThreshold).
func EvaluateFiles(corpusDir, claimsPath string, threshold float64) (*Report, error) {
	return EvaluateRun(corpusDir, claimsPath, Options{Threshold: threshold})
}

// EvaluateRun is EvaluateFiles that also reads progress.jsonl beside the
// claims file, when present: a document with no finished ("done") record
// there and no claims is listed in Report.Missing and, unless
// o.ScoreMissing, not scored; claim lines after its last checkpoint (a
// document written in part by a killed run) are not scored
// (Report.UncommittedClaims). A stats.json whose counts disagree with the
// claims and checkpoints beside it (a later run was killed before
// rewriting it) is not used: SchemaValidRate stays null and
// Report.StatsIgnored says why. A merged run (hiro extract merge) has a
// record of every document of its shards, so it scores as the unsharded
// run does.
func EvaluateRun(corpusDir, claimsPath string, o Options) (*Report, error) {
	threshold := o.Threshold
	if threshold == 0 {
		threshold = DefaultThreshold
	}
	c, err := corpus.Load(corpusDir)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(claimsPath)
	if err != nil {
		return nil, fmt.Errorf("claims: %w", err)
	}
	dir := filepath.Dir(claimsPath)
	prog, err := readProgress(filepath.Join(dir, ProgressFile))
	if err != nil {
		return nil, err
	}
	uncommitted := 0
	if prog != nil && prog.records > 0 && prog.claimsBytes >= 0 {
		switch n := int64(len(raw)); {
		case n < prog.claimsBytes:
			return nil, fmt.Errorf("%s is %d bytes but the last checkpoint of %s beside it records %d: the files are not of one extract run; score the claims.jsonl of the run whose progress.jsonl is beside it", claimsPath, n, ProgressFile, prog.claimsBytes)
		case n > prog.claimsBytes:
			// A run killed between writing a document's claims and its
			// checkpoint: that document is not committed.
			uncommitted = countLines(raw[prog.claimsBytes:])
			raw = raw[:prog.claimsBytes]
		}
	}
	claims, err := parseClaims(raw, claimsPath)
	if err != nil {
		return nil, err
	}
	var stats *RunStats
	statsIgnored := ""
	if b, err := os.ReadFile(filepath.Join(dir, "stats.json")); err == nil {
		stats = &RunStats{}
		if err := json.Unmarshal(b, stats); err != nil {
			return nil, fmt.Errorf("stats.json beside %s: %w", claimsPath, err)
		}
		if statsIgnored = staleStats(stats, prog, len(claims), int64(len(raw))); statsIgnored != "" {
			stats = nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var done map[string]bool
	if prog != nil {
		done = prog.done
	}
	r, err := evaluate(c, claims, stats, threshold, done, o.ScoreMissing)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", claimsPath, err)
	}
	r.StatsIgnored, r.UncommittedClaims = statsIgnored, uncommitted
	sum := sha256.Sum256(raw)
	r.ClaimsSHA256 = hex.EncodeToString(sum[:])
	return r, nil
}

// progressInfo is what eval reads from progress.jsonl.
type progressInfo struct {
	// done holds every document with a record, true when one is "done".
	done map[string]bool
	// records counts the complete lines; claimsBytes is the claims.jsonl
	// size recorded by the last, -1 when it records none.
	records     int
	claimsBytes int64
}

// readProgress reads the progress file at path, nil when there is no such
// file. A last line without its newline was torn by a crash and is not a
// checkpoint (extract drops it on resume); any other line that is not a
// record is an error.
func readProgress(path string) (*progressInfo, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if i := bytes.LastIndexByte(raw, '\n'); i+1 < len(raw) {
		raw = raw[:i+1] // a torn last line
	}
	p := &progressInfo{done: map[string]bool{}}
	for n, line := range bytes.Split(raw, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var rec struct {
			DocID       string `json:"doc_id"`
			Status      string `json:"status"`
			ClaimsBytes *int64 `json:"claims_bytes"`
		}
		if err := json.Unmarshal(line, &rec); err != nil || rec.DocID == "" {
			if err == nil {
				err = errors.New("no doc_id")
			}
			return nil, fmt.Errorf("%s:%d: not a progress record: %w", path, n+1, err)
		}
		p.done[rec.DocID] = rec.Status == "done" || p.done[rec.DocID]
		p.records++
		p.claimsBytes = -1
		if rec.ClaimsBytes != nil {
			p.claimsBytes = *rec.ClaimsBytes
		}
	}
	return p, nil
}

// staleStats returns why stats (the stats.json beside the claims) does
// not describe the claims scored, "" when it does: its claim count, its
// checkpoint count (against progress.jsonl) or its claims.jsonl size
// disagree. An extract run killed with SIGKILL after committing
// documents leaves the stats.json of the run before it.
func staleStats(st *RunStats, prog *progressInfo, claims int, claimsBytes int64) string {
	var why []string
	if st.Checkpoints != nil && prog != nil && *st.Checkpoints != prog.records {
		why = append(why, fmt.Sprintf("it totals %d checkpoints, %s has %d", *st.Checkpoints, ProgressFile, prog.records))
	}
	if st.ClaimsBytes != nil && *st.ClaimsBytes != claimsBytes {
		why = append(why, fmt.Sprintf("it covers %d bytes of claims, the claims scored are %d bytes", *st.ClaimsBytes, claimsBytes))
	}
	if st.Claims != nil && *st.Claims != claims {
		why = append(why, fmt.Sprintf("it counts %d claims, the claims file has %d", *st.Claims, claims))
	}
	return strings.Join(why, "; ")
}

// countLines counts the non-blank lines of b.
func countLines(b []byte) int {
	n := 0
	for _, l := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	return n
}

// errRejectLine is parseClaimLine's answer to a line of rejects.jsonl
// (kind and reasons): the wrong file, not a malformed claim.
var errRejectLine = errors.New("a reject record, not a claim")

// ClaimLineShape says what parseClaims requires of each claims.jsonl line.
const ClaimLineShape = `one JSON object, as 'hiro extract' writes it: "doc_id" and "text" non-empty strings; "quote" a string; "sentence_index" an integer >= 0; "sentence_span" two integers [start, end], 0 <= start <= end (the last three optional)`

// parseClaims reads claims.jsonl strictly: a line that is not a claim
// object, lacks the document id or the claim text, or has a field of the
// wrong type is an error naming the file, the line and what is wrong,
// never a claim scored with zero values.
func parseClaims(raw []byte, path string) ([]PredictedClaim, error) {
	var out []PredictedClaim
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64*1024), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		p, err := parseClaimLine(line)
		if errors.Is(err, errRejectLine) {
			beside := filepath.Join(filepath.Dir(path), "claims.jsonl")
			return nil, fmt.Errorf("%s:%d is a reject record (it has \"kind\" and \"reasons\", as 'hiro extract' writes rejects.jsonl), not a claim: give --claims the claims file of the same run, %s (hiro eval scores claims; a reject is what extraction refused)", path, n, beside)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: not a claim: %s; expected %s", path, n, err, ClaimLineShape)
		}
		p.Line = n
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// parseClaimLine checks one line's shape and field types, then decodes it.
func parseClaimLine(line []byte) (PredictedClaim, error) {
	var p PredictedClaim
	if !json.Valid(line) {
		var v any
		err := json.Unmarshal(line, &v)
		return p, fmt.Errorf("the line is not valid JSON (%v)", err)
	}
	if line[0] != '{' {
		return p, fmt.Errorf("the line is %s, not a JSON object", jsonKind(line))
	}
	var f map[string]json.RawMessage
	if err := json.Unmarshal(line, &f); err != nil {
		return p, err
	}
	if _, kind := f["kind"]; kind {
		if _, reasons := f["reasons"]; reasons {
			return p, errRejectLine
		}
	}
	str := func(name string, required bool) (string, error) {
		v, ok := f[name]
		if !ok || string(v) == "null" {
			if required {
				return "", fmt.Errorf("%q is missing", name)
			}
			return "", nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", fmt.Errorf("%q is %s, not a string", name, jsonKind(v))
		}
		if required && strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("%q is empty", name)
		}
		return s, nil
	}
	var err error
	if p.DocID, err = str("doc_id", true); err != nil {
		return p, err
	}
	if p.Text, err = str("text", true); err != nil {
		return p, err
	}
	if p.Quote, err = str("quote", false); err != nil {
		return p, err
	}
	if v, ok := f["sentence_index"]; ok && string(v) != "null" {
		i, err := nonNegInt(v)
		if err != nil {
			return p, fmt.Errorf("%q is %s", "sentence_index", err)
		}
		p.SentenceIndex = i
	}
	if v, ok := f["sentence_span"]; ok && string(v) != "null" {
		var a []json.RawMessage
		if json.Unmarshal(v, &a) != nil || len(a) != 2 {
			return p, fmt.Errorf("%q is %s, not two integers [start, end]", "sentence_span", string(v))
		}
		var sp [2]int
		for k := range a {
			if sp[k], err = nonNegInt(a[k]); err != nil {
				return p, fmt.Errorf("%q %s is %s", "sentence_span", string(v), err)
			}
		}
		if sp[0] > sp[1] {
			return p, fmt.Errorf("%q %s ends before it starts", "sentence_span", string(v))
		}
		p.SentenceSpan = &sp
	}
	return p, nil
}

// nonNegInt decodes v as an integer >= 0; the error says what v is.
func nonNegInt(v json.RawMessage) (int, error) {
	var x float64
	if err := json.Unmarshal(v, &x); err != nil {
		return 0, fmt.Errorf("%s, not an integer", jsonKind(v))
	}
	if x != math.Trunc(x) || x < 0 || x > math.MaxInt32 {
		return 0, fmt.Errorf("%s, not an integer >= 0", string(v))
	}
	return int(x), nil
}

// jsonKind names the JSON type of a valid JSON value.
func jsonKind(v []byte) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "empty"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// Marshal renders the report as indented JSON with a final newline.
func Marshal(r *Report) ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Text renders the report for people: one line per document, then the
// overall line.
func Text(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "corpus %s (%s), threshold %.2f\n", r.CorpusName, shortHash(r.CorpusDigest), r.Threshold)
	fmt.Fprintf(&b, "%-28s %5s %5s %5s %9s %8s %6s %9s %9s\n", "document", "pred", "gold", "match", "precision", "coverage", "f1", "grounding", "duplicate")
	line := func(name string, s Scores) {
		fmt.Fprintf(&b, "%-28s %5d %5d %5d %9.3f %8.3f %6.3f %9.3f %9.3f\n", name, s.Predicted, s.Gold, s.Matched, s.Precision, s.Coverage, s.F1, s.GroundingRate, s.DuplicateRate)
	}
	for _, d := range r.Documents {
		line(d.DocID, d.Scores)
	}
	line("overall", r.Overall)
	if len(r.Missing) > 0 {
		fmt.Fprintf(&b, "missing: %d document(s) with no extraction record, not scored: %s\n", len(r.Missing), strings.Join(r.Missing, ", "))
	}
	if r.SchemaValidRate != nil {
		fmt.Fprintf(&b, "schema-valid replies %d of %d (%.3f)\n", r.SchemaValidReplies, r.Replies, *r.SchemaValidRate)
	} else if r.StatsIgnored != "" {
		fmt.Fprintf(&b, "schema-valid rate: not reported: the stats.json beside the claims file does not describe them (%s)\n", r.StatsIgnored)
	} else {
		b.WriteString("schema-valid rate: no stats.json beside the claims file\n")
	}
	if r.UncommittedClaims > 0 {
		fmt.Fprintf(&b, "uncommitted: %d claim line(s) after the last checkpoint (a document written in part by a killed run), not scored\n", r.UncommittedClaims)
	}
	return b.String()
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
