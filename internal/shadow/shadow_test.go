package shadow

import (
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/prompt"
)

func TestParseReplyJSONAndStream(t *testing.T) {
	r := parseReply([]byte(`{"choices":[{"message":{"content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`), false)
	if r.text != "hello" || r.finish != "stop" || r.prompt != 3 || r.completion != 1 {
		t.Errorf("JSON reply: %+v", r)
	}
	sse := "data: {\"choices\":[{\"delta\":{\"content\":\"hel\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"length\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n"
	r = parseReply([]byte(sse), true)
	if r.text != "hello" || r.finish != "length" || r.prompt != 5 || r.completion != 2 {
		t.Errorf("stream reply: %+v", r)
	}
	// Captured in pieces cut anywhere, a stream is read line by line.
	j := &Job{Stream: true}
	for i := 0; i < len(sse); i += 7 {
		j.Capture([]byte(sse[i:min(i+7, len(sse))]))
	}
	j.streamed.end()
	if r := j.streamed; r.text != "hello" || r.finish != "length" || r.prompt != 5 || j.size != len(sse) {
		t.Errorf("captured stream: %+v (size %d)", r, j.size)
	}
	if r := parseReply([]byte(`{"choices":[{"text":"done"}]}`), false); r.text != "done" {
		t.Errorf("completion reply: %+v", r)
	}
}

func extractionRequest(target string) []byte {
	var msgs []map[string]string
	for _, m := range extract.Messages(prompt.Input{Target: target, Before: []string{"Before it."}}) {
		msgs = append(msgs, map[string]string{"role": m.Role, "content": m.Content})
	}
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	return b
}

func TestClassify(t *testing.T) {
	req := classify(extractionRequest("The bridge opened in 1932."))
	if req.kind != KindExtraction || req.src.Sentence != "The bridge opened in 1932." || !strings.Contains(req.src.Window, "Before it.") {
		t.Errorf("extraction request: %+v", req)
	}
	// The same user message under another system message is not hiro's.
	other := strings.Replace(string(extractionRequest("x y.")), prompt.SystemText[:20], "You are a pirate.", 1)
	if req := classify([]byte(other)); req.kind == KindExtraction {
		t.Error("a request with another system message was taken for an extraction request")
	}
	structured := `{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","required":["a"]}}}}`
	req = classify([]byte(structured))
	if req.kind != KindStructured || !validJSON(req.schema, `{"a":1}`) || validJSON(req.schema, `{"b":1}`) || validJSON(req.schema, `not json`) {
		t.Errorf("structured request: %+v", req)
	}
	if req := classify([]byte(`{"model":"m","prompt":"hi"}`)); req.kind != KindText {
		t.Errorf("completion request: %+v", req)
	}
}

// extractionPair scores one extraction pair whose replies are prod and
// cand (JSON texts) through the real validators.
func extractionPair(t *testing.T, m *Mirror, target, prod, cand string) pair {
	t.Helper()
	j := &Job{Route: "/v1/chat/completions", Body: extractionRequest(target)}
	mk := func(text string) side {
		b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": text}, "finish_reason": "stop"}}})
		return side{status: 200, latency: time.Millisecond, bytes: len(b), reply: parseReply(b, false)}
	}
	return m.score(j, mk(prod), mk(cand))
}

func TestDecide(t *testing.T) {
	v, err := extract.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	m := &Mirror{validator: v}
	target := "The bridge opened in 1932 and carried trams."
	good := `{"claims":[{"text":"The bridge opened in 1932.","quote":"The bridge opened in 1932"}]}`
	ungrounded := `{"claims":[{"text":"The bridge opened in 1932.","quote":"a quote from nowhere at all"}]}`
	result := func(n, bad int, candBad string) *Result {
		r := &Result{MinPairs: 30, Margin: DefaultMargin, Candidate: "c", Production: "p"}
		var ps []pair
		for i := range n {
			cand := good
			if i < bad {
				cand = candBad
			}
			ps = append(ps, extractionPair(t, m, target, good, cand))
		}
		summarize(r, ps)
		return r
	}
	if r := result(10, 0, good); r.Outcome != "inconclusive" || !strings.Contains(r.Reasons[0], "fewer than the 30") {
		t.Errorf("10 pairs: %s %v", r.Outcome, r.Reasons)
	}
	// A drop shown at the confidence decides below min_pairs: only
	// passing needs them.
	if r := result(10, 10, "not json"); r.Outcome != "failed" || !strings.Contains(strings.Join(r.Reasons, ";"), MeasureSchemaValid) {
		t.Errorf("10 pairs, every candidate reply not JSON: %s %v", r.Outcome, r.Reasons)
	}
	// Pairs that all agree have bootstrap bounds of width 0; the
	// candidate's own count decides whether its rate is shown: 40 of 40
	// bounds it above 0.928 only (inconclusive at the margin 0.02), 150
	// of 150 above 0.980.
	if r := result(40, 0, good); r.Outcome != "inconclusive" || !strings.Contains(strings.Join(r.Reasons, ";"), "40 of 40 show a rate above 0.928 only") {
		t.Errorf("40 equal pairs: %s %v", r.Outcome, r.Reasons)
	}
	if r := result(150, 0, good); r.Outcome != "passed" || r.Extraction.Agreement != 1 || r.Extraction.CandidateGrounded != 150 {
		t.Errorf("150 equal pairs: %s %v %+v", r.Outcome, r.Reasons, r.Extraction)
	}
	r := result(40, 20, ungrounded)
	if r.Outcome != "failed" || r.Extraction.CandidateGrounded != 20 || !strings.Contains(strings.Join(r.Reasons, ";"), MeasureGrounding) {
		t.Errorf("half ungrounded: %s %v %+v", r.Outcome, r.Reasons, r.Extraction)
	}
	// Agreement is reported, not gated: a candidate with other (grounded)
	// claims passes.
	other := `{"claims":[{"text":"The bridge carried trams.","quote":"carried trams"}]}`
	if r := result(150, 150, other); r.Outcome != "passed" || r.Extraction.Agreement != 0 {
		t.Errorf("grounded but different claims: %s %v agreement %v", r.Outcome, r.Reasons, r.Extraction.Agreement)
	}
	if r := result(40, 20, "not json"); r.Outcome != "failed" || !strings.Contains(strings.Join(r.Reasons, ";"), MeasureSchemaValid) {
		t.Errorf("half not JSON: %s %v", r.Outcome, r.Reasons)
	}
}

func TestPublicEvidenceHasNoPairRecords(t *testing.T) {
	e := &evidence.Evidence{Gates: []evidence.Gate{{ID: "s", Kind: "shadow", Shadow: &Result{PairRecords: []evidence.ShadowPair{{RequestSHA256: "abc"}}}}}}
	if p := e.Public(); p.Gates[0].Shadow == nil || len(p.Gates[0].Shadow.PairRecords) != 0 {
		t.Errorf("public copy: %+v", p.Gates[0].Shadow)
	}
	if len(e.Gates[0].Shadow.PairRecords) != 1 {
		t.Error("Public changed the private evidence")
	}
}

func TestConfigFill(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Share: 0}, "use a fraction in (0, 1]"},
		{Config{Share: 0.5, MaxPairs: 10, MinPairs: 20}, "min_pairs 20"},
		{Config{Share: 0.5, Margin: 2}, "margin 2"},
		{Config{Share: 0.5, QueueSize: 100000}, "queue_size 100000"},
	} {
		if err := c.cfg.Fill(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want %q", c.cfg, err, c.want)
		}
	}
	c := Config{Share: 0.1}
	if err := c.Fill(); err != nil || c.MaxPairs != DefaultMaxPairs || c.MinPairs != DefaultMinPairs || c.QueueSize != DefaultQueueSize {
		t.Errorf("defaults: %+v %v", c, err)
	}
}

// TestFinalResultComputedOnce: once a run is over, its account cannot
// change, and Result returns the one computed then (its bootstrap reads
// every pair: a stop's caller and the router's end event share it); a
// running run's account is computed afresh.
func TestFinalResultComputedOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	}))
	defer srv.Close()
	m, err := Start(Config{Share: 1}, &config.Profile{Name: "cand", BaseURL: srv.URL, Model: "m"}, "prod")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := m.Result(), m.Result(); a == b {
		t.Fatal("a running run's account is not recomputed")
	}
	for range 3 {
		if !m.Sample() {
			t.Fatal("not sampled at share 1")
		}
		j := &Job{Route: "/v1/chat/completions", Body: []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)}
		j.Capture([]byte(`{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
		j.Done(200, time.Millisecond, time.Millisecond)
		m.Offer(j)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.Result().Pairs < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r := m.Stop()
	if r.Pairs != 3 || r.Pending != 0 {
		t.Fatalf("account after stop: %d pairs, %d pending", r.Pairs, r.Pending)
	}
	if again := m.Result(); again != r {
		t.Fatal("the final account was computed again")
	}
}

// got is what the candidate received of a mirrored request.
type got struct {
	method, path, ctype, accept, auth, model, body string
}

// TestSendRequest: what the candidate receives: a POST to the route under
// its base URL's path, the request with its model set to the candidate's
// (unchanged when it names it already), Content-Type and, for a stream,
// Accept; nothing else of the client's. Each worker's URL is parsed once
// and reused; a redirect is followed.
func TestSendRequest(t *testing.T) {
	reqs := make(chan got, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/base/v1/moved" {
			http.Redirect(w, r, "/base/v1/chat/completions", http.StatusTemporaryRedirect)
			return
		}
		var b strings.Builder
		io.Copy(&b, r.Body)
		var v struct{ Model string }
		json.Unmarshal([]byte(b.String()), &v)
		reqs <- got{r.Method, r.URL.Path, r.Header.Get("Content-Type"), r.Header.Get("Accept"), r.Header.Get("Authorization"), v.Model, b.String()}
		if r.Header.Get("Accept") == "text/event-stream" {
			w.Write([]byte("data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: [DONE]\n\n"))
			return
		}
		w.Write([]byte(`{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	m := &Mirror{cand: &config.Profile{Name: "c", Model: "cand-model"}, hc: srv.Client(), ctx: context.Background()}
	m.cfg.RequestTimeout.Duration = 10 * time.Second
	var err error
	if m.base, err = url.Parse(srv.URL + "/base/"); err != nil {
		t.Fatal(err)
	}
	var sb sendBuf
	defer sb.close()
	for i, c := range []struct {
		body   string
		stream bool
		model  string
	}{
		{`{"model":"prod-model","messages":[]}`, false, "cand-model"},
		{`{"model":"prod-model","stream":true,"messages":[]}`, true, "cand-model"},
		{`{"model":"cand-model","messages":[{"role":"user","content":"x"}]}`, false, "cand-model"},
		{`{"messages":[]}`, false, "cand-model"},
	} {
		s := m.send(&Job{Route: "/v1/chat/completions", Body: []byte(c.body), Stream: c.stream}, &sb)
		r := <-reqs
		if s.status != 200 || s.reply.text != "ok" || r.method != "POST" || r.path != "/base/v1/chat/completions" || r.ctype != "application/json" || r.auth != "" || r.model != c.model {
			t.Errorf("request %d: the candidate got %+v; send read %+v", i, r, s)
		}
		if want := map[bool]string{false: "", true: "text/event-stream"}[c.stream]; r.accept != want {
			t.Errorf("request %d: Accept %q, want %q", i, r.accept, want)
		}
		if i == 2 && r.body != c.body {
			t.Errorf("a request naming the candidate's model was changed: %s", r.body)
		}
	}
	if len(sb.urls) != 1 {
		t.Errorf("the worker parsed %d URLs for one route", len(sb.urls))
	}
	// A redirect is followed, as http.Client follows it.
	s := m.send(&Job{Route: "/v1/moved", Body: []byte(`{"model":"prod-model"}`)}, &sb)
	if r := <-reqs; s.status != 200 || s.reply.text != "ok" || r.path != "/base/v1/chat/completions" || r.model != "cand-model" {
		t.Errorf("redirected: the candidate got %+v; send read %+v", r, s)
	}
}

// A worker's request to the candidate is made once and reused: each send
// carries its own body, and one that runs past the request timeout ends
// as "timeout" and leaves the worker a fresh request (its context was
// ended), with which the next send succeeds.
func TestSendReusesItsRequestPastATimeout(t *testing.T) {
	hang := make(chan struct{})
	bodies := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), "hang") {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
			return
		}
		bodies <- string(b)
		w.Write([]byte(`{"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	defer close(hang)
	m := &Mirror{cand: &config.Profile{Name: "c", Model: "m"}, hc: srv.Client(), ctx: context.Background()}
	m.cfg.RequestTimeout.Duration = 200 * time.Millisecond
	m.base, _ = url.Parse(srv.URL)
	var sb sendBuf
	defer sb.close()
	send := func(content string) side {
		return m.send(&Job{Route: "/v1/chat/completions", Body: []byte(`{"model":"m","messages":[{"role":"user","content":"` + content + `"}]}`)}, &sb)
	}
	if s := send("one"); s.status != 200 || !strings.Contains(<-bodies, `"one"`) {
		t.Fatalf("first send: %+v", s)
	}
	first, ctx := sb.req, sb.ctx
	if s := send("two"); s.status != 200 || !strings.Contains(<-bodies, `"two"`) || sb.req != first || sb.ctx != ctx {
		t.Errorf("second send: %+v; request reused %v, context reused %v", s, sb.req == first, sb.ctx == ctx)
	}
	if s := send("hang"); s.err != "timeout" || sb.req != nil || sb.ctx != nil {
		t.Errorf("a send past the timeout: err %q, request kept %v, context kept %v", s.err, sb.req != nil, sb.ctx != nil)
	}
	if s := send("three"); s.status != 200 || s.err != "" || !strings.Contains(<-bodies, `"three"`) {
		t.Errorf("the send after a timeout: %+v", s)
	}
}

// TestWithModelAsSjson: the worker's rewrite of a request's model writes
// the bytes sjson.SetBytes writes (which the mirror used for each
// request), whatever the model was (a string, escaped, null, a number,
// repeated, absent, nested only), into one buffer reused from one
// request to the next.
func TestWithModelAsSjson(t *testing.T) {
	var sb sendBuf
	var first []byte
	for _, model := range []string{"cand-model", `we"ird\model é`} {
		for i, body := range []string{
			`{"model":"prod","messages":[]}`,
			`{"messages":[{"role":"user","content":"the model"}],"model":"prod"}`,
			`{ "model" : "pr\"od\u00e9" , "stream":true}`,
			`{"model":null,"x":1}`,
			`{"model":42}`,
			`{"model":"a","model":"b"}`,
			`{"messages":[{"model":"inner"}]}`,
			`{}`,
		} {
			want, werr := sjson.SetBytes([]byte(body), "model", model)
			got, gerr := sb.withModel([]byte(body), gjson.Get(body, "model"), model)
			if string(got) != string(want) || (gerr == nil) != (werr == nil) {
				t.Errorf("model %q, body %s: %s (%v), sjson %s (%v)", model, body, got, gerr, want, werr)
			}
			if i == 0 {
				first = bytes.Clone(got)
			}
		}
		again, _ := sb.withModel(first, gjson.Get(string(first), "model"), model)
		if again2, _ := sb.withModel(first, gjson.Get(string(first), "model"), model); &again[0] != &again2[0] {
			t.Error("the worker's buffer was not reused")
		}
		cur := gjson.Get(string(first), "model")
		if n := testing.AllocsPerRun(50, func() { sb.withModel(first, cur, model) }); n != 0 {
			t.Errorf("a rewrite allocates %.0f times, want 0 (sjson: a new body each)", n)
		}
	}
	one := sendBuf{oneShot: true}
	a, _ := one.withModel([]byte(`{"model":"p"}`), gjson.Get(`{"model":"p"}`, "model"), "c")
	b, _ := one.withModel([]byte(`{"model":"p"}`), gjson.Get(`{"model":"p"}`, "model"), "c")
	if &a[0] == &b[0] {
		t.Error("a oneShot worker reused its buffer (net/http may still be writing the last one)")
	}
}

// TestPairChunksNeverCopy: a run's pairs are kept in the order scored,
// and a pair once kept stays where it is as the run grows (no slice
// copied to grow it); the chunks' capacity stays within one chunk of
// what they hold.
func TestPairChunksNeverCopy(t *testing.T) {
	var c pairChunks
	const n = 3*maxPairChunk + 17
	c.add(pair{match: 0})
	first := &c.chunks[0][0]
	for i := 1; i < n; i++ {
		c.add(pair{match: i})
	}
	if &c.chunks[0][0] != first {
		t.Error("the first pair moved as the run grew")
	}
	all := c.all()
	if c.n != n || len(all) != n {
		t.Fatalf("%d pairs added, %d counted, %d read back", n, c.n, len(all))
	}
	for i, p := range all {
		if p.match != i {
			t.Fatalf("pair %d read back as %d", i, p.match)
		}
	}
	capacity := 0
	for _, ch := range c.chunks {
		capacity += cap(ch)
	}
	if capacity > n+maxPairChunk {
		t.Errorf("%d pairs held in chunks of %d in all", n, capacity)
	}
}

// TestNewJob: a job's body is a copy of the client's buffer (which the
// router reuses), or the caller's own copy when owned; releasing it gives
// the copy back once (an owned body or a job made otherwise is not
// pooled), and a copy in a buffer given back allocates only the job.
func TestNewJob(t *testing.T) {
	buf := []byte(`{"model":"m","messages":[]}`)
	j := NewJob("/v1/chat/completions", buf, true, false)
	buf[2] = 'X'
	if string(j.Body) != `{"model":"m","messages":[]}` || j.Route != "/v1/chat/completions" || !j.Stream {
		t.Errorf("the job's body changed with the client's buffer: %s", j.Body)
	}
	j.releaseBody()
	if j.Body != nil {
		t.Error("a released body is still held")
	}
	own := []byte(`{"model":"other"}`)
	o := NewJob("/v1/completions", own, false, true)
	if &o.Body[0] != &own[0] {
		t.Error("an owned body was copied")
	}
	o.releaseBody()
	if len(own) == 0 || o.Body == nil {
		t.Error("an owned body was taken for the pool")
	}
	if raceEnabled {
		return // sync.Pool drops buffers at random under the race detector
	}
	n := testing.AllocsPerRun(100, func() {
		NewJob("/v1/chat/completions", buf, false, false).releaseBody()
	})
	if n > 1 {
		t.Errorf("a job with its body copied allocates %.0f times, want 1 (the job; its buffer is lent)", n)
	}
}
