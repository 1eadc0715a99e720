package serve

import (
	"context"
	"net/http"
	"time"

	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// ollamaCanary is the canary for a loaded Ollama model with a finite
// keep-alive (engine.OllamaResidency.CanaryKeepAlive): health and
// identity as readiness checks them, then the ready probe's prompt
// through /api/generate with keep_alive = left (engine.OllamaGenerate),
// its reply judged by supervisor.JudgeReply. Failures are classified by t
// like any canary failure.
func ollamaCanary(ctx context.Context, rt *route, left time.Duration, t *engine.Tracker) supervisor.ReadyResult {
	start := time.Now()
	prof := rt.prof
	var rr supervisor.ReadyResult
	classify := func(o engine.Outcome) supervisor.ReadyResult {
		o.Elapsed = time.Since(start)
		rr.Failure = t.Classify(o)
		rr.Duration = time.Since(start)
		return rr
	}
	hctx, cancel := context.WithTimeout(ctx, supervisor.DefaultHealthRequestTimeout)
	rr.Health = rt.eng.CheckHealth(hctx, rt.hc, prof.BaseURL, prof.Model)
	cancel()
	if rr.Health.State != engine.HealthReady {
		h := rr.Health
		return classify(engine.Outcome{Kind: engine.OutcomeHealthFailed, Health: &h, Message: h.Message})
	}
	cctx, cancel := context.WithTimeout(ctx, prof.ReadyProbe.Timeout.Duration)
	defer cancel()
	status, reply, msg, err := engine.OllamaGenerate(cctx, rt.hc, prof.BaseURL, prof.Model, prof.ReadyProbe.Prompt, prof.ReadyProbe.MaxTokens, left)
	if err != nil {
		msg := err.Error()
		if cctx.Err() != nil {
			msg = "timed out"
		}
		return classify(engine.Outcome{Kind: engine.OutcomeCompletionFailed, Timeout: prof.ReadyProbe.Timeout.Duration, Message: msg})
	}
	if status != http.StatusOK {
		return classify(engine.Outcome{Kind: engine.OutcomeCompletionFailed, Status: status, Message: msg})
	}
	rr.Reply = reply
	if why := supervisor.JudgeReply(prof.ReadyProbe.Expect, rr.Reply); why != "" {
		return classify(engine.Outcome{Kind: engine.OutcomeCompletionFailed, Status: http.StatusOK,
			Message: why + " (ready_probe.expect)"})
	}
	rr.OK = true
	rr.Duration = time.Since(start)
	return rr
}
