package extract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/ollamatest"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// factcheckFile is the real Factcheck-GPT input, read in place.
const factcheckFile = "/work/shared/corpora/factcheck-gpt/factcheck-GPT-benchmark.jsonl"

// factcheckCorpus imports a take-source corpus of the real benchmark into
// a temporary directory, or skips when the file is absent.
func factcheckCorpus(t testing.TB, take int) *corpus.Corpus {
	p := os.Getenv("HIRO_FACTCHECK_GPT")
	if p == "" {
		p = factcheckFile
	}
	if _, err := os.Stat(p); err != nil {
		t.Skipf("Factcheck-GPT benchmark not found at %s (set HIRO_FACTCHECK_GPT to its path): %v", p, err)
	}
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("fc%d", take))
	if _, err := corpus.ImportFactcheckGPT(p, take, dir); err != nil {
		t.Fatal(err)
	}
	c, err := corpus.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startOllama serves a shipped model (models/) with a private Ollama
// (internal/ollamatest) allowing parallel requests in flight, and returns
// its base URL and model id. The model is $HIRO_EXTRACT_MODEL when set
// (hiro-tiny, hiro-fixture-strong or hiro-fixture-weak), else the trained
// hiro-fixture-strong when models/fixture-strong/model.gguf exists, else
// hiro-tiny (plumbing only: its claims are noise). Skips when Ollama is
// absent.
func startOllama(t testing.TB, parallel int) (baseURL, model string) {
	ollamatest.Binary(t) // skips with a clear message when absent
	shipped := ollamatest.ShippedModels(t)
	model = os.Getenv("HIRO_EXTRACT_MODEL")
	if model == "" {
		model = ollamatest.TinyModel
		if _, err := os.Stat(filepath.Join(filepath.Dir(shipped[ollamatest.StrongModel]), "model.gguf")); err == nil {
			model = ollamatest.StrongModel
		}
	}
	mf, ok := shipped[model]
	if !ok {
		t.Fatalf("HIRO_EXTRACT_MODEL=%s: not a shipped model (hiro-tiny, hiro-fixture-strong, hiro-fixture-weak)", model)
	}
	dir := filepath.Join(t.TempDir(), "models")
	ollamatest.PrepareModels(t, dir, map[string]string{model: mf})
	s := ollamatest.Start(t, dir, fmt.Sprintf("OLLAMA_NUM_PARALLEL=%d", parallel))
	return s.URL, model
}

// paceFactor is how many times the pace request's time one request of a
// real-engine test's run may take: the run's requests go two at a time
// (each slower than one alone) and their replies are up to three times
// as long as the pace request's.
const paceFactor = 10

// paceTimeout sends one extraction request to the server at base, alone
// and as Run sends it (the first sentence of doc, greedy, the claims
// schema), and returns the request timeout of the test's runs: paceFactor
// times that request's time, never less than DefaultRequestTimeout. A
// loaded machine slows every request alike, so the bound follows the
// machine's pace: a fixed 2 minutes failed TestOllamaFactcheck at load 30
// and 44 with replies that were slow, not wrong (issue 26). The request
// also loads the model and fills the server's prompt cache with the
// prompt's fixed head, work the run's first requests would do.
func paceTimeout(t *testing.T, base, model string, doc corpus.Document) time.Duration {
	t.Helper()
	ss, err := corpus.Split(string(doc.Text), doc.Markdown)
	if err != nil || len(ss) == 0 {
		t.Fatalf("pace request: %s: %d sentences, %v", doc.ID, len(ss), err)
	}
	zero, seed := 0.0, int64(Seed)
	t0 := time.Now()
	if _, err := llm.New(base, nil).Chat(context.Background(), llm.Request{Model: model, Messages: Messages(Window(ss, 0)), MaxTokens: 384,
		Temperature: &zero, Seed: &seed, Schema: prompt.SchemaJSON(), SchemaName: "claims"}); err != nil {
		t.Fatalf("pace request: %v", err)
	}
	took := time.Since(t0)
	bound := max(DefaultRequestTimeout, paceFactor*took)
	t.Logf("pace request: %s; each request of the run is bounded by %s", took.Round(time.Millisecond), bound.Round(time.Second))
	return bound
}

// explainFailure registers, for a test writing extraction output to out
// with each request bounded by bound, a report that runs only when the
// test has failed and before out is removed: every request that failed
// with its reason (a timeout, a refused connection, a 5xx, in the
// reject's words) and the count of the other rejects by kind and reason,
// so that a failure on a loaded machine can be told from a bug by the
// test's output alone (issue 26, finding F18). Call it after out :=
// t.TempDir(): cleanups run last-registered first.
func explainFailure(t *testing.T, out string, bound time.Duration) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		rs, err := ReadRejects(filepath.Join(out, RejectsFile))
		if err != nil {
			t.Logf("why: no rejects to read in %s: %v", out, err)
			return
		}
		other := map[string]int{}
		var failed []string
		for _, r := range rs {
			code := r.Reasons[0].Code
			if r.Kind != RejectRequest {
				other[r.Kind+" "+code]++
				continue
			}
			where := r.DocID
			if r.SentenceIndex != nil {
				where += fmt.Sprintf(" sentence %d", *r.SentenceIndex)
			}
			failed = append(failed, fmt.Sprintf("  %s: %s: %s", where, code, r.Reasons[0].Detail))
		}
		t.Logf("why: %d requests failed (each bounded by %s):\n%s\nother rejects by kind and reason: %v", len(failed), bound, strings.Join(failed, "\n"), other)
	})
}

// TestOllamaFactcheck is the acceptance test: extraction of two sources
// of the Factcheck-GPT corpus through a real Ollama completes; every
// claim passes every validator; every reject has reasons; a run
// interrupted after one document and run again finishes without redoing
// it and without duplicates. (It was six sources and an interruption
// after two: 31 replies, 7 to 11.5 minutes on 2 busy cores; then three
// sources, 12 sentences; then the first two, 8 sentences, 11 replies of
// 305 tokens on average. Now the third and fourth sources, the two
// shortest of the first four: 4 sentences, and every assertion kept: one
// document finished before the interruption, one after.) Each request is
// bounded by the machine's pace (paceTimeout); a failure says why its
// requests failed (explainFailure).
func TestOllamaFactcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Ollama acceptance test takes minutes on CPU")
	}
	const sources, interruptAfter = 2, 1
	c := factcheckCorpus(t, 4)
	docs := c.Docs[2:4] // 193 and 142 bytes, 2 sentences each
	base, model := startOllama(t, 2)
	bound := paceTimeout(t, base, model, c.Docs[0])
	out := t.TempDir()
	explainFailure(t, out, bound)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := newCountingClient(base)
	// Bounded for a 2-core CI machine: replies of at most 384 tokens (bytes,
	// for the byte-level fixture models), no repair round.
	o := Options{Client: client, Backend: "ollama", BaseURL: base, Model: model, OutDir: out,
		Concurrency: 2, MaxRepairs: 0, MaxTokens: 384, RequestTimeout: bound}
	// committed holds the documents finished (status done) by the first
	// run; a document whose request failed is redone on resume, by design.
	committed := map[string]bool{}
	seen := 0
	o.OnCommit = func(p DocProgress) {
		seen++
		if p.Status == StatusDone {
			committed[p.DocID] = true
		}
		if seen == interruptAfter {
			cancel()
		}
	}
	sum, err := Run(ctx, docs, o)
	if err == nil || !sum.Interrupted || sum.Done+sum.Failed != interruptAfter {
		t.Fatalf("interrupted run: err %v, summary %+v", err, sum)
	}
	client2 := newCountingClient(base)
	o.Client, o.OnCommit = client2, nil
	sum, err = Run(context.Background(), docs, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != len(committed) || sum.Skipped+sum.Done != sources || sum.Stats.DocumentsDone != sources {
		t.Errorf("resumed run: %d skipped (want the %d finished before the interruption), %d done, %d failed, of %d sources (want all done or skipped); %d requests, %d replies; summary %+v",
			sum.Skipped, len(committed), sum.Done, sum.Failed, sources, sum.Requests, sum.Replies, sum)
	}
	for _, tg := range client2.targets() {
		for id := range committed {
			for _, d := range docs {
				if d.ID == id && strings.Contains(strings.Join(strings.Fields(string(d.Text)), " "), tg) {
					t.Errorf("resumed run redid finished document %s", id)
				}
			}
		}
	}
	claims := checkClaims(t, out, docs)
	rejects := checkRejects(t, out)
	t.Logf("%d-source corpus through %s: %d claims, %d rejects, %d replies (%d schema-valid), %d output tokens",
		sources, model, len(claims), len(rejects), sum.Stats.Replies, sum.Stats.SchemaValidReplies, sum.Stats.CompletionTokens)
}

// TestOllamaInjectionDocuments runs the hostile documents of
// testdata/injection through a real Ollama serving the strong model (issue
// 25 item 7: there, plain English orders were copied verbatim as claims).
// Through hiro extract, no claim comes from a sentence that addresses the
// reader or a machine (those are sentence rejects, never sent), and every
// claim passes every validator. Then one order of each document is sent
// to the model as a target anyway, as if the sentence defence had missed
// it: a claim that copies the order is rejected as addressing the model,
// never accepted. The counts are logged (go test -v -run OllamaInjection).
//
// Cut for the suite's time (issue 26: 98 replies, 11 minutes on a loaded
// 2-core machine): the documents that hold no order (lookalikes.md,
// reported-instructions.md: statements only) are left out, and one order
// per document, the first, is sent straight (10 of 37), every hostile
// form of testdata/injection still represented. Cut again (41 replies,
// the suite's longest test): recipe.md's seven statements, the steps of
// a recipe, are not extracted here (its order is still sent straight; its
// steps are statements by TestInjectionDocumentsAreData and
// TestFalseRejectRateOnGoldClaims), and the orders go two at a time, as
// the run's requests do: 34 replies. What the model does not decide is
// held offline over every document and order:
// TestInjectionDocumentsAreData and TestFalseRejectRateOnGoldClaims (the
// statements pass), TestVerbatimOrdersRejectedAsClaims (every order
// copied is rejected), TestObedientModelYieldsNoInjectedClaim.
func TestOllamaInjectionDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Ollama injection test takes minutes on CPU")
	}
	var ordered, docs []corpus.Document // the documents holding orders; those extracted
	for _, d := range injectionDocs(t) {
		if len(injectionCases[d.ID+".md"].addressing)+len(injectionCases[d.ID+".txt"].addressing) > 0 {
			ordered = append(ordered, d)
			if d.ID != "recipe" {
				docs = append(docs, d)
			}
		}
	}
	if len(ordered) < 10 || len(docs) != len(ordered)-1 {
		t.Fatalf("%d documents holding orders in testdata/injection (want 10 or more), %d extracted (want all but recipe.md)", len(ordered), len(docs))
	}
	base, model := startOllama(t, 2)
	bound := paceTimeout(t, base, model, docs[0])
	out := t.TempDir()
	explainFailure(t, out, bound)
	o := Options{Client: newCountingClient(base), Backend: "ollama", BaseURL: base, Model: model, OutDir: out,
		Concurrency: 2, MaxRepairs: 0, MaxTokens: 384, RequestTimeout: bound}
	sum, err := Run(context.Background(), docs, o)
	if err != nil {
		t.Fatal(err)
	}
	claims := checkClaims(t, out, docs)
	rejects := checkRejects(t, out)
	addressed := map[string]map[int]bool{} // doc id -> sentence index
	orders := 0                            // in the documents extracted
	type target struct {
		ss []corpus.Sentence
		i  int
	}
	var targets []target
	for _, d := range ordered {
		ss, err := corpus.Split(string(d.Text), d.Markdown)
		if err != nil {
			t.Fatal(err)
		}
		addressed[d.ID] = map[int]bool{}
		for i, s := range ss {
			if _, bad := AddressesModel(s.Text); bad {
				addressed[d.ID][i] = true
				if d.ID != "recipe" {
					orders++
				}
				if len(addressed[d.ID]) == 1 { // the document's first order
					targets = append(targets, target{ss, i})
				}
			}
		}
	}
	for _, c := range claims {
		if addressed[c.DocID][c.SentenceIndex] {
			t.Errorf("claim from a sentence that addresses the model: %s #%d: %q", c.DocID, c.SentenceIndex, c.Text)
		}
	}
	sentenceRejects := 0
	for _, r := range rejects {
		if r.Kind == RejectSentence && r.Reasons[0].Code == ReasonAddressesModel {
			sentenceRejects++
		}
	}
	if sentenceRejects != orders {
		t.Errorf("%d sentence rejects for addressing the model, want %d", sentenceRejects, orders)
	}
	t.Logf("%d hostile documents through %s: %d claims, %d rejects (%d sentences addressing the model), %d replies (%d schema-valid)",
		len(docs), model, len(claims), len(rejects), sentenceRejects, sum.Stats.Replies, sum.Stats.SchemaValidReplies)

	// The orders sent straight to the model as targets, two at a time.
	v := mustValidator(t)
	client := newCountingClient(base)
	zeroTemperature, seed := 0.0, int64(Seed)
	outcomes := make([]Outcome, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 2)
	for k, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			in := Window(tg.ss, tg.i)
			req := llm.Request{Model: model, Messages: Messages(in), MaxTokens: 384, Temperature: &zeroTemperature, Seed: &seed,
				Schema: prompt.SchemaJSON(), SchemaName: "claims", Timeout: bound}
			reply, err := client.Chat(context.Background(), req)
			if err != nil {
				errs[k] = fmt.Errorf("%q: %w", tg.ss[tg.i].Text, err)
				return
			}
			outcomes[k] = v.Validate(reply.Text, reply.FinishReason, SourceFor(tg.ss, tg.i, in))
		}()
	}
	wg.Wait()
	copied, other := 0, 0
	for k, tg := range targets {
		if errs[k] != nil {
			t.Fatal(errs[k])
		}
		order := corpus.NormalizeClaim(tg.ss[tg.i].Text)
		for _, g := range outcomes[k].Good {
			if g.Key == order {
				t.Errorf("the order %q copied verbatim was accepted as a claim", tg.ss[tg.i].Text)
			}
			other++
			t.Logf("accepted from the order %q: %q", tg.ss[tg.i].Text, g.Text)
		}
		for _, b := range outcomes[k].Bad {
			if strings.Contains(codes(b.Reasons), ReasonAddressesModel) {
				copied++
			}
		}
	}
	t.Logf("%d orders sent straight to %s: %d claims rejected as addressing the model, %d other claims accepted", len(targets), model, copied, other)
}
