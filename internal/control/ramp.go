package control

import (
	"context"
	"net/http"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/ramp"
)

// RampStartRequest is the body of POST /v1/ramp/start: send a growing
// share of production's requests to a running candidate, step by step
// (docs/shadow.md "Progressive activation").
type RampStartRequest struct {
	// Candidate names the profile; Effective (a config.Profile in JSON)
	// is what runs, when it differs from the configuration's profile.
	Candidate string          `json:"candidate"`
	Effective *config.Profile `json:"effective_profile,omitempty"`
	// Policy is the ramp's steps, soak and checks (ramp.Policy; zero
	// values are its defaults).
	Policy ramp.Policy `json:"policy"`
	// OwnerPID is the process (an activation) that owns the ramp: once
	// it is gone the router reverses the ramp by itself. 0: none.
	OwnerPID int `json:"owner_pid,omitempty"`
}

// RampStopRequest is the body of POST /v1/ramp/stop: Reason is recorded
// as the ramp's reason (default "stopped by command"). Reverse ends even
// a completed ramp, as reversed (its candidate failed before the switch);
// without it a completed ramp keeps its end (the activation switched).
type RampStopRequest struct {
	Reason  string `json:"reason,omitempty"`
	Reverse bool   `json:"reverse,omitempty"`
}

// RampStatus is the answer of the ramp routes and Status.Ramp: whether
// a ramp routes requests now, and its (or the last one's) account.
type RampStatus struct {
	Active bool                 `json:"active"`
	Result *evidence.RampResult `json:"result,omitempty"`
}

// RampStart asks the router to start a progressive ramp.
func (c *Client) RampStart(ctx context.Context, req RampStartRequest) (*RampStatus, error) {
	var out RampStatus
	return &out, c.call(ctx, http.MethodPost, "/v1/ramp/start", req, &out)
}

// RampStop ends the ramp (every request back to production) and
// returns its account.
func (c *Client) RampStop(ctx context.Context, reason string) (*RampStatus, error) {
	var out RampStatus
	return &out, c.call(ctx, http.MethodPost, "/v1/ramp/stop", RampStopRequest{Reason: reason}, &out)
}

// RampReverse reverses the router's ramp, completed or not (every
// request back on production), with reason, and returns its account.
func (c *Client) RampReverse(ctx context.Context, reason string) (*RampStatus, error) {
	var out RampStatus
	return &out, c.call(ctx, http.MethodPost, "/v1/ramp/stop", RampStopRequest{Reason: reason, Reverse: true}, &out)
}

// RampStatus returns the ramp's (or the last ramp's) account.
func (c *Client) RampStatus(ctx context.Context) (*RampStatus, error) {
	var out RampStatus
	return &out, c.call(ctx, http.MethodGet, "/v1/ramp/status", nil, &out)
}
