package llm

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// MaxReplyBytes bounds a chat completion's answer (the JSON body, or the
// text of a stream): a server that ignores max_tokens cannot make hiro
// read without end. 4 MiB is far above any reply of max_tokens tokens.
const MaxReplyBytes = 4 << 20

// errReplyTooLarge is the error of an answer over MaxReplyBytes.
var errReplyTooLarge = fmt.Errorf("chat completion: the answer is larger than %d MiB (does the server ignore max_tokens?)", MaxReplyBytes>>20)

// streamChunk is the part of an OpenAI chat.completion.chunk hiro reads.
// Decoding only these fields keeps a streamed reply cheap: openai-go's own
// stream decoder (reflection with per-field metadata) took about two
// thirds of hiro's CPU per extraction request when profiled against an
// engine answering at once, which capped a run at a few hundred requests/s
// on a busy two-core machine.
type streamChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		Message *struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// stream posts params (openai-go's request type and encoding, with
// "stream": true) to /v1/chat/completions and reads the server-sent events
// to the end. An answer that is not a stream but a whole chat.completion
// (a server that ignores "stream") is read too. It returns the answer's
// Retry-After when an error answer carried one.
func (c *Client) stream(ctx context.Context, params openai.ChatCompletionNewParams) (*Reply, time.Duration, bool, error) {
	body, err := params.MarshalJSON()
	if err != nil {
		return &Reply{}, 0, false, fmt.Errorf("chat completion: encoding the request: %w", err)
	}
	if len(body) > 2 && body[0] == '{' {
		body = append([]byte(`{"stream":true,`), body[1:]...)
	}
	url := strings.TrimRight(c.baseURL, "/") + "/v1/chat/completions"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return &Reply{}, 0, false, fmt.Errorf("chat completion: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	// A keyless local server ignores it; a profile's key replaces it in
	// the transport (NewTransport).
	hreq.Header.Set("Authorization", "Bearer hiro-local")
	start := time.Now()
	r := &Reply{}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		r.Latency = time.Since(start)
		return r, 0, false, transportError(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		r.Latency = time.Since(start)
		ra, ok := retryAfter(resp.Header, time.Now())
		return r, ra, ok, &APIError{StatusCode: resp.StatusCode, Message: extractMessage(string(raw))}
	}
	var text strings.Builder
	take := func(ch *streamChunk) error {
		if len(ch.Error) > 0 && string(ch.Error) != "null" {
			return fmt.Errorf("chat completion: the server sent an error in the stream: %s", extractMessage(`{"error":`+string(ch.Error)+`}`))
		}
		for _, choice := range ch.Choices {
			content := choice.Delta.Content
			if choice.Message != nil {
				content = choice.Message.Content
			}
			if content != "" {
				if r.ContentChunks == 0 {
					r.TTFT = time.Since(start)
				}
				r.ContentChunks++
				if text.Len()+len(content) > MaxReplyBytes {
					return errReplyTooLarge
				}
				text.WriteString(content)
			}
			if choice.FinishReason != nil && *choice.FinishReason != "" {
				r.FinishReason = *choice.FinishReason
			}
		}
		if u := ch.Usage; u != nil && (u.CompletionTokens > 0 || u.PromptTokens > 0) {
			r.HasUsage = true
			r.Usage = Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens}
		}
		return nil
	}
	finish := func(err error) (*Reply, time.Duration, bool, error) {
		r.Latency = time.Since(start)
		r.Text = text.String()
		return r, 0, false, err
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxReplyBytes+1))
		if err != nil {
			return finish(transportError(ctx, err))
		}
		if len(raw) > MaxReplyBytes {
			return finish(errReplyTooLarge)
		}
		var ch streamChunk
		if err := json.Unmarshal(raw, &ch); err != nil {
			return finish(fmt.Errorf("chat completion: the answer is not a chat completion: %w", err))
		}
		return finish(take(&ch))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 16<<10), 16<<20)
	done := false
	for sc.Scan() {
		line := bytes.TrimRight(sc.Bytes(), "\r")
		data, ok := bytes.CutPrefix(line, []byte("data:"))
		if !ok {
			continue // comments, event names, ids, blank separators
		}
		data = bytes.TrimLeft(data, " ")
		if string(data) == "[DONE]" {
			done = true
			break
		}
		var ch streamChunk
		if err := json.Unmarshal(data, &ch); err != nil {
			return finish(fmt.Errorf("chat completion: a stream event is not JSON: %w", err))
		}
		if err := take(&ch); err != nil {
			return finish(err)
		}
	}
	if err := sc.Err(); err != nil {
		return finish(transportError(ctx, fmt.Errorf("reading the stream: %w", err)))
	}
	if done {
		drain(resp.Body)
	}
	if !done && r.FinishReason == "" {
		// The connection closed cleanly mid-answer (the server died, or a
		// proxy cut it): what came is not the whole reply.
		return finish(transportError(ctx, errStreamCut))
	}
	return finish(nil)
}

// drainWait bounds how long drain waits for the end of a stream after
// its "data: [DONE]"; drainBytes how much it reads.
const (
	drainWait  = 2 * time.Second
	drainBytes = 64 << 10
)

// drain reads what follows "data: [DONE]" (most often only the chunked
// body's terminator) so that the server sees its answer read to the end:
// closing the body early closes the connection, and a proxy in front of
// the engine (hiro serve) then counts a whole answer as a client that
// left mid-response (status 499), and mirrors nothing of it. A server
// that keeps the stream open after [DONE] is cut after drainWait.
func drain(body io.ReadCloser) {
	t := time.AfterFunc(drainWait, func() { body.Close() })
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainBytes))
}

// errStreamCut is the error of a stream that ended with neither a
// finish_reason nor "data: [DONE]": the answer was cut, not finished.
var errStreamCut = fmt.Errorf("the stream ended before the answer did (no finish_reason, no [DONE]): the server or a proxy cut it: %w", io.ErrUnexpectedEOF)

// transportError wraps a transport or read error, as ctx's error when ctx
// ended (cancelled or timed out).
func transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		return fmt.Errorf("chat completion: %w (%v)", ctx.Err(), err)
	}
	return fmt.Errorf("chat completion: %w", err)
}
