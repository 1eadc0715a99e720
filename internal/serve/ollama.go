package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Ollama unloads a model after its keep-alive without requests, and any
// completion loads it again and restarts the keep-alive. The router's
// canary must do neither: it is skipped while the model is unloaded, and
// while it is loaded with a finite keep-alive it goes through Ollama's own
// /api/generate with keep_alive set to the time left, so the model leaves
// when it would have without the canary.

// ollamaStatus is what /api/ps says about one model.
type ollamaStatus struct {
	known, loaded bool
	expires       time.Time
}

// ollamaPS asks Ollama's /api/ps whether model is loaded and until when;
// known is false when it cannot tell.
func ollamaPS(ctx context.Context, hc *http.Client, base string, e *engine.Engine, model string) ollamaStatus {
	ctx, cancel := context.WithTimeout(ctx, supervisor.DefaultHealthRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/ps", nil)
	if err != nil {
		return ollamaStatus{}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return ollamaStatus{}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ollamaStatus{}
	}
	var ps struct {
		Models []struct {
			Name      string    `json:"name"`
			Model     string    `json:"model"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"models"`
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&ps) != nil {
		return ollamaStatus{}
	}
	for _, m := range ps.Models {
		if e.MatchModel(model, []string{m.Name, m.Model}) {
			return ollamaStatus{known: true, loaded: true, expires: m.ExpiresAt}
		}
	}
	return ollamaStatus{known: true}
}

// ollamaCanary is the canary for a loaded Ollama model with a finite
// keep-alive: health and identity as readiness checks them, then the
// ready probe's prompt through /api/generate with keep_alive = left.
// Failures are classified by t like any canary failure.
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
	body, _ := json.Marshal(map[string]any{"model": prof.Model, "prompt": prof.ReadyProbe.Prompt, "stream": false,
		"keep_alive": fmt.Sprintf("%ds", int(left.Seconds())),
		"options":    map[string]any{"num_predict": prof.ReadyProbe.MaxTokens, "temperature": 0}})
	cctx, cancel := context.WithTimeout(ctx, prof.ReadyProbe.Timeout.Duration)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, prof.BaseURL+"/api/generate", bytes.NewReader(body))
	if err != nil {
		return classify(engine.Outcome{Kind: engine.OutcomeCompletionFailed, Message: err.Error()})
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := rt.hc.Do(req)
	if err != nil {
		msg := err.Error()
		if cctx.Err() != nil {
			msg = "timed out"
		}
		return classify(engine.Outcome{Kind: engine.OutcomeCompletionFailed, Timeout: prof.ReadyProbe.Timeout.Duration, Message: msg})
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var out struct {
		Response string `json:"response"`
		Error    string `json:"error"`
	}
	_ = json.Unmarshal(b, &out)
	if resp.StatusCode != http.StatusOK {
		msg := out.Error
		if msg == "" {
			msg = strings.TrimSpace(string(b))
		}
		return classify(engine.Outcome{Kind: engine.OutcomeCompletionFailed, Status: resp.StatusCode, Message: msg})
	}
	rr.Reply = strings.TrimSpace(out.Response)
	if why := supervisor.JudgeReply(prof.ReadyProbe.Expect, rr.Reply); why != "" {
		return classify(engine.Outcome{Kind: engine.OutcomeCompletionFailed, Status: http.StatusOK,
			Message: why + " (ready_probe.expect)"})
	}
	rr.OK = true
	rr.Duration = time.Since(start)
	return rr
}
