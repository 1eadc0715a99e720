package serve

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

func (p *prodCtl) setHealth(ok bool, msg string) {
	p.mu.Lock()
	p.lastHealth = &control.Check{At: time.Now(), OK: ok, Error: msg}
	p.mu.Unlock()
}

// checkHealth checks a ready production (the watch's effCheckHealth): an
// adopted process no longer recorded, or a failed health check, comes
// back as the event to decide on (evFailure, or evExited when the
// process died meanwhile); a healthy one as nothing.
func (p *prodCtl) checkHealth(ctx context.Context) (event, bool) {
	prof := p.prof()
	if p.adopted != nil {
		if st, err := supervisor.Status(p.stateDir(), prof.Name); err != nil || st.Status != supervisor.StatusRunning || st.PID != p.adopted.PID {
			rec := p.adopted
			if err == nil && st.Status == supervisor.StatusRunning {
				// Another process is recorded under production's name:
				// replaced, not dead (failed says so). The adopted one,
				// if still alive, is no longer recorded: stopAny stops it.
				return p.sense(evFailure, adoptedDeath(p.stateDir(), rec), "health"), true
			}
			// What outlived the dead leader (an engine's runner, holding
			// the port and VRAM) is stopped before the restart.
			if sr := p.stopAny(ctx); sr != nil && sr.Leftovers > 0 {
				p.s.event("leftovers_stopped", map[string]any{"backend": p.name(), "pid": rec.PID, "stop": sr})
			}
			return p.sense(evFailure, adoptedDeath(p.stateDir(), rec), "death"), true
		}
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, supervisor.DefaultHealthRequestTimeout)
	h := p.current().eng.CheckHealth(hctx, p.current().hc, prof.BaseURL, prof.Model)
	cancel()
	if ctx.Err() != nil {
		return event{}, false
	}
	if h.State == engine.HealthReady {
		p.mu.Lock()
		p.lastHealth = &control.Check{At: start, OK: true, DurationMS: msSince(start)}
		p.mu.Unlock()
		return event{}, false
	}
	p.mu.Lock()
	p.lastHealth = &control.Check{At: start, OK: false, DurationMS: msSince(start), Error: h.Message}
	p.mu.Unlock()
	if p.exitedMeanwhile() {
		return p.died(ctx, "health: "+h.Message), true
	}
	f := p.tracker().Classify(engine.Outcome{Kind: engine.OutcomeHealthFailed, Health: &h, Message: h.Message, Elapsed: time.Since(p.since)})
	servingPhase(f)
	if !prof.Unmanaged {
		processFacts(f, int(p.pid.Load()), noAnswer(h))
	}
	return p.sense(evFailure, f, "health"), true
}

// tracker returns the log tracker of the running engine (an empty one
// when the router did not start it).
func (p *prodCtl) tracker() *engine.Tracker {
	if p.proc != nil {
		return p.proc.Tracker()
	}
	return p.current().eng.NewTracker()
}

// notStartedHere is why the router cannot know how an adopted process
// ended: it did not start it, so the process is not its child.
const notStartedHere = "this router did not start it (another hiro did, such as 'hiro activate' or 'hiro rollback'), so it cannot know whether it exited or was killed"

// adoptedDeath classifies the death of a process another hiro started,
// from its log file; its exit status is unknown, and says why
// (notStartedHere), unless another hiro left a note that it stopped it
// (stoppedByAnother).
func adoptedDeath(stateDir string, rec *supervisor.Record) *failure.Failure {
	var f *failure.Failure
	exit := engine.ExitInfo{Unknown: notStartedHere}
	if lf, err := os.Open(rec.LogPath); err == nil {
		f, _ = engine.Diagnose(lf, rec.Engine, exit)
		lf.Close()
	}
	if f == nil {
		f = &failure.Failure{Class: failure.ClassEngineDied, RootCause: fmt.Sprintf("pid %d %s", rec.PID, exit)}
	}
	stoppedByAnother(f, stateDir, rec.Name, rec.PID, rec.StartedAt)
	if f.SecondsSinceStart <= 0 && !rec.StartedAt.IsZero() {
		// The log alone does not say how long the process ran; its record does.
		f.SecondsSinceStart = time.Since(rec.StartedAt).Seconds()
	}
	servingPhase(f)
	return f
}

// checkUnmanaged checks an unmanaged production with the rules of
// readiness; it becomes ready or stays down.
func (p *prodCtl) checkUnmanaged(ctx context.Context) {
	rr := supervisor.CheckReady(ctx, p.prof(), p.current().hc)
	p.setHealth(rr.Health.State == engine.HealthReady, rr.Health.Message)
	if rr.OK {
		p.setState(control.StateReady, "unmanaged: answers ready")
		return
	}
	if p.state() != control.StateDown && rr.Failure != nil {
		p.recordFailure(rr.Failure, "check")
	}
	msg := "unmanaged: not ready"
	if rr.Failure != nil {
		msg = "unmanaged: " + rr.Failure.Error()
	}
	p.setState(control.StateDown, msg+"; not restarted by hiro, watched until it answers ready")
}
