package extract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// explainFailure registers, for a test writing extraction output to out,
// a report that runs only when the test has failed and before out is
// removed: every request that failed with its reason (a timeout, a refused
// connection, a 5xx, in the reject's words) and the count of the other
// rejects by kind and reason, so that a failure on a loaded machine can be
// told from a bug by the test's output alone (issue 26, finding F18). Call
// it after out := t.TempDir(): cleanups run last-registered first.
func explainFailure(t *testing.T, out string) {
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
		t.Logf("why: %d requests failed (each bounded by %s):\n%s\nother rejects by kind and reason: %v", len(failed), DefaultRequestTimeout, strings.Join(failed, "\n"), other)
	})
}

// TestOllamaFactcheck is the acceptance test: extraction of the first
// two sources of the Factcheck-GPT corpus through a real Ollama
// completes; every claim passes every validator; every reject has
// reasons; a run interrupted after one document and run again finishes
// without redoing it and without duplicates. (It was six sources and an
// interruption after two: 31 replies, 7 to 11.5 minutes on 2 busy cores;
// then three sources, 12 sentences; two sources, 8 sentences, keep every
// assertion: one document finished before the interruption, one after.)
// A failure says why its requests failed (explainFailure).
func TestOllamaFactcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Ollama acceptance test takes minutes on CPU")
	}
	const sources, interruptAfter = 2, 1
	c := factcheckCorpus(t, sources)
	base, model := startOllama(t, 2)
	out := t.TempDir()
	explainFailure(t, out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := newCountingClient(base)
	// Bounded for a 2-core CI machine: replies of at most 384 tokens (bytes,
	// for the byte-level fixture models), no repair round.
	o := Options{Client: client, Backend: "ollama", BaseURL: base, Model: model, OutDir: out,
		Concurrency: 2, MaxRepairs: 0, MaxTokens: 384}
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
	sum, err := Run(ctx, c.Docs, o)
	if err == nil || !sum.Interrupted || sum.Done+sum.Failed != interruptAfter {
		t.Fatalf("interrupted run: err %v, summary %+v", err, sum)
	}
	client2 := newCountingClient(base)
	o.Client, o.OnCommit = client2, nil
	sum, err = Run(context.Background(), c.Docs, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != len(committed) || sum.Skipped+sum.Done != sources || sum.Stats.DocumentsDone != sources {
		t.Errorf("resumed run: %d skipped (want the %d finished before the interruption), %d done, %d failed, of %d sources (want all done or skipped); %d requests, %d replies; summary %+v",
			sum.Skipped, len(committed), sum.Done, sum.Failed, sources, sum.Requests, sum.Replies, sum)
	}
	for _, tg := range client2.targets() {
		for id := range committed {
			for _, d := range c.Docs {
				if d.ID == id && strings.Contains(strings.Join(strings.Fields(string(d.Text)), " "), tg) {
					t.Errorf("resumed run redid finished document %s", id)
				}
			}
		}
	}
	claims := checkClaims(t, out, c.Docs)
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
// form of testdata/injection still represented; 41 replies. What the
// model does not decide is held offline over every document and order:
// TestInjectionDocumentsAreData and TestFalseRejectRateOnGoldClaims (the
// statements pass), TestVerbatimOrdersRejectedAsClaims (every order
// copied is rejected), TestObedientModelYieldsNoInjectedClaim.
func TestOllamaInjectionDocuments(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the Ollama injection test takes minutes on CPU")
	}
	var docs []corpus.Document
	for _, d := range injectionDocs(t) {
		if len(injectionCases[d.ID+".md"].addressing)+len(injectionCases[d.ID+".txt"].addressing) > 0 {
			docs = append(docs, d)
		}
	}
	if len(docs) < 10 {
		t.Fatalf("%d documents holding orders in testdata/injection, want 10 or more", len(docs))
	}
	base, model := startOllama(t, 2)
	out := t.TempDir()
	explainFailure(t, out)
	o := Options{Client: newCountingClient(base), Backend: "ollama", BaseURL: base, Model: model, OutDir: out,
		Concurrency: 2, MaxRepairs: 0, MaxTokens: 384}
	sum, err := Run(context.Background(), docs, o)
	if err != nil {
		t.Fatal(err)
	}
	claims := checkClaims(t, out, docs)
	rejects := checkRejects(t, out)
	addressed := map[string]map[int]bool{} // doc id -> sentence index
	orders := 0
	var targets []struct {
		ss []corpus.Sentence
		i  int
	}
	for _, d := range docs {
		ss, err := corpus.Split(string(d.Text), d.Markdown)
		if err != nil {
			t.Fatal(err)
		}
		addressed[d.ID] = map[int]bool{}
		for i, s := range ss {
			if _, bad := AddressesModel(s.Text); bad {
				addressed[d.ID][i] = true
				if orders++; len(addressed[d.ID]) == 1 { // the document's first order
					targets = append(targets, struct {
						ss []corpus.Sentence
						i  int
					}{ss, i})
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

	// The orders sent straight to the model as targets.
	v := mustValidator(t)
	client := newCountingClient(base)
	copied, other := 0, 0
	zeroTemperature, seed := 0.0, int64(Seed)
	for _, tg := range targets {
		in := Window(tg.ss, tg.i)
		req := llm.Request{Model: model, Messages: Messages(in), MaxTokens: 384, Temperature: &zeroTemperature, Seed: &seed,
			Schema: prompt.SchemaJSON(), SchemaName: "claims"}
		reply, err := client.Chat(context.Background(), req)
		if err != nil {
			t.Fatalf("%q: %v", tg.ss[tg.i].Text, err)
		}
		out := v.Validate(reply.Text, reply.FinishReason, SourceFor(tg.ss, tg.i, in))
		order := corpus.NormalizeClaim(tg.ss[tg.i].Text)
		for _, g := range out.Good {
			if g.Key == order {
				t.Errorf("the order %q copied verbatim was accepted as a claim", tg.ss[tg.i].Text)
			}
			other++
			t.Logf("accepted from the order %q: %q", tg.ss[tg.i].Text, g.Text)
		}
		for _, b := range out.Bad {
			if strings.Contains(codes(b.Reasons), ReasonAddressesModel) {
				copied++
			}
		}
	}
	t.Logf("%d orders sent straight to %s: %d claims rejected as addressing the model, %d other claims accepted", len(targets), model, copied, other)
}
