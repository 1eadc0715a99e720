// Package llm is hiro's OpenAI-compatible chat client: it makes one bounded
// chat completion, optionally constrained by a JSON Schema
// response_format, always streamed so that time to first token (TTFT) and
// inter-token latency can be measured, and returns the text, finish
// reason, the server's usage counts and timings. The request is
// github.com/openai/openai-go's type and encoding; the stream is read by a
// small decoder of the few fields hiro uses (openai-go's reflective
// decoder cost about two thirds of hiro's CPU per request, see
// stream.go), so one process keeps up with a fast cluster. A stream that
// closes with neither a finish_reason nor "data: [DONE]" was cut (the
// server died, a proxy dropped it): Chat returns an error wrapping
// io.ErrUnexpectedEOF, never the part that came as a reply.
//
// It also owns how hiro reaches a server over the network: NewTransport
// and HTTPClient (a profile's API key as "Authorization: Bearer" on every
// request to its host, its CA file for https, a connection pool sized for
// high concurrency), used by every command and package that talks to a
// server (supervisor readiness, extract, qualify, the router), and the
// warnings about how a profile holds its key (EndpointWarnings: a key over
// plain http to another machine, a key file others can read; printed
// once per run by EndpointFor), the one wording of what to do when a
// server refuses hiro's TLS or key (Advice), and the
// overload policy: 429 and 503 answers retried with bounded exponential
// backoff (github.com/cenkalti/backoff/v5, Retry-After honoured), counted
// in Stats and in each Reply, apart from failures.
//
// It owns no other retry (openai-go's are disabled; a failed request is
// the caller's to judge), no validation of the reply (callers validate:
// engines have accepted a schema and then ignored it), and no knowledge of
// engine kinds. It never prints or logs a key.
package llm
