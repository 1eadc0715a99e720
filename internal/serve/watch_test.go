package serve

import (
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
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
// control socket is gone, production is taken back at once; a lease
// hand-over (watched through the lease) is not taken back here.
func TestWatchDeadCampaignMeansTakeBack(t *testing.T) {
	h := &control.HandoverInfo{Campaign: "camp", OwnerPID: 7, Source: "control"}
	s, effs := step(watchState{State: control.StateHandedOver, Handover: h}, event{Kind: evOwnerGone, Now: time.Now()}, testPolicy)
	if len(effs) != 1 || effs[0].Kind != effTakeBack || effs[0].Holder != h || s.Handover != nil {
		t.Errorf("owner gone: %+v %v", s, kinds(effs))
	}
	lease := &control.HandoverInfo{Campaign: "camp", Source: "lease"}
	if _, effs := step(watchState{State: control.StateHandedOver, Handover: lease}, event{Kind: evOwnerGone}, testPolicy); len(effs) != 0 {
		t.Errorf("a lease hand-over's owner gone: %v", kinds(effs))
	}
	if _, effs := step(watchState{State: control.StateReady}, event{Kind: evOwnerGone}, testPolicy); len(effs) != 0 {
		t.Errorf("no hand-over: %v", kinds(effs))
	}
}
