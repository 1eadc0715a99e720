package serve

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// earlyAnswerServer accepts one connection, reads the request's headers
// only, answers status and closes: a backend that refuses a body before
// reading it (a size limit of its own).
func earlyAnswerServer(t *testing.T, status int) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil || line == "\r\n" {
				break
			}
		}
		body := `{"error":"request body too large"}`
		io.WriteString(c, "HTTP/1.1 "+itoa(status)+" "+http.StatusText(status)+"\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "+itoa(len(body))+"\r\n\r\n"+body)
	}()
	return ln.Addr().String()
}

// TestBackendAnswersBeforeTheBody: a backend that answers (and closes)
// before it has read a large body has its answer passed on, not turned
// into an error because the rest of the body could not be written.
func TestBackendAnswersBeforeTheBody(t *testing.T) {
	addr := earlyAnswerServer(t, http.StatusRequestEntityTooLarge)
	tr := newDirectTransport(http.DefaultTransport)
	body := bytes.Repeat([]byte("x"), 32<<20) // far more than the sockets buffer
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+addr+RouteChat, bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	done := make(chan struct{})
	var resp *http.Response
	var err error
	go func() {
		defer close(done)
		resp, err = tr.RoundTrip(req)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the round trip did not end")
	}
	if err != nil {
		t.Fatalf("the backend answered 413 before reading the body; the transport says: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !bytes.Contains(b, []byte("too large")) {
		t.Errorf("got %d %s, want the backend's 413", resp.StatusCode, b)
	}
}
