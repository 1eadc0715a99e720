package control

import (
	"time"

	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// StatusSchema names the format of Status.
const StatusSchema = "hiro.serve.status/v1"

// SocketName is the control socket's file name in Dir.
const SocketName = "control.sock"

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
	// Ramp is the progressive activation's account since this router
	// started (the active one, else the last); nil when none ran.
	// Production stays the one above until the ramp completes and the
	// activation switches.
	Ramp *RampStatus `json:"ramp,omitempty"`
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

// Takeback is the answer of Takeback: production's verification (the
// one record, production.Verification: health, identity, the READY
// completion; its JSON inline) and which process it is.
type Takeback struct {
	production.Verification
	// Production is the profile; PID its engine process.
	Production string `json:"production"`
	PID        int    `json:"pid,omitempty"`
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

// Verified returns the verification a Takeback call answered, with the
// call's error err folded in (not OK, the error as its reason when the
// answer gave none); a call that got no answer is one failed attempt.
func Verified(t *Takeback, err error) *production.Verification {
	v := &production.Verification{Attempts: 1}
	if t != nil {
		*v = t.Verification
		if v.Attempts == 0 {
			v.Attempts = 1
		}
	}
	if v.At == nil {
		now := time.Now().UTC()
		v.At = &now
	}
	if err != nil {
		v.OK = false
		if v.Error == "" {
			v.Error = err.Error()
		}
	}
	return v
}
