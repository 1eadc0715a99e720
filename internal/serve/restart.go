package serve

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// start launches production through the supervisor and waits for ready.
func (p *prodCtl) start(ctx context.Context, why string) *supervisor.Result {
	prof := p.prof()
	p.setState(control.StateStarting, why)
	sctx := ctx
	if p.finish != nil {
		// Not cut by the router's stop: with on_exit = "leave" a start
		// in progress may end within drain_timeout (Run cancels finish
		// then).
		sctx = p.finish
	}
	proc, res := p.keeper().Start(sctx, prof, p.supOpts())
	if res.State != supervisor.StateReady {
		p.pid.Store(0)
	}
	if sctx.Err() != nil && proc == nil {
		reason := "hiro serve stopped while production was starting (on_exit = \"stop\")"
		if p.finish != nil {
			reason = fmt.Sprintf("hiro serve stopped while production was starting, and the start did not end within drain_timeout (%s)", p.sc.DrainTimeout.Duration)
		}
		p.s.event("start_abandoned", map[string]any{"backend": prof.Name, "what": why, "reason": reason + "; production is down until hiro serve runs again"})
		p.setState(control.StateStopped, "start abandoned: "+reason)
		return res
	}
	if res.State == supervisor.StateReady {
		p.proc, p.adopted = proc, nil
		p.pid.Store(int64(res.PID))
		p.setHealth(true, "")
		p.setState(control.StateReady, fmt.Sprintf("started pid %d, ready after %s", res.PID, res.ReadyAfter.Round(time.Millisecond)))
		p.s.event("ready", map[string]any{"backend": prof.Name, "pid": res.PID, "ready_after_ms": res.ReadyAfterMS})
		return res
	}
	f := res.Failure
	if f == nil {
		f = &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseLaunch, RootCause: res.Error}
		if res.State == supervisor.StateError {
			// A configuration problem does not go away by retrying.
			p.recordFailure(f, "start")
			p.setState(control.StateDown, "cannot start: "+res.Error)
			return res
		}
	}
	p.failed(ctx, f, "start")
	return res
}

// died reaps the process this router started, which exited, and returns
// its death for the watch to decide on (evExited). symptom, when not
// empty, is what a check saw of the same death before the exit was known
// (a refused connection): kept as the failure's detail, not recorded as
// a failure of its own. An exit after a failure of that process was
// already recorded (a hung engine that ends during the restart's
// backoff) is the same failure: step notes it (engine_exited), and no
// second failure is recorded or restart scheduled.
func (p *prodCtl) died(ctx context.Context, symptom string) event {
	proc := p.proc
	p.proc = nil
	t := proc.Tracker()
	f := t.Classify(engine.Outcome{Kind: engine.OutcomeExited, Exit: proc.ExitInfo(), Elapsed: time.Since(p.since)})
	servingPhase(f)
	stoppedByAnother(f, p.stateDir(), p.name(), proc.PID(), proc.StartedAt())
	proc.Stop(ctx) // reaps the group, removes the record (when still its own)
	p.pid.Store(0)
	if symptom != "" {
		if f.Detail == nil {
			f.Detail = map[string]any{}
		}
		f.Detail["seen_first"] = symptom
	}
	e := p.sense(evExited, f, "death")
	e.ExitPID, e.Exit = proc.PID(), proc.ExitInfo().String()
	return e
}

// exitedMeanwhile reports whether the process this router started is
// dead (gone or a zombie) after a check of it failed, waiting up to 2 s
// for its exit to be reaped; died is then the one account of the death.
func (p *prodCtl) exitedMeanwhile() bool {
	if p.proc == nil {
		return false
	}
	if _, alive := procfs.ProcessState(p.proc.PID()); alive {
		return false
	}
	select {
	case <-p.proc.Exited():
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// noAnswer reports whether a health check got no answer in time (not a
// refused connection, not an error status).
func noAnswer(h engine.HealthResult) bool {
	return h.State != engine.HealthReady && h.StatusCode == 0 && h.Err != nil && isTimeout(h.Err)
}

// hungNextStep is the next step of a serving check that got no answer
// from an engine whose process is alive.
const hungNextStep = "The engine is alive but does not answer (hung); hiro serve restarts it. If it recurs, capture where it " +
	"hangs before the restart: py-spy dump --pid PID (vLLM, SGLang), gdb -p PID -batch -ex 'thread apply all bt' " +
	"(llama.cpp, Ollama's runner). State D points at the GPU driver or a disk (dmesg: Xid errors), T at a stop " +
	"signal (a debugger, job control)."

// processFacts adds to f, a failed serving check (health or canary) of
// a managed production, its process's pid and state as /proc has them
// (Detail "pid", "process_state"), when the process is alive. When the
// check got no answer at all (noAnswer), the engine is hung rather than
// dead: the root cause and the next step say so.
func processFacts(f *failure.Failure, pid int, noAnswer bool) {
	st, alive := procfs.ProcessState(pid)
	if !alive {
		return
	}
	if f.Detail == nil {
		f.Detail = map[string]any{}
	}
	f.Detail["pid"], f.Detail["process_state"] = pid, st
	if noAnswer {
		f.RootCause += fmt.Sprintf("; the engine process (pid %d) is alive, state %s: hung, not dead", pid, st)
		f.NextStep = hungNextStep
	}
}

// servingPhase makes a failure of a server that was ready say so: its
// phase is at least ready, and a generic root cause does not claim it
// died "before ready" (the engine package words exits at startup).
func servingPhase(f *failure.Failure) {
	if f.Phase.Index() < failure.PhaseReady.Index() {
		if i := strings.Index(f.RootCause, " before ready during "+string(f.Phase)); i >= 0 {
			f.RootCause = f.RootCause[:i] + " while serving (after ready)" + f.RootCause[i+len(" before ready during "+string(f.Phase)):]
		}
		f.Phase = failure.PhaseReady
	}
}

func (p *prodCtl) recordFailure(f *failure.Failure, what string) {
	f = secretFree(f)
	p.mu.Lock()
	p.lastFailure, p.failureAt = f, time.Now()
	p.mu.Unlock()
	p.s.metrics.upErrors.WithLabelValues(p.name(), string(f.Class)).Inc()
	p.s.event("failure", map[string]any{"backend": p.name(), "what": what, "failure": f})
}

// failed hands a failure f, seen at what, to the watch's decision
// (step): report (unmanaged), hold (a campaign has production), stay
// down (budget spent) or restart after a backoff.
func (p *prodCtl) failed(ctx context.Context, f *failure.Failure, what string) {
	p.apply(ctx, p.sense(evFailure, f, what))
}

// stopAny stops a running managed production (started or adopted).
func (p *prodCtl) stopAny(ctx context.Context) *supervisor.StopResult {
	switch {
	case p.proc != nil:
		sr := p.proc.Stop(ctx)
		p.proc = nil
		p.pid.Store(0)
		return &sr
	case p.adopted != nil:
		rec := *p.adopted
		p.adopted = nil
		p.pid.Store(0)
		// The adopted process itself, never whatever the record names
		// now (another hiro sharing state_dir may have replaced it).
		_, sr := p.keeper().StopRecord(ctx, rec, 0)
		return &sr
	}
	return nil
}

// stoppedByAnother rewrites f, the death of production's process pid
// (started at startedAt), when another hiro stopped it (its
// supervisor.StopNote, left before the first signal): an exit after that
// hiro's SIGTERM (code 0) is not the engine ending by itself, and the
// failure says who stopped it, when, and what to do (Detail
// "stopped_by": that hiro's pid and what it was doing).
func stoppedByAnother(f *failure.Failure, stateDir, name string, pid int, startedAt time.Time) {
	n, ok := supervisor.StoppedBy(stateDir, name, pid, startedAt)
	if !ok {
		return
	}
	f.RootCause = fmt.Sprintf("pid %d was stopped by another hiro: %s (hiro pid %d) stopped it at %s; the engine did not fail",
		pid, n.By.What, n.By.PID, n.At.Local().Format(time.RFC3339))
	f.NextStep = "Another hiro on this state_dir (under another HOME or HIRO_LEASE_DIR, so it did not see this router's lease) stopped production. " +
		"Run every command of one production under one HOME, or give that hiro a production of its own; hiro serve starts production again."
	if f.Detail == nil {
		f.Detail = map[string]any{}
	}
	f.Detail["stopped_by"] = map[string]any{"pid": n.By.PID, "what": n.By.What, "at": n.At}
}
