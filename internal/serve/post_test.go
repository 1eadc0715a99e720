package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/shadow"
)

// The router's transport posts the mirror's requests itself, with and
// without a key.
var (
	_ shadow.Poster = (*directTransport)(nil)
	_ shadow.Poster = keyedDirect{}
)

// TestPostWritesWhatRequestWriteWrites: a mirrored request is written
// byte for byte as net/http writes the *http.Request the mirror used to
// send (same request line, headers and their order, body), with and
// without a key, streamed or not, with a query.
func TestPostWritesWhatRequestWriteWrites(t *testing.T) {
	body := []byte(`{"model":"cand","messages":[{"role":"user","content":"hi"}]}`)
	for _, raw := range []string{"http://127.0.0.1:8081/v1/chat/completions", "http://localhost/base/v1/completions?x=1"} {
		u, _ := url.Parse(raw)
		for _, stream := range []bool{false, true} {
			for _, key := range []string{"", "Bearer sk-cand"} {
				var got bytes.Buffer
				bw := bufio.NewWriter(&got)
				writePost(bw, u, stream, key, body)
				bw.Flush()

				req, _ := http.NewRequest(http.MethodPost, raw, bytes.NewReader(body))
				req.Header["Content-Type"] = []string{"application/json"}
				if stream {
					req.Header["Accept"] = []string{"text/event-stream"}
				}
				if key != "" {
					req.Header.Set("Authorization", key)
				}
				var want bytes.Buffer
				if err := req.Write(&want); err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Errorf("%s stream %v key %q:\nPost writes  %q\nnet/http    %q", raw, stream, key, got.String(), want.String())
				}
			}
		}
	}
}

// TestReadAnswer: an answer is framed by Content-Length, chunked
// encoding (with a trailer) or the connection's close; informational
// answers are skipped; 204 has no body; "Connection: close" and HTTP/1.0
// are not reused; the status and body are those net/http reads; what is
// malformed, cut or unsupported is an error.
func TestReadAnswer(t *testing.T) {
	long := "X-Long: " + strings.Repeat("a", 6<<10) + "\r\n"
	for _, c := range []struct {
		name, in  string
		status    int
		body      string
		reuse     bool
		err       error // errors.Is; nil: none
		anyErr    bool
		afterBody string // what is left for the next answer
	}{
		{name: "length", in: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5\r\n\r\nhelloNEXT", status: 200, body: "hello", reuse: true, afterBody: "NEXT"},
		{name: "lower-case headers, no reason", in: "HTTP/1.1 200\r\ncontent-length:  3 \r\n\r\nabc", status: 200, body: "abc", reuse: true},
		{name: "chunked with trailer", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n3;ext=1\r\n ok\r\n0\r\nX-Trailer: t\r\n\r\nNEXT", status: 200, body: "data: ok", reuse: true, afterBody: "NEXT"},
		{name: "chunked beats length", in: "HTTP/1.1 200 OK\r\nContent-Length: 99\r\nTransfer-Encoding: Chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n", status: 200, body: "ab", reuse: true},
		{name: "informational first", in: "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", status: 201, body: "ok", reuse: true},
		{name: "no content", in: "HTTP/1.1 204 No Content\r\n\r\nNEXT", status: 204, reuse: true, afterBody: "NEXT"},
		{name: "close", in: "HTTP/1.1 503 Service Unavailable\r\nConnection: keep-alive, Close\r\nContent-Length: 4\r\n\r\nbusy", status: 503, body: "busy"},
		{name: "HTTP/1.0", in: "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok"},
		{name: "to the close", in: "HTTP/1.1 200 OK\r\n\r\nall of it", status: 200, body: "all of it"},
		{name: "a long header skipped", in: "HTTP/1.1 200 OK\r\n" + long + "Content-Length: 2\r\n\r\nok", status: 200, body: "ok", reuse: true},
		{name: "bare newlines", in: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", status: 200, body: "ok", reuse: true},
		{name: "cut body", in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", status: 200, body: "short", err: io.ErrUnexpectedEOF},
		{name: "cut chunk", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nab", status: 200, body: "ab", anyErr: true},
		{name: "cut head", in: "HTTP/1.1 200 OK\r\nContent-Le", err: io.ErrUnexpectedEOF},
		{name: "nothing", in: "", err: io.EOF},
		{name: "not HTTP", in: "SSH-2.0-OpenSSH\r\n\r\n", err: errAnswer},
		{name: "bad status", in: "HTTP/1.1 2x0 OK\r\n\r\n", err: errAnswer},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", err: errAnswer},
		{name: "two lengths", in: "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", err: errAnswer},
		{name: "gzip", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", err: errAnswer},
		{name: "no colon", in: "HTTP/1.1 200 OK\r\nBroken\r\n\r\n", err: errAnswer},
	} {
		br := bufio.NewReaderSize(strings.NewReader(c.in), 4<<10)
		var body bytes.Buffer
		status, reuse, err := readAnswer(br, &body)
		switch {
		case c.err != nil && !errors.Is(err, c.err), c.anyErr && err == nil, c.err == nil && !c.anyErr && err != nil:
			t.Errorf("%s: error %v, want %v", c.name, err, c.err)
		}
		if status != c.status || body.String() != c.body || reuse != c.reuse {
			t.Errorf("%s: status %d, body %q, reuse %v; want %d, %q, %v", c.name, status, body.String(), reuse, c.status, c.body, c.reuse)
		}
		if rest, _ := io.ReadAll(br); c.afterBody != "" && string(rest) != c.afterBody {
			t.Errorf("%s: left %q for the next answer, want %q", c.name, rest, c.afterBody)
		}
		if c.err != nil || c.anyErr {
			continue
		}
		// What net/http reads of the same answer.
		resp, err := readFinalResponse(bufio.NewReader(strings.NewReader(c.in)), &http.Request{Method: http.MethodPost})
		if err != nil {
			t.Fatalf("%s: net/http: %v", c.name, err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != status || string(b) != c.body {
			t.Errorf("%s: net/http reads %d %q, readAnswer %d %q", c.name, resp.StatusCode, b, status, c.body)
		}
	}
}

// cannedBackend is a loopback server that reads each request (its head
// and Content-Length body) and answers answer to it; it counts the
// connections it accepted. With closeAfterOne it closes each connection
// after one answer without saying so (as a backend restarted while the
// router's connection sat idle).
type cannedBackend struct {
	url           *url.URL
	accepted      atomic.Int64
	answer        string
	closeAfterOne bool
	got           chan string
}

func startCanned(t *testing.T, answer string, closeAfterOne bool) *cannedBackend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	cb := &cannedBackend{answer: answer, closeAfterOne: closeAfterOne, got: make(chan string, 1)}
	cb.url, _ = url.Parse("http://" + ln.Addr().String() + "/v1/chat/completions")
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cb.accepted.Add(1)
			go cb.serve(c)
		}
	}()
	return cb
}

func (cb *cannedBackend) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		select {
		case cb.got <- req.Header.Get("Authorization") + " " + string(b):
		default:
		}
		if _, err := io.WriteString(c, cb.answer); err != nil || cb.closeAfterOne {
			return
		}
	}
}

// TestPostReusesAndRetries: Post keeps a connection for the next request
// when the answer allows it, sends the key of keyedDirect, retries once
// on a new connection when a reused one was closed by the backend, and
// closes the connection when its context ends mid-answer.
func TestPostReusesAndRetries(t *testing.T) {
	ctx := context.Background()
	tr := newDirectTransport(http.DefaultTransport)
	defer tr.CloseIdleConnections()
	cb := startCanned(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", false)
	kd := keyedDirect{t: tr, key: "Bearer sk-cand"}
	for i := range 3 {
		var reply bytes.Buffer
		status, err := kd.Post(ctx, cb.url, false, []byte(`{"a":1}`), &reply)
		if err != nil || status != 200 || reply.String() != "ok" {
			t.Fatalf("post %d: %d %q %v", i, status, reply.String(), err)
		}
		if got := <-cb.got; got != `Bearer sk-cand {"a":1}` {
			t.Errorf("post %d: the backend got %q", i, got)
		}
	}
	if n := cb.accepted.Load(); n != 1 {
		t.Errorf("3 posts on %d connections, want 1 (kept between them)", n)
	}

	// A backend that closes after each answer: the reused connection
	// fails before any answer, the post is sent again on a new one.
	closing := startCanned(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true)
	for i := range 3 {
		var reply bytes.Buffer
		status, err := tr.Post(ctx, closing.url, false, []byte(`{}`), &reply)
		if err != nil || status != 200 || reply.String() != "ok" {
			t.Fatalf("post %d to a closing backend: %d %q %v", i, status, reply.String(), err)
		}
		<-closing.got
		time.Sleep(20 * time.Millisecond) // the backend's close arrives
	}
	if n := closing.accepted.Load(); n != 3 {
		t.Errorf("3 posts to a backend that closes after each: %d connections, want 3", n)
	}

	// A body that never ends: the context's end cuts it, with its cause.
	hang := startCanned(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npart", false)
	cctx, cancel := context.WithCancelCause(ctx)
	time.AfterFunc(100*time.Millisecond, func() { cancel(context.DeadlineExceeded) })
	var reply bytes.Buffer
	status, err := tr.Post(cctx, hang.url, true, []byte(`{}`), &reply)
	if status != 200 || !errors.Is(err, context.DeadlineExceeded) || reply.String() != "part" {
		t.Errorf("a cut post: %d %q %v, want 200, \"part\" and the context's cause", status, reply.String(), err)
	}

	if _, err := tr.Post(ctx, &url.URL{Scheme: "https", Host: "127.0.0.1:1"}, false, nil, io.Discard); !errors.Is(err, errNotDirect) {
		t.Errorf("https: %v, want errNotDirect", err)
	}
}

// TestPostAllocations: a mirrored request posted on a kept connection
// allocates at most twice (context.AfterFunc, for the context's end),
// where an *http.Request
// written and an *http.Response read made about 20 (the backend here is
// the same process: its allocations count too, so the bound is on both).
func TestPostAllocations(t *testing.T) {
	ctx := context.Background()
	tr := newDirectTransport(http.DefaultTransport)
	defer tr.CloseIdleConnections()
	// A backend that allocates nothing per request: it reads the request
	// (its size is known) and writes a fixed answer.
	body := []byte(`{"model":"cand","messages":[]}`)
	var head bytes.Buffer
	bw := bufio.NewWriter(&head)
	writePost(bw, &url.URL{Scheme: "http", Host: "x", Path: "/"}, false, "", body)
	bw.Flush()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	u, _ := url.Parse("http://" + ln.Addr().String() + "/")
	reqLen := head.Len() - len("x") + len(u.Host)
	answer := []byte("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}")
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, reqLen)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(answer); err != nil {
				return
			}
		}
	}()
	var reply bytes.Buffer
	post := func() {
		reply.Reset()
		if status, err := tr.Post(ctx, u, false, body, &reply); err != nil || status != 200 || reply.String() != `{"ok":true}` {
			t.Fatalf("post: %d %q %v", status, reply.String(), err)
		}
	}
	post() // the connection, dialled once
	if n := testing.AllocsPerRun(200, post); n > 2 {
		t.Errorf("a post allocates %.1f times, want at most 2", n)
	}
}
