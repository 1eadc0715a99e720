// Package extract owns claim extraction: rendering one request per
// sentence through package prompt (system message, user message with the
// context window and heading path, the claims JSON Schema as
// response_format), validating every reply client-side (JSON Schema with
// github.com/santhosh-tekuri/jsonschema/v6, quote grounding, numbers and
// dates, duplicates, length bounds), bounded repair retries that tell the
// model what failed, the worker pool that keeps a configurable number of
// requests in flight, the output directory (claims.jsonl, rejects.jsonl,
// progress.jsonl, run.json, stats.json) with resume after an interruption
// (finished documents are committed in groups: one write and one fsync per
// file for every document finished when a commit starts, data files before
// the checkpoint, so a finished document is never lost and a half-written
// one is dropped).
//
// It must not change the prompt layout (package prompt owns it), start or
// stop inference servers (package supervisor), or decide a campaign's
// verdict: the semantic gate (package qualify, gate_semantic.go) runs
// extraction on both sides, compares the scores and caches production's
// baseline. Source text and model
// replies are data: nothing in them is ever followed or interpreted. A
// sentence that addresses the model (AddressesModel: instructions, an
// embedded reply format, chat role markers, in several languages) is not
// sent as a target and is recorded as a "sentence" reject with reason
// addresses_model; a claim must be a well-formed statement (Malformed) and
// may not address the model either.
//
// Every span in the output (sentence_span, quote_span) is in bytes of the
// document's UTF-8 text as read, [start, end): claims.jsonl and run.json
// say so in their span_unit field ("utf8_bytes", SpanUnit). A leading
// UTF-8 BOM is in no sentence (corpus.Split) but counts: such a document's
// first sentence starts at byte 3, and text[start:end] is the sentence or
// quote for every span. A reply cut at max_tokens is rejected as truncated
// even when its JSON parses, one a content filter stopped as filtered; a claim holding a control character or
// a line break is rejected (ReasonControlChar), one holding the prompt layout's labels too (ReasonPromptLayout).
package extract
