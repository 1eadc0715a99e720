package serve

import (
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// The router's promises, as rows of the watch's pure decision (step):
// each runs in microseconds, with no process; the real-process tests
// (behaviours_test.go, router_test.go) hold the same promises end to end.

var testPolicy = watchPolicy{Budget: 2, Window: time.Minute, Backoff: 100 * time.Millisecond, BackoffMax: time.Second}

func kinds(effs []effect) []effectKind {
	var ks []effectKind
	for _, e := range effs {
		ks = append(ks, e.Kind)
	}
	return ks
}

func has(effs []effect, k effectKind) bool {
	for _, e := range effs {
		if e.Kind == k {
			return true
		}
	}
	return false
}

func died() *failure.Failure {
	return &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseReady, RootCause: "exited"}
}

// One death is one failure: the exit that follows a failed check (the
// failure already recorded, a restart pending) is noted, not counted.
func TestWatchOneDeathIsOneFailure(t *testing.T) {
	now := time.Now()
	s := watchState{State: control.StateReady}
	s, effs := step(s, event{Kind: evFailure, What: "health", Failure: died(), Now: now}, testPolicy)
	if s.State != control.StateRestarting || !has(effs, effRecordFailure) || !has(effs, effScheduleRestart) {
		t.Fatalf("a failed check: %v %v", s.State, kinds(effs))
	}
	s2, effs := step(s, event{Kind: evExited, What: "death", Failure: died(), Now: now}, testPolicy)
	if has(effs, effRecordFailure) || has(effs, effScheduleRestart) || !has(effs, effNote) || s2.State != control.StateRestarting {
		t.Errorf("the exit after it: %v %v, want only the note", s2.State, kinds(effs))
	}
	// Down (budget spent) too: the late exit is not a failure.
	if _, effs := step(watchState{State: control.StateDown}, event{Kind: evExited, Failure: died(), Now: now}, testPolicy); len(effs) != 1 || effs[0].Kind != effNote {
		t.Errorf("an exit while down: %v", kinds(effs))
	}
	// A death while ready is the failure.
	if s, effs := step(watchState{State: control.StateReady}, event{Kind: evExited, Failure: died(), Now: now}, testPolicy); s.State != control.StateRestarting || !has(effs, effRecordFailure) {
		t.Errorf("a death while ready: %v %v", s.State, kinds(effs))
	}
}

// The restart budget holds: restarts within the window count; the one
// past the budget leaves production down and stopped; backoff doubles
// up to its maximum; restarts out of the window no longer count.
func TestWatchRestartBudgetHolds(t *testing.T) {
	now := time.Now()
	s := watchState{State: control.StateReady}
	var waits []time.Duration
	for i := 0; i < testPolicy.Budget; i++ {
		var effs []effect
		s, effs = step(s, event{Kind: evFailure, What: "health", Failure: died(), Now: now}, testPolicy)
		for _, e := range effs {
			if e.Kind == effScheduleRestart {
				waits = append(waits, e.Wait)
			}
		}
		s, effs = step(s, event{Kind: evRestartDue, Now: now}, testPolicy)
		if len(effs) != 1 || effs[0].Kind != effRestart || effs[0].N != i+1 {
			t.Fatalf("restart due %d: %v", i+1, effs)
		}
		s, effs = step(s, event{Kind: evRestarting, Now: now}, testPolicy)
		if s.Restarts != i+1 || len(s.Window) != i+1 || effs[0].Kind != effStart {
			t.Fatalf("restart %d: %+v %v", i+1, s, kinds(effs))
		}
		s.State = control.StateReady // the start made it ready
	}
	if len(waits) != 2 || waits[0] != 100*time.Millisecond || waits[1] != 200*time.Millisecond {
		t.Errorf("backoffs %v, want 100ms then 200ms", waits)
	}
	s, effs := step(s, event{Kind: evFailure, What: "health", Failure: died(), Now: now}, testPolicy)
	if s.State != control.StateDown || !has(effs, effBudgetSpent) || !has(effs, effStopOwn) || has(effs, effScheduleRestart) {
		t.Fatalf("past the budget: %v %v", s.State, kinds(effs))
	}
	// A restart due after that (a stale timer) does nothing.
	if _, effs := step(s, event{Kind: evRestartDue, Now: now}, testPolicy); len(effs) != 0 {
		t.Errorf("a restart due while down: %v", kinds(effs))
	}
	// Outside the window, old restarts no longer count.
	s.State = control.StateReady
	s, effs = step(s, event{Kind: evFailure, Failure: died(), Now: now.Add(2 * time.Minute)}, testPolicy)
	if s.State != control.StateRestarting || len(s.Window) != 0 {
		t.Errorf("after the window: %v window %v %v", s.State, s.Window, kinds(effs))
	}
	// The backoff never exceeds its maximum.
	_, effs = step(watchState{State: control.StateReady, Window: []time.Time{now}}, event{Kind: evFailure, Failure: died(), Now: now},
		watchPolicy{Budget: 10, Window: time.Minute, Backoff: time.Second, BackoffMax: 1500 * time.Millisecond})
	for _, e := range effs {
		if e.Kind == effScheduleRestart && e.Wait != 1500*time.Millisecond {
			t.Errorf("backoff %s, want the maximum 1.5s", e.Wait)
		}
	}
}

// A foreign record is never stopped: a failure seen while production's
// record names another process stops only the router's own and settles
// the record; only when nothing was settled is it a failure.
func TestWatchForeignRecordIsNeverStopped(t *testing.T) {
	now := time.Now()
	s := watchState{State: control.StateReady}
	e := event{Kind: evFailure, What: "health", Failure: died(), OtherRecord: true, OtherPID: 42, Now: now}
	s2, effs := step(s, e, testPolicy)
	want := []effectKind{effDiscard, effStopOwn, effSettle}
	if got := kinds(effs); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || s2.State != control.StateReady {
		t.Fatalf("a failure beside another record: %v %v, want %v", s2.State, got, want)
	}
	// Nothing settled (the other process is gone meanwhile): the
	// failure is handled as any other.
	e.Settled = true
	if s3, effs := step(s2, e, testPolicy); !has(effs, effRecordFailure) || s3.State != control.StateRestarting || has(effs, effSettle) {
		t.Errorf("after nothing settled: %v %v", s3.State, kinds(effs))
	}
	// Unmanaged: there is no record to settle; it is reported down.
	if s4, effs := step(watchState{State: control.StateReady, Unmanaged: true}, e, testPolicy); s4.State != control.StateDown || has(effs, effStopOwn) || has(effs, effScheduleRestart) {
		t.Errorf("unmanaged: %v %v", s4.State, kinds(effs))
	}
}

// A live holder of production's lease means a hand-over raced the
// check: no failure is recorded, production is held for the holder.
func TestWatchLeaseHolderIsAHandover(t *testing.T) {
	h := &control.HandoverInfo{Campaign: "camp", OwnerPID: 7, Source: "lease"}
	s, effs := step(watchState{State: control.StateReady}, event{Kind: evFailure, Failure: died(), Holder: h, Now: time.Now()}, testPolicy)
	if has(effs, effRecordFailure) || !has(effs, effHold) || s.Handover != h {
		t.Errorf("a failure while a campaign holds the lease: %+v %v", s, kinds(effs))
	}
}

// A dead campaign means take back: the owner of a hand-over through the
// control socket is gone, production is taken back at once and what the
// campaign left is recovered; an owner alive, a lease hand-over (watched
// through the lease) or no hand-over is left alone.
func TestWatchDeadCampaignMeansTakeBack(t *testing.T) {
	h := &control.HandoverInfo{Campaign: "camp", OwnerPID: 7, Source: "control"}
	lease := &control.HandoverInfo{Campaign: "camp", Source: "lease"}
	rows := []row{
		{"owner gone", watchState{State: control.StateHandedOver, Handover: h, Owner: 99}, event{Kind: evOwnerCheck, OwnerGone: true},
			[]effectKind{effOwnerDied, effTakeBack, effRecoverCampaign}, func(t *testing.T, s watchState, effs []effect) {
				if s.Handover != nil || s.Owner != 0 || effs[0].Holder != h || effs[1].Msg != "camp" || effs[2].Msg != "camp" {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"owner alive", watchState{State: control.StateHandedOver, Handover: h, Owner: 99}, event{Kind: evOwnerCheck}, nil, nil},
		{"a lease hand-over", watchState{State: control.StateHandedOver, Handover: lease}, event{Kind: evOwnerCheck, OwnerGone: true}, nil, nil},
		{"no hand-over", watchState{State: control.StateReady}, event{Kind: evOwnerCheck, OwnerGone: true}, nil, nil},
	}
	runRows(t, rows)
}

// row is one row of a table over step: from state s, event e gives the
// effects want, in order; check, when set, looks at the rest.
type row struct {
	name  string
	s     watchState
	e     event
	want  []effectKind
	check func(t *testing.T, s watchState, effs []effect)
}

func runRows(t *testing.T, rows []row) {
	t.Helper()
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s, effs := step(r.s, r.e, testPolicy)
			if got := kinds(effs); !sameKinds(got, r.want) {
				t.Fatalf("effects %v, want %v", got, r.want)
			}
			if r.check != nil {
				r.check(t, s, effs)
			}
		})
	}
}

func sameKinds(a, b []effectKind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func stateIs(want control.State) func(t *testing.T, s watchState, effs []effect) {
	return func(t *testing.T, s watchState, effs []effect) {
		if s.State != want {
			t.Errorf("state %s, want %s", s.State, want)
		}
	}
}

// Bring-up: a live holder of production's lease gets production (held,
// nothing started); an unmanaged production is only checked; a managed
// one is started under production's lease (a recorded one adopted). A
// lease that a live hiro took while the router decided is a hand-over:
// start_refused, what the router runs stopped, production held for it.
func TestWatchBringUp(t *testing.T) {
	camp := &control.HandoverInfo{Campaign: "camp", OwnerPID: 7, Source: "lease"}
	rows := []row{
		{"a lease holder", watchState{State: control.StateStarting}, event{Kind: evBringUp, Holder: camp}, []effectKind{effHold},
			func(t *testing.T, s watchState, effs []effect) {
				if s.Handover != camp || s.State != control.StateHandedOver || effs[0].Holder != camp {
					t.Errorf("%+v", s)
				}
			}},
		{"unmanaged", watchState{State: control.StateStarting, Unmanaged: true}, event{Kind: evBringUp}, []effectKind{effCheckUnmanaged}, nil},
		{"managed", watchState{State: control.StateStarting}, event{Kind: evBringUp}, []effectKind{effLeasedStart},
			func(t *testing.T, s watchState, effs []effect) {
				if effs[0].Msg != "start" || s.Handover != nil {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"the lease taken meanwhile", watchState{State: control.StateRestarting}, event{Kind: evLeaseHeld, What: "restart", Holder: camp},
			[]effectKind{effStartRefused, effStopOwn, effHold}, func(t *testing.T, s watchState, effs []effect) {
				if s.Handover != camp || s.State != control.StateHandedOver || effs[0].Msg != "restart" || effs[2].Holder != camp {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
	}
	runRows(t, rows)
}

// The health tick looks at what the state says is to be watched: a
// ready production's health; an unmanaged one that is down; the process
// of another configuration production was left to (the foreign-record
// recheck); the lease a lease hand-over waits on. Nothing else.
func TestWatchHealthTick(t *testing.T) {
	tick := event{Kind: evHealthTick, What: "tick"}
	rows := []row{
		{"ready", watchState{State: control.StateReady}, tick, []effectKind{effCheckHealth}, nil},
		{"down, unmanaged", watchState{State: control.StateDown, Unmanaged: true}, tick, []effectKind{effCheckUnmanaged}, nil},
		{"down, left to a foreign process", watchState{State: control.StateDown, Foreign: true}, tick, []effectKind{effCheckForeign}, nil},
		{"down, budget spent", watchState{State: control.StateDown}, tick, nil, nil},
		{"restarting", watchState{State: control.StateRestarting}, tick, nil, nil},
		{"starting", watchState{State: control.StateStarting}, tick, nil, nil},
		{"held through the lease", watchState{State: control.StateHandedOver, Handover: &control.HandoverInfo{Campaign: "c", Source: "lease"}}, tick, []effectKind{effCheckLease}, nil},
		{"handed over through the socket", watchState{State: control.StateHandedOver, Handover: &control.HandoverInfo{Campaign: "c", Source: "control"}}, tick, nil, nil},
	}
	runRows(t, rows)
}

// The foreign-record recheck: production left to another
// configuration's process is started again once that process is gone,
// under production's lease (or held for a live holder of it); while it
// runs, nothing is started over it (TestWatchHealthTick).
func TestWatchForeignRecheck(t *testing.T) {
	camp := &control.HandoverInfo{Campaign: "camp", OwnerPID: 7, Source: "lease"}
	rows := []row{
		{"gone", watchState{State: control.StateDown, Foreign: true}, event{Kind: evForeignGone, OtherPID: 42},
			[]effectKind{effForeignGone, effLeasedStart}, func(t *testing.T, s watchState, effs []effect) {
				if s.Foreign || effs[0].N != 42 {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"gone, the lease held", watchState{State: control.StateDown, Foreign: true}, event{Kind: evForeignGone, OtherPID: 42, Holder: camp},
			[]effectKind{effForeignGone, effHold}, func(t *testing.T, s watchState, effs []effect) {
				if s.Foreign || s.Handover != camp || s.State != control.StateHandedOver {
					t.Errorf("%+v", s)
				}
			}},
	}
	runRows(t, rows)
}

// A lease hand-over ends when the lease is released: production is
// started again under the lease.
func TestWatchLeaseReleased(t *testing.T) {
	camp := &control.HandoverInfo{Campaign: "camp", Source: "lease"}
	runRows(t, []row{
		{"released", watchState{State: control.StateHandedOver, Handover: camp}, event{Kind: evLeaseReleased},
			[]effectKind{effLeaseReleased, effLeasedStart}, func(t *testing.T, s watchState, effs []effect) {
				if s.Handover != nil || effs[0].Holder != camp {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"released, unmanaged", watchState{State: control.StateHandedOver, Handover: camp, Unmanaged: true}, event{Kind: evLeaseReleased},
			[]effectKind{effLeaseReleased, effCheckUnmanaged}, nil},
	})
}

// The canary: at most one in flight; none while a request succeeded
// within the interval (skipped, and said so) or production is not
// ready; an outcome about a production no longer served, or no longer
// ready, is dropped.
func TestWatchCanary(t *testing.T) {
	ready := watchState{State: control.StateReady}
	runRows(t, []row{
		{"due", ready, event{Kind: evCanaryTick}, []effectKind{effCanaryLaunch}, nil},
		{"one in flight", ready, event{Kind: evCanaryTick, CanaryInFlight: true}, nil, nil},
		{"served recently", ready, event{Kind: evCanaryTick, ServedRecently: true}, []effectKind{effCanarySkipped}, nil},
		{"not ready", watchState{State: control.StateRestarting}, event{Kind: evCanaryTick}, nil, nil},
		{"outcome", ready, event{Kind: evCanaryDone, Canary: &canaryOutcome{}}, []effectKind{effCanaryJudge}, nil},
		{"outcome, stale", ready, event{Kind: evCanaryDone, Canary: &canaryOutcome{}, Stale: true}, nil, nil},
		{"outcome, no longer ready", watchState{State: control.StateHandedOver}, event{Kind: evCanaryDone, Canary: &canaryOutcome{}}, nil, nil},
	})
}

// Hand-over through the control socket: production is drained, a
// pending restart dropped, a managed one stopped and held for the
// campaign (its owner's start time kept, to see it die). Refused when
// another campaign has it, or when hiro may not stop it (unmanaged).
func TestWatchHandoverCommand(t *testing.T) {
	now := time.Now()
	cmd := &command{Campaign: "camp", OwnerPID: 7, OwnerTicks: 1234, Drain: time.Second}
	other := &control.HandoverInfo{Campaign: "other", OwnerPID: 8, Source: "control"}
	runRows(t, []row{
		{"ready", watchState{Name: "prod", State: control.StateReady}, event{Kind: evHandover, Cmd: cmd, Now: now},
			[]effectKind{effDrain, effCancelRestart, effStopOwn, effState, effHandedOver}, func(t *testing.T, s watchState, effs []effect) {
				h := s.Handover
				if h == nil || h.Campaign != "camp" || h.OwnerPID != 7 || h.Source != "control" || !h.Since.Equal(now) || s.Owner != 1234 ||
					s.State != control.StateHandedOver || effs[0].Wait != time.Second || effs[3].State != control.StateHandedOver || effs[4].Holder != h {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"restarting", watchState{Name: "prod", State: control.StateRestarting}, event{Kind: evHandover, Cmd: cmd, Now: now},
			[]effectKind{effDrain, effCancelRestart, effStopOwn, effState, effHandedOver}, stateIs(control.StateHandedOver)},
		{"another campaign's", watchState{Name: "prod", State: control.StateHandedOver, Handover: other}, event{Kind: evHandover, Cmd: cmd},
			[]effectKind{effRefuse}, func(t *testing.T, s watchState, effs []effect) {
				if effs[0].Code != 409 || !strings.Contains(effs[0].Msg, "campaign other (hiro pid 8)") || s.Handover != other {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"unmanaged", watchState{Name: "prod", State: control.StateReady, Unmanaged: true}, event{Kind: evHandover, Cmd: cmd},
			[]effectKind{effRefuse}, func(t *testing.T, s watchState, effs []effect) {
				if effs[0].Code != 409 || !strings.Contains(effs[0].Msg, "production prod is unmanaged") || s.Handover != nil || s.State != control.StateReady {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
	})
}

// Take-back through the control socket: the campaign's hand-over ends and
// production is started and verified; one never handed over and ready is
// verified only; another campaign's hand-over is refused.
func TestWatchTakebackCommand(t *testing.T) {
	cmd := &command{Campaign: "camp"}
	mine := &control.HandoverInfo{Campaign: "camp", OwnerPID: 7, Source: "control"}
	runRows(t, []row{
		{"handed over", watchState{State: control.StateHandedOver, Handover: mine, Owner: 99}, event{Kind: evTakeback, Cmd: cmd},
			[]effectKind{effTakeBack}, func(t *testing.T, s watchState, effs []effect) {
				if s.Handover != nil || s.Owner != 0 || effs[0].Msg != "camp" {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"ready, never handed over", watchState{State: control.StateReady}, event{Kind: evTakeback, Cmd: cmd}, []effectKind{effVerify}, nil},
		{"down, not handed over", watchState{State: control.StateDown}, event{Kind: evTakeback, Cmd: cmd}, []effectKind{effTakeBack}, nil},
		{"another campaign's", watchState{State: control.StateHandedOver, Handover: &control.HandoverInfo{Campaign: "other"}}, event{Kind: evTakeback, Cmd: cmd},
			[]effectKind{effRefuse}, func(t *testing.T, s watchState, effs []effect) {
				if effs[0].Code != 409 || !strings.Contains(effs[0].Msg, "campaign other, not camp") || s.Handover == nil {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
	})
}

// Switch through the control socket: the profile switched to becomes
// production, ready, with its own restart window; a hand-over ends only
// when the command names its campaign. Refused while a campaign holds
// production, and for a managed profile that is not running as a
// recorded backend.
func TestWatchSwitchCommand(t *testing.T) {
	rec := &supervisor.Record{Name: "next", PID: 42}
	next := &config.Profile{Name: "next"}
	camp := &control.HandoverInfo{Campaign: "activate-1", OwnerPID: 7, Source: "control"}
	ready := watchState{Name: "prod", State: control.StateReady, Window: []time.Time{time.Now()}, Restarts: 1, Foreign: false}
	runRows(t, []row{
		{"recorded", ready, event{Kind: evSwitch, Cmd: &command{Prof: next, Record: rec}},
			[]effectKind{effSwitch, effState, effSwitched}, func(t *testing.T, s watchState, effs []effect) {
				if s.Name != "next" || s.State != control.StateReady || s.Window != nil || s.Restarts != 1 ||
					effs[1].Msg != "switched from prod" || effs[2].Msg != "prod" {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"not recorded", ready, event{Kind: evSwitch, Cmd: &command{Prof: next}}, []effectKind{effRefuse},
			func(t *testing.T, s watchState, effs []effect) {
				if effs[0].Code != 409 || !strings.Contains(effs[0].Msg, "backend next is not running as a recorded backend") || s.Name != "prod" {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"unmanaged, no record", ready, event{Kind: evSwitch, Cmd: &command{Prof: &config.Profile{Name: "ext", Unmanaged: true}}},
			[]effectKind{effSwitch, effState, effSwitched}, func(t *testing.T, s watchState, effs []effect) {
				if !s.Unmanaged || s.Name != "ext" {
					t.Errorf("%+v", s)
				}
			}},
		{"handed over, its campaign", watchState{Name: "prod", State: control.StateHandedOver, Handover: camp, Owner: 5},
			event{Kind: evSwitch, Cmd: &command{Campaign: "activate-1", Prof: next, Record: rec}},
			[]effectKind{effSwitch, effResume, effState, effSwitched}, func(t *testing.T, s watchState, effs []effect) {
				if s.Handover != nil || s.Owner != 0 || s.State != control.StateReady {
					t.Errorf("%+v", s)
				}
			}},
		{"handed over, no campaign", watchState{Name: "prod", State: control.StateHandedOver, Handover: camp},
			event{Kind: evSwitch, Cmd: &command{Prof: next, Record: rec}}, []effectKind{effRefuse}, func(t *testing.T, s watchState, effs []effect) {
				if s.Handover != camp || !strings.Contains(effs[0].Msg, "take it back first") {
					t.Errorf("%+v %+v", s, effs)
				}
			}},
		{"handed over, another campaign", watchState{Name: "prod", State: control.StateHandedOver, Handover: camp},
			event{Kind: evSwitch, Cmd: &command{Campaign: "activate-2", Prof: next, Record: rec}}, []effectKind{effRefuse}, nil},
	})
}

// TestBudgetSpentMessageAgrees: a budget of one restart reads "1 restart
// in", not "1 restarts in" (a new user's trial, T2).
func TestBudgetSpentMessageAgrees(t *testing.T) {
	now := time.Now()
	pol := watchPolicy{Budget: 1, Window: time.Minute, Backoff: 100 * time.Millisecond, BackoffMax: time.Second}
	s := watchState{State: control.StateReady, Window: []time.Time{now}}
	_, effs := step(s, event{Kind: evFailure, What: "health", Failure: died(), Now: now}, pol)
	var msg string
	for _, e := range effs {
		if e.Kind == effState {
			msg = e.Msg
		}
	}
	if !strings.Contains(msg, "restart budget spent (1 restart in 1m0s;") {
		t.Errorf("budget-spent message: %q", msg)
	}
}
