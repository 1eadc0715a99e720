package control

import (
	"context"
	"net/http"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/shadow"
)

// ShadowStartRequest is the body of POST /v1/shadow/start.
type ShadowStartRequest struct {
	// Candidate names the profile to mirror to; Effective (a
	// config.Profile in JSON) is what runs, when it differs from the
	// configuration's profile (a campaign's candidate with its variant).
	Candidate string          `json:"candidate"`
	Effective *config.Profile `json:"effective_profile,omitempty"`
	shadow.Config
}

// ShadowStatus is the answer of the shadow routes: whether a run is
// active, and its (or the last run's) account.
type ShadowStatus struct {
	Active bool           `json:"active"`
	Result *shadow.Result `json:"result,omitempty"`
}

// ShadowStart asks the router to start a shadow run.
func (c *Client) ShadowStart(ctx context.Context, req ShadowStartRequest) (*ShadowStatus, error) {
	var out ShadowStatus
	return &out, c.call(ctx, http.MethodPost, "/v1/shadow/start", req, &out)
}

// ShadowStop ends the active shadow run and returns its account.
func (c *Client) ShadowStop(ctx context.Context) (*ShadowStatus, error) {
	var out ShadowStatus
	return &out, c.call(ctx, http.MethodPost, "/v1/shadow/stop", struct{}{}, &out)
}

// ShadowStatus returns the active (or last) shadow run's account.
func (c *Client) ShadowStatus(ctx context.Context) (*ShadowStatus, error) {
	var out ShadowStatus
	return &out, c.call(ctx, http.MethodGet, "/v1/shadow/status", nil, &out)
}
