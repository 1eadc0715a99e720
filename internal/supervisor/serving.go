package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/llm"
)

// ServingResult is CheckServing's answer.
type ServingResult struct {
	// OK: the health check passed and the model list names the
	// profile's model.
	OK bool
	// Health is the health answer; ModelIDs what the model list reported
	// (empty when it was not read).
	Health   engine.HealthResult
	ModelIDs []string
	// Problem says why not OK in a few words for a person ("connection
	// refused", "no answer in time", "serves other-model, not
	// prod-model"); "" when OK.
	Problem string
}

// CheckServing checks a server that should be serving with the first two
// rules of readiness, once: its health check passes and its model list
// names prof.Model. Unlike CheckReady it sends no completion, so it is
// cheap enough to poll while the server serves others (a campaign
// watching the production it runs beside). hc may be nil:
// llm.HTTPClient(prof). Each request is bounded by
// DefaultHealthRequestTimeout and by ctx. It never starts or stops
// anything.
func CheckServing(ctx context.Context, prof *config.Profile, hc *http.Client) ServingResult {
	var r ServingResult
	if hc == nil {
		var err error
		if hc, err = llm.HTTPClient(prof); err != nil {
			r.Problem = err.Error()
			return r
		}
	}
	e, err := engine.Lookup(prof.Engine)
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	hctx, cancel := context.WithTimeout(ctx, DefaultHealthRequestTimeout)
	r.Health = e.CheckHealth(hctx, hc, prof.BaseURL, prof.Model)
	cancel()
	if r.Health.State != engine.HealthReady {
		r.Problem = healthProblem(r.Health)
		return r
	}
	ictx, cancel := context.WithTimeout(ctx, DefaultHealthRequestTimeout)
	r.ModelIDs, err = e.ModelIDs(ictx, hc, prof.BaseURL)
	cancel()
	switch {
	case err != nil:
		r.Problem = err.Error()
	case !e.MatchModel(prof.Model, r.ModelIDs):
		r.Problem = fmt.Sprintf("serves %s, not %s", strings.Join(r.ModelIDs, ", "), prof.Model)
	default:
		r.OK = true
	}
	return r
}

// healthProblem is a failed health answer in a few words: the transport
// error's kind when no answer came, else the engine's message.
func healthProblem(h engine.HealthResult) string {
	switch {
	case errors.Is(h.Err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(h.Err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(h.Err, context.DeadlineExceeded) || errors.Is(h.Err, os.ErrDeadlineExceeded):
		return "no answer in time"
	case h.State == engine.HealthLoading:
		return "loading: " + h.Message
	case h.Message != "":
		return h.Message
	}
	return "health check " + string(h.State)
}
