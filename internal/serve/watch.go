package serve

import (
	"fmt"
	"net/http"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// The production watch's decisions, as a pure function: a plain state
// value (watchState), the events the run goroutine receives (event), and
// step, which turns (state, event) into (state, effects) and does nothing
// itself. The run goroutine (prodCtl.run) only receives: the bring-up,
// ticks (health, canary, a hand-over's owner), a canary's outcome, an
// exit, a restart coming due and the control socket's commands
// (hand-over, take-back, switch). It senses the facts the decision needs
// (a live lease holder, a record another hiro wrote), applies step, and
// performs the effects through the keeper (prodCtl.perform); an effect
// that learns something (a health check's failure, a foreign process
// gone, a lease released or refused) feeds the next event back. The
// promises the router makes are step's rows, each held by a table test
// in watch_test.go:
//
//   - one death is one failure: an exit after its failure was recorded
//     (restarting or down) is noted, not counted again;
//   - the restart budget holds: at most restart_budget restarts within
//     restart_window, then production stays down;
//   - a foreign record is never stopped: a check that raced another
//     hiro's replacement stops only the router's own process and settles
//     the record (adopt, or leave it to the other configuration);
//   - a live holder of production's lease means hand-over, not failure;
//   - a dead campaign means take back: a hand-over whose owner died is
//     taken back at once;
//   - bring-up holds production for a live lease holder, checks an
//     unmanaged one, and otherwise starts it under production's lease; a
//     lease taken meanwhile is a hand-over (start_refused);
//   - a production left to another configuration's process is started
//     again only once that process is gone (the foreign-record recheck);
//   - a control command is refused, naming why, when production is
//     another campaign's, unmanaged (hand-over) or not recorded (switch).
//
// Two backends later (a progressive ramp, issue 27): the watch is one
// watchState per backend, keyed by profile name, and step stays per
// backend; the ramp's weights are a separate value beside them, and an
// event names the backend it is about (event.Backend, "" the production).

// watchState is what the watch decides from: a plain value, copied in
// and out of step.
type watchState struct {
	// Name is production's profile name (for messages).
	Name string
	// State is production's state; Unmanaged true when hiro may not start
	// or stop it.
	State     control.State
	Unmanaged bool
	// Handover is the campaign holding production, nil when none; Owner
	// is the start time (clock ticks, procfs.StartTicks) of the hiro a
	// control hand-over was made to.
	Handover *control.HandoverInfo
	Owner    uint64
	// Foreign is true while production is left to a running process of
	// another configuration that its record names (leaveToForeign).
	Foreign bool
	// Window holds the times of the restarts within the restart window;
	// Restarts counts every restart since the router started.
	Window   []time.Time
	Restarts int
}

// watchPolicy is the restart policy ([serve]).
type watchPolicy struct {
	// Budget restarts at most within Window; the n-th restart waits
	// Backoff << n, at most BackoffMax.
	Budget              int
	Window              time.Duration
	Backoff, BackoffMax time.Duration
}

// eventKind names what happened.
type eventKind int

const (
	// evFailure: a health check, canary, verification or start failed
	// (What says which; Failure the classified failure).
	evFailure eventKind = iota
	// evExited: the process the router started exited and was reaped
	// (Failure: its classification; ExitPID, Exit: the process).
	evExited
	// evRestartDue: the backoff of a scheduled restart ended.
	evRestartDue
	// evRestarting: the restart found nothing recorded to adopt: it is
	// counted and production started.
	evRestarting
	// evOwnerCheck: the owner of a control hand-over was looked at
	// (OwnerGone: it is gone, or its pid is another process now).
	evOwnerCheck
	// evBringUp: the router starts watching (Holder sensed).
	evBringUp
	// evLeaseHeld: a start of the router's (What) found production's
	// lease held by Holder, a live hiro.
	evLeaseHeld
	// evLeaseReleased: the lease a lease hand-over waited on is free.
	evLeaseReleased
	// evForeignGone: the process of another configuration production
	// was left to is gone (OtherPID; Holder sensed).
	evForeignGone
	// evHealthTick: the health interval ended, or a request poked the
	// watch (What: "tick", "poke").
	evHealthTick
	// evCanaryTick: the canary interval ended (CanaryInFlight,
	// ServedRecently sensed).
	evCanaryTick
	// evCanaryDone: a canary's outcome came back (Canary; Stale when it
	// probed a production that is no longer the one served).
	evCanaryDone
	// evHandover, evTakeback, evSwitch: the control socket's commands
	// (Cmd: the request, and where the answer goes).
	evHandover
	evTakeback
	evSwitch
)

// event is one thing the watch learned, with the facts sensed with it.
type event struct {
	Kind    eventKind
	What    string
	Failure *failure.Failure
	// Holder is the live hiro holding production's endpoint lease when
	// the event came (nil: none, or an unmanaged production).
	Holder *control.HandoverInfo
	// OtherRecord is true when production's record names a running
	// process this router neither started nor adopted (another hiro
	// sharing state_dir replaced it); Settled is true when that record
	// was acted on already (adopted, or left to it).
	OtherRecord, Settled bool
	// OtherPID is the pid that other record names.
	OtherPID int
	// ExitPID and Exit are the process that exited and how (evExited).
	ExitPID int
	Exit    string
	// OwnerGone: a control hand-over's owner is gone (evOwnerCheck).
	OwnerGone bool
	// CanaryInFlight and ServedRecently (evCanaryTick): a canary is
	// still out; a proxied request succeeded within the canary interval.
	CanaryInFlight, ServedRecently bool
	// Canary and Stale (evCanaryDone): the outcome, and whether it is
	// about a production no longer served (another generation or route,
	// or its context ended).
	Canary *canaryOutcome
	Stale  bool
	// Cmd is a control command (evHandover, evTakeback, evSwitch).
	Cmd *command
	// Now is when it happened.
	Now time.Time
}

// command is a control command on its way to the run goroutine: the
// request (read by step) and the answer (written by the effects).
type command struct {
	// Campaign is the campaign asking (hand-over, take-back) or ending
	// its hand-over (switch; "" none).
	Campaign string
	// OwnerPID and OwnerTicks: the hiro a hand-over is made to, and its
	// start time; Drain bounds the wait for requests in flight.
	OwnerPID   int
	OwnerTicks uint64
	Drain      time.Duration
	// Switch: the profile switched to (Prof, its Route), whether it is
	// unmanaged, and its running record (nil: none, or unmanaged).
	Prof   *config.Profile
	Route  *route
	Record *supervisor.Record

	// The answer: an HTTP status and error when refused, else the result.
	code     int
	err      error
	handover *control.HandoverResult
	takeback *control.Takeback
	switched *control.SwitchResult
	prev     *route // the route served before a switch
	done     chan struct{}
}

// effectKind names what the router is to do.
type effectKind int

const (
	// effDiscard: what the check saw is not a failure of production
	// (event check_discarded, Msg why).
	effDiscard effectKind = iota
	// effStopOwn: stop the process the router started or adopted, never
	// whatever the record names now.
	effStopOwn
	// effHold: production is held for Holder (handed over).
	effHold
	// effSettle: act on production's record before anything else
	// (adopt it, or leave production to another configuration); when
	// nothing was settled, the event comes back with Settled.
	effSettle
	// effRecordFailure: record Failure as production's last failure.
	effRecordFailure
	// effState: set the state (State, Msg).
	effState
	// effBudgetSpent: the restart budget is spent (event, N restarts).
	effBudgetSpent
	// effScheduleRestart: a restart is due after Wait.
	effScheduleRestart
	// effNote: an exit after its failure was recorded (event
	// engine_exited), not a second failure.
	effNote
	// effRestart: the restart is due: stop what is left, settle the
	// record, and if nothing was adopted, evRestarting.
	effRestart
	// effStart: count restart N and start production.
	effStart
	// effTakeBack: take production back from campaign Msg (start,
	// verify, resume serving); a command gets the verification.
	effTakeBack
	// effOwnerDied: event lease_owner_died (Holder).
	effOwnerDied
	// effRecoverCampaign: settle what campaign Msg left behind (its
	// candidate, its leases), beside the watch.
	effRecoverCampaign
	// effLeasedStart: under production's lease, settle the record and
	// start production when nothing was (Msg: the step, "start"); a
	// lease held by a live hiro comes back as evLeaseHeld.
	effLeasedStart
	// effStartRefused: event start_refused (Holder, Msg the step).
	effStartRefused
	// effCheckHealth: the health check of a ready production; a failure
	// comes back as evFailure or evExited.
	effCheckHealth
	// effCheckUnmanaged: check an unmanaged production with the rules
	// of readiness (ready, or down).
	effCheckUnmanaged
	// effCheckForeign: look again at the process production was left
	// to; once it is gone, evForeignGone.
	effCheckForeign
	// effForeignGone: forget it (event foreign_gone, N its pid).
	effForeignGone
	// effCheckLease: look at the lease a lease hand-over waits on; once
	// it is free, evLeaseReleased.
	effCheckLease
	// effLeaseReleased: event lease_released (Holder).
	effLeaseReleased
	// effCanarySkipped: a canary not made (Msg why).
	effCanarySkipped
	// effCanaryLaunch: send the canary completion, beside the watch.
	effCanaryLaunch
	// effCanaryJudge: record the canary's outcome; a failure comes back
	// as evFailure or evExited.
	effCanaryJudge
	// effRefuse: answer the command with Code and Msg; nothing changes.
	effRefuse
	// effDrain: refuse new requests and wait up to Wait for those in
	// flight (the hand-over's answer starts with it).
	effDrain
	// effCancelRestart: drop a pending restart.
	effCancelRestart
	// effHandedOver: event handover (Holder); the command's answer.
	effHandedOver
	// effVerify: verify the running production (take-back of a
	// production that was never handed over).
	effVerify
	// effSwitch: serve the command's profile from now on (its record
	// adopted, the previous process detached, its failures forgotten).
	effSwitch
	// effResume: stop refusing requests (a hand-over ended).
	effResume
	// effSwitched: event switch (Msg the previous production).
	effSwitched
)

// effect is one thing to do.
type effect struct {
	Kind    effectKind
	State   control.State
	Msg     string
	Wait    time.Duration
	N       int
	Code    int
	Holder  *control.HandoverInfo
	Failure *failure.Failure
}

// step is the watch's decision for event e in state s under policy pol:
// the new state and what to do, in order. It does nothing itself.
func step(s watchState, e event, pol watchPolicy) (watchState, []effect) {
	switch e.Kind {
	case evExited:
		if s.State == control.StateRestarting || s.State == control.StateDown {
			// One death is one failure: this exit comes after the
			// failure that the check saw was recorded.
			return s, []effect{{Kind: effNote}}
		}
		return failed(s, e, pol)
	case evFailure:
		return failed(s, e, pol)
	case evRestartDue:
		if s.State != control.StateRestarting {
			return s, nil
		}
		return s, []effect{{Kind: effRestart, N: len(s.Window) + 1}}
	case evRestarting:
		s.Window = append(append([]time.Time(nil), s.Window...), e.Now)
		s.Restarts++
		return s, []effect{{Kind: effStart, N: s.Restarts}}
	case evOwnerCheck:
		if !e.OwnerGone || s.Handover == nil || s.Handover.Source != "control" {
			return s, nil
		}
		h := s.Handover
		s.Handover, s.Owner = nil, 0
		return s, []effect{{Kind: effOwnerDied, Holder: h}, {Kind: effTakeBack, Msg: h.Campaign}, {Kind: effRecoverCampaign, Msg: h.Campaign}}
	case evBringUp:
		return bringUp(s, e)
	case evLeaseHeld:
		// A live hiro took production's lease while the router decided
		// to start it: what the router runs (dead or failed) is still
		// its own to stop; production is that hiro's now.
		s.Handover, s.State = e.Holder, control.StateHandedOver
		return s, []effect{{Kind: effStartRefused, Holder: e.Holder, Msg: e.What}, {Kind: effStopOwn}, {Kind: effHold, Holder: e.Holder}}
	case evLeaseReleased:
		h := s.Handover
		s.Handover = nil
		s, effs := bringUp(s, e)
		return s, append([]effect{{Kind: effLeaseReleased, Holder: h}}, effs...)
	case evForeignGone:
		s.Foreign = false
		s, effs := bringUp(s, e)
		return s, append([]effect{{Kind: effForeignGone, N: e.OtherPID}}, effs...)
	case evHealthTick:
		return s, healthTick(s)
	case evCanaryTick:
		switch {
		case e.CanaryInFlight || s.State != control.StateReady:
			return s, nil
		case e.ServedRecently:
			return s, []effect{{Kind: effCanarySkipped, Msg: "a request succeeded within the canary interval"}}
		}
		return s, []effect{{Kind: effCanaryLaunch}}
	case evCanaryDone:
		if e.Stale || s.State != control.StateReady {
			// It probed what production was: dropped.
			return s, nil
		}
		return s, []effect{{Kind: effCanaryJudge}}
	case evHandover:
		return handOver(s, e)
	case evTakeback:
		return takeBack(s, e)
	case evSwitch:
		return switchTo(s, e)
	}
	return s, nil
}

// healthTick is what the health tick looks at, by state: a ready
// production's health; an unmanaged one that is down, until it answers;
// the process of another configuration production was left to, until it
// is gone; the lease a lease hand-over waits on, until it is free.
func healthTick(s watchState) []effect {
	switch s.State {
	case control.StateReady:
		return []effect{{Kind: effCheckHealth}}
	case control.StateDown:
		if s.Unmanaged {
			return []effect{{Kind: effCheckUnmanaged}}
		}
		if s.Foreign {
			return []effect{{Kind: effCheckForeign}}
		}
	case control.StateHandedOver:
		if s.Handover != nil && s.Handover.Source == "lease" {
			return []effect{{Kind: effCheckLease}}
		}
	}
	return nil
}

// bringUp brings production up: held for a live holder of its lease,
// checked when unmanaged, else started (or a recorded one adopted) under
// production's lease.
func bringUp(s watchState, e event) (watchState, []effect) {
	switch {
	case e.Holder != nil:
		s.Handover, s.State = e.Holder, control.StateHandedOver
		return s, []effect{{Kind: effHold, Holder: e.Holder}}
	case s.Unmanaged:
		return s, []effect{{Kind: effCheckUnmanaged}}
	}
	return s, []effect{{Kind: effLeasedStart, Msg: "start"}}
}

// refuse answers a command with code and msg and changes nothing.
func refuse(s watchState, code int, msg string) (watchState, []effect) {
	return s, []effect{{Kind: effRefuse, Code: code, Msg: msg}}
}

// handOver hands production over to the command's campaign: requests
// drained, a pending restart dropped, a managed production stopped, and
// held until take-back (or its owner's death). Refused when another
// campaign has it or hiro may not stop it (unmanaged).
func handOver(s watchState, e event) (watchState, []effect) {
	c := e.Cmd
	if h := s.Handover; h != nil && h.Campaign != c.Campaign {
		return refuse(s, http.StatusConflict, fmt.Sprintf("production is already handed over to campaign %s (hiro pid %d)", h.Campaign, h.OwnerPID))
	}
	if s.Unmanaged {
		return refuse(s, http.StatusConflict, fmt.Sprintf("production %s is unmanaged: hiro cannot stop it for a campaign", s.Name))
	}
	h := &control.HandoverInfo{Campaign: c.Campaign, OwnerPID: c.OwnerPID, Since: e.Now, Source: "control"}
	s.Handover, s.Owner, s.State = h, c.OwnerTicks, control.StateHandedOver
	return s, []effect{{Kind: effDrain, Wait: c.Drain}, {Kind: effCancelRestart}, {Kind: effStopOwn},
		{Kind: effState, State: control.StateHandedOver, Msg: fmt.Sprintf("handed over to campaign %s (hiro pid %d)", c.Campaign, c.OwnerPID)},
		{Kind: effHandedOver, Holder: h}}
}

// takeBack ends the command's campaign's hand-over: production is
// started, verified and served again. A production never handed over and
// ready is verified only; another campaign's hand-over is refused.
func takeBack(s watchState, e event) (watchState, []effect) {
	c := e.Cmd
	if h := s.Handover; h != nil && h.Campaign != c.Campaign {
		return refuse(s, http.StatusConflict, fmt.Sprintf("production is handed over to campaign %s, not %s", h.Campaign, c.Campaign))
	}
	if s.Handover == nil && s.State == control.StateReady {
		return s, []effect{{Kind: effVerify}}
	}
	s.Handover, s.Owner = nil, 0
	return s, []effect{{Kind: effTakeBack, Msg: c.Campaign}}
}

// switchTo makes the command's profile production, ready (the caller
// started and verified it); the campaign it is handed over to, when the
// command names it, ends that hand-over. Refused while another campaign
// holds production, and for a managed profile that is not running as a
// recorded backend.
func switchTo(s watchState, e event) (watchState, []effect) {
	c := e.Cmd
	end := false
	if s.State == control.StateHandedOver {
		if c.Campaign == "" || s.Handover == nil || s.Handover.Campaign != c.Campaign {
			return refuse(s, http.StatusConflict, "production is handed over to a campaign; take it back first")
		}
		end = true
	}
	if !c.Prof.Unmanaged && c.Record == nil {
		return refuse(s, http.StatusConflict, fmt.Sprintf("backend %s is not running as a recorded backend (start it with `hiro backend start %s` or through activation first)",
			c.Prof.Name, shellquote.Quote(c.Prof.Name)))
	}
	prev := s.Name
	// A new production: its own restarts within the window, "ready since"
	// the switch.
	s.Name, s.Unmanaged, s.Window, s.Foreign, s.State = c.Prof.Name, c.Prof.Unmanaged, nil, false, control.StateReady
	effs := []effect{{Kind: effSwitch}}
	if end {
		s.Handover, s.Owner = nil, 0
		effs = append(effs, effect{Kind: effResume})
	}
	return s, append(effs, effect{Kind: effState, State: control.StateReady, Msg: "switched from " + prev}, effect{Kind: effSwitched, Msg: prev})
}

// failed decides on a failure: a hand-over (a live lease holder) or a
// replaced record is no failure of production; otherwise it is recorded
// and production is reported (unmanaged), left down (budget spent) or
// restarted after a backoff.
func failed(s watchState, e event, pol watchPolicy) (watchState, []effect) {
	var effs []effect
	f := e.Failure
	if !s.Unmanaged && e.Holder != nil {
		// Another hiro holds production's endpoint (a campaign or a
		// switch took production over and stopped it): what the check
		// saw is the hand-over, not a failure of production.
		s.Handover = e.Holder
		return s, append(effs,
			effect{Kind: effDiscard, Msg: "production's endpoint is held by another hiro: the check raced its hand-over", Holder: e.Holder, Failure: f},
			effect{Kind: effStopOwn}, effect{Kind: effHold, Holder: e.Holder})
	}
	if !s.Unmanaged && e.OtherRecord && !e.Settled {
		// Another hiro sharing state_dir replaced production: what the
		// check saw is not a failure of the process this router runs,
		// and the one now recorded is not its own to stop.
		return s, append(effs,
			effect{Kind: effDiscard, Msg: "production's record names a process this router did not start or adopt", Failure: f},
			effect{Kind: effStopOwn}, effect{Kind: effSettle})
	}
	effs = append(effs, effect{Kind: effRecordFailure, Failure: f})
	if s.Unmanaged {
		s.State = control.StateDown
		return s, append(effs, effect{Kind: effState, State: control.StateDown,
			Msg: fmt.Sprintf("unmanaged: %s; not restarted by hiro, watched until it answers ready", f.Error())})
	}
	var keep []time.Time
	for _, t := range s.Window {
		if e.Now.Sub(t) < pol.Window {
			keep = append(keep, t)
		}
	}
	s.Window = keep
	n := len(s.Window)
	if n >= pol.Budget {
		s.State = control.StateDown
		return s, append(effs, effect{Kind: effStopOwn},
			effect{Kind: effState, State: control.StateDown, Msg: fmt.Sprintf("restart budget spent (%s in %s; restart_budget = %d); production stays down: last failure %s; fix it and restart hiro serve",
				termtext.Plural(n, "restart", "restarts"), pol.Window, pol.Budget, f.Error())},
			effect{Kind: effBudgetSpent, N: n})
	}
	wait := pol.Backoff << n
	if wait > pol.BackoffMax || wait <= 0 {
		wait = pol.BackoffMax
	}
	s.State = control.StateRestarting
	// Due time first: the gate never pairs "restarting" with an earlier
	// restart's due time.
	return s, append(effs, effect{Kind: effScheduleRestart, Wait: wait},
		effect{Kind: effState, State: control.StateRestarting, Msg: fmt.Sprintf("%s; restart %d of %d in %s", f.Error(), n+1, pol.Budget, wait)})
}
