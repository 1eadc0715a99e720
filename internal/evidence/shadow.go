package evidence

import "time"

// ShadowResult (v3) is a shadow run's account: production's live requests
// mirrored to a running candidate, each pair scored (docs/shadow.md). It
// is the shadow gate's result (Gate.Shadow) and what `hiro shadow stop`
// prints. It holds no request or reply text: Pairs keeps hashes and sizes
// and is left out of the public copy.
type ShadowResult struct {
	// Summary is the run in one sentence.
	Summary string `json:"summary"`
	// Outcome is passed, failed or inconclusive (fewer than MinPairs
	// pairs, or a comparison that cannot decide); Reasons says why in
	// words (empty when passed).
	Outcome string   `json:"outcome"`
	Reasons []string `json:"reasons"`
	// Candidate and Production are the profiles compared; Remote is true
	// when the candidate is not on this machine (its profile opted in
	// with shadow_remote).
	Candidate  string `json:"candidate"`
	Production string `json:"production"`
	Remote     bool   `json:"remote,omitempty"`
	// Share is the fraction of production's chat and completion requests
	// mirrored; MaxPairs and Duration (Go duration text, "" for none) the
	// run's bounds.
	Share    float64 `json:"share"`
	MaxPairs int     `json:"max_pairs"`
	Duration string  `json:"duration,omitempty"`
	// StartedAt and EndedAt bound the run; Ended says what ended it:
	// max_pairs, duration, command, or "" while it runs.
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Ended     string     `json:"ended,omitempty"`
	// Counts: Seen are production requests the mirror looked at (chat and
	// completions, answered by production); Sampled those chosen. Each
	// sampled request is in exactly one of: Mirrored (sent to the
	// candidate), Dropped (the bounded queue was full), TooLarge
	// (production's reply was over the capture bound), Abandoned (its
	// client left, or the router's stop cut it), Unsent (still queued
	// when the run ended, or production's answer completed after the
	// end), Queued (waiting in the queue now) and Pending (production's
	// answer still under way): Sampled = Mirrored + Dropped + TooLarge +
	// Abandoned + Unsent + Queued + Pending. Pairs are the mirrored ones
	// scored (the others were in flight to the candidate at the end).
	// Abandoned, Unsent, Queued and Pending are absent (zero) in records
	// written before they existed.
	Seen      int64 `json:"seen"`
	Sampled   int64 `json:"sampled"`
	Dropped   int64 `json:"dropped"`
	TooLarge  int64 `json:"too_large"`
	Mirrored  int64 `json:"mirrored"`
	Abandoned int64 `json:"abandoned,omitempty"`
	Unsent    int64 `json:"unsent,omitempty"`
	Queued    int64 `json:"queued,omitempty"`
	Pending   int64 `json:"pending,omitempty"`
	Pairs     int   `json:"pairs"`
	// QueueSize and Workers bound what the mirror holds and sends at once.
	QueueSize int `json:"queue_size"`
	Workers   int `json:"workers"`
	// CandidateErrors and ProductionErrors are pairs whose side answered
	// other than 2xx, or not at all.
	CandidateErrors  int `json:"candidate_errors"`
	ProductionErrors int `json:"production_errors"`
	// Latency of the successful replies of each side (ms): time to the
	// first body byte (TTFT for a stream) and end to end.
	CandidateTTFT     *Percentiles  `json:"candidate_ttft_ms,omitempty"`
	ProductionTTFT    *Percentiles  `json:"production_ttft_ms,omitempty"`
	CandidateLatency  *Percentiles  `json:"candidate_latency_ms,omitempty"`
	ProductionLatency *Percentiles  `json:"production_latency_ms,omitempty"`
	LatencyShift      *LatencyShift `json:"latency_shift,omitempty"`
	CandidateUsage    TokenUsage    `json:"candidate_usage"`
	ProductionUsage   TokenUsage    `json:"production_usage"`
	// Extraction totals the pairs of hiro's own extraction requests
	// (recognised by the prompt's hash), Structured those with a JSON
	// Schema response_format, Text the others.
	Extraction ShadowExtraction `json:"extraction"`
	Structured ShadowStructured `json:"structured"`
	Text       ShadowText       `json:"text"`
	// Comparisons are the gated measures' paired non-inferiority tests,
	// candidate against production on the same requests: success_rate,
	// schema_valid_rate, grounding_rate, accepted_claim_rate (1 − the
	// validators' reject rate). Agreement with production is reported,
	// never gated on: production's reply is not the gold answer.
	Comparisons []ShadowComparison `json:"comparisons"`
	// MinPairs and Margin are the decision's settings; Resamples,
	// Confidence its method's.
	MinPairs   int     `json:"min_pairs"`
	Margin     float64 `json:"margin"`
	Resamples  int     `json:"resamples"`
	Confidence float64 `json:"confidence"`
	// PairRecords are the scored pairs without their text (hashes and
	// sizes); private evidence only.
	PairRecords []ShadowPair `json:"pair_records,omitempty"`
}

// TokenUsage totals the "usage" of one side's replies.
type TokenUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

// LatencyShift is the shift of the candidate's end-to-end latencies
// against production's (candidate − production, ms) with its interval
// and p-value. With Pairs > 0 it is the Wilcoxon signed-rank test of the
// Pairs paired differences (the same request answered by both sides),
// the shift their Hodges-Lehmann estimate (the median of the Walsh
// averages); with Pairs 0 (a run recorded before hiro paired them) the
// Mann-Whitney test of the two sides' latencies, the shift the median of
// every cross difference.
type LatencyShift struct {
	ShiftMS    float64 `json:"shift_ms"`
	LowerMS    float64 `json:"lower_ms"`
	UpperMS    float64 `json:"upper_ms"`
	P          float64 `json:"p"`
	Confidence float64 `json:"confidence"`
	Pairs      int     `json:"pairs,omitempty"`
}

// ShadowExtraction totals the extraction pairs: claims each side
// returned, those whose quote is in the sentence (grounded), those every
// validator accepted, replies that validated against the claims schema,
// and the candidate's accepted claims matched one-to-one to production's
// (package eval's similarity and threshold). Agreement is
// 2·Matched/(CandidateAccepted+ProductionAccepted).
type ShadowExtraction struct {
	Pairs                 int     `json:"pairs"`
	CandidateClaims       int     `json:"candidate_claims"`
	ProductionClaims      int     `json:"production_claims"`
	CandidateGrounded     int     `json:"candidate_grounded"`
	ProductionGrounded    int     `json:"production_grounded"`
	CandidateAccepted     int     `json:"candidate_accepted"`
	ProductionAccepted    int     `json:"production_accepted"`
	CandidateSchemaValid  int     `json:"candidate_schema_valid"`
	ProductionSchemaValid int     `json:"production_schema_valid"`
	Matched               int     `json:"matched"`
	Agreement             float64 `json:"agreement"`
}

// ShadowStructured totals the pairs with a JSON Schema response_format:
// replies that parse and validate against the request's schema.
type ShadowStructured struct {
	Pairs           int `json:"pairs"`
	CandidateValid  int `json:"candidate_valid"`
	ProductionValid int `json:"production_valid"`
}

// ShadowText totals the other pairs: replies equal byte for byte, and
// equal once normalised (tokens of letters and digits, lower-cased).
type ShadowText struct {
	Pairs      int `json:"pairs"`
	Exact      int `json:"exact"`
	Normalized int `json:"normalized"`
}

// ShadowComparison is one gated measure's paired non-inferiority test
// over the pairs (package stats: percentile bootstrap of the
// micro-averaged difference, candidate − production).
type ShadowComparison struct {
	Measure    string  `json:"measure"`
	Pairs      int     `json:"pairs"`
	Candidate  float64 `json:"candidate"`
	Production float64 `json:"production"`
	Difference float64 `json:"difference"`
	Lower      float64 `json:"lower"`
	Upper      float64 `json:"upper"`
	Margin     float64 `json:"margin"`
	// Outcome is passed (Lower > −Margin, and the candidate's own count
	// shows its rate at least production's − Margin), failed (Upper <
	// −Margin) or inconclusive.
	Outcome string `json:"outcome"`
	Seed    string `json:"seed"`
	// Note says why bounds that pass are not enough, when they are not:
	// "40 of 40 show a rate above 0.928 only; the margin asks 0.980".
	Note string `json:"note,omitempty"`
}

// ShadowPair is one scored pair without its text: the request's SHA-256,
// its kind (extraction, structured, text), each side's status, sizes and
// latencies (ms).
type ShadowPair struct {
	RequestSHA256    string  `json:"request_sha256"`
	Route            string  `json:"route"`
	Kind             string  `json:"kind"`
	Stream           bool    `json:"stream,omitempty"`
	RequestBytes     int     `json:"request_bytes"`
	ProductionStatus int     `json:"production_status"`
	CandidateStatus  int     `json:"candidate_status"`
	ProductionBytes  int     `json:"production_bytes"`
	CandidateBytes   int     `json:"candidate_bytes"`
	ProductionTTFTMS float64 `json:"production_ttft_ms"`
	CandidateTTFTMS  float64 `json:"candidate_ttft_ms"`
	ProductionMS     float64 `json:"production_ms"`
	CandidateMS      float64 `json:"candidate_ms"`
	CandidateError   string  `json:"candidate_error,omitempty"`
	Agree            *bool   `json:"agree,omitempty"`
}
