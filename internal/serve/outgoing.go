package serve

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"
)

// The request the router sends a backend for a client's request: its
// URL, the headers it forwards and the ones it drops (hop-by-hop), in
// both directions.

// outgoing is the request sent to the backend for a client's request:
// the route's path under the backend's base URL, the client's query and
// headers less the hop-by-hop ones and its key (the backend's own key,
// if any, is attached here or by the https transport), body in memory:
// replayable (directTransport retries a request a reused connection
// failed before any answer), and a reader net/http knows is in memory,
// so that the headers and the body leave in one write.
func (rt *route) outgoing(ctx *fasthttp.RequestCtx, rctx context.Context, path string, body []byte) *http.Request {
	u := &url.URL{Scheme: rt.target.Scheme, Host: rt.target.Host, Path: singleJoiningSlash(rt.target.Path, path),
		RawQuery: rt.target.RawQuery}
	if q := ctx.URI().QueryString(); len(q) > 0 {
		if u.RawQuery == "" {
			u.RawQuery = string(q)
		} else {
			u.RawQuery += "&" + string(q)
		}
	}
	hdr := make(http.Header, 8)
	var connTokens []byte
	for k, v := range ctx.Request.Header.All() {
		key := textproto.CanonicalMIMEHeaderKey(string(k))
		switch key {
		case "Authorization", "Host", "Content-Length":
			continue
		case "Connection":
			connTokens = append(append(connTokens, ','), v...)
			continue
		}
		if hopHeaders[key] {
			continue
		}
		hdr[key] = append(hdr[key], string(v))
	}
	for _, tok := range bytes.Split(connTokens, []byte{','}) {
		if tok = bytes.TrimSpace(tok); len(tok) > 0 {
			delete(hdr, textproto.CanonicalMIMEHeaderKey(string(tok)))
		}
	}
	if _, ok := hdr["User-Agent"]; !ok {
		hdr["User-Agent"] = []string{""} // not Go's default
	}
	if rt.upstreamKey != "" {
		hdr["Authorization"] = []string{rt.upstreamKey}
	}
	req := (&http.Request{Method: http.MethodPost, URL: u, Host: rt.target.Host, Header: hdr,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		GetBody: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil },
	}).WithContext(rctx)
	return req
}

// hopHeaders are the hop-by-hop headers a proxy does not forward (RFC
// 9110 section 7.6.1, and those net/http/httputil drops).
var hopHeaders = map[string]bool{
	"Connection": true, "Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
}

// hopByHop reports whether a response header k is not forwarded: a
// hop-by-hop header, or one the response's Connection header names.
func hopByHop(k string, h http.Header) bool {
	if hopHeaders[k] {
		return true
	}
	for _, v := range h["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(tok)) == k {
				return true
			}
		}
	}
	return false
}

// endToEnd reports whether the response header k (canonical) is one the
// router forwards from an answer whose Connection options were lost
// (see forward): the content and caching headers, Date, Location,
// Retry-After, WWW-Authenticate, X-Request-Id, and OpenAI's Openai-* and
// X-Ratelimit-* headers.
func endToEnd(k string) bool {
	switch k {
	case "Content-Type", "Content-Encoding", "Content-Language", "Content-Disposition", "Cache-Control",
		"Date", "Expires", "Etag", "Last-Modified", "Vary", "Location", "Retry-After", "Www-Authenticate", "X-Request-Id":
		return true
	}
	return strings.HasPrefix(k, "Openai-") || strings.HasPrefix(k, "X-Ratelimit-")
}

// singleJoiningSlash joins a base path and a route with one slash.
func singleJoiningSlash(a, b string) string {
	switch as, bs := strings.HasSuffix(a, "/"), strings.HasPrefix(b, "/"); {
	case as && bs:
		return a + b[1:]
	case !as && !bs:
		return a + "/" + b
	}
	return a + b
}
