package llm

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestStreamReadToItsEnd: after "data: [DONE]" the client reads the
// stream to its end, so the server (or hiro serve in front of it) sees a
// whole answer read, and the connection goes back to the pool (idle)
// instead of being closed under the server's last write: three answers
// take one connection.
func TestStreamReadToItsEnd(t *testing.T) {
	var mu sync.Mutex
	states := map[net.Conn][]http.ConnState{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"delta":{"content":"READY"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond) // the end of the body comes after [DONE]
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		states[c] = append(states[c], s)
		mu.Unlock()
	}
	srv.Start()
	defer srv.Close()
	c := New(srv.URL, nil)
	for i := 0; i < 3; i++ {
		if r, err := chatOnce(t, c); err != nil || r.Text != "READY" {
			t.Fatalf("reply %d: %+v, %v", i, r, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) != 1 {
		t.Errorf("3 answers took %d connections (states %v): the client closed each stream before its end", len(states), states)
	}
}
