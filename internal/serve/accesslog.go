package serve

import (
	"bufio"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// accessEntry is one line of the JSON access log. It never holds prompt
// or reply text, nor any header (keys stay out).
type accessEntry struct {
	Time       time.Time `json:"time"`
	Remote     string    `json:"remote"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Model      string    `json:"model,omitempty"`
	Backend    string    `json:"backend,omitempty"`
	Status     int       `json:"status"`
	Bytes      int64     `json:"bytes"`
	Stream     bool      `json:"stream,omitempty"`
	TTFBMS     float64   `json:"ttfb_ms,omitempty"`
	DurationMS float64   `json:"duration_ms"`
	Prompt     int64     `json:"prompt_tokens,omitempty"`
	Completion int64     `json:"completion_tokens,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// accessLog writes entries as JSON lines through a buffer flushed every
// flushEvery and at Close, so a request never waits on a write syscall.
type accessLog struct {
	mu   sync.Mutex
	w    *bufio.Writer
	c    io.Closer
	line []byte // the line being written, reused
	stop chan struct{}
	done chan struct{}
}

const accessFlushEvery = 200 * time.Millisecond

// newAccessLog logs to w (nil: no access log); c, when set, is closed at
// Close.
func newAccessLog(w io.Writer, c io.Closer) *accessLog {
	if w == nil {
		return nil
	}
	a := &accessLog{w: bufio.NewWriterSize(w, 64<<10), c: c, stop: make(chan struct{}), done: make(chan struct{})}
	go a.flusher()
	return a
}

func (a *accessLog) flusher() {
	defer close(a.done)
	t := time.NewTicker(accessFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.mu.Lock()
			a.w.Flush()
			a.mu.Unlock()
		case <-a.stop:
			return
		}
	}
}

func (a *accessLog) log(e *accessEntry) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.line = appendAccess(a.line[:0], e)
	a.w.Write(a.line)
	a.mu.Unlock()
}

// appendAccess appends e as one JSON line, byte for byte what
// encoding/json's Encoder writes for it (TestAccessLineMatchesEncodingJSON),
// without reflection: the access log is written on every request, and
// reflection was about a tenth of the router's own CPU per request.
func appendAccess(b []byte, e *accessEntry) []byte {
	b = append(b, `{"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","remote":`...)
	b = appendJSONString(b, e.Remote)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, e.Method)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, e.Path)
	if e.Model != "" {
		b = append(b, `,"model":`...)
		b = appendJSONString(b, e.Model)
	}
	if e.Backend != "" {
		b = append(b, `,"backend":`...)
		b = appendJSONString(b, e.Backend)
	}
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	if e.Stream {
		b = append(b, `,"stream":true`...)
	}
	if e.TTFBMS != 0 {
		b = append(b, `,"ttfb_ms":`...)
		b = appendJSONFloat(b, e.TTFBMS)
	}
	b = append(b, `,"duration_ms":`...)
	b = appendJSONFloat(b, e.DurationMS)
	if e.Prompt != 0 {
		b = append(b, `,"prompt_tokens":`...)
		b = strconv.AppendInt(b, e.Prompt, 10)
	}
	if e.Completion != 0 {
		b = append(b, `,"completion_tokens":`...)
		b = strconv.AppendInt(b, e.Completion, 10)
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = appendJSONString(b, e.Error)
	}
	return append(b, "}\n"...)
}

// appendJSONString appends s quoted: as is when every byte is printable
// ASCII that JSON need not escape, else through encoding/json (a client's
// model name may hold anything).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends f as encoding/json writes a float64.
func appendJSONFloat(b []byte, f float64) []byte {
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		q, _ := json.Marshal(f)
		return append(b, q...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// swap makes w the log's writer from the next line on, after flushing
// what is buffered to the previous one, and closes the previous closer
// (c, when set, is closed at Close): the reopening of a rotated file.
func (a *accessLog) swap(w io.Writer, c io.Closer) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.w.Flush()
	a.w.Reset(w)
	old := a.c
	a.c = c
	a.mu.Unlock()
	if old != nil {
		old.Close()
	}
}

// Flush writes out what is buffered.
func (a *accessLog) Flush() {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.w.Flush()
	a.mu.Unlock()
}

// Close flushes and closes the log.
func (a *accessLog) Close() {
	if a == nil {
		return
	}
	close(a.stop)
	<-a.done
	a.mu.Lock()
	a.w.Flush()
	a.mu.Unlock()
	if a.c != nil {
		a.c.Close()
	}
}

// maxQuoted bounds a client's text the router quotes back or logs (an
// unknown model name, a path it does not serve, a key named twice):
// longer text is cut, at a UTF-8 boundary, and marked
// "…(truncated: N bytes)".
const maxQuoted = 256

// boundQuoted returns s cut to maxQuoted bytes and marked when longer.
// Redact before bounding: a key cut in two would no longer be found.
func boundQuoted(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(truncated: " + strconv.Itoa(len(s)) + " bytes)"
}
