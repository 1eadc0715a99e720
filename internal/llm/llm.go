package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// Message is one chat message; Role is "system", "user" or "assistant".
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one bounded chat completion.
type Request struct {
	// Model is the model id sent to the server.
	Model string
	// Messages is the conversation.
	Messages []Message
	// MaxTokens bounds the reply (max_tokens); 0 leaves it to the server.
	MaxTokens int
	// Temperature, when non-nil, is sent; hiro uses 0 for controls.
	Temperature *float64
	// Seed, when non-nil, is sent for reproducible sampling.
	Seed *int64
	// Schema, when non-nil, is sent as response_format
	// {"type":"json_schema","json_schema":{"name":SchemaName,"schema":Schema,"strict":true}}.
	Schema json.RawMessage
	// SchemaName names the schema; default "reply".
	SchemaName string
	// Timeout bounds the whole request, first byte to last; 0 means only ctx.
	Timeout time.Duration
}

// Usage is the token accounting the server reported (OpenAI "usage").
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// Reply is the outcome of one completion.
type Reply struct {
	// Text is the assistant content, concatenated from the stream.
	Text string `json:"text"`
	// FinishReason is the server's finish_reason ("stop", "length", ...).
	FinishReason string `json:"finish_reason"`
	// Usage is from the final usage chunk (stream_options.include_usage);
	// HasUsage is false when the server sent none.
	Usage    Usage `json:"usage"`
	HasUsage bool  `json:"has_usage"`
	// TTFT is the time from sending the request to the first chunk that
	// carries content (time to first token).
	TTFT time.Duration `json:"ttft_ns"`
	// Latency is end-to-end: sending the request to the end of the stream.
	Latency time.Duration `json:"latency_ns"`
	// ContentChunks counts the chunks that carried content; with TTFT and
	// Latency it gives the mean inter-token latency (ITL) when each chunk
	// is one token: (Latency-TTFT)/(ContentChunks-1).
	ContentChunks int `json:"content_chunks"`
	// Retries is how many overload answers (429, 503) were retried before
	// this reply; RetryWait the time spent waiting for them. A reply after
	// retries is a success.
	Retries   int           `json:"retries,omitempty"`
	RetryWait time.Duration `json:"retry_wait_ns,omitempty"`
}

// TPOT returns the time per output token after the first, from the
// server's completion token count: (Latency-TTFT)/(CompletionTokens-1).
// It returns 0 when fewer than two tokens were counted.
func (r *Reply) TPOT() time.Duration {
	if !r.HasUsage || r.Usage.CompletionTokens < 2 {
		return 0
	}
	return (r.Latency - r.TTFT) / time.Duration(r.Usage.CompletionTokens-1)
}

// APIError is a non-2xx answer from the server: StatusCode and the error
// message from an OpenAI-shaped body (or the raw body).
// For an overload status (429, 503) Retries says how many were retried
// before this one and GaveUp that the client's overload bound was reached.
type APIError struct {
	StatusCode int
	Message    string
	Retries    int
	GaveUp     bool
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("HTTP %d", e.StatusCode)
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.GaveUp {
		s += fmt.Sprintf(" (still overloaded after %d retries: the overload bound was reached; raise [overload] max_retries or max_elapsed, or lower the concurrency)", e.Retries)
	}
	return s
}

// Client talks to one OpenAI-compatible server. It is safe for
// concurrent use.
type Client struct {
	baseURL  string
	hc       *http.Client
	overload config.Overload
	stats    counters
	// profile, when the client was made by NewForProfile, lets Chat's
	// errors carry Advice (a TLS or key problem and what to do).
	profile *config.Profile
}

// New returns a client for the server whose root URL is baseURL (hiro
// appends /v1). hc may be nil for a client over NewTransport with no key
// (NewForProfile builds one from a profile, with its key and CA file).
// Overload answers are retried only as WithOverload says.
func New(baseURL string, hc *http.Client, opts ...Option) *Client {
	if hc == nil {
		tr, _ := NewTransport(Endpoint{BaseURL: baseURL}) // no CA file: cannot fail
		hc = &http.Client{Transport: tr}
	}
	c := &Client{baseURL: baseURL, hc: hc}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL returns the server root this client talks to.
func (c *Client) BaseURL() string { return c.baseURL }

// Chat sends one streamed chat completion and reads it to the end. An
// overload answer (429, 503) is retried as the client's overload policy
// says (Reply.Retries counts them). Errors: *APIError for an HTTP error
// answer (GaveUp when the overload bound was reached); ctx's error
// (wrapped) when cancelled or timed out; other errors for transport or
// stream failures. A reply cut by max_tokens is not an error:
// FinishReason is "length". req.Timeout bounds each attempt. For a client
// of NewForProfile, an error that calls for it (a TLS certificate not
// trusted, HTTP 401/403) ends with Advice's hint, after "; "; the error
// still unwraps to its cause (*APIError included).
func (c *Client) Chat(ctx context.Context, req Request) (*Reply, error) {
	r, err := c.withOverloadRetries(ctx, func() (*Reply, time.Duration, bool, error) {
		return c.chatOnce(ctx, req)
	})
	if err != nil && c.profile != nil {
		if a := Advice(c.profile, 0, err); a != "" {
			err = &advisedError{err: err, advice: a}
		}
	}
	return r, err
}

// advisedError is err followed by what to do about it.
type advisedError struct {
	err    error
	advice string
}

func (e *advisedError) Error() string { return e.err.Error() + "; " + e.advice }
func (e *advisedError) Unwrap() error { return e.err }

// chatOnce is one attempt of Chat; it returns the answer's Retry-After
// when an error answer carried one.
func (c *Client) chatOnce(ctx context.Context, req Request) (*Reply, time.Duration, bool, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	params := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case "assistant":
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		}
	}
	if req.MaxTokens > 0 {
		params.MaxTokens = openai.Int(int64(req.MaxTokens))
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.Seed != nil {
		params.Seed = openai.Int(*req.Seed)
	}
	if req.Schema != nil {
		name := req.SchemaName
		if name == "" {
			name = "reply"
		}
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   name,
					Schema: req.Schema,
					Strict: openai.Bool(true),
				},
			},
		}
	}
	return c.stream(ctx, params)
}

// extractMessage pulls error.message (or error as a string) out of an
// error body, falling back to the trimmed body.
func extractMessage(raw string) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal([]byte(raw), &v) == nil {
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
		var o struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &o) == nil && o.Message != "" {
			return o.Message
		}
		if v.Message != "" {
			return v.Message
		}
	}
	return strings.TrimSpace(raw)
}
