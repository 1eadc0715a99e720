package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/valyala/fasthttp"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/llm"
)

// Routes the router proxies (the "route" label of the metrics).
const (
	RouteChat        = "/v1/chat/completions"
	RouteCompletions = "/v1/completions"
	RouteEmbeddings  = "/v1/embeddings"
	RouteModels      = "/v1/models"
	// RouteOther is the route label of a request to a path the router
	// does not serve (a 404): one series, whatever the path.
	RouteOther = "other"
)

// NewTransport returns the router's upstream transport for https backends
// (plain-HTTP ones go through directTransport): keep-alive
// connections reused across requests (up to 256 idle per backend), no
// compression negotiation (SSE must pass as it comes), no proxy from the
// environment, HTTP/1.1 only, a bounded dial. There is no response header
// timeout: a long non-streamed generation sends its headers at the end;
// the client's disconnect cancels it.
func NewTransport() *http.Transport {
	return &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
		ExpectContinueTimeout: 0,
		WriteBufferSize:       16 << 10,
		ReadBufferSize:        16 << 10,
	}
}

// route is one backend the router sends requests to.
type route struct {
	name string
	prof *config.Profile
	eng  *engine.Engine
	norm string       // eng.NormalizeModelID(prof.Model)
	hc   *http.Client // health and canary requests (the profile's key and CA)
	// target is the backend's base URL; tr carries proxied requests to it
	// (directTransport for plain HTTP, llm.NewTransport for https, which
	// attaches the backend's key itself); upstreamKey is the
	// "Authorization" value a plain-HTTP backend gets ("" for none).
	target      *url.URL
	tr          http.RoundTripper
	upstreamKey string
	// onErr is told about every upstream error (class) of this backend;
	// when it returns a reason, the client gets 503 with that reason and
	// Retry-After retry (seconds) instead of 502 (production found dead
	// by a request, before the watcher saw it).
	onErr func(rt *route, class string) (reason string, retry int)
	// inFlight counts production requests proxied on this route (see
	// proxyRequest); a switch waits for the previous route's to end.
	inFlight atomic.Int64
	// watch is the health of a [serve] served backend (served.go).
	watch servedWatch
}

// newRoute builds the route of prof: plain-HTTP backends go through the
// shared direct transport with the profile's key attached; https ones
// through llm.NewTransport (the profile's CA file and key). onErr: see
// route.onErr. Errors are the profile's key or CA file problems, naming
// the key path.
func newRoute(prof *config.Profile, direct *directTransport, onErr func(rt *route, class string) (reason string, retry int)) (*route, error) {
	eng, err := engine.Lookup(prof.Engine)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %w", prof.Name, err)
	}
	target, err := url.Parse(prof.BaseURL)
	if err != nil || target.Host == "" {
		return nil, fmt.Errorf("backend %s: base_url %q is not a URL", prof.Name, prof.BaseURL)
	}
	// Secrets the engine's command line or environment holds (an
	// --api-key argument) are redacted wherever its log is quoted.
	prof.RegisterSecrets(os.LookupEnv)
	ep, err := llm.EndpointFor(prof) // reads the key and registers it for redaction
	if err != nil {
		return nil, err
	}
	hc, err := llm.HTTPClient(prof)
	if err != nil {
		return nil, err
	}
	rt := &route{name: prof.Name, prof: prof, eng: eng, norm: eng.NormalizeModelID(prof.Model), hc: hc,
		target: target, tr: direct, onErr: onErr}
	if target.Scheme == "https" {
		if rt.tr, err = llm.NewTransport(ep); err != nil {
			return nil, &config.Error{Key: "backends." + prof.Name + ".ca_file", Msg: err.Error()}
		}
	} else if ep.APIKey != "" {
		rt.upstreamKey = "Bearer " + ep.APIKey
	}
	return rt, nil
}

// matches reports whether a request for model goes to this backend.
func (rt *route) matches(model string) bool {
	return model == rt.prof.Model || rt.eng.NormalizeModelID(model) == rt.norm
}

// upstreamErrorClass names an upstream failure for the metrics:
// canceled (the client left), timeout, connect (refused, unreachable),
// reset (the connection broke mid-way), other. (forward adds "auth" for
// a backend that answered 401 to the router's key, upstreamBody "cut"
// for a body broken mid-way.)
func upstreamErrorClass(ctx context.Context, err error) string {
	switch {
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "connect"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "reset"
	}
	return "other"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// tailSize bounds the body tail kept for "usage": a stream's last chunk
// or the end of a JSON answer (about 300 bytes in vLLM, SGLang, llama.cpp
// and Ollama answers); every open stream holds one.
const tailSize = 2 << 10

// keepTail appends b to tail, keeping its last tailSize bytes.
func keepTail(tail, b []byte) []byte {
	if len(b) >= tailSize {
		return append(tail[:0], b[len(b)-tailSize:]...)
	}
	if over := len(tail) + len(b) - tailSize; over > 0 {
		tail = tail[:copy(tail, tail[over:])]
	}
	return append(tail, b...)
}

// usage reads prompt and completion tokens from the last "usage" object in
// the body's tail (a JSON answer, or a stream's last chunk).
func usageOf(tail []byte) (prompt, completion int64, ok bool) {
	i := bytes.LastIndex(tail, []byte(`"usage"`))
	if i < 0 {
		return 0, 0, false
	}
	rest := tail[i+len(`"usage"`):]
	j := bytes.IndexByte(rest, '{')
	if j < 0 {
		return 0, 0, false
	}
	u := gjson.ParseBytes(rest[j:])
	p, c := u.Get("prompt_tokens"), u.Get("completion_tokens")
	if !p.Exists() && !c.Exists() {
		return 0, 0, false
	}
	return p.Int(), c.Int(), true
}

// errorBody is an OpenAI-shaped error.
type errorBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// writeError answers an OpenAI-shaped error; retryAfter > 0 sets
// Retry-After (seconds). It returns the body's length.
func writeError(ctx *fasthttp.RequestCtx, status int, typ, msg string, retryAfter int) int {
	var e errorBody
	e.Error.Message, e.Error.Type, e.Error.Code = msg, typ, status
	b, _ := json.Marshal(e)
	b = append(b, '\n')
	if retryAfter > 0 {
		ctx.Response.Header.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
	return len(b)
}

// jsonSyntaxError says where body stops being JSON (the slow path of a
// malformed request).
func jsonSyntaxError(body []byte) string {
	var v json.RawMessage
	err := json.Unmarshal(body, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v at byte %d", se, se.Offset)
	}
	if err != nil {
		return err.Error()
	}
	return "not a JSON object"
}

// requestFields reads a request body (valid JSON) once: its top-level
// "model" (a missing one has Type gjson.Null) and "stream" fields, and
// the first top-level key it names twice (dup; "" when none). Keys are
// compared as engines decode them: unescaped ("mod\u0065l" is "model")
// and without regard to case, since Go's encoding/json (Ollama) matches
// a field name case-insensitively and keeps the last match, while a
// first-match reader like this one would route by the first.
func requestFields(body []byte) (model gjson.Result, stream bool, dup string) {
	obj := gjson.ParseBytes(body)
	if !obj.IsObject() {
		return model, false, ""
	}
	var small [16]string
	seen := small[:0]
	var many map[string]bool
	obj.ForEach(func(k, v gjson.Result) bool {
		key := foldKey(k.String())
		if many != nil {
			if many[key] {
				dup = k.String()
				return false
			}
			many[key] = true
		} else {
			for _, s := range seen {
				if s == key {
					dup = k.String()
					return false
				}
			}
			if seen = append(seen, key); len(seen) > 32 {
				many = make(map[string]bool, 2*len(seen))
				for _, s := range seen {
					many[s] = true
				}
			}
		}
		switch key {
		case "model":
			model = v
		case "stream":
			stream = v.Bool()
		}
		return true
	})
	return model, stream, dup
}

// foldKey maps s to one spelling per case-folding class (each rune to the
// smallest rune of its unicode.SimpleFold orbit, so "MODEL", "Model" and
// "model" with a Kelvin sign for k fold alike), then lowercases ASCII. A
// key of ASCII lowercase letters, digits and '_' is returned as is.
func foldKey(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return strings.Map(func(r rune) rune {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		return unicode.ToLower(min)
	}, s)
}

// withModel returns body with its "model" set to model.
func withModel(body []byte, model string) ([]byte, error) {
	return sjson.SetBytes(body, "model", model)
}

// listModels formats names for an error message.
func listModels(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// MaxJSONDepth is the deepest nesting of arrays and objects a request
// body may have (the bound encoding/json keeps, and so do the engines
// that decode with it). The router's JSON readers recurse once per level:
// 8 MB of "[" took about 930 MB of stack in gjson's validation. A deeper
// body is refused (400) by nestedDeeper before any of them reads it.
const MaxJSONDepth = 10000

// nestedDeeper reports whether the JSON text b nests arrays and objects
// more than max levels deep: one linear pass, brackets inside strings
// (escapes included) not counted. A closing bracket with nothing open
// ends the scan (false): b is not JSON, and a parser stops there, no
// deeper than the scan went.
func nestedDeeper(b []byte, max int) bool {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '[', '{':
			if depth++; depth > max {
				return true
			}
		case ']', '}':
			if depth--; depth < 0 {
				return false
			}
		case '"':
			// Skip to the closing quote, over escaped characters.
			for i++; i < len(b); i++ {
				j := bytes.IndexAny(b[i:], `"\`)
				if j < 0 {
					return false // an unterminated string: not JSON
				}
				i += j
				if b[i] == '"' {
					break
				}
				i++ // the escaped character
			}
		}
	}
	return false
}
