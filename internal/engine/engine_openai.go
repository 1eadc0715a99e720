package engine

import (
	"context"
	"fmt"
	"net/http"
)

// openai: any other OpenAI-compatible server. There is no health endpoint
// to rely on, so health is GET /v1/models answering 200 with a model list
// (readiness then still checks the model id and makes a real completion).
func init() {
	register(&Engine{
		Kind:       "openai",
		HealthPath: "/v1/models",
		health:     modelsHealth,
		signatures: cudaSignatures,
		wrappers:   pythonWrappers,
		facts:      shardFacts,
	})
}

func modelsHealth(ctx context.Context, e *Engine, client *http.Client, baseURL, _ string) HealthResult {
	r := HealthResult{Path: e.HealthPath}
	code, body, err := get(ctx, client, baseURL+e.HealthPath)
	r.StatusCode = code
	switch {
	case err != nil:
		r.State, r.Message = HealthDown, err.Error()
	case code == http.StatusOK:
		r.State = HealthReady
	case code == http.StatusServiceUnavailable:
		r.State, r.Message = HealthLoading, errorMessage(body)
	default:
		r.State, r.Message = HealthDown, fmt.Sprintf("GET %s answered HTTP %d: %s", e.HealthPath, code, errorMessage(body))
	}
	return r
}
