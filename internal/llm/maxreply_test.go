package llm

import (
	"context"
	"fmt"
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
