// Package llm is hiro's OpenAI-compatible chat client: a thin wrapper over
// github.com/openai/openai-go that makes one bounded chat completion,
// optionally constrained by a JSON Schema response_format, always streamed
// so that time to first token (TTFT) and inter-token latency can be
// measured, and returns the text, finish reason, the server's usage counts
// and timings.
//
// It owns no retry policy (retries are disabled: callers decide), no
// validation of the reply (callers validate: engines have accepted a schema
// and then ignored it), and no knowledge of engine kinds.
package llm
