package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// ownerPoll is how often a hand-over's lease owner is checked.
const ownerPoll = 250 * time.Millisecond

// prodCtl watches and restarts production. One goroutine (run) owns the
// process and every decision; the control socket's calls run on it
// (do), so no decision is made from a stale snapshot. Readers take mu.
type prodCtl struct {
	s   *Server
	sc  config.Serve
	cmd chan event // the control socket's commands (send)

	rt      atomic.Pointer[route]
	ready   atomic.Bool
	lastOK  atomic.Int64 // unix nanoseconds of the last 2xx proxied answer
	kick    chan struct{}
	restart <-chan time.Time

	// owned by run
	proc    *supervisor.Process // started by this router
	adopted *supervisor.Record  // managed, started by another hiro
	// foreign is a running process that production's record names and
	// this router neither started nor adopted, of another configuration
	// (another hiro sharing state_dir started it): production is left to
	// it, never stopped or overwritten; nil otherwise.
	foreign *supervisor.RecordStatus
	// pid is production's process as this router knows it: the one it
	// started (from launch) or adopted; 0 when none. Status and the
	// failure facts read it, never the record (which another hiro
	// sharing state_dir may have rewritten).
	pid   atomic.Int64
	owner uint64 // hand-over owner's start ticks
	// recovering counts the recoveries of dead campaigns in progress
	// (recoverCampaign); run waits for them before it returns.
	recovering sync.WaitGroup
	// own is production's endpoint lease while the router itself starts
	// production (underLease); nil otherwise.
	own *lease.Hold
	// The canary in flight, at most one: its requests run off this
	// goroutine (probeCanary) so health ticks, control commands and
	// deaths are handled while it waits; its outcome comes back on
	// canaryDone (buffered: the prober never blocks) and is acted on here.
	canaryDone   chan canaryOutcome
	canaryCancel context.CancelFunc // nil: no canary in flight
	// canaryGen counts changes of state (setState): an outcome launched
	// in an earlier generation probed a production that is no longer the
	// one served (it died, was restarted, handed over or switched) and is
	// dropped.
	canaryGen uint64
	// finish, when not nil, is the context production's starts run
	// under instead of run's: Run sets it with on_exit = "leave" so that
	// a start in progress when the router stops can end (within
	// drain_timeout) and production be left running.
	finish context.Context

	mu          sync.Mutex
	st          control.State
	since       time.Time
	message     string
	readyCh     chan struct{} // closed when ready; replaced on leaving ready
	lastHealth  *control.Check
	lastCanary  *control.Check
	restarts    int
	window      []time.Time
	lastFailure *failure.Failure
	failureAt   time.Time
	handover    *control.HandoverInfo
	restartAt   time.Time // when the pending restart is due (zero: none)
	// checked is closed (and replaced) each time the watch has looked
	// at production (a health check, a death): a request that found it
	// refusing connections waits for that look (awaitAfterRefusal).
	checked chan struct{}
}

func newProdCtl(s *Server, prof *config.Profile) (*prodCtl, error) {
	rt, err := newRoute(prof, s.tr, s.upstreamError)
	if err != nil {
		return nil, err
	}
	p := &prodCtl{s: s, sc: s.sc,
		cmd: make(chan event), kick: make(chan struct{}, 1), canaryDone: make(chan canaryOutcome, 1), checked: make(chan struct{}), st: control.StateStarting, since: time.Now(), readyCh: make(chan struct{})}
	p.rt.Store(rt)
	return p, nil
}

func (p *prodCtl) current() *route           { return p.rt.Load() }
func (p *prodCtl) name() string              { return p.current().name }
func (p *prodCtl) prof() *config.Profile     { return p.current().prof }
func (p *prodCtl) served()                   { p.lastOK.Store(time.Now().UnixNano()) }
func (p *prodCtl) state() control.State      { p.mu.Lock(); defer p.mu.Unlock(); return p.st }
func (p *prodCtl) handedOver() bool          { return p.state() == control.StateHandedOver }
func (p *prodCtl) stateDir() string          { return p.s.cfg.StateDir }
func (p *prodCtl) keeper() production.Keeper { return production.Keeper{StateDir: p.stateDir()} }

// supOpts are the options of the router's starts: the pid is known from
// launch (the supervisor records the process at once: a router killed
// now leaves a record the next one, or `hiro backend stop`, acts on).
// Their Owner is RouterOwner: another router sharing state_dir under
// another lease folder is refused while this one watches production
// (holdProduction).
func (p *prodCtl) supOpts() supervisor.Options {
	return supervisor.Options{Owner: RouterOwner, OnStart: func(pr *supervisor.Process) { p.pid.Store(int64(pr.PID())) }}
}

// RouterOwner is what a router records as the Owner of the production
// process it starts or adopts (supervisor.Record.Owner.What, with its
// pid and start time): a second router, or any hiro, that finds
// production's record names a live "hiro serve" knows another router
// watches and restarts it.
const RouterOwner = production.RouterOwner

// lookedAt tells requests waiting in awaitAfterRefusal that the watch
// has looked at production.
func (p *prodCtl) lookedAt() {
	p.mu.Lock()
	close(p.checked)
	p.checked = make(chan struct{})
	p.mu.Unlock()
}

// awaitAfterRefusal is for a request that found rt, production, refusing
// connections (its request was never sent) while production was still
// ready to the router: it asks the watch to look now, waits for that look
// and then for production to be ready, all within wait ([serve]
// wait_for_ready; 0: no wait). It returns true when production is ready
// again and still rt: the request may be sent once more.
func (p *prodCtl) awaitAfterRefusal(ctx context.Context, rt *route, wait time.Duration) bool {
	if wait <= 0 {
		return false
	}
	deadline := time.Now().Add(wait)
	p.mu.Lock()
	looked := p.checked
	p.mu.Unlock()
	p.poke()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-looked:
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
	ok, _, _ := p.gate(ctx, time.Until(deadline))
	return ok && p.current() == rt
}

// poke asks run to check production now (an upstream error was seen).
func (p *prodCtl) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// setState changes the state; ready releases the start's lease
// (releaseOwn) and then opens the gate. On the owning
// goroutine (or after run returned): it also ends the generation of a
// canary in flight, which probed what production was until now.
func (p *prodCtl) setState(st control.State, msg string) {
	if st == control.StateReady {
		// Ready ends the router's own start: its lease goes first, so
		// that nobody who sees "ready" is refused by it.
		p.releaseOwn()
	}
	p.mu.Lock()
	changed := p.st != st
	if changed {
		p.since = time.Now()
	}
	if st == control.StateReady && p.st != control.StateReady {
		close(p.readyCh)
	} else if st != control.StateReady && p.st == control.StateReady {
		p.readyCh = make(chan struct{})
	}
	if changed && (st == control.StateDown || st == control.StateStopped) && !p.current().prof.Unmanaged {
		// Nothing checks a managed production that is down: the last
		// checks say what was, not what is.
		p.lastHealth, p.lastCanary = staleCheck(p.lastHealth), staleCheck(p.lastCanary)
	} else if changed && p.st == control.StateReady && !p.current().prof.Unmanaged {
		// Leaving ready (a death, a failed check, a hand-over): the last
		// canary probed the process that was ready, not the one a
		// restart brings up; it stays stale until the next canary.
		p.lastCanary = staleCheck(p.lastCanary)
	}
	// Messages quote engine logs (root causes): no key goes into the
	// status or the event log.
	msg = redact.Secrets(msg)
	p.st, p.message = st, msg
	// Stored under the lock: whoever reads the state (hiro status) and
	// then sends a request finds the gate agreeing with it.
	p.ready.Store(st == control.StateReady)
	p.mu.Unlock()
	rt := p.current()
	p.s.metrics.setActive(rt.name, rt.prof.Engine, rt.prof.Model, st)
	if changed {
		// A canary in flight probes what production was: dropped. A
		// new message in the same state (an unmanaged production's
		// health tick says ready again) is no change.
		p.canaryGen++
		if p.canaryCancel != nil {
			p.canaryCancel()
		}
		f := map[string]any{"backend": rt.name, "state": st}
		if msg != "" {
			f["message"] = msg
		}
		p.s.event("state", f)
	}
}

// gate lets a request for production through when it is ready; else it
// waits up to wait for it, then says why not and the Retry-After.
func (p *prodCtl) gate(ctx context.Context, wait time.Duration) (ok bool, retry int, why string) {
	if p.ready.Load() {
		return true, 0, ""
	}
	p.mu.Lock()
	ch := p.readyCh
	p.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ch:
			return true, 0, ""
		case <-t.C:
		case <-ctx.Done():
		}
	}
	p.mu.Lock()
	st, last, campaign, restartAt := p.st, p.lastFailure, "", p.restartAt
	if p.handover != nil {
		campaign = p.handover.Campaign
	}
	p.mu.Unlock()
	if st == control.StateReady {
		return true, 0, ""
	}
	unmanaged := p.prof().Unmanaged
	retry = retryAfter(st, unmanaged)
	if st == control.StateRestarting && !restartAt.IsZero() {
		// The restart is due after its backoff: no sooner than that.
		retry = max(retry, min(retryAfterDown, int(time.Until(restartAt)/time.Second)+1))
	}
	return false, retry, clientReason(p.name(), st, last, campaign, unmanaged, retry)
}

// retryAfter is the Retry-After (seconds) for a request refused in
// state st. An unmanaged production that is down comes back on its own
// (the watch serves it again within a health interval): it is retried as
// soon as a restarting one.
func retryAfter(st control.State, unmanaged bool) int {
	switch {
	case st == control.StateHandedOver:
		return retryAfterHandedOver
	case st == control.StateDown && unmanaged:
		return retryAfterRestarting
	case st == control.StateDown, st == control.StateStopped:
		return retryAfterDown
	}
	return retryAfterRestarting
}

// clientReason says why production cannot answer, for an API client:
// the state, the class of the last failure and when to retry, never the
// operator's detail (root causes name pids, processes, paths and
// addresses; `hiro status` and the event log have them). campaign names
// the campaign production is handed over to, when known; retry is the
// Retry-After sent with it (seconds). An unmanaged production that is
// down is said to come back on its own, not to need the operator.
func clientReason(name string, st control.State, last *failure.Failure, campaign string, unmanaged bool, retry int) string {
	why := fmt.Sprintf("production %s is %s", name, st)
	switch st {
	case control.StateHandedOver:
		// An activation or rollback hands production over under its
		// kind and start time (package activation); anything else is a
		// campaign's id.
		switch {
		case strings.HasPrefix(campaign, "activate-"):
			why += " to an activation (started " + strings.TrimPrefix(campaign, "activate-") + ")"
		case strings.HasPrefix(campaign, "rollback-"):
			why += " to a rollback (started " + strings.TrimPrefix(campaign, "rollback-") + ")"
		case campaign != "":
			why += " to a qualification campaign (" + campaign + ")"
		default:
			why += " to a qualification campaign"
		}
	case control.StateRestarting, control.StateDown:
		if last != nil && last.Class != "" {
			why += fmt.Sprintf(" after a failure (%s)", last.Class)
		}
	}
	switch {
	case st == control.StateDown && unmanaged:
		return fmt.Sprintf("%s; hiro does not manage it and serves it again once it answers; retry in %d s", why, retry)
	case st == control.StateDown, st == control.StateStopped:
		return why + "; the operator has to act (hiro status on the server says why); retry later"
	}
	return fmt.Sprintf("%s; retry in %d s", why, retry)
}

// run is the owning goroutine: it brings production up, then watches it
// until ctx ends. It only receives events (with the facts sensed with
// them), applies step and performs the effects (apply).
func (p *prodCtl) run(ctx context.Context) {
	p.apply(ctx, p.senseBringUp())
	health := time.NewTicker(p.sc.HealthInterval.Duration)
	defer health.Stop()
	canary := time.NewTicker(p.sc.CanaryInterval.Duration)
	defer canary.Stop()
	owner := time.NewTicker(ownerPoll)
	defer owner.Stop()
	defer p.endCanary()
	defer p.recovering.Wait()
	for {
		var exited <-chan struct{}
		if p.proc != nil {
			exited = p.proc.Exited()
		}
		select {
		case <-ctx.Done():
			return
		case e := <-p.cmd:
			p.apply(ctx, p.senseCommand(e))
			close(e.Cmd.done)
		case <-exited:
			p.apply(ctx, p.died(ctx, ""))
			p.lookedAt()
		case <-health.C:
			p.apply(ctx, event{Kind: evHealthTick, What: "tick", Now: time.Now()})
			p.lookedAt()
		case <-p.kick:
			p.apply(ctx, event{Kind: evHealthTick, What: "poke", Now: time.Now()})
			p.lookedAt()
		case <-canary.C:
			p.apply(ctx, p.senseCanaryTick())
		case o := <-p.canaryDone:
			p.apply(ctx, p.senseCanaryDone(ctx, o))
		case <-owner.C:
			p.apply(ctx, p.senseOwner())
		case <-p.restart:
			p.restart = nil
			p.apply(ctx, event{Kind: evRestartDue, Now: time.Now()})
		}
	}
}

// shutdown leaves a managed production running (recorded, so the next
// router adopts it) or stops it, as onExit says. After run returned.
func (p *prodCtl) shutdown(onExit string) {
	if onExit == config.ServeOnExitStop {
		ctx, cancel := context.WithTimeout(context.Background(), p.prof().StopGrace.Duration+10*time.Second)
		defer cancel()
		if sr := p.stopAny(ctx); sr != nil {
			p.s.event("production_stopped", map[string]any{"backend": p.name(), "stop": sr})
			p.setState(control.StateStopped, "stopped at exit (on_exit = \"stop\")")
		}
		return
	}
	if p.prof().Unmanaged || p.handedOver() {
		return
	}
	if p.proc != nil {
		pid := p.proc.PID()
		if p.exitedMeanwhile() || !aliveProcess(pid) {
			// Died before the watch saw it: reaped, its record removed.
			ctx, cancel := context.WithTimeout(context.Background(), p.prof().StopGrace.Duration+10*time.Second)
			p.proc.Stop(ctx)
			cancel()
			p.notRunning(fmt.Sprintf("production (pid %d) exited (%s) before the router stopped; nothing is left running", pid, p.proc.ExitInfo()))
			p.proc = nil
			return
		}
		if _, err := p.proc.Detach(); err != nil {
			p.s.event("record_failed", map[string]any{"backend": p.name(), "error": err.Error()})
		}
		p.s.event("production_left_running", map[string]any{"backend": p.name(), "pid": pid})
		p.proc = nil
		return
	}
	if p.adopted != nil {
		st, err := supervisor.Status(p.stateDir(), p.adopted.Name)
		if err != nil || st.Status != supervisor.StatusRunning || st.PID != p.adopted.PID {
			p.notRunning(fmt.Sprintf("the adopted production (pid %d) is no longer running (not yet seen by the watch)", p.adopted.PID))
			return
		}
		// Adopted from an earlier router: its record stays as it was,
		// with no hiro watching it any more (Release of the Claim).
		p.keeper().Release(*p.adopted)
		p.s.event("production_left_running", map[string]any{"backend": p.name(), "pid": p.adopted.PID, "adopted": true})
		return
	}
	if p.foreign != nil {
		return
	}
	if st := p.state(); st != control.StateStopped {
		p.notRunning(fmt.Sprintf("production was %s (%s)", st, p.statusMessage()))
	}
}

// notRunning says, at the router's stop, that production is not left
// running, and why; the state becomes stopped.
func (p *prodCtl) notRunning(why string) {
	p.s.event("production_not_running", map[string]any{"backend": p.name(), "reason": why + "; production is down until hiro serve (or 'hiro backend start " + p.name() + "') starts it"})
	p.setState(control.StateStopped, "not running at the router's stop: "+why)
}

func (p *prodCtl) statusMessage() string { p.mu.Lock(); defer p.mu.Unlock(); return p.message }

// aliveProcess reports whether pid runs (not gone, not a zombie).
func aliveProcess(pid int) bool { _, ok := procfs.ProcessState(pid); return ok }

// status returns production's status and the hand-over.
func (p *prodCtl) status() (control.BackendStatus, *control.HandoverInfo) {
	rt := p.current()
	p.mu.Lock()
	defer p.mu.Unlock()
	b := control.BackendStatus{Name: rt.name, Engine: rt.prof.Engine, BaseURL: rt.prof.BaseURL, Model: rt.prof.Model,
		Managed: !rt.prof.Unmanaged, State: p.st, Since: p.since, Message: p.message, LastHealth: p.lastHealth,
		LastCanary: p.lastCanary, Restarts: p.restarts, RestartBudget: p.sc.RestartBudget,
		RestartWindow: p.sc.RestartWindow.Duration.String(), LastFailure: p.lastFailure, LastFailureAt: p.failureAt}
	for _, t := range p.window {
		if time.Since(t) < p.sc.RestartWindow.Duration {
			b.RestartsInWindow++
		}
	}
	b.PID = int(p.pid.Load())
	var h *control.HandoverInfo
	if p.handover != nil {
		c := *p.handover
		h = &c
	}
	return b, h
}

// staleCheck returns a copy of c marked stale (nil: nil).
func staleCheck(c *control.Check) *control.Check {
	if c == nil {
		return nil
	}
	cc := *c
	cc.Stale = true
	return &cc
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// secretFree returns a copy of f without secrets (package redact's
// Secrets: registered keys, secret flags' and keys' values, token
// shapes), paths kept: a failure quotes the engine's log (vLLM prints its
// non-default arguments, api_key included), and the status and the event
// log are read by people and tools that must not see keys.
func secretFree(f *failure.Failure) *failure.Failure {
	if f == nil {
		return nil
	}
	var c failure.Failure
	b, err := json.Marshal(f)
	if err != nil || json.Unmarshal(b, &c) != nil {
		return &failure.Failure{Class: f.Class, Phase: f.Phase, RootCause: redact.Secrets(f.RootCause)}
	}
	redact.SecretsValue(&c)
	return &c
}
