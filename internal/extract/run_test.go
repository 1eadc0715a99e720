package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
)

var miniDir = filepath.Join("..", "..", "corpora", "hiro-mini")

func miniDocs(t testing.TB) []corpus.Document {
	c, err := corpus.Load(miniDir)
	if err != nil {
		t.Fatal(err)
	}
	return c.Docs
}

// opts are the Options of a run through f into out. BaseURL (run.json's base_url, which a resumed run must match) is one
// fixed name for every in-process fake: each listens on a new port, and a
// test resuming through another fake stands for the same server restarted.
func opts(f *fakeServer, out string) Options {
	return Options{Client: f.client(), Backend: "fake", BaseURL: "http://fake-engine.test", Model: "fake-model", OutDir: out, Concurrency: 3, MaxRepairs: 1}
}

// checkClaims asserts the invariants of claims.jsonl: every claim passes
// every validator against its document, and no claim repeats.
func checkClaims(t *testing.T, out string, docs []corpus.Document) []Claim {
	t.Helper()
	claims, err := ReadClaims(filepath.Join(out, ClaimsFile))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]corpus.Document{}
	for _, d := range docs {
		byID[d.ID] = d
	}
	v := mustValidator(t)
	var info RunInfo
	if b, err := os.ReadFile(filepath.Join(out, RunFile)); err != nil || json.Unmarshal(b, &info) != nil {
		t.Fatalf("run.json: %v", err)
	}
	seen := map[string]bool{}
	for _, c := range claims {
		d, ok := byID[c.DocID]
		if !ok {
			t.Fatalf("claim for unknown document %q", c.DocID)
		}
		ss, _ := corpus.Split(string(d.Text), d.Markdown)
		s := ss[c.SentenceIndex]
		if c.SentenceSpan != [2]int{s.Start, s.End} {
			t.Errorf("claim %q: sentence span %v, want %v", c.Text, c.SentenceSpan, [2]int{s.Start, s.End})
		}
		q := string(d.Text[c.QuoteSpan[0]:c.QuoteSpan[1]])
		if (c.Match == corpus.MatchExact && q != c.Quote) || corpus.NormalizeSpaceCase(q) != corpus.NormalizeSpaceCase(c.Quote) {
			t.Errorf("claim %q: quote span holds %q, quote %q (%s)", c.Text, q, c.Quote, c.Match)
		}
		in := Window(ss, c.SentenceIndex)
		raw, _ := json.Marshal(map[string]any{"claims": []any{map[string]string{"text": c.Text, "quote": c.Quote}}})
		if o := v.Validate(string(raw), "stop", SourceFor(ss, c.SentenceIndex, in)); !o.Clean() {
			t.Errorf("written claim %q fails validation: %v", c.Text, o.Reasons())
		}
		key := c.DocID + "\x00" + corpus.NormalizeClaim(c.Text)
		if seen[key] {
			t.Errorf("duplicate claim %q in %s", c.Text, c.DocID)
		}
		seen[key] = true
		if c.PromptHash != prompt.Hash() || c.SchemaHash != prompt.SchemaHash() || c.PromptVersion != prompt.Version || c.Model != info.Model || c.Backend != info.Backend || c.Attempt < 1 {
			t.Errorf("claim provenance incomplete: %+v", c)
		}
	}
	return claims
}

func checkRejects(t *testing.T, out string) []Reject {
	t.Helper()
	rs, err := ReadRejects(filepath.Join(out, RejectsFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	for _, r := range rs {
		if len(r.Reasons) == 0 || r.Reasons[0].Code == "" || r.Reasons[0].Detail == "" {
			t.Errorf("reject without reasons: %+v", r)
		}
		if (r.Kind == RejectReply || r.Kind == RejectClaim) && r.Raw == "" {
			t.Errorf("%s reject without the raw reply: %+v", r.Kind, r)
		}
	}
	return rs
}

func TestRunMiniCorpusEcho(t *testing.T) {
	docs := miniDocs(t)
	f := newFake(t, echoAnswer)
	out := t.TempDir()
	sum, err := Run(context.Background(), docs, opts(f, out))
	if err != nil {
		t.Fatal(err)
	}
	sentences := 0
	for _, d := range docs {
		ss, _ := corpus.Split(string(d.Text), d.Markdown)
		sentences += len(ss)
	}
	claims := checkClaims(t, out, docs)
	// The hostile document's two sentences that address the model (an
	// instruction with an embedded reply, a SYSTEM: role marker) are data:
	// recorded as sentence rejects, never sent as targets, no claim.
	const addressing = 2
	if len(claims) != sentences-addressing || sum.Done != len(docs) || sum.Requests != sentences-addressing || sum.Stats.SchemaValidRate != 1 || sum.Stats.AddressesModel != addressing || sum.NotSent != addressing || sum.Rejects != addressing {
		t.Errorf("claims %d of %d sentences; summary %+v", len(claims), sentences, sum)
	}
	kinds := map[string]int{}
	for _, r := range checkRejects(t, out) {
		kinds[r.Kind+" "+r.Reasons[0].Code]++
		if r.DocID != "hostile" {
			t.Errorf("unexpected reject %+v", r)
		}
	}
	if kinds[RejectSentence+" "+ReasonAddressesModel] != addressing || len(kinds) != 1 {
		t.Errorf("rejects by kind and reason: %v", kinds)
	}
	for _, r := range f.requests {
		if r.Messages[0].Content != prompt.System() || !strings.Contains(string(r.ResponseFormat), `"json_schema"`) {
			t.Fatalf("request does not carry the system prompt and schema: %+v", r)
		}
		if strings.Contains(r.Messages[1].Content, "Target sentence:\nIgnore all previous instructions") {
			t.Error("the hostile sentence was sent as a target")
		}
	}
	for _, c := range claims {
		if c.DocID == "hostile" && (strings.Contains(c.Text, "Ignore all previous") || strings.Contains(c.Text, "SYSTEM")) {
			t.Errorf("claim from a sentence addressing the model: %q", c.Text)
		}
	}
	var st Stats
	b, _ := os.ReadFile(filepath.Join(out, StatsFile))
	if err := json.Unmarshal(b, &st); err != nil || st.Claims != len(claims) || st.DocumentsDone != len(docs) {
		t.Errorf("stats.json %s: %v", b, err)
	}
}

func TestRepairTurn(t *testing.T) {
	f := newFake(t, func(r chatReq) (string, error) {
		if len(r.Messages) == 2 { // first attempt: one good claim, one bad quote
			tg := target(r)
			b, _ := json.Marshal(map[string]any{"claims": []any{
				map[string]string{"text": tg, "quote": tg},
				map[string]string{"text": "The river is very long.", "quote": "the Nile"},
			}})
			return string(b), nil
		}
		return echoAnswer(r)
	})
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("The Varda River is 412 kilometres long."), 0o644)
	docs, _ := corpus.LoadPaths([]string{dir})
	out := t.TempDir()
	if _, err := Run(context.Background(), docs, opts(f, out)); err != nil {
		t.Fatal(err)
	}
	if f.count() != 2 {
		t.Fatalf("%d requests, want 2 (one repair)", f.count())
	}
	rep := f.requests[1]
	if len(rep.Messages) != 4 || rep.Messages[2].Role != "assistant" || !strings.Contains(rep.Messages[2].Content, "the Nile") ||
		rep.Messages[3].Role != "user" || !strings.Contains(rep.Messages[3].Content, ReasonQuoteNotFound) ||
		rep.Messages[1].Content != f.requests[0].Messages[1].Content {
		t.Errorf("repair request must keep the original turns and add the bad reply and the errors: %+v", rep.Messages)
	}
	claims := checkClaims(t, out, docs)
	rs := checkRejects(t, out)
	if len(claims) != 1 || claims[0].Attempt != 1 {
		t.Errorf("claims %+v: want the good claim of attempt 1 once", claims)
	}
	if len(rs) != 1 || rs[0].Kind != RejectClaim || !rs[0].Retried || rs[0].Reasons[0].Code != ReasonQuoteNotFound || *rs[0].ClaimIndex != 1 {
		t.Errorf("rejects %+v", rs)
	}
}

func TestBadInputsRecorded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) { os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644) }
	write("good.txt", "The Varda River is 412 kilometres long.")
	write("latin1.txt", "Caf\xe9 au lait is sold here.")
	write("empty.txt", " \n\t\n")
	write("headings.md", "# Only\n\n## Headings\n")
	write("long.txt", strings.Repeat("The river is long. ", 40))
	write("notjson.txt", "NOTJSON the reply to this is prose.")
	write("schema.txt", "SCHEMA the reply to this has no claims key.")
	write("quote.txt", "QUOTE the reply to this quotes another text.")
	write("number.txt", "NUMBER the reply to this invents a number.")
	write("server.txt", "SERVER400 the server refuses this one.")
	f := newFake(t, func(r chatReq) (string, error) {
		tg := target(r)
		switch {
		case strings.HasPrefix(tg, "NOTJSON"):
			return "I cannot do that <b>now</b>.", nil
		case strings.HasPrefix(tg, "SCHEMA"):
			return `{"facts":["x"]}`, nil
		case strings.HasPrefix(tg, "QUOTE"):
			return `{"claims":[{"text":"The reply quotes another text.","quote":"somewhere else"}]}`, nil
		case strings.HasPrefix(tg, "NUMBER"):
			return `{"claims":[{"text":"The reply invents 7 numbers.","quote":"invents a number"}]}`, nil
		case strings.HasPrefix(tg, "SERVER400"):
			return "", fakeError{400}
		}
		return echoAnswer(r)
	})
	docs, err := corpus.LoadPaths([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	o := opts(f, out)
	o.MaxDocBytes = 500
	sum, err := Run(context.Background(), docs, o)
	if err != nil {
		t.Fatal(err)
	}
	claims := checkClaims(t, out, docs)
	if len(claims) != 1 || claims[0].DocID != "good" {
		t.Errorf("claims %+v, want only good's", claims)
	}
	rs := checkRejects(t, out)
	got := map[string][]string{}
	for _, r := range rs {
		got[r.DocID] = append(got[r.DocID], r.Kind+":"+r.Reasons[0].Code)
	}
	want := map[string]string{
		"latin1":   "document:" + ReasonNotUTF8,
		"empty":    "document:" + ReasonEmptyDocument,
		"headings": "document:" + ReasonEmptyDocument,
		"long":     "document:" + ReasonDocumentTooLong,
		"notjson":  "reply:" + ReasonNotJSON + " reply:" + ReasonNotJSON,
		"schema":   "reply:" + ReasonSchema + " reply:" + ReasonSchema,
		"quote":    "claim:" + ReasonQuoteNotFound + " claim:" + ReasonQuoteNotFound,
		"number":   "claim:" + ReasonNumber + " claim:" + ReasonNumber,
		"server":   "request:" + ReasonRequestFailed,
	}
	for id, w := range want {
		if g := strings.Join(got[id], " "); g != w {
			t.Errorf("%s: rejects %q, want %q", id, g, w)
		}
	}
	if sum.Done != len(docs) || sum.Failed != 0 {
		t.Errorf("every document must be finished (a 400 is not retried on rerun): %+v", sum)
	}
}

func TestResumeAfterInterrupt(t *testing.T) {
	docs := miniDocs(t)
	ref := t.TempDir()
	f0 := newFake(t, echoAnswer)
	if _, err := Run(context.Background(), docs, opts(f0, ref)); err != nil {
		t.Fatal(err)
	}
	want := checkClaims(t, ref, docs)

	out := t.TempDir()
	// The first two documents are answered; requests of the others wait
	// until the run is interrupted (commits are grouped, so the others
	// must still be in flight when the second checkpoint is written).
	release := make(chan struct{})
	inFirstTwo := func(tg string) bool {
		for _, d := range docs[:2] {
			if strings.Contains(strings.Join(strings.Fields(string(d.Text)), " "), tg) {
				return true
			}
		}
		return false
	}
	f1 := newFake(t, func(r chatReq) (string, error) {
		if !inFirstTwo(target(r)) {
			<-release
		}
		return echoAnswer(r)
	})
	t.Cleanup(func() { close(release) }) // before the server closes
	ctx, cancel := context.WithCancel(context.Background())
	o := opts(f1, out)
	committed := 0
	o.OnCommit = func(DocProgress) {
		if committed++; committed == 2 {
			cancel()
		}
	}
	sum, err := Run(ctx, docs, o)
	if !errors.Is(err, context.Canceled) || !sum.Interrupted || sum.Done != 2 {
		t.Fatalf("interrupted run: err %v summary %+v", err, sum)
	}
	// A crash in the middle of the next document's write leaves a torn
	// line behind the checkpoint, in claims and in progress.
	for _, name := range []string{ClaimsFile, ProgressFile} {
		fh, _ := os.OpenFile(filepath.Join(out, name), os.O_APPEND|os.O_WRONLY, 0)
		fh.WriteString(`{"doc_id":"rivers","sentence_index":0,"text":"torn`)
		fh.Close()
	}
	f2 := newFake(t, echoAnswer)
	sum2, err := Run(context.Background(), docs, opts(f2, out))
	if err != nil {
		t.Fatal(err)
	}
	if sum2.Skipped != 2 || sum2.Done != len(docs)-2 {
		t.Errorf("resumed run: %+v", sum2)
	}
	for _, r := range f2.requests {
		tg := target(r)
		for _, d := range docs[:2] {
			if strings.Contains(strings.Join(strings.Fields(string(d.Text)), " "), tg) {
				t.Errorf("resumed run redid finished document %s (target %q)", d.ID, tg)
			}
		}
	}
	got := checkClaims(t, out, docs)
	if len(got) != len(want) {
		t.Fatalf("after resume %d claims, uninterrupted run %d", len(got), len(want))
	}
	for i := range got {
		if got[i].DocID != want[i].DocID || got[i].Text != want[i].Text {
			t.Errorf("claim %d = %s %q, want %s %q", i, got[i].DocID, got[i].Text, want[i].DocID, want[i].Text)
		}
	}
	// A third run has nothing to do.
	f3 := newFake(t, echoAnswer)
	sum3, err := Run(context.Background(), docs, opts(f3, out))
	if err != nil || f3.count() != 0 || sum3.Skipped != len(docs) {
		t.Errorf("third run: %v %+v, %d requests", err, sum3, f3.count())
	}
}

func TestTransientFailureIsRedone(t *testing.T) {
	docs := miniDocs(t)
	failing := true
	f := newFake(t, func(r chatReq) (string, error) {
		if failing && strings.Contains(target(r), "Varda") {
			return "", fakeError{503}
		}
		return echoAnswer(r)
	})
	out := t.TempDir()
	sum, err := Run(context.Background(), docs, opts(f, out))
	if err != nil || sum.Failed != 1 || sum.Stats.DocumentsFailed != 1 {
		t.Fatalf("first run: %v %+v", err, sum)
	}
	for _, c := range checkClaims(t, out, docs) {
		if c.DocID == "rivers" {
			t.Errorf("a failed document must not write claims: %+v", c)
		}
	}
	failing = false
	sum, err = Run(context.Background(), docs, opts(f, out))
	if err != nil || sum.Done != 1 || sum.Skipped != len(docs)-1 || sum.Stats.DocumentsFailed != 0 {
		t.Fatalf("second run: %v %+v", err, sum)
	}
	n := 0
	for _, c := range checkClaims(t, out, docs) {
		if c.DocID == "rivers" {
			n++
		}
	}
	if n == 0 {
		t.Error("the redone document has no claims")
	}
}

func TestResumeRefusesOtherRun(t *testing.T) {
	docs := miniDocs(t)[:1]
	f := newFake(t, echoAnswer)
	out := t.TempDir()
	if _, err := Run(context.Background(), docs, opts(f, out)); err != nil {
		t.Fatal(err)
	}
	o := opts(f, out)
	o.Model = "other-model"
	if _, err := Run(context.Background(), docs, o); !errors.Is(err, ErrRunMismatch) {
		t.Errorf("err = %v, want ErrRunMismatch", err)
	}
	changed := []corpus.Document{{ID: docs[0].ID, Text: []byte("Something else entirely.")}}
	if _, err := Run(context.Background(), changed, opts(f, out)); !errors.Is(err, ErrRunMismatch) {
		t.Errorf("changed document: err = %v, want ErrRunMismatch", err)
	}
}

// TestEndpointErrorsAreRedone: a request refused because of the endpoint
// (401/403: the key; 404: the URL or model) leaves its document failed, so
// that a rerun after the fix redoes it; one refused for itself (400) is
// done with its reject and not sent again.
func TestEndpointErrorsAreRedone(t *testing.T) {
	docs := miniDocs(t)[:1]
	for _, c := range []struct {
		status int
		redone bool
	}{{401, true}, {403, true}, {404, true}, {400, false}} {
		status := c.status
		f := newFake(t, func(r chatReq) (string, error) {
			if status != 0 {
				return "", fakeError{status}
			}
			return echoAnswer(r)
		})
		out := t.TempDir()
		sum, err := Run(context.Background(), docs, opts(f, out))
		if err != nil {
			t.Fatal(err)
		}
		if got := sum.Stats.DocumentsFailed == 1; got != c.redone {
			t.Errorf("HTTP %d: documents failed %d, want a failed document: %v", c.status, sum.Stats.DocumentsFailed, c.redone)
		}
		status = 0 // the user fixed the key, the URL or the model
		n := f.count()
		sum, err = Run(context.Background(), docs, opts(f, out))
		if err != nil {
			t.Fatal(err)
		}
		if sent := f.count() - n; (sent > 0) != c.redone {
			t.Errorf("HTTP %d: the rerun sent %d requests (redo wanted: %v)", c.status, sent, c.redone)
		}
	}
}

// TestManyBadClaimsRecordTheReplyOnce: a reply of many bad claims is
// written whole once (the attempt's first reject) and clipped in the
// others, so the rejects file grows with the reply, not its square.
func TestManyBadClaimsRecordTheReplyOnce(t *testing.T) {
	docs := miniDocs(t)[:1]
	var claims []string
	for i := 0; i < 400; i++ {
		claims = append(claims, fmt.Sprintf(`{"text":"Something made up number %d happened.","quote":"not in the source at all %d"}`, i, i))
	}
	reply := `{"claims":[` + strings.Join(claims, ",") + `]}`
	f := newFake(t, func(r chatReq) (string, error) { return reply, nil })
	out := t.TempDir()
	if _, err := Run(context.Background(), docs, Options{Client: f.client(), Backend: "fake", BaseURL: f.URL, Model: "fake-model", OutDir: out, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	rs := checkRejects(t, out)
	whole, clipped := 0, 0
	for _, r := range rs {
		switch {
		case r.Raw == reply:
			whole++
		case strings.Contains(r.Raw, "the whole reply is in this attempt's first reject") && len(r.Raw) < 512:
			clipped++
		}
	}
	st, _ := os.Stat(filepath.Join(out, RejectsFile))
	// Each reply whole once (one per sentence), each other reject small.
	if whole == 0 || clipped < 100 || st.Size() > int64(whole*len(reply)+clipped*(1<<10)) {
		t.Errorf("%d rejects: %d whole, %d clipped; rejects file %d bytes for a %d-byte reply", len(rs), whole, clipped, st.Size(), len(reply))
	}
}

// repliesCounted is a Chatter that counts the replies its client returned.
type repliesCounted struct {
	Chatter
	replies atomic.Int64
}

func (c *repliesCounted) Chat(ctx context.Context, r llm.Request) (*llm.Reply, error) {
	reply, err := c.Chatter.Chat(ctx, r)
	if err == nil {
		c.replies.Add(1)
	}
	return reply, err
}

// A run interrupted before its first document is committed says what it
// sent (issue 26: 'hiro extract' stopped with SIGTERM reported 0
// requests): every request and reply counts, the document cut short is
// named as not kept, the output stays resumable and a rerun finishes.
func TestInterruptedRunCountsWhatItSent(t *testing.T) {
	docs := miniDocs(t)
	if ss, _ := corpus.Split(string(docs[0].Text), docs[0].Markdown); len(ss) < 3 {
		t.Fatalf("the test needs a first document of 3 sentences or more; %s has %d", docs[0].ID, len(ss))
	}
	release := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen atomic.Int32
	f := newFake(t, func(r chatReq) (string, error) {
		if seen.Add(1) <= 2 {
			return echoAnswer(r)
		}
		cancel() // as SIGTERM: the third request is in flight
		<-release
		return echoAnswer(r)
	})
	t.Cleanup(func() { close(release) })
	out := t.TempDir()
	o := opts(f, out)
	client := &repliesCounted{Chatter: o.Client}
	o.Client = client
	sum, err := Run(ctx, docs, o)
	if !errors.Is(err, context.Canceled) || !sum.Interrupted {
		t.Fatalf("interrupted run: err %v summary %+v", err, sum)
	}
	if sum.Requests != 0 || sum.Done != 0 {
		t.Fatalf("a document was committed (%+v): the test must interrupt before the first commit", sum)
	}
	// A worker that passed its check of ctx just before the cancel may
	// start a request the server never sees: sent counts it, at most one
	// per worker.
	if sum.RequestsSent < f.count() || sum.RequestsSent > f.count()+o.Concurrency || f.count() < 3 ||
		sum.RepliesReceived != int(client.replies.Load()) || sum.Unfinished < 1 {
		t.Errorf("interrupted run says %d requests sent, %d replies, %d unfinished documents; the server had %d requests, the client %d replies",
			sum.RequestsSent, sum.RepliesReceived, sum.Unfinished, f.count(), client.replies.Load())
	}
	for _, name := range []string{RunFile, ClaimsFile, ProgressFile, StatsFile} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("interrupted run left no %s: %v", name, err)
		}
	}
	sum2, err := Run(context.Background(), docs, opts(newFake(t, echoAnswer), out))
	if err != nil || sum2.Done != len(docs) || sum2.Interrupted || sum2.Unfinished != 0 || sum2.RequestsSent != sum2.Requests {
		t.Errorf("rerun: %v %+v", err, sum2)
	}
}

// TestTimedOutRequestIsSentOnceMore: with TimeoutRetries 1 a request that
// runs past RequestTimeout is sent once more with a fresh bound; when
// that one answers, the document is done and the retry is counted
// (DocProgress, Stats and Summary TimeoutRetries; Requests counts both
// sendings). When it runs past the bound again the document fails as
// before, its reject saying the request was sent twice. Without
// TimeoutRetries a timed-out request is not sent again, and an error
// answer (500) is never sent again by this rule (issue 26, F9).
func TestTimedOutRequestIsSentOnceMore(t *testing.T) {
	docs := miniDocs(t)[:1]
	for _, c := range []struct {
		name        string
		retries     int
		slow        int // the first slow sendings of the target sentence hang
		status      int // or: every sending of it gets this error status
		wantSent    int
		wantRetries int
		wantFailed  int
	}{
		{"answers when sent again", 1, 1, 0, 2, 1, 0},
		{"times out again", 1, 2, 0, 2, 1, 1},
		{"no retries", 0, 1, 0, 1, 0, 1},
		{"an error answer is not sent again", 1, 0, 500, 1, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			hold := make(chan struct{})
			sent := 0
			first := ""
			f := newFake(t, func(r chatReq) (string, error) {
				mu.Lock()
				if first == "" {
					first = target(r)
				}
				mine := target(r) == first
				if mine {
					sent++
				}
				n := sent
				mu.Unlock()
				if mine && c.status != 0 {
					return "", fakeError{c.status}
				}
				if mine && n <= c.slow {
					select { // longer than the bound: the client gives up first
					case <-hold:
					case <-time.After(5 * time.Second):
					}
				}
				return echoAnswer(r)
			})
			t.Cleanup(func() { close(hold) }) // before the fake closes: end the held requests
			o := opts(f, t.TempDir())
			o.Concurrency, o.MaxRepairs, o.RequestTimeout, o.TimeoutRetries = 1, 0, 300*time.Millisecond, c.retries
			sum, err := Run(context.Background(), docs, o)
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			got := sent
			mu.Unlock()
			if got != c.wantSent || sum.TimeoutRetries != c.wantRetries || sum.Stats.TimeoutRetries != c.wantRetries || sum.Failed != c.wantFailed {
				t.Fatalf("the first sentence sent %d times (want %d); timeout retries %d, stats %d (want %d); %d failed (want %d)",
					got, c.wantSent, sum.TimeoutRetries, sum.Stats.TimeoutRetries, c.wantRetries, sum.Failed, c.wantFailed)
			}
			if sum.Requests != f.count() {
				t.Errorf("summary counts %d requests, the server got %d", sum.Requests, f.count())
			}
			rs, err := ReadRejects(filepath.Join(o.OutDir, RejectsFile))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			var failed []string
			for _, r := range rs {
				if r.Kind == RejectRequest {
					failed = append(failed, r.Reasons[0].Detail)
				}
			}
			switch {
			case c.wantFailed == 0 && len(failed) > 0:
				t.Errorf("request rejects of a done document: %q", failed)
			case c.name == "times out again" && (len(failed) != 1 || !strings.Contains(failed[0], "(sent 2 times, each bounded by 300ms)")):
				t.Errorf("request rejects %q, want one saying it was sent twice", failed)
			case c.name == "no retries" && (len(failed) != 1 || strings.Contains(failed[0], "sent 2 times")):
				t.Errorf("request rejects %q, want one, sent once", failed)
			}
		})
	}
}
