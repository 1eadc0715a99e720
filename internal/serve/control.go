package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// StatusSchema names the format of Status.
const StatusSchema = "hiro.serve.status/v1"

// ControlSocketName is the control socket's file name in ControlDir.
const ControlSocketName = "control.sock"

// State is production's state as the router sees it.
type State string

// States of a backend.
const (
	// StateStarting: the router is bringing production up (adopting a
	// recorded one or starting it).
	StateStarting State = "starting"
	// StateReady: it passed its last health check and canary.
	StateReady State = "ready"
	// StateRestarting: it died or failed its canary; a restart is
	// scheduled or in progress.
	StateRestarting State = "restarting"
	// StateDown: it is not serving and the router will not restart it:
	// the restart budget is spent, or it is unmanaged (watched until it
	// answers again).
	StateDown State = "down"
	// StateHandedOver: a campaign holds production (hand-over through the
	// control socket, or a live lease); the router neither serves nor
	// restarts it until it is taken back.
	StateHandedOver State = "handed_over"
	// StateStopped: the router stopped it (shutdown with on_exit = "stop").
	StateStopped State = "stopped"
)

// Check is the outcome of one health check or canary.
type Check struct {
	// At is when it was made; DurationMS how long it took.
	At         time.Time `json:"at"`
	DurationMS float64   `json:"duration_ms"`
	// OK is true when it passed.
	OK bool `json:"ok"`
	// Reply is the canary's trimmed reply.
	Reply string `json:"reply,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
	// Skipped says why a canary was not made (a real request succeeded
	// recently, or the model is unloaded and a canary would reload it).
	Skipped string `json:"skipped,omitempty"`
	// Stale is true when the check is older than production's going
	// down or stopping: the watch no longer checks it, and what the
	// check found no longer holds.
	Stale bool `json:"stale,omitempty"`
}

// BackendStatus is one backend behind the router.
type BackendStatus struct {
	// Name is the profile name; Engine, BaseURL and Model its fields.
	Name    string `json:"name"`
	Engine  string `json:"engine"`
	BaseURL string `json:"base_url"`
	Model   string `json:"model"`
	// Managed is true when the router may start and stop it.
	Managed bool `json:"managed"`
	// State and Since: the current state and when it began.
	State State     `json:"state"`
	Since time.Time `json:"since"`
	// Message says more about the state (why down, what it waits for).
	Message string `json:"message,omitempty"`
	// PID of the engine process (managed, when known).
	PID int `json:"pid,omitempty"`
	// LastHealth and LastCanary are the latest checks.
	LastHealth *Check `json:"last_health,omitempty"`
	LastCanary *Check `json:"last_canary,omitempty"`
	// Restarts counts restarts since the router started; RestartsInWindow
	// those within RestartWindow, of at most RestartBudget.
	Restarts         int    `json:"restarts"`
	RestartsInWindow int    `json:"restarts_in_window"`
	RestartBudget    int    `json:"restart_budget"`
	RestartWindow    string `json:"restart_window"`
	// LastFailure is the latest death or failed canary, classified.
	LastFailure *failure.Failure `json:"last_failure,omitempty"`
	// LastFailureAt is when it happened.
	LastFailureAt time.Time `json:"last_failure_at,omitzero"`
}

// HandoverInfo says which campaign holds production.
type HandoverInfo struct {
	Campaign string    `json:"campaign"`
	OwnerPID int       `json:"lease_owner_pid"`
	Since    time.Time `json:"since"`
	// Source is "control" (a Handover call) or "lease" (a live lease
	// found by the router).
	Source string `json:"source"`
}

// Status is the router's account of itself (GET /v1/status, `hiro status`).
type Status struct {
	Schema string `json:"schema"`
	// PID of the router; StartedAt when it started.
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	// Config is the configuration file; Listen the router's address
	// (scheme included).
	Config string `json:"config"`
	Listen string `json:"listen"`
	// Alias is the production alias ([serve].alias).
	Alias string `json:"alias,omitempty"`
	// Production is the active production backend.
	Production BackendStatus `json:"production"`
	// Served are the other backends reachable by their model id.
	Served []BackendStatus `json:"served,omitempty"`
	// Models are the model names the router accepts.
	Models []string `json:"models"`
	// InFlight is how many proxied requests are in progress.
	InFlight int64 `json:"in_flight"`
	// Draining is true while new requests are refused (drain, hand-over).
	Draining bool `json:"draining"`
	// Handover is set while a campaign holds production.
	Handover *HandoverInfo `json:"handover,omitempty"`
}

// DrainResult is the answer of Drain.
type DrainResult struct {
	// Drained is true when no request was in flight at the end.
	Drained bool `json:"drained"`
	// InFlight is how many were still in flight at the end.
	InFlight int64 `json:"in_flight"`
	// WaitedMS is how long the drain waited.
	WaitedMS int64 `json:"waited_ms"`
}

// HandoverResult is the answer of Handover.
type HandoverResult struct {
	Drain DrainResult `json:"drain"`
	// Production is the profile handed over; Stopped is true when the
	// router stopped it (it was running and managed); Stop says how.
	Production string                 `json:"production"`
	Stopped    bool                   `json:"stopped"`
	Stop       *supervisor.StopResult `json:"stop,omitempty"`
}

// Verification is the answer of Takeback: production started (or found
// running) and verified ready.
type Verification struct {
	// OK is true when production is ready: health, identity, the probe
	// and a READY completion all passed.
	OK bool `json:"ok"`
	// Production is the profile; PID its engine process.
	Production string `json:"production"`
	PID        int    `json:"pid,omitempty"`
	// Health is the health answer ("/health 200 (ready)").
	Health string `json:"health,omitempty"`
	// ModelIDs is what /v1/models reported.
	ModelIDs []string `json:"model_ids,omitempty"`
	// Reply is the READY completion's trimmed reply.
	Reply string `json:"reply,omitempty"`
	// ReadyAfterMS is the time from start to ready.
	ReadyAfterMS int64 `json:"ready_after_ms,omitempty"`
	// Failure says why not, when OK is false.
	Failure *failure.Failure `json:"failure,omitempty"`
	// Error is a harness error (e.g. nothing to take back).
	Error string `json:"error,omitempty"`
}

// SwitchResult is the answer of Switch.
type SwitchResult struct {
	// Previous is the profile production was before the switch;
	// PreviousPID its engine process when the router knew it.
	Previous    string `json:"previous"`
	PreviousPID int    `json:"previous_pid,omitempty"`
	// Active is the profile now serving.
	Active string `json:"active"`
	// PreviousInFlight is how many requests were still in flight on the
	// previous production when the switch stopped waiting for them (0:
	// drained; the wait is bounded by [serve] drain_timeout).
	PreviousInFlight int64 `json:"previous_in_flight"`
}

// ControlDir returns the folder of the control socket, in the user's
// private state folder (private.Control): <state home>/serve, where the
// state home is $HIRO_STATE_HOME, else $HIRO_LEASE_DIR (a private state
// for tests and trials), else $XDG_STATE_HOME/hiro, else
// ~/.local/state/hiro (the password database's home when HOME is unset).
// It does not create it; without a home it is an error naming the
// variable to set.
func ControlDir() (string, error) { return private.Control.Path() }

// privateDir creates dir (0700) when missing and refuses one that is not
// owned by this user or that its group or others may write (package
// private).
func privateDir(dir string) error { return private.EnsureDir(dir, private.Control.What) }

// SocketPath returns the control socket's path in dir.
func SocketPath(dir string) string { return filepath.Join(dir, ControlSocketName) }

// ErrNoRouter is returned (wrapped) by Dial and the client's calls when
// no router answers on the control socket.
var ErrNoRouter = errors.New("no hiro serve is running")

// ControlClient calls a running router's control socket. Safe for
// concurrent use.
type ControlClient struct {
	path string
	hc   *http.Client
}

// Dial connects to the router whose control socket is in dir (ControlDir
// for the user's router) and checks that it answers. Errors wrap
// ErrNoRouter when there is no socket or nobody listens on it. A socket
// another user made, or one in a folder others may write, is refused
// before anything is asked of it (an error that does not wrap
// ErrNoRouter: what it would say is not trusted).
func Dial(dir string) (*ControlClient, error) {
	path := SocketPath(dir)
	if err := private.CheckSocket(path, "control socket"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("control socket refused: %w", err)
	}
	c := &ControlClient{path: path, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
		DisableCompression: true,
	}}}
	conn, err := net.DialTimeout("unix", path, 2*time.Second)
	if err != nil {
		return nil, fmt.Errorf("%w (control socket %s: %v); start it with `hiro serve`", ErrNoRouter, path, err)
	}
	conn.Close()
	return c, nil
}

// Close releases the client's idle connections.
func (c *ControlClient) Close() { c.hc.CloseIdleConnections() }

// Status returns the router's status.
func (c *ControlClient) Status(ctx context.Context) (*Status, error) {
	var st Status
	return &st, c.call(ctx, http.MethodGet, "/v1/status", nil, &st)
}

// Drain stops the router from taking new requests (503 + Retry-After) and
// waits up to timeout for in-flight ones. Resume ends it.
func (c *ControlClient) Drain(ctx context.Context, timeout time.Duration) (*DrainResult, error) {
	var r DrainResult
	return &r, c.call(ctx, http.MethodPost, "/v1/drain", drainRequest{TimeoutMS: timeout.Milliseconds()}, &r)
}

// Resume ends a drain.
func (c *ControlClient) Resume(ctx context.Context) (*Status, error) {
	var st Status
	return &st, c.call(ctx, http.MethodPost, "/v1/resume", nil, &st)
}

// Handover gives production to campaign, whose hiro process is
// leaseOwnerPID: the router drains (up to its drain_timeout), stops a
// managed production, answers 503 + Retry-After until Takeback, and takes
// production back by itself if that process dies.
func (c *ControlClient) Handover(ctx context.Context, campaign string, leaseOwnerPID int) (*HandoverResult, error) {
	var r HandoverResult
	return &r, c.call(ctx, http.MethodPost, "/v1/handover", handoverRequest{Campaign: campaign, LeaseOwnerPID: leaseOwnerPID}, &r)
}

// Takeback ends campaign's hand-over: the router starts production,
// verifies it ready (health, identity, probe, READY completion) and
// resumes serving. The verification is returned also when it failed
// (with an error).
func (c *ControlClient) Takeback(ctx context.Context, campaign string) (*Verification, error) {
	var v Verification
	err := c.call(ctx, http.MethodPost, "/v1/takeback", takebackRequest{Campaign: campaign}, &v)
	if err == nil && !v.OK {
		msg := v.Error
		if v.Failure != nil {
			msg = v.Failure.Error()
		}
		err = fmt.Errorf("take back: production %s not verified ready: %s", v.Production, msg)
	}
	return &v, err
}

// Switch points the router's production at profileName, already started
// and verified by the caller; effective, when not nil, is the profile that
// actually runs (an activated variant). It returns the previous
// production's name: the caller stops it.
func (c *ControlClient) Switch(ctx context.Context, profileName string, effective *config.Profile) (*SwitchResult, error) {
	var r SwitchResult
	return &r, c.call(ctx, http.MethodPost, "/v1/switch", switchRequest{Profile: profileName, Effective: effective}, &r)
}

// SwitchHandedOver is Switch for the holder of a hand-over (an exclusive
// activation: production was handed over to campaign, the new backend
// started and verified in its place): the switch ends the hand-over and
// the router serves the new backend. 409 when production is not handed
// over to campaign.
func (c *ControlClient) SwitchHandedOver(ctx context.Context, campaign, profileName string, effective *config.Profile) (*SwitchResult, error) {
	var r SwitchResult
	return &r, c.call(ctx, http.MethodPost, "/v1/switch", switchRequest{Profile: profileName, Effective: effective, Campaign: campaign}, &r)
}

type drainRequest struct {
	TimeoutMS int64 `json:"timeout_ms"`
}

type handoverRequest struct {
	Campaign      string `json:"campaign"`
	LeaseOwnerPID int    `json:"lease_owner_pid"`
	TimeoutMS     int64  `json:"timeout_ms,omitempty"`
}

type takebackRequest struct {
	Campaign string `json:"campaign"`
}

type switchRequest struct {
	Profile   string          `json:"profile"`
	Effective *config.Profile `json:"effective_profile,omitempty"`
	// Campaign, when production is handed over to it, ends that
	// hand-over with the switch (an exclusive activation).
	Campaign string `json:"campaign,omitempty"`
}

// ControlError is an error answer of the control socket.
type ControlError struct {
	// StatusCode is the HTTP status (409: conflict with a hand-over).
	StatusCode int
	Message    string
}

func (e *ControlError) Error() string { return "hiro serve: " + e.Message }

func (c *ControlClient) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://hiro-serve"+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%w (control socket %s: %v)", ErrNoRouter, c.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("reading the router's answer to %s: %w", path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = "HTTP " + strconv.Itoa(resp.StatusCode) + ": " + string(b)
		}
		// A failed verification still carries the verification.
		if out != nil {
			_ = json.Unmarshal(b, out)
		}
		return &ControlError{StatusCode: resp.StatusCode, Message: e.Error}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("the router's answer to %s is not JSON: %w", path, err)
	}
	return nil
}
