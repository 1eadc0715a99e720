package qualify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// KindSequential sends requests one after another.
const KindSequential = "sequential"

// DefaultSequentialRequests is a sequential gate's request count.
const DefaultSequentialRequests = 20

func init() {
	RegisterKind(Kind{Name: KindSequential, Rank: 60, Title: "Sequential requests", NeedsCandidate: true, New: func() Gate { return &SequentialGate{} }})
}

// SequentialGate is a sequential gate's section: N requests one after
// another, none may fail. Its result is an evidence.RequestStats with
// latency percentiles and tokens/s from the server's usage.
type SequentialGate struct {
	plainBound
	RequestParams
	PerfCompare
	// Requests is how many to send; default DefaultSequentialRequests.
	Requests int `toml:"requests"`
	// Prompt is the user message; default the extraction prompt on the
	// built-in control sentences.
	Prompt string `toml:"prompt"`
	// Structured sends the claims schema as response_format (default
	// true; ignored with a Prompt of the plan's).
	Structured *bool `toml:"structured"`
}

// Validate checks the counts and fills the defaults.
func (g *SequentialGate) Validate(v *Validation) {
	g.RequestParams.validate(v, DefaultRequestMaxTokens)
	g.PerfCompare.validate(v)
	validateCount(v, "requests", &g.Requests, DefaultSequentialRequests, MaxGateRequests)
}

// schema is the response_format to send, nil for none.
func (g *SequentialGate) schema() json.RawMessage {
	if (g.Structured == nil || *g.Structured) && g.Prompt == "" {
		return prompt.SchemaJSON()
	}
	return nil
}

// Run sends the requests in turn; any error fails the gate. With
// compare_with_production each request goes to production too, the
// order alternating (candidate first on even requests, production first
// on odd ones), and the comparison decides the gate when every
// candidate request succeeded.
func (g *SequentialGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	cl, model, err := h.Client()
	if err != nil {
		return err
	}
	pcl, pmodel, skipped, err := g.productionClient(h)
	if err != nil {
		return err
	}
	var cand, prod perfSample
	var candTime time.Duration
	raw := g.schema()
	stats := &evidence.RequestStats{Concurrency: 1}
	eg.Requests = stats
	defer recordOverload(stats, cl)
	var ttft, lat, tpot []float64
	var tokens int
	var sumLatency time.Duration
	zero := 0.0
	start := time.Now()
	var firstErr error
	for i := 0; i < g.Requests; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		h.Statusf("request %d/%d", i+1, g.Requests)
		send := func(c *llm.Client, m string) (*llm.Reply, error) {
			t0 := time.Now()
			defer h.Waited(t0)
			return c.Chat(ctx, llm.Request{Model: m, Messages: requestMessages(g.Prompt, i), MaxTokens: g.MaxTokens,
				Temperature: &zero, Schema: raw, SchemaName: "claims", Timeout: g.RequestTimeout.Duration})
		}
		if pcl != nil && i%2 == 1 {
			prod.add(send(pcl, pmodel))
		}
		stats.Count++
		t0 := time.Now()
		reply, err := send(cl, model)
		candTime += time.Since(t0)
		cand.add(reply, err)
		if pcl != nil && i%2 == 0 {
			prod.add(send(pcl, pmodel))
		}
		if err != nil {
			stats.Errors++
			addDistinct(&stats.ErrorMessages, err.Error())
			if firstErr == nil {
				firstErr = err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		ttft = append(ttft, ms(reply.TTFT))
		lat = append(lat, ms(reply.Latency))
		sumLatency += reply.Latency
		if reply.HasUsage {
			tokens += reply.Usage.CompletionTokens
			if d := reply.TPOT(); d > 0 {
				tpot = append(tpot, ms(d))
			}
		}
		if i < 3 {
			stats.Samples = append(stats.Samples, truncate(reply.Text, 300))
		}
	}
	wall := time.Since(start)
	if pcl != nil {
		wall = candTime // the candidate's own time, production's requests left out
	}
	stats.TTFT, stats.Latency = percentiles(ttft), percentiles(lat)
	stats.TTFTsMS, stats.LatenciesMS = rounded(ttft), rounded(lat)
	stats.WallMS = wall.Milliseconds()
	if wall > 0 {
		stats.RequestsPerSecond = round3(float64(stats.Count-stats.Errors) / wall.Seconds())
		stats.OutputTokensPerSecondWall = round3(float64(tokens) / wall.Seconds())
	}
	if sumLatency > 0 {
		stats.OutputTokensPerSecond = round3(float64(tokens) / sumLatency.Seconds())
	}
	stats.TPOTMS = round3(mean(tpot))
	stats.Comparison = g.comparison(h, pcl != nil, skipped, &cand, &prod, "alternating: each request sent to both sides, the candidate first on even requests and production first on odd ones")
	if stats.Errors > 0 {
		eg.Failure = requestFailure(h, firstErr, false)
		return fmt.Errorf("%d of %d sequential requests failed: %s", stats.Errors, stats.Count, stats.ErrorMessages[0])
	}
	return perfVerdict(stats.Comparison)
}
