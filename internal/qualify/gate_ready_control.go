package qualify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// KindReadyControl asks the candidate for one exact word.
const KindReadyControl = "ready_control"

func init() {
	RegisterKind(Kind{Name: KindReadyControl, Rank: 40, Title: "READY control", NeedsCandidate: true, New: func() Gate { return &ReadyControlGate{} }})
}

// ReadyControlGate is a ready_control gate's section: one bounded chat
// completion whose reply must be exactly Expect after trimming (the one
// rule, supervisor.JudgeReply). Its result is an
// evidence.RequestStats of one request.
type ReadyControlGate struct {
	plainBound
	RequestParams
	// Prompt is the user message; default the profile probe's prompt.
	Prompt string `toml:"prompt"`
	// Expect is the exact reply wanted; default "READY".
	Expect string `toml:"expect"`
}

// Validate fills the prompt, the expected word and the reply bound
// (default config.DefaultProbeMaxTokens: the reply is one word).
func (g *ReadyControlGate) Validate(v *Validation) {
	if g.Prompt == "" {
		g.Prompt = config.DefaultProbePrompt
	}
	if g.Expect == "" {
		g.Expect = "READY"
	}
	g.RequestParams.validate(v, config.DefaultProbeMaxTokens)
}

// Run sends the completion and compares the reply.
func (g *ReadyControlGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	cl, model, err := h.Client()
	if err != nil {
		return err
	}
	zero := 0.0
	t0 := time.Now()
	reply, err := cl.Chat(ctx, llm.Request{Model: model, Messages: []llm.Message{{Role: "user", Content: g.Prompt}},
		MaxTokens: g.MaxTokens, Temperature: &zero, Timeout: g.RequestTimeout.Duration})
	h.Waited(t0)
	stats := &evidence.RequestStats{Count: 1}
	eg.Requests = stats
	defer recordOverload(stats, cl)
	if err != nil {
		stats.Errors = 1
		stats.ErrorMessages = []string{err.Error()}
		eg.Failure = requestFailure(h, err, false)
		return fmt.Errorf("READY completion failed: %v", err)
	}
	got := strings.TrimSpace(reply.Text)
	stats.Samples = []string{got}
	stats.TTFT = percentiles([]float64{ms(reply.TTFT)})
	stats.Latency = percentiles([]float64{ms(reply.Latency)})
	stats.TTFTsMS, stats.LatenciesMS = rounded([]float64{ms(reply.TTFT)}), rounded([]float64{ms(reply.Latency)})
	if why := supervisor.JudgeReply(g.Expect, got); why != "" {
		err := errors.New(why)
		eg.Failure = &failure.Failure{Class: failure.ClassProbeFailed, Phase: failure.PhaseInference, RootCause: err.Error()}
		return err
	}
	return nil
}
