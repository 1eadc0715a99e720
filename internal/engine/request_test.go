package engine

import (
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

func TestClassifyRequest(t *testing.T) {
	for _, c := range []struct {
		r    RequestError
		want failure.Class
	}{
		{RequestError{StatusCode: 400, Message: "chat template not found"}, failure.ClassTokenizerTemplate},
		{RequestError{StatusCode: 400, Message: "bad request"}, failure.ClassProbeFailed},
		{RequestError{StatusCode: 500, Message: "internal"}, failure.ClassProbeFailed},
		{RequestError{StatusCode: 500, Message: "internal", Exited: true}, failure.ClassEngineDied},
		{RequestError{Message: "context deadline exceeded"}, failure.ClassEngineDied},
		{RequestError{Message: "connection refused", Exited: true}, failure.ClassEngineDied},
		{RequestError{StatusCode: 400, Message: "response_format not supported", Structured: true}, failure.ClassStructuredOutputRejected},
		{RequestError{StatusCode: 500, Message: "grammar crash", Structured: true}, failure.ClassStructuredOutputCrash},
		{RequestError{Message: "EOF", Structured: true, Exited: true}, failure.ClassStructuredOutputCrash},
	} {
		if got := ClassifyRequest(c.r); got != c.want {
			t.Errorf("ClassifyRequest(%+v) = %s, want %s", c.r, got, c.want)
		}
	}
}

// TestRequestStatus: the access-log shapes of a completion request the
// tracker reads (a 2xx means requests are served; any answer once up
// means one was processed).
func TestRequestStatus(t *testing.T) {
	for _, c := range []struct {
		line string
		want int
	}{
		{`INFO:     127.0.0.1:50112 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error`, 500},
		{"srv  log_server_r: request: POST /v1/chat/completions 127.0.0.1 200", 200},
		{`[GIN] 2025/04/24 - 05:53:58 | 200 | 18.911542066s |      172.18.0.5 | POST     "/api/generate"`, 200},
		{`{"timestamp":1712210556,"level":"INFO","function":"log_server_request","status":200,"method":"POST","path":"/completion"}`, 200},
		{`INFO [      log_server_request] request | tid="1" timestamp=2 remote_addr="127.0.0.1" remote_port=40550 status=200 method="POST" path="/completion" params={}`, 200},
	} {
		if got, ok := requestStatus(c.line); !ok || got != c.want {
			t.Errorf("requestStatus(%q) = %d, %v; want %d", c.line, got, ok, c.want)
		}
	}
	if _, ok := requestStatus(`INFO [      log_server_request] request | status=200 method="GET" path="/health"`); ok {
		t.Errorf("a GET of /health counted as a completion request")
	}
}
