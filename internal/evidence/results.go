package evidence

// Typed gate results (schema v2). Each gate kind that has more to say than
// its checks, attempts or request statistics has a struct here, so that
// every reader (the report, the journal, other tools through the JSON
// Schema) reads fields, not string keys. JSON names are v1's "result" keys
// where v1 had them, so v1 documents upgrade by decoding (see Load).

// ArtifactResult is the artifact gate's verification of the pinned model
// against its manifest (package artifact's report, summarised).
type ArtifactResult struct {
	// Repo and Revision are the source repository id and the immutable
	// revision the manifest pins.
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
	// ManifestDigest is the SHA-256 (hex) of the manifest.
	ManifestDigest string `json:"manifest_digest"`
	// Files and Bytes count the manifest's files and their total size.
	Files int   `json:"files_count"`
	Bytes int64 `json:"bytes"`
	// Hashed counts the files read and hashed in this run.
	Hashed int `json:"hashed"`
	// Missing lists manifest paths absent from the directory; Changed
	// counts files whose size or content differs; Extra lists files the
	// manifest does not name.
	Missing []string `json:"missing,omitempty"`
	Changed int      `json:"changed"`
	Extra   []string `json:"extra,omitempty"`
	// Paths are the local manifest and directory (private copy only).
	Paths *ArtifactPaths `json:"paths,omitempty"`
}

// ArtifactPaths are the artifact gate's local paths.
type ArtifactPaths struct {
	Manifest string `json:"manifest"`
	Dir      string `json:"dir"`
}

// SemanticResult is the semantic gate's comparison of the candidate with
// production on a frozen corpus. Rates are fractions in [0, 1].
type SemanticResult struct {
	// Summary is the comparison in one sentence.
	Summary string `json:"summary"`
	// Passed is true when every check passed (Outcome passed); Reasons
	// lists the failed checks and undecided comparisons in words (empty
	// when passed).
	Passed bool `json:"passed"`
	// Outcome (v3) is passed, failed or inconclusive: failed when a floor
	// or a comparison failed, inconclusive when none failed and a
	// comparison could not decide.
	Outcome string          `json:"outcome"`
	Reasons []string        `json:"reasons"`
	Checks  []SemanticCheck `json:"checks"`
	// Floors and Tolerance are the plan's.
	Floors    SemanticFloors `json:"floors"`
	Tolerance float64        `json:"tolerance"`
	// CorpusName and CorpusDigest identify the frozen corpus.
	CorpusName   string `json:"corpus_name"`
	CorpusDigest string `json:"corpus_digest"`
	// ProductionCached is true when production's result came from the
	// baseline cache (its fingerprint matched) and production was not asked.
	ProductionCached bool `json:"production_cached"`
	// CandidateScores and ProductionScores are the overall scores
	// (micro-averaged over documents).
	CandidateScores  Scores `json:"candidate_scores"`
	ProductionScores Scores `json:"production_scores"`
	// CandidateStats and ProductionStats total each side's extraction.
	CandidateStats  ExtractionStats `json:"candidate_stats"`
	ProductionStats ExtractionStats `json:"production_stats"`
	// Comparisons (v3) are the gated measures' non-inferiority tests, one
	// per measure (f1, grounding_rate, schema_valid_rate); Method says how
	// they were computed.
	Comparisons []Comparison `json:"comparisons,omitempty"`
	Method      *StatMethod  `json:"method,omitempty"`
	// Differences are per-document scores side by side.
	Differences []DocDiff `json:"differences"`
	// CandidateRejects and ProductionRejects are each side's most frequent
	// reject reasons (current rejects of the extraction directory), most
	// frequent first, each with one example.
	CandidateRejects  []RejectReason `json:"candidate_rejects,omitempty"`
	ProductionRejects []RejectReason `json:"production_rejects,omitempty"`
	// Paths are the extraction directories (private copy only).
	Paths *SemanticPaths `json:"paths,omitempty"`
}

// SemanticFloors are the absolute minimums the candidate must reach.
type SemanticFloors struct {
	MinF1          float64 `json:"min_f1"`
	MinGrounding   float64 `json:"min_grounding"`
	MinSchemaValid float64 `json:"min_schema_valid"`
}

// SemanticCheck is one comparison: Name is "<measure> floor" or
// "<measure> vs production" (measure f1, grounding_rate,
// schema_valid_rate) or "documents finished"; Value is the candidate's,
// Limit the least value that passes.
type SemanticCheck struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Limit  float64 `json:"limit"`
	Passed bool    `json:"passed"`
}

// Scores are one set of extraction measures (package eval's Scores).
type Scores struct {
	// Predicted and Gold claims, and Matched pairs (one-to-one).
	Predicted int `json:"predicted"`
	Gold      int `json:"gold"`
	Matched   int `json:"matched"`
	// Precision = Matched/Predicted; Coverage = Matched/Gold; F1 their
	// harmonic mean.
	Precision float64 `json:"precision"`
	Coverage  float64 `json:"coverage"`
	F1        float64 `json:"f1"`
	// Grounded claims have their quote in the source; GroundingRate =
	// Grounded/Predicted.
	Grounded      int     `json:"grounded"`
	GroundingRate float64 `json:"grounding_rate"`
	// Duplicates and DuplicateRate = Duplicates/Predicted.
	Duplicates    int     `json:"duplicates"`
	DuplicateRate float64 `json:"duplicate_rate"`
}

// ExtractionStats total one extraction run (package extract's Stats).
type ExtractionStats struct {
	DocumentsDone   int `json:"documents_done"`
	DocumentsFailed int `json:"documents_failed"`
	Sentences       int `json:"sentences"`
	Claims          int `json:"claims"`
	Rejects         int `json:"rejects"`
	// SupersededRejects are rejects of documents a resumed run redid.
	SupersededRejects int `json:"superseded_rejects,omitempty"`
	// AddressesModel counts the rejects of sentences that address the
	// model (extraction's document-is-data defence), within Rejects.
	AddressesModel     int     `json:"addresses_model,omitempty"`
	Requests           int     `json:"requests"`
	Replies            int     `json:"replies"`
	SchemaValidReplies int     `json:"schema_valid_replies"`
	CleanReplies       int     `json:"clean_replies"`
	SchemaValidRate    float64 `json:"schema_valid_rate"`
	PromptTokens       int64   `json:"prompt_tokens"`
	CompletionTokens   int64   `json:"completion_tokens"`
	// OverloadRetries counts the busy answers (HTTP 429, 503) that were
	// retried and then succeeded or gave up; a retried request is not a
	// failure.
	OverloadRetries int `json:"overload_retries,omitempty"`
	// TimeoutRetries counts the requests that ran past the gate's
	// request_timeout and were sent again, each with a fresh bound
	// (production's side retries each once).
	TimeoutRetries int `json:"timeout_retries,omitempty"`
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
	// CandidateCounts and ProductionCounts (v3) are the document's counts
	// the comparisons resample: what a reader needs to recompute them.
	CandidateCounts  *DocCounts `json:"candidate_counts,omitempty"`
	ProductionCounts *DocCounts `json:"production_counts,omitempty"`
}

// DocCounts are one side's counts on one document: claims predicted,
// gold claims, matched pairs, grounded claims, replies and schema-valid
// replies. F1 over documents is 2·sum(matched)/(sum(predicted)+sum(gold)),
// grounding sum(grounded)/sum(predicted), schema-valid
// sum(schema_valid)/sum(replies).
type DocCounts struct {
	Predicted   int `json:"predicted"`
	Gold        int `json:"gold"`
	Matched     int `json:"matched"`
	Grounded    int `json:"grounded"`
	Replies     int `json:"replies"`
	SchemaValid int `json:"schema_valid"`
}

// Comparison is one gated measure's paired non-inferiority test of the
// candidate against production (package stats). Values are fractions.
type Comparison struct {
	// Measure is f1, grounding_rate or schema_valid_rate.
	Measure string `json:"measure"`
	// Candidate and Production are the measure micro-averaged over the
	// documents; Difference is Candidate − Production.
	Candidate  float64 `json:"candidate"`
	Production float64 `json:"production"`
	Difference float64 `json:"difference"`
	// Lower and Upper are the one-sided bounds of the difference at the
	// method's confidence (bootstrap over documents: the Level and
	// 1−Level quantiles of the resampled differences).
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	// Level (v3) is the tail share each bound leaves out of the resampled
	// differences: the expanded percentile's Φ(−sqrt(n/(n−1))·t_{n−1}),
	// a little below 1 − confidence (stats.ExpandedLevel). Absent from
	// evidence whose bounds are the plain 1 − confidence quantiles.
	Level float64 `json:"level,omitempty"`
	// StandardError is the bootstrap standard error of the difference.
	StandardError float64 `json:"standard_error"`
	// Margin is the plan's tolerance: the drop that is still acceptable.
	Margin float64 `json:"margin"`
	// Outcome is passed (Lower > −Margin), failed (Upper < −Margin) or
	// inconclusive; Decision says it in words.
	Outcome  string `json:"outcome"`
	Decision string `json:"decision"`
	// Seed is the generator's seed for this measure (hex), derived from
	// the evidence's input fingerprints and the measure's name.
	Seed string `json:"seed"`
	// DocumentsNeeded is how many documents would decide at the method's
	// confidence and power: for an inconclusive comparison at the
	// difference it observed (stats.DocumentsToDecide), else for a
	// candidate truly equal to production, the drop of Margin told
	// (stats.DocumentsNeeded); -1: none would (a zero margin, or an
	// estimate on the margin). DetectableDrop is the smallest drop these
	// documents tell; SampleSize says it in one sentence.
	DocumentsNeeded int     `json:"documents_needed"`
	DetectableDrop  float64 `json:"detectable_drop"`
	SampleSize      string  `json:"sample_size"`
}

// StatMethod is how the comparisons were computed, so that a reader can
// recompute them from Differences' counts.
type StatMethod struct {
	// Test names the test and the interval.
	Test string `json:"test"`
	// Resamples is the number of bootstrap resamples; Confidence each
	// bound's one-sided confidence; Power the power the sample-size
	// estimate aims at.
	Resamples  int     `json:"resamples"`
	Confidence float64 `json:"confidence"`
	Power      float64 `json:"power"`
	// Seeding says what each measure's seed is derived from.
	Seeding string `json:"seeding"`
	// Replicates (v3) is how many times each side extracted the corpus,
	// the documents' shares pooled over them (absent: once); Temperature
	// (v3) the extraction's sampling temperature (absent: 0, greedy).
	Replicates  int     `json:"replicates,omitempty"`
	Temperature float64 `json:"temperature,omitempty"`
}

// RejectReason is one reject reason code with how often it occurred and
// one example (the rejected claim or reply and the validator's detail).
type RejectReason struct {
	Code    string `json:"code"`
	Count   int    `json:"count"`
	Example string `json:"example,omitempty"`
}

// SemanticPaths are the semantic gate's extraction directories.
type SemanticPaths struct {
	Candidate  string `json:"candidate"`
	Production string `json:"production"`
}

// PerformanceComparison (v3) is a request gate's comparison of the
// candidate with production on the same requests, interleaved (see
// Interleaving), each side's samples recorded so that a reader can
// recompute every measure.
type PerformanceComparison struct {
	// Production is production's profile name.
	Production string `json:"production"`
	// Skipped says why no comparison was made (production stopped for
	// an exclusive candidate); the rest is then empty.
	Skipped string `json:"skipped,omitempty"`
	// Interleaving says how the requests alternated between the sides.
	Interleaving string `json:"interleaving,omitempty"`
	// Requests is the requests sent to production (the candidate's are
	// the gate's Count); Errors production's failed ones.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// LatenciesMS and TTFTsMS are production's successful requests'
	// end-to-end latency and time to first token (ms), in request order.
	LatenciesMS []float64 `json:"latencies_ms,omitempty"`
	TTFTsMS     []float64 `json:"ttfts_ms,omitempty"`
	// CandidateTokensPerSecond and ProductionTokensPerSecond are each
	// successful request's completion tokens (server usage) over its
	// end-to-end latency, in request order.
	CandidateTokensPerSecond  []float64 `json:"candidate_tokens_per_second,omitempty"`
	ProductionTokensPerSecond []float64 `json:"production_tokens_per_second,omitempty"`
	// Confidence is each bound's one-sided confidence; LatencyMargin the
	// slowdown still accepted, as a share of production's median;
	// ThroughputMargin the drop in per-request throughput still accepted,
	// as a share of production's mean; Resamples the ratio bootstrap's.
	Confidence       float64 `json:"confidence,omitempty"`
	LatencyMargin    float64 `json:"latency_margin,omitempty"`
	ThroughputMargin float64 `json:"throughput_margin,omitempty"`
	Resamples        int     `json:"resamples,omitempty"`
	// Measures are the compared measures (latency_ms, ttft_ms,
	// output_tokens_per_second).
	Measures []PerformanceMeasure `json:"measures,omitempty"`
	// Outcome is failed when a measure failed, inconclusive when none
	// failed and one could not decide (or production's requests failed),
	// else passed; Reasons say why it is not passed.
	Outcome string   `json:"outcome,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
}

// PerformanceMeasure is one measure's comparison. For a latency the
// estimate is the Hodges-Lehmann shift candidate − production (ms) with
// Moses' bounds (Mann-Whitney), and the limit the margin in ms: passed
// when Upper < Limit, failed when Lower > Limit. For throughput the
// estimate is the ratio of means candidate/production with bootstrap
// bounds, and the limit 1 − margin: passed when Lower > Limit, failed
// when Upper < Limit. Otherwise inconclusive.
type PerformanceMeasure struct {
	Measure string `json:"measure"`
	// Test is "mann-whitney" or "ratio-bootstrap".
	Test string `json:"test"`
	// Candidate and Production are the sides' medians (latency, ms) or
	// means (throughput, tokens/s).
	Candidate  float64 `json:"candidate"`
	Production float64 `json:"production"`
	// Estimate, Lower and Upper: the shift (ms) or ratio and its
	// one-sided bounds at the comparison's confidence.
	Estimate float64 `json:"estimate"`
	Lower    float64 `json:"lower"`
	Upper    float64 `json:"upper"`
	// Limit is the margin in the estimate's unit.
	Limit float64 `json:"limit"`
	// P is the Mann-Whitney test's two-sided p-value (latencies only).
	P float64 `json:"p,omitempty"`
	// Seed is the ratio bootstrap's seed (hex; throughput only).
	Seed     string `json:"seed,omitempty"`
	Outcome  string `json:"outcome"`
	Decision string `json:"decision"`
}
