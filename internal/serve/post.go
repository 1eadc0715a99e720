package serve

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"time"
)

// Post sends a shadow mirror's request (shadow.Poster) on the transport's
// pool, without net/http's request and response: the request is written
// as http.Request.Write writes it (the same bytes: TestPostWritesWhat
// RequestWriteWrites), and of the answer only what the mirror needs is
// read (the status; the body, copied to reply as it comes), and of its
// headers only the three that frame the body and say whether the
// connection is reused (Content-Length, Transfer-Encoding, Connection).
// net/http's request and response (their header maps, readers and the
// strings of every header) were about 20 of the 30 allocations a
// mirrored request made in the router, beside the clients' requests.
//
// The request: POST u, HTTP/1.1, headers Host, User-Agent
// (Go-http-client/1.1, as net/http's), Content-Length, Accept
// (text/event-stream when stream), Content-Type (application/json). A
// reused connection that fails before any answer is retried once on a
// new one, as RoundTrip does; ctx's end closes the connection. status is
// 0 when no answer came (err says why); an err with a status is a body
// cut mid-way. u's scheme must be http.
func (t *directTransport) Post(ctx context.Context, u *url.URL, stream bool, body []byte, reply io.Writer) (status int, err error) {
	return t.post(ctx, u, stream, "", body, reply)
}

// errNotDirect is Post's error for a URL that is not plain http.
var errNotDirect = errors.New("not a plain-http backend")

// post is Post with key as the Authorization header ("": none).
func (t *directTransport) post(ctx context.Context, u *url.URL, stream bool, key string, body []byte, reply io.Writer) (int, error) {
	if u.Scheme != "http" {
		return 0, errNotDirect
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	for attempt := 0; ; attempt++ {
		pc, err := t.get(ctx, addr)
		if err != nil {
			return 0, err
		}
		stop := context.AfterFunc(ctx, pc.closeFunc())
		status, reuse, err := pc.post(u, stream, key, body, reply)
		stopped := stop()
		switch {
		case err == nil && reuse && stopped && pc.br.Buffered() == 0:
			t.put(pc)
			return status, nil
		case err == nil:
			pc.c.Close()
			return status, nil
		}
		pc.c.Close()
		if !stopped || ctx.Err() != nil {
			return status, context.Cause(ctx)
		}
		if status == 0 && pc.reused && attempt == 0 {
			// As RoundTrip: the server closed its idle connections.
			t.closeIdle(addr)
			continue
		}
		return status, err
	}
}

// closeFunc is a function that closes pc's connection, made once per
// connection (a closure per request was one more allocation).
func (pc *pconn) closeFunc() func() {
	if pc.closeFn == nil {
		c := pc.c
		pc.closeFn = func() { c.Close() }
	}
	return pc.closeFn
}

// post writes the request on pc and reads its answer into reply; reuse
// says whether the connection may serve another request.
func (pc *pconn) post(u *url.URL, stream bool, key string, body []byte, reply io.Writer) (status int, reuse bool, err error) {
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(pc.w)
	writePost(bw, u, stream, key, body)
	err = bw.Flush()
	bw.Reset(nil)
	writers.Put(bw)
	if err != nil {
		// As pconn.roundTrip: an answer that came before the body could be
		// written (a size limit of the backend's) is still read.
		pc.c.SetReadDeadline(time.Now().Add(earlyAnswerWait))
		status, _, rerr := readAnswer(pc.br, reply)
		pc.c.SetReadDeadline(time.Time{})
		if status == 0 {
			return 0, false, err
		}
		return status, false, rerr
	}
	return readAnswer(pc.br, reply)
}

// writePost writes a mirrored request as http.Request.Write writes an
// *http.Request with these headers (its Host and User-Agent first, then
// Content-Length, then the others sorted by name).
func writePost(bw *bufio.Writer, u *url.URL, stream bool, key string, body []byte) {
	bw.WriteString("POST ")
	bw.WriteString(u.RequestURI())
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(u.Host)
	bw.WriteString("\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: ")
	bw.Write(strconv.AppendInt(bw.AvailableBuffer(), int64(len(body)), 10))
	bw.WriteString("\r\n")
	if stream {
		bw.WriteString("Accept: text/event-stream\r\n")
	}
	if key != "" {
		bw.WriteString("Authorization: ")
		bw.WriteString(key)
		bw.WriteString("\r\n")
	}
	bw.WriteString("Content-Type: application/json\r\n\r\n")
	bw.Write(body)
}

// readAnswer reads one HTTP/1.x answer from br (informational ones
// skipped): its status, and its body written to reply as it is read
// (framed by Content-Length, chunked, or the connection's close). Of the
// headers only Content-Length, Transfer-Encoding and Connection are read.
// reuse: the body ended where its framing said and the connection may
// serve another request (HTTP/1.1 without "Connection: close").
func readAnswer(br *bufio.Reader, reply io.Writer) (status int, reuse bool, err error) {
	var h answerHead
	for {
		if h, err = readHead(br); err != nil {
			return 0, false, err
		}
		// Informational answers (103 Early Hints) precede the real one.
		if h.status >= 200 || h.status == http.StatusSwitchingProtocols {
			break
		}
	}
	reuse = h.keepAlive
	switch {
	case h.status == http.StatusNoContent || h.status == http.StatusNotModified || h.status == http.StatusSwitchingProtocols:
		if h.status == http.StatusSwitchingProtocols {
			reuse = false
		}
	case h.chunked:
		err = copyChunked(br, reply)
	case h.length >= 0:
		err = copyN(br, reply, h.length)
	default:
		// No length: the body ends with the connection.
		reuse = false
		err = copyN(br, reply, -1)
	}
	if err != nil {
		return h.status, false, err
	}
	return h.status, reuse, nil
}

// answerHead is what readAnswer reads of an answer's head.
type answerHead struct {
	status    int
	length    int64 // -1: none given
	chunked   bool
	keepAlive bool
}

// errAnswer is a malformed answer.
var errAnswer = errors.New("malformed HTTP answer")

// readHead reads a status line and the headers up to the empty line.
func readHead(br *bufio.Reader) (answerHead, error) {
	h := answerHead{length: -1}
	line, err := readLine(br)
	if err != nil {
		return h, err
	}
	// "HTTP/1.1 200 OK": the protocol, a space, three digits.
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return h, fmt.Errorf("%w: status line %q", errAnswer, truncate(line))
	}
	code := line[9:12]
	for _, c := range code {
		if c < '0' || c > '9' {
			return h, fmt.Errorf("%w: status line %q", errAnswer, truncate(line))
		}
	}
	h.status = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	if h.status < 100 {
		return h, fmt.Errorf("%w: status line %q", errAnswer, truncate(line))
	}
	// HTTP/1.1 keeps the connection unless told otherwise; an HTTP/1.0
	// answer's is not reused (the mirror's backends speak HTTP/1.1).
	h.keepAlive = line[7] == '1'
	for {
		line, err := readLine(br)
		if err == errLongLine {
			continue // no header read here is that long
		}
		if err != nil {
			return h, err
		}
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, fmt.Errorf("%w: header line %q", errAnswer, truncate(line))
		}
		value = bytes.TrimSpace(value)
		switch {
		case asciiEqualFold(name, "Content-Length"):
			n, ok := parseLength(value)
			if !ok || (h.length >= 0 && h.length != n) {
				return h, fmt.Errorf("%w: Content-Length %q", errAnswer, truncate(value))
			}
			h.length = n
		case asciiEqualFold(name, "Transfer-Encoding"):
			if !asciiEqualFold(value, "chunked") {
				return h, fmt.Errorf("%w: unsupported Transfer-Encoding %q", errAnswer, truncate(value))
			}
			h.chunked = true
		case asciiEqualFold(name, "Connection"):
			for tok := range bytes.SplitSeq(value, []byte(",")) {
				if asciiEqualFold(bytes.TrimSpace(tok), "close") {
					h.keepAlive = false
				}
			}
		}
	}
}

// errLongLine is readLine's error for a line longer than its reader's
// buffer, read and skipped whole.
var errLongLine = fmt.Errorf("%w: a line longer than the read buffer", errAnswer)

// readLine reads one line without its "\r\n" (or "\n"). A line longer
// than br's buffer is skipped whole and answered errLongLine.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		for err == bufio.ErrBufferFull {
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			return nil, err
		}
		return nil, errLongLine
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// copyN copies n bytes of br to w (n < 0: up to EOF) straight from br's
// buffer; a body that ends early is io.ErrUnexpectedEOF.
func copyN(br *bufio.Reader, w io.Writer, n int64) error {
	for n != 0 {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				if err == io.EOF {
					if n < 0 {
						return nil
					}
					return io.ErrUnexpectedEOF
				}
				return err
			}
		}
		k := br.Buffered()
		if n > 0 && int64(k) > n {
			k = int(n)
		}
		b, _ := br.Peek(k)
		if _, err := w.Write(b); err != nil {
			return err
		}
		br.Discard(k)
		if n > 0 {
			n -= int64(k)
		}
	}
	return nil
}

// copyChunked copies a chunked body of br to w and reads its trailer.
func copyChunked(br *bufio.Reader, w io.Writer) error {
	cr := httputil.NewChunkedReader(br)
	var buf [4 << 10]byte
	for {
		n, err := cr.Read(buf[:])
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	// The trailer: header lines (ignored) up to an empty line.
	for {
		line, err := readLine(br)
		if err == errLongLine {
			continue
		}
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
	}
}

// parseLength reads a Content-Length value: decimal digits only, at
// most 18 of them (no allocation, unlike strconv on a converted string).
func parseLength(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// asciiEqualFold reports whether b equals s, ASCII letters of either case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// truncate is b, at most 64 bytes, for an error message.
func truncate(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}

// keyedDirect is the router's own transport with a key set as
// "Authorization" on every request it sends, by RoundTrip and by Post
// (shadow.Poster).
type keyedDirect struct {
	t   *directTransport
	key string
}

func (k keyedDirect) RoundTrip(req *http.Request) (*http.Response, error) {
	req.Header.Set("Authorization", k.key)
	return k.t.RoundTrip(req)
}

// Post is directTransport.Post with the key.
func (k keyedDirect) Post(ctx context.Context, u *url.URL, stream bool, body []byte, reply io.Writer) (int, error) {
	return k.t.post(ctx, u, stream, k.key, body, reply)
}
