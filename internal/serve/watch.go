package serve

import (
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
)

// The production watch's decisions, as a pure function: a plain state
// value (watchState), the events the run goroutine receives (event), and
// step, which turns (state, event) into (state, effects) and does nothing
// itself. prodCtl senses (health checks, canaries, records, leases),
// turns what it saw into an event, applies step, and performs the effects
// through the keeper (prodCtl.perform). The promises the router makes are
// step's rows, each held by a table test in watch_test.go:
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
//     taken back at once.
//
// Two backends later (a progressive ramp, issue 27): the watch is one
// watchState per backend, keyed by profile name, and step stays per
// backend; the ramp's weights are a separate value beside them, and an
// event names the backend it is about (event.Backend, "" the production).

// watchState is what the watch decides from: a plain value, copied in
// and out of step.
type watchState struct {
	// State is production's state; Unmanaged true when hiro may not start
	// or stop it.
	State     control.State
	Unmanaged bool
	// Handover is the campaign holding production, nil when none.
	Handover *control.HandoverInfo
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
	// (Failure: its classification).
	evExited
	// evRestartDue: the backoff of a scheduled restart ended.
	evRestartDue
	// evRestarting: the restart found nothing recorded to adopt: it is
	// counted and production started.
	evRestarting
	// evOwnerGone: the hiro production was handed over to is gone.
	evOwnerGone
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
	// Now is when it happened.
	Now time.Time
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
	// effTakeBack: take production back from the campaign (start,
	// verify, resume serving).
	effTakeBack
)

// effect is one thing to do.
type effect struct {
	Kind    effectKind
	State   control.State
	Msg     string
	Wait    time.Duration
	N       int
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
	case evOwnerGone:
		if s.Handover == nil || s.Handover.Source != "control" {
			return s, nil
		}
		h := s.Handover
		s.Handover = nil
		return s, []effect{{Kind: effTakeBack, Holder: h}}
	}
	return s, nil
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
			effect{Kind: effState, State: control.StateDown, Msg: fmt.Sprintf("restart budget spent (%d restarts in %s; restart_budget = %d); production stays down: last failure %s; fix it and restart hiro serve",
				n, pol.Window, pol.Budget, f.Error())},
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
