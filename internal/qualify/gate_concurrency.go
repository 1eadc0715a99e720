package qualify

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// KindConcurrency sends requests N at a time.
const KindConcurrency = "concurrency"

// Defaults of a concurrency gate.
const (
	DefaultConcurrency         = 4
	DefaultConcurrencyRequests = 16
)

func init() {
	RegisterKind(Kind{Name: KindConcurrency, Rank: 65, Title: "Concurrent requests", NeedsCandidate: true, New: func() Gate { return &ConcurrencyGate{} }})
}

// ConcurrencyGate is a concurrency gate's section: Requests requests with
// Concurrency of them in flight at once; none may fail. Its result is an
// evidence.RequestStats with latency and TTFT percentiles, the wall time,
// and the server's throughput (requests/s, output tokens/s over the wall
// time, from the server's usage).
type ConcurrencyGate struct {
	plainBound
	RequestParams
	PerfCompare
	// Concurrency is how many requests are in flight at once; default
	// DefaultConcurrency.
	Concurrency int `toml:"concurrency"`
	// Requests is how many to send in all; default
	// DefaultConcurrencyRequests, at least Concurrency.
	Requests int `toml:"requests"`
	// Prompt is the user message; default the extraction prompt on the
	// built-in control sentences, with the claims schema.
	Prompt string `toml:"prompt"`
}

// Validate checks the counts and fills the defaults.
func (g *ConcurrencyGate) Validate(v *Validation) {
	g.RequestParams.validate(v, DefaultRequestMaxTokens)
	g.PerfCompare.validate(v)
	validateCount(v, "concurrency", &g.Concurrency, DefaultConcurrency, MaxConcurrency)
	validateCount(v, "requests", &g.Requests, max(DefaultConcurrencyRequests, g.Concurrency), MaxGateRequests)
	if g.Requests < g.Concurrency && g.Requests > 0 {
		v.Errorf("requests", "%d is fewer than concurrency %d: send at least one request per slot", g.Requests, g.Concurrency)
	}
}

// concurrencyResult is one request's reply or error.
type concurrencyResult struct {
	reply *llm.Reply
	err   error
}

// phase sends requests idx (indices into the gate's request list, so
// that both sides get the same prompts) from Concurrency workers through
// cl into results, and returns how many it sent and its wall time. It
// stops feeding when ctx ends.
func (g *ConcurrencyGate) phase(ctx context.Context, cl *llm.Client, model string, schema []byte, idx []int, results []concurrencyResult) (int, time.Duration) {
	next := make(chan int)
	var wg sync.WaitGroup
	zero := 0.0
	start := time.Now()
	for w := 0; w < g.Concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				reply, err := cl.Chat(ctx, llm.Request{Model: model, Messages: requestMessages(g.Prompt, i), MaxTokens: g.MaxTokens,
					Temperature: &zero, Schema: schema, SchemaName: "claims", Timeout: g.RequestTimeout.Duration})
				results[i] = concurrencyResult{reply, err}
			}
		}()
	}
	sent := 0
feed:
	for _, i := range idx {
		select {
		case next <- i:
			sent++
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return sent, time.Since(start)
}

// Run sends the requests from Concurrency workers; any error fails it.
// With compare_with_production production gets the same requests, and
// the phases alternate ABBA (the candidate's first half, production's
// first half, production's second half, the candidate's second half), so
// that a drift of the machine during the gate falls on both sides alike;
// the candidate's wall time is its two phases'.
func (g *ConcurrencyGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	cl, model, err := h.Client()
	if err != nil {
		return err
	}
	pcl, pmodel, skipped, err := g.productionClient(h)
	if err != nil {
		return err
	}
	var schema []byte
	if g.Prompt == "" {
		schema = prompt.SchemaJSON()
	}
	all := make([]int, g.Requests)
	for i := range all {
		all[i] = i
	}
	results := make([]concurrencyResult, g.Requests)
	presults := make([]concurrencyResult, g.Requests)
	start := time.Now()
	var sent int
	var wall time.Duration
	if pcl == nil {
		sent, wall = g.phase(ctx, cl, model, schema, all, results)
	} else {
		half := (g.Requests + 1) / 2
		a, b := all[:half], all[half:]
		n1, w1 := g.phase(ctx, cl, model, schema, a, results)
		g.phase(ctx, pcl, pmodel, schema, a, presults)
		g.phase(ctx, pcl, pmodel, schema, b, presults)
		n2, w2 := g.phase(ctx, cl, model, schema, b, results)
		sent, wall = n1+n2, w1+w2
	}
	h.Waited(start)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	stats := &evidence.RequestStats{Count: sent, Concurrency: g.Concurrency, WallMS: wall.Milliseconds()}
	eg.Requests = stats
	defer recordOverload(stats, cl)
	var ttft, lat, tpot []float64
	var tokens int
	var sumLatency time.Duration
	var firstErr error
	var cand, prod perfSample
	for i, r := range results[:sent] {
		cand.add(r.reply, r.err)
		if r.err != nil {
			stats.Errors++
			addDistinct(&stats.ErrorMessages, r.err.Error())
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		ttft = append(ttft, ms(r.reply.TTFT))
		lat = append(lat, ms(r.reply.Latency))
		sumLatency += r.reply.Latency
		if r.reply.HasUsage {
			tokens += r.reply.Usage.CompletionTokens
			if d := r.reply.TPOT(); d > 0 {
				tpot = append(tpot, ms(d))
			}
		}
		if i < 3 {
			stats.Samples = append(stats.Samples, truncate(r.reply.Text, 300))
		}
	}
	stats.TTFT, stats.Latency = percentiles(ttft), percentiles(lat)
	stats.TTFTsMS, stats.LatenciesMS = rounded(ttft), rounded(lat)
	if wall > 0 {
		stats.RequestsPerSecond = round3(float64(sent-stats.Errors) / wall.Seconds())
		stats.OutputTokensPerSecondWall = round3(float64(tokens) / wall.Seconds())
	}
	if sumLatency > 0 {
		stats.OutputTokensPerSecond = round3(float64(tokens) / sumLatency.Seconds())
	}
	stats.TPOTMS = round3(mean(tpot))
	if pcl != nil {
		for _, r := range presults {
			prod.add(r.reply, r.err)
		}
	}
	stats.Comparison = g.comparison(h, pcl != nil, skipped, &cand, &prod, fmt.Sprintf("ABBA phases of %d at a time: the candidate's first half, production's first half, production's second half, the candidate's second half (the same prompts on both sides)", g.Concurrency))
	if stats.Errors > 0 {
		eg.Failure = requestFailure(h, firstErr, false)
		return fmt.Errorf("%d of %d concurrent requests (%d at a time) failed: %s", stats.Errors, stats.Count, g.Concurrency, stats.ErrorMessages[0])
	}
	return perfVerdict(stats.Comparison)
}
