package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReplyIsBounded: a server that ignores max_tokens (an answer over
// MaxReplyBytes, as one JSON body or as a stream) gets an error saying so,
// not an unbounded read.
func TestReplyIsBounded(t *testing.T) {
	part := strings.Repeat("x", MaxReplyBytes/4+1)
	for _, stream := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if stream {
				w.Header().Set("Content-Type", "text/event-stream")
				for i := 0; i < 5; i++ {
					fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", part)
				}
				fmt.Fprint(w, "data: [DONE]\n\n")
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"choices":[{"message":{"content":%q},"finish_reason":"stop"}]}`, strings.Repeat(part, 5))
		}))
		_, err := New(srv.URL, nil).Chat(context.Background(), Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
			t.Errorf("stream %v: an answer over the bound: %v", stream, err)
		}
	}
}

// TestCutStreamIsAnError: a stream that closes mid-answer (no
// finish_reason, no [DONE]) is an error, not a short reply; a stream that
// gives its finish_reason but no [DONE] (a server that omits it) is whole.
func TestCutStreamIsAnError(t *testing.T) {
	for _, c := range []struct {
		events string
		cut    bool
	}{
		{`data: {"choices":[{"delta":{"content":"{\"claims\":"}}]}` + "\n\n", true},
		{`data: {"choices":[{"delta":{"content":"{\"claims\":[]}"},"finish_reason":"stop"}]}` + "\n\n", false},
		{`data: {"choices":[{"delta":{"content":"{\"claims\":[]}"}}]}` + "\n\ndata: [DONE]\n\n", false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, c.events)
		}))
		reply, err := New(srv.URL, nil).Chat(context.Background(), Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}})
		srv.Close()
		if c.cut {
			if err == nil || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "no [DONE]") {
				t.Errorf("a cut stream: reply %+v, error %v", reply, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("a whole stream %q: %v", c.events, err)
		}
	}
}
