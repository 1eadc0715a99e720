package extract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hiro-dev/hiro/internal/llm"
)

// chatReq is the part of a chat completion request the fake reads.
type chatReq struct {
	Model          string          `json:"model"`
	Messages       []llm.Message   `json:"messages"`
	ResponseFormat json.RawMessage `json:"response_format"`
}

// fakeServer is an in-process OpenAI-compatible server for pure logic: it
// streams whatever answer returns (status 200), or an error status when
// answer returns a negative code via fakeError.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatReq
}

// fakeError makes the fake answer with an HTTP error.
type fakeError struct{ status int }

func newFake(t *testing.T, answer func(r chatReq) (string, error)) *fakeServer {
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req chatReq
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		text, err := answer(req)
		if fe, ok := err.(fakeError); ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(fe.status)
			fmt.Fprintf(w, `{"error":{"message":"fake error %d"}}`, fe.status)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(v any) {
			b, _ := json.Marshal(v)
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		// Stream in pieces of up to 7 bytes, like tokens.
		n := 0
		for len(text) > 0 {
			k := min(7, len(text))
			chunk(map[string]any{"id": "x", "object": "chat.completion.chunk", "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text[:k]}}}})
			text = text[k:]
			n++
		}
		chunk(map[string]any{"id": "x", "object": "chat.completion.chunk", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
		chunk(map[string]any{"id": "x", "object": "chat.completion.chunk", "model": req.Model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": n, "total_tokens": 100 + n}})
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(f.Close)
	return f
}

func (e fakeError) Error() string { return fmt.Sprintf("HTTP %d", e.status) }

func (f *fakeServer) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeServer) client() *llm.Client { return llm.New(f.URL, nil) }

// target returns the target sentence of the request's first user
// message: the line after "Target sentence:" (the layout of package
// prompt).
func target(r chatReq) string {
	lines := strings.Split(r.Messages[1].Content, "\n")
	for i, line := range lines {
		if line == "Target sentence:" && i+1 < len(lines) {
			return lines[i+1]
		}
	}
	return ""
}

// echoAnswer is a well-behaved model: one claim, the target sentence
// itself, quoting the whole sentence (as rendered on one line).
func echoAnswer(r chatReq) (string, error) {
	t := target(r)
	b, _ := json.Marshal(map[string]any{"claims": []any{map[string]string{"text": t, "quote": t}}})
	return string(b), nil
}

// countingClient is an llm.Client that remembers the target sentence of
// every request it sends.
type countingClient struct {
	c  *llm.Client
	mu sync.Mutex
	ts []string
}

func newCountingClient(base string) *countingClient { return &countingClient{c: llm.New(base, nil)} }

func (c *countingClient) Chat(ctx context.Context, req llm.Request) (*llm.Reply, error) {
	c.mu.Lock()
	c.ts = append(c.ts, target(chatReq{Messages: req.Messages}))
	c.mu.Unlock()
	return c.c.Chat(ctx, req)
}

func (c *countingClient) targets() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ts...)
}
