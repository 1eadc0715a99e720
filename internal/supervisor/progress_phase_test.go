package supervisor

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// The failed start's last progress report carries the verdict's phase:
// one phase for one failure. The fake engine logs no phase marker, so the
// log's last phase is launch while the identity check fails in
// ready_wait; the "failed" line used to say launch.
func TestFailedProgressSaysTheVerdictsPhase(t *testing.T) {
	port := freePort(t)
	p, state := fakeProfile(t, "llamacpp", port, []string{"--port", strconv.Itoa(port), "--model", "other-model"}, "")
	var mu sync.Mutex
	var reports []Progress
	proc, res := Start(context.Background(), p, Options{StateDir: state, Progress: func(pr Progress) {
		mu.Lock()
		reports = append(reports, pr)
		mu.Unlock()
	}})
	if proc != nil {
		t.Cleanup(func() { proc.Stop(context.Background()) })
	}
	if res.State != StateFailed || res.Failure.Phase != failure.PhaseReadyWait {
		t.Fatalf("state %s failure %+v, want a ready_wait failure", res.State, res.Failure)
	}
	mu.Lock()
	defer mu.Unlock()
	last := reports[len(reports)-1]
	if last.Step != "failed" || last.Phase != res.Failure.Phase {
		t.Errorf("last progress %+v, want step failed in phase %s (the verdict's)", last, res.Failure.Phase)
	}
}
