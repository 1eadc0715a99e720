package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// HealthState is what a health check concluded.
type HealthState string

const (
	// HealthReady: the engine's health check passes.
	HealthReady HealthState = "ready"
	// HealthLoading: the engine answers and says it is not ready yet
	// (llama.cpp and SGLang 503 while loading; Ollama up but the model not
	// listed yet).
	HealthLoading HealthState = "loading"
	// HealthDown: no answer (connection refused, timeout) or an answer
	// that is not a health answer (vLLM 503: engine dead; 404; 500).
	HealthDown HealthState = "down"
)

// HealthResult is one health check's answer.
type HealthResult struct {
	State HealthState `json:"state"`
	// Path is the last path requested ("/health", "/api/tags").
	Path string `json:"path"`
	// StatusCode is the HTTP status of the last answer; 0 when none came.
	StatusCode int `json:"status_code,omitempty"`
	// Message says why, for a person: the engine's error message, the
	// transport error, or what was missing.
	Message string `json:"message,omitempty"`
	// Err is the transport error behind Message when no answer came (a
	// refused connection, a TLS certificate not trusted), kept with its
	// type for callers that advise on it (llm.Advice); nil otherwise.
	Err error `json:"-"`
	// ModelMissing: the engine answered and its own list says the
	// expected model does not exist (Ollama's /api/tags, read from its
	// model store): waiting cannot make it appear, so readiness ends at
	// once (identity_mismatch) instead of at its timeout. Listed holds the
	// names the list gave. Readiness's own signals: not in the evidence
	// (the failure's root cause and detail say it).
	ModelMissing bool     `json:"-"`
	Listed       []string `json:"-"`
}

// CheckHealth runs the engine's health check against baseURL (scheme, host
// and port, e.g. "http://127.0.0.1:8080"; a trailing slash is ignored).
// model is the expected model id (used by Ollama, whose health includes the
// model being present). The request is bounded by ctx and by client's
// timeout; a nil client means http.DefaultClient. It never returns an
// error: failures are HealthDown with the reason in Message.
func (e *Engine) CheckHealth(ctx context.Context, client *http.Client, baseURL, model string) HealthResult {
	if client == nil {
		client = http.DefaultClient
	}
	return e.health(ctx, e, client, strings.TrimRight(baseURL, "/"), model)
}

// maxBody bounds how much of an answer is read.
const maxBody = 1 << 20

// get requests baseURL+path and returns status and body (at most maxBody).
func get(ctx context.Context, client *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return resp.StatusCode, body, fmt.Errorf("GET %s: reading the answer: %w", url, err)
	}
	return resp.StatusCode, body, nil
}

// errorMessage extracts an OpenAI-shaped {"error":{"message":...}} or
// {"error":"..."} or {"message":...} message from body, else a trimmed
// prefix of the body itself.
func errorMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case len(v.Error) > 0 && json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

// statusHealth is the /health reading of llama.cpp and SGLang: 200 ready,
// 503 loading, anything else down.
func statusHealth(ctx context.Context, e *Engine, client *http.Client, baseURL, _ string) HealthResult {
	r := HealthResult{Path: e.HealthPath}
	code, body, err := get(ctx, client, baseURL+e.HealthPath)
	r.StatusCode = code
	switch {
	case err != nil:
		r.State, r.Message, r.Err = HealthDown, err.Error(), err
	case code == http.StatusOK:
		r.State = HealthReady
	case code == http.StatusServiceUnavailable:
		r.State, r.Message = HealthLoading, errorMessage(body)
	default:
		r.State, r.Message = HealthDown, fmt.Sprintf("GET %s answered HTTP %d: %s", e.HealthPath, code, errorMessage(body))
	}
	return r
}

// modelsList is the OpenAI-compatible /v1/models answer.
type modelsList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// ModelIDs returns the model ids the engine reports at its ModelsPath
// (data[].id of the OpenAI-compatible /v1/models answer), in the order
// given. Errors name the URL and the status or the parse problem.
func (e *Engine) ModelIDs(ctx context.Context, client *http.Client, baseURL string) ([]string, error) {
	if client == nil {
		client = http.DefaultClient
	}
	url := strings.TrimRight(baseURL, "/") + e.ModelsPath
	code, body, err := get(ctx, client, url)
	if err != nil {
		return nil, fmt.Errorf("listing models: %w", err)
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("listing models: GET %s answered HTTP %d: %s", url, code, errorMessage(body))
	}
	var l modelsList
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("listing models: GET %s: not an OpenAI model list (want {\"data\":[{\"id\":...}]}): %w", url, err)
	}
	ids := make([]string, 0, len(l.Data))
	for _, m := range l.Data {
		ids = append(ids, m.ID)
	}
	return ids, nil
}
