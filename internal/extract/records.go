package extract

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Files of an extraction output directory.
const (
	// ClaimsFile holds one Claim per line.
	ClaimsFile = "claims.jsonl"
	// RejectsFile holds one Reject per line.
	RejectsFile = "rejects.jsonl"
	// ProgressFile holds one DocProgress per committed document: the
	// checkpoint that resume reads.
	ProgressFile = "progress.jsonl"
	// RunFile holds the RunInfo that a resumed run must match.
	RunFile = "run.json"
	// StatsFile holds the Stats of every committed document with the
	// checkpoint count and claims size they cover (StatsFileContent),
	// rewritten at the end of each run; package eval reads its replies
	// counts and checks that it still describes the files beside it.
	StatsFile = "stats.json"
	// RunSchema tags run.json.
	RunSchema = "hiro.extract-run/v1"
	// SpanUnit is the unit of every span in extraction output
	// (sentence_span, quote_span): byte offsets [start, end) into the
	// document's UTF-8 text as read (a leading BOM counts, though no
	// sentence holds it), not characters. claims.jsonl and run.json
	// carry it in their span_unit field.
	SpanUnit = "utf8_bytes"
)

// Claim is one line of claims.jsonl: an accepted claim and its provenance.
// Every claim written passed every validator.
type Claim struct {
	// DocID is the document's stable id.
	DocID string `json:"doc_id"`
	// SentenceIndex is the splitter's sentence index in the document (0-based).
	SentenceIndex int `json:"sentence_index"`
	// SentenceSpan is the sentence's span [start, end) in the document, in
	// bytes of its UTF-8 text (SpanUnit).
	SentenceSpan [2]int `json:"sentence_span"`
	// QuoteSpan is the quote's span [start, end) in the document, in bytes
	// of its UTF-8 text (SpanUnit).
	QuoteSpan [2]int `json:"quote_span"`
	// SpanUnit says so: always SpanUnit ("utf8_bytes").
	SpanUnit string `json:"span_unit"`
	// Text is the claim; Quote the model's quote of the sentence.
	Text  string `json:"text"`
	Quote string `json:"quote"`
	// Match is how the quote was found: "exact" or "normalized" (white
	// space and case; see corpus.FindQuote).
	Match string `json:"match"`
	// Model is the model id asked; Backend the profile name.
	Model   string `json:"model"`
	Backend string `json:"backend"`
	// PromptVersion, PromptHash and SchemaHash identify the prompt files
	// and the claims schema (package prompt).
	PromptVersion string `json:"prompt_version"`
	PromptHash    string `json:"prompt_hash"`
	SchemaHash    string `json:"schema_hash"`
	// Attempt is 1 for the first request, 2 for the first repair, ...
	Attempt int `json:"attempt"`
}

// Reject kinds: what a Reject record is about.
const (
	RejectDocument = "document"
	// RejectSentence: the sentence addresses the model (see
	// AddressesModel); Text holds it; it was not sent as a target.
	// Declared in inject.go.
	RejectRequest = "request"
	RejectReply   = "reply"
	RejectClaim   = "claim"
)

// Reject is one line of rejects.jsonl: something that did not become a
// claim, with every reason and, for replies and claims, the raw reply.
type Reject struct {
	// Kind is RejectDocument, RejectRequest, RejectReply or RejectClaim.
	Kind  string `json:"kind"`
	DocID string `json:"doc_id"`
	// SentenceIndex and SentenceSpan (bytes of UTF-8 text, SpanUnit) are
	// set for all kinds but document.
	SentenceIndex *int    `json:"sentence_index,omitempty"`
	SentenceSpan  *[2]int `json:"sentence_span,omitempty"`
	// Attempt numbers the request (1 first, 2 first repair, ...); 0 for
	// document rejects.
	Attempt int `json:"attempt,omitempty"`
	// Retried is true when a repair request followed this reply.
	Retried bool `json:"retried,omitempty"`
	// Reasons is never empty.
	Reasons []Reason `json:"reasons"`
	// ClaimIndex (0-based position in the reply), Text and Quote are set
	// for claim rejects.
	ClaimIndex *int   `json:"claim_index,omitempty"`
	Text       string `json:"text,omitempty"`
	Quote      string `json:"quote,omitempty"`
	// Raw is the reply exactly as received; FinishReason the server's.
	Raw          string `json:"raw,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	Model        string `json:"model"`
	Backend      string `json:"backend"`
	PromptHash   string `json:"prompt_hash"`
}

// Document statuses in progress.jsonl.
const (
	// StatusDone: the document is finished (claims and rejects written);
	// resume skips it.
	StatusDone = "done"
	// StatusFailed: a request failed for a reason that may pass (server
	// error, transport); its rejects are written and resume redoes it.
	StatusFailed = "failed"
)

// DocProgress is one line of progress.jsonl, appended and fsynced after
// the document's claims and rejects are fsynced.
type DocProgress struct {
	DocID string `json:"doc_id"`
	// DocIndex is the document's position in the run's whole input (before
	// sharding): Merge orders the documents of several shards by it.
	DocIndex int `json:"doc_index"`
	// DocSHA256 is the hex SHA-256 of the document's bytes; resume refuses
	// a finished document whose content changed.
	DocSHA256 string `json:"doc_sha256"`
	Status    string `json:"status"`
	// Counts of this document.
	Sentences int `json:"sentences"`
	Claims    int `json:"claims"`
	Rejects   int `json:"rejects"`
	// AddressesModel counts the rejects (within Rejects) of sentences that
	// address the model: the defence working, not a failure.
	AddressesModel int `json:"addresses_model,omitempty"`
	// Requests sent, Replies received (HTTP success), SchemaValid replies
	// that parsed and validated in full, Clean replies with nothing
	// rejected.
	Requests    int `json:"requests"`
	Replies     int `json:"replies"`
	SchemaValid int `json:"schema_valid"`
	Clean       int `json:"clean"`
	// Tokens from the server's usage.
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// OverloadRetries counts the overload answers (HTTP 429 and 503) that
	// were retried for this document; they are not failures (Requests
	// counts each request once, however often it was retried).
	OverloadRetries int `json:"overload_retries,omitempty"`
	// TimeoutRetries counts the requests of this document sent again
	// after running past the request timeout (Options.TimeoutRetries);
	// Requests counts each sending.
	TimeoutRetries int `json:"timeout_retries,omitempty"`
	// ClaimsBytes and RejectsBytes are the sizes of claims.jsonl and
	// rejects.jsonl after this document: resume truncates them to the
	// last committed sizes, dropping a partly written document.
	ClaimsBytes  int64 `json:"claims_bytes"`
	RejectsBytes int64 `json:"rejects_bytes"`
}

// RunInfo is run.json: what a run in this directory extracts with. A
// resumed run must match every setting that changes the output (see
// RunDiffs: backend, base URL, model, prompt and schema, sampling,
// max_tokens, max_repairs, the byte bounds, the input, the shard);
// otherwise it is refused with ErrRunMismatch naming the fields.
type RunInfo struct {
	Schema        string `json:"schema"`
	Backend       string `json:"backend"`
	BaseURL       string `json:"base_url"`
	Model         string `json:"model"`
	PromptVersion string `json:"prompt_version"`
	PromptHash    string `json:"prompt_hash"`
	SchemaHash    string `json:"schema_hash"`
	// Temperature and Seed are sent with every request (Seed, temperature
	// 0): recorded so that a hiro sending others cannot resume this run.
	Temperature float64 `json:"temperature"`
	Seed        int64   `json:"seed"`
	// MaxTokens and MaxRepairs shape every reply: a resumed run must use
	// the same, or its documents would not be comparable.
	MaxTokens  int `json:"max_tokens"`
	MaxRepairs int `json:"max_repairs"`
	// MaxDocBytes and MaxRequestBytes decide which documents and sentences
	// are rejected unsent.
	MaxDocBytes     int `json:"max_doc_bytes"`
	MaxRequestBytes int `json:"max_request_bytes"`
	// Input is what the documents were read from (nil when the caller did
	// not say).
	Input *RunInput `json:"input,omitempty"`
	// Shard is set for a sharded run (hiro extract --shard I/N): which
	// shard, and how many documents it has. A resumed run must be the
	// same shard.
	Shard *Shard `json:"shard,omitempty"`
	// SpanUnit is the unit of every span in the output: SpanUnit.
	SpanUnit string `json:"span_unit"`
}

// RunInput is what a run's documents were read from: a frozen corpus
// (Corpus, its absolute path, provenance only; CorpusName and
// CorpusDigest, which a resumed run must match) or files and directories
// (Paths, absolute, which a resumed run must match in order).
type RunInput struct {
	Corpus       string   `json:"corpus,omitempty"`
	CorpusName   string   `json:"corpus_name,omitempty"`
	CorpusDigest string   `json:"corpus_digest,omitempty"`
	Paths        []string `json:"paths,omitempty"`
}

// String names the input for messages: "corpus NAME (sha256 DIGEST)" or
// the paths.
func (in *RunInput) String() string {
	switch {
	case in == nil:
		return "(not recorded)"
	case in.CorpusDigest != "":
		return fmt.Sprintf("corpus %s (digest %s)", in.CorpusName, short(in.CorpusDigest))
	}
	return "paths " + strings.Join(in.Paths, " ")
}

// RunDiff is one setting in which two runs differ: Field is run.json's
// key, Old and New the values, Set says where the value comes from.
type RunDiff struct {
	Field, Old, New, Set string
}

// RunDiffs lists the settings that change what a run writes in which prev
// and cur differ (the shard and the span unit aside). withBaseURL
// includes the base URL (a resumed run must reach the same server; the
// shards of one run may reach different replicas).
func RunDiffs(prev, cur RunInfo, withBaseURL bool) []RunDiff {
	var out []RunDiff
	add := func(field string, old, new any, set string) {
		o, n := fmt.Sprint(old), fmt.Sprint(new)
		if o != n {
			out = append(out, RunDiff{field, o, n, set})
		}
	}
	q := func(s string) string { return strconv.Quote(s) }
	add("backend", q(prev.Backend), q(cur.Backend), "--backend")
	if withBaseURL {
		add("base_url", q(prev.BaseURL), q(cur.BaseURL), "the backend profile's base_url")
	}
	add("model", q(prev.Model), q(cur.Model), "the backend profile's model")
	add("prompt_version", q(prev.PromptVersion), q(cur.PromptVersion), "the hiro version (its prompt)")
	add("prompt_hash", short(prev.PromptHash), short(cur.PromptHash), "the hiro version (its prompt)")
	add("schema_hash", short(prev.SchemaHash), short(cur.SchemaHash), "the hiro version (its claims schema)")
	add("temperature", prev.Temperature, cur.Temperature, "the hiro version")
	// Fields an older hiro did not write read as 0, never a real value.
	rec := func(v int64) any {
		if v == 0 {
			return "(not recorded: run.json of an older hiro)"
		}
		return v
	}
	add("seed", rec(prev.Seed), rec(cur.Seed), "the hiro version")
	add("max_tokens", prev.MaxTokens, cur.MaxTokens, "--max-tokens")
	add("max_repairs", prev.MaxRepairs, cur.MaxRepairs, "--max-repairs")
	add("max_doc_bytes", rec(int64(prev.MaxDocBytes)), rec(int64(cur.MaxDocBytes)), "--max-doc-bytes")
	add("max_request_bytes", rec(int64(prev.MaxRequestBytes)), rec(int64(cur.MaxRequestBytes)), "--max-request-bytes")
	if pi, ci := prev.Input, cur.Input; pi != nil || ci != nil {
		same := pi != nil && ci != nil && pi.CorpusDigest == ci.CorpusDigest && slices.Equal(pi.Paths, ci.Paths)
		if !same {
			out = append(out, RunDiff{"input", pi.String(), ci.String(), "--corpus or PATHS"})
		}
	}
	return out
}

// Stats is stats.json: totals over every line of progress.jsonl (a
// document redone after a failure counts each time it ran).
type Stats struct {
	// Documents finished (status done), and documents whose last status
	// is failed.
	DocumentsDone   int `json:"documents_done"`
	DocumentsFailed int `json:"documents_failed"`
	// Sentences, Claims and Rejects are those of each document's latest
	// checkpoint: the output as it now is.
	Sentences int `json:"sentences"`
	Claims    int `json:"claims"`
	Rejects   int `json:"rejects"`
	// SupersededRejects are rejects of earlier checkpoints of documents
	// that a later run redid; they stay in rejects.jsonl (the byte ranges
	// of progress.jsonl tell them apart; ReadCurrentRejects leaves them
	// out) but no longer describe the output.
	SupersededRejects int `json:"superseded_rejects"`
	// AddressesModel counts the sentence rejects (within Rejects) of
	// sentences that address the model.
	AddressesModel int `json:"addresses_model,omitempty"`
	// Requests, Replies, SchemaValidReplies, CleanReplies as in DocProgress.
	Requests           int `json:"requests"`
	Replies            int `json:"replies"`
	SchemaValidReplies int `json:"schema_valid_replies"`
	CleanReplies       int `json:"clean_replies"`
	// SchemaValidRate is SchemaValidReplies/Replies (0 when no reply).
	SchemaValidRate  float64 `json:"schema_valid_rate"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	// OverloadRetries totals DocProgress.OverloadRetries.
	OverloadRetries int `json:"overload_retries"`
	// TimeoutRetries totals DocProgress.TimeoutRetries.
	TimeoutRetries int `json:"timeout_retries,omitempty"`
}

// Add sums o's counts into s (runs of the same documents, e.g. the
// semantic gate's replicates) and recomputes SchemaValidRate.
func (s *Stats) Add(o Stats) {
	s.DocumentsDone += o.DocumentsDone
	s.DocumentsFailed += o.DocumentsFailed
	s.Sentences += o.Sentences
	s.Claims += o.Claims
	s.Rejects += o.Rejects
	s.SupersededRejects += o.SupersededRejects
	s.AddressesModel += o.AddressesModel
	s.Requests += o.Requests
	s.Replies += o.Replies
	s.SchemaValidReplies += o.SchemaValidReplies
	s.CleanReplies += o.CleanReplies
	s.PromptTokens += o.PromptTokens
	s.CompletionTokens += o.CompletionTokens
	s.OverloadRetries += o.OverloadRetries
	s.TimeoutRetries += o.TimeoutRetries
	s.SchemaValidRate = 0
	if s.Replies > 0 {
		s.SchemaValidRate = float64(s.SchemaValidReplies) / float64(s.Replies)
	}
}

// StatsFileContent is what stats.json holds: the Stats, and what they
// were computed from.
type StatsFileContent struct {
	Stats
	// Checkpoints is the number of progress.jsonl lines the Stats cover,
	// and ClaimsBytes the size of claims.jsonl at the last of them: a
	// reader (package eval) tells with them whether this stats.json still
	// describes the files beside it. A run killed with SIGKILL after
	// committing documents leaves more checkpoints than the stats.json of
	// the run before it counts.
	Checkpoints int   `json:"checkpoints"`
	ClaimsBytes int64 `json:"claims_bytes"`
}
