package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shellquote"
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
	cmd chan func(ctx context.Context)

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
		cmd: make(chan func(context.Context)), kick: make(chan struct{}, 1), canaryDone: make(chan canaryOutcome, 1), checked: make(chan struct{}), st: control.StateStarting, since: time.Now(), readyCh: make(chan struct{})}
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
func (p *prodCtl) supOpts() supervisor.Options {
	return supervisor.Options{OnStart: func(pr *supervisor.Process) { p.pid.Store(int64(pr.PID())) }}
}

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

// setState changes the state; ready opens the gate. On the owning
// goroutine (or after run returned): it also ends the generation of a
// canary in flight, which probed what production was until now.
func (p *prodCtl) setState(st control.State, msg string) {
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
		why += " to a qualification campaign"
		if campaign != "" {
			why += " (" + campaign + ")"
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

// do runs f on the owning goroutine and waits for it.
func (p *prodCtl) do(ctx context.Context, f func(ctx context.Context)) error {
	done := make(chan struct{})
	select {
	case p.cmd <- func(c context.Context) { defer close(done); f(c) }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		// f still runs to its end on the owning goroutine.
		return ctx.Err()
	}
}

// run is the owning goroutine: bring production up, then watch it until
// ctx ends.
func (p *prodCtl) run(ctx context.Context) {
	p.bringUp(ctx)
	health := time.NewTicker(p.sc.HealthInterval.Duration)
	defer health.Stop()
	canary := time.NewTicker(p.sc.CanaryInterval.Duration)
	defer canary.Stop()
	owner := time.NewTicker(ownerPoll)
	defer owner.Stop()
	defer p.endCanary()
	for {
		var exited <-chan struct{}
		if p.proc != nil {
			exited = p.proc.Exited()
		}
		select {
		case <-ctx.Done():
			return
		case f := <-p.cmd:
			f(ctx)
		case <-exited:
			p.died(ctx, "")
			p.lookedAt()
		case <-health.C:
			p.checkHealth(ctx)
			p.lookedAt()
		case <-p.kick:
			p.checkHealth(ctx)
			p.lookedAt()
		case <-canary.C:
			p.canary(ctx)
		case o := <-p.canaryDone:
			p.canaryCancel()
			p.canaryCancel = nil
			p.canaryResult(ctx, o)
		case <-owner.C:
			p.checkOwner(ctx)
		case <-p.restart:
			p.restart = nil
			p.doRestart(ctx)
		}
	}
}

// campaign returns the live holder of production's lease, or nil. While
// the router holds that lease itself (underLease) nobody else can.
func (p *prodCtl) campaign() *control.HandoverInfo {
	if p.own != nil {
		return nil
	}
	if p.s.opts.CampaignHolding != nil {
		return p.s.opts.CampaignHolding(p.prof())
	}
	return LeaseHolder(p.prof())
}

// LeaseHolder reports the live hiro (a campaign, or a command such as
// 'hiro backend start') that holds the lease of prof's endpoint (package
// lease), or nil when none does or the lease folder cannot be read.
func LeaseHolder(prof *config.Profile) *control.HandoverInfo {
	dir, err := lease.Dir()
	if err != nil {
		return nil
	}
	return holderInfo(lease.HeldBy(dir, lease.ProductionKey(prof.BaseURL)))
}

// holderInfo describes the hiro whose lease record l is (nil: nil).
func holderInfo(l *lease.Lease) *control.HandoverInfo {
	if l == nil {
		return nil
	}
	who := l.Campaign
	if who == "" {
		who = l.Command
	}
	return &control.HandoverInfo{Campaign: who, OwnerPID: l.PID, Since: l.Created, Source: "lease"}
}

// underLease runs f, a start of production by the router itself (its
// first start, a restart after a death, the start after a campaign's
// lease was released), holding production's endpoint lease
// (lease.ProductionKey) as 'hiro backend start' does: no campaign, switch
// or 'hiro backend start|stop' can act on production between the
// router's decision and the end of the start, and one that tries is
// refused naming 'hiro serve'. When a live hiro holds the key, f does not
// run: production is held for that hiro (holdFor) and false is returned.
// A lease that cannot be taken for another reason (no lease folder, a
// campaign that died with production in its care) does not keep
// production down: f runs without it and an event says why.
func (p *prodCtl) underLease(why string, f func()) bool {
	prof := p.prof()
	dir, err := lease.Dir()
	var h *lease.Hold
	if err == nil {
		h, err = lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "hiro serve (" + why + ")",
			Config: p.s.cfg.Path, Production: prof.Name}, production.LeaseKeys(false, prof)...)
	}
	if err != nil {
		var held *lease.HeldError
		if errors.As(err, &held) {
			hi := holderInfo(held.Holder)
			if hi == nil {
				hi = &control.HandoverInfo{Campaign: "another hiro (starting)", Source: "lease"}
			}
			p.s.event("start_refused", map[string]any{"backend": prof.Name, "what": why, "holder": hi.Campaign, "lease_owner_pid": hi.OwnerPID})
			p.holdFor(hi)
			return false
		}
		p.s.event("start_unleased", map[string]any{"backend": prof.Name, "what": why, "reason": err.Error()})
		f()
		return true
	}
	p.own = h
	defer func() {
		p.own = nil
		if err := h.Release(); err != nil {
			p.s.event("lease_release_failed", map[string]any{"backend": prof.Name, "reason": err.Error()})
		}
	}()
	f()
	return true
}

// bringUp adopts a recorded production that answers ready, or starts
// it, holding production's lease (underLease); an unmanaged one is only
// checked.
func (p *prodCtl) bringUp(ctx context.Context) {
	prof := p.prof()
	if h := p.campaign(); h != nil {
		p.holdFor(h)
		return
	}
	if prof.Unmanaged {
		p.checkUnmanaged(ctx)
		return
	}
	p.underLease("start", func() { p.bringUpManaged(ctx) })
}

func (p *prodCtl) bringUpManaged(ctx context.Context) {
	if p.recorded(ctx, "start") {
		return
	}
	p.start(ctx, "starting")
}

// recorded acts on a running process that production's record names,
// before the router starts one (its first start, a restart, the start
// after a campaign's lease was released): started with the same
// configuration and ready, it is adopted; with the same configuration
// but not ready, it is stopped (the caller starts a fresh one); started
// with another configuration (another hiro sharing state_dir, or
// `hiro backend start` from another file), it is left running and
// production is left to it (leaveToForeign): never stopped, never
// overwritten. It returns true when production was settled (adopted or
// left), false when the caller is to start it. On the owning goroutine,
// with no process of the router's own (pid 0). what names the step, for
// the event.
func (p *prodCtl) recorded(ctx context.Context, what string) bool {
	prof := p.prof()
	found, st := p.keeper().Look(prof)
	switch found {
	case production.FoundForeign:
		p.leaveToForeign(ctx, st, what)
		return true
	case production.FoundOwn:
	default:
		return false
	}
	if rr := supervisor.CheckReady(ctx, prof, p.current().hc); rr.OK {
		rec := st.Record
		p.adopted, p.foreign = &rec, nil
		p.pid.Store(int64(rec.PID))
		p.setHealth(true, "")
		p.setState(control.StateReady, fmt.Sprintf("adopted the running pid %d", rec.PID))
		return true
	} else if rr.Failure != nil {
		p.s.event("adopt_refused", map[string]any{"backend": prof.Name, "pid": st.PID, "failure": rr.Failure})
	}
	_, sr, _ := supervisor.StopRecorded(ctx, p.stateDir(), prof.Name, 0)
	p.s.event("stopped_recorded", map[string]any{"backend": prof.Name, "pid": st.PID, "stop": sr})
	return false
}

// ForeignProductionError says that production's record names a running
// process started with another configuration than the router's: New
// refuses to start then (hiro serve exits 2), since serving would mean
// stopping a working production for a configuration change.
type ForeignProductionError struct {
	// Config is the router's configuration file; Record the running
	// process's record (pid, base URL, start time, record path).
	Config string
	Record supervisor.RecordStatus
}

func (e *ForeignProductionError) Error() string {
	r := e.Record
	return fmt.Sprintf("%s: backends.%s: %s is already running (pid %d, %s, started %s; record %s) with another configuration than %s gives it: "+
		"hiro serve does not stop a working production for a configuration change; stop it with 'hiro backend stop %s' and start hiro serve again, "+
		"or put back the configuration it runs with",
		e.Config, r.Name, r.Name, r.PID, r.BaseURL, r.StartedAt.Local().Format(time.RFC3339), r.RecordPath, e.Config, shellquote.Quote(r.Name))
}

// CheckRecordedProduction returns a *ForeignProductionError when prof (a
// managed production) is recorded in cfg's state_dir as running with
// another configuration (config.Profile.Hash), nil otherwise (no record,
// a stale one, the same configuration, an unmanaged profile).
func CheckRecordedProduction(cfg *config.Config, prof *config.Profile) error {
	found, st := production.Keeper{StateDir: cfg.StateDir}.Look(prof)
	if found != production.FoundForeign {
		return nil
	}
	return &ForeignProductionError{Config: cfg.Path, Record: st}
}

// leaveToForeign leaves production to st, a running process of another
// configuration that production's record names (found at what: "start",
// "restart", "health", "canary", "death"): it is not stopped, the router
// starts nothing over it, and the state (down) and the event
// production_replaced say so and what to do. The health tick looks
// again (checkForeign): once that process is gone, the router starts
// production.
func (p *prodCtl) leaveToForeign(ctx context.Context, st supervisor.RecordStatus, what string) {
	p.foreign = &st
	p.restart = nil
	p.mu.Lock()
	p.restartAt = time.Time{}
	p.mu.Unlock()
	name := p.name()
	p.s.event("production_replaced", map[string]any{"backend": name, "pid": st.PID, "base_url": st.BaseURL, "started_at": st.StartedAt,
		"record": st.RecordPath, "what": what,
		"reason": "production's record names a process this router did not start or adopt, started with another configuration (another hiro sharing state_dir?); it is left running"})
	p.setState(control.StateDown, fmt.Sprintf("%s is recorded as pid %d (%s, started %s) with another configuration than this router's, by another hiro sharing state_dir %s; "+
		"this router leaves it running and starts nothing over it: stop it with 'hiro backend stop %s' (this router then starts production again), or serve that configuration instead",
		name, st.PID, st.BaseURL, st.StartedAt.Local().Format(time.RFC3339), p.stateDir(), shellquote.Quote(name)))
}

// checkForeign looks again at the process production was left to; once
// it is gone, production is started.
func (p *prodCtl) checkForeign(ctx context.Context) {
	st, err := supervisor.Status(p.stateDir(), p.name())
	if err == nil && st.Status == supervisor.StatusRunning && st.PID == p.foreign.PID && st.StartTicks == p.foreign.StartTicks {
		return
	}
	gone := p.foreign
	p.foreign = nil
	p.s.event("foreign_gone", map[string]any{"backend": p.name(), "pid": gone.PID})
	p.bringUp(ctx)
}

// otherRecord returns production's record when it names a running
// process other than the one this router started or adopted (another
// hiro sharing state_dir replaced it), nil otherwise.
func (p *prodCtl) otherRecord() *supervisor.RecordStatus {
	st, err := supervisor.Status(p.stateDir(), p.name())
	if err != nil || st.Status != supervisor.StatusRunning || int64(st.PID) == p.pid.Load() {
		return nil
	}
	return &st
}

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

// died handles the exit of the process this router started. symptom,
// when not empty, is what a check saw of the same death before the exit
// was known (a refused connection): kept as the failure's detail, not
// recorded as a failure of its own. An exit after a failure of that
// process was already recorded (a hung engine that ends during the
// restart's backoff) is the same failure: the event engine_exited says
// so, and no second failure is recorded or restart scheduled.
func (p *prodCtl) died(ctx context.Context, symptom string) {
	proc := p.proc
	p.proc = nil
	t := proc.Tracker()
	f := t.Classify(engine.Outcome{Kind: engine.OutcomeExited, Exit: proc.ExitInfo(), Elapsed: time.Since(p.since)})
	servingPhase(f)
	proc.Stop(ctx) // reaps the group, removes the record (when still its own)
	p.pid.Store(0)
	if st := p.state(); st == control.StateRestarting || st == control.StateDown {
		p.s.event("engine_exited", map[string]any{"backend": p.name(), "pid": proc.PID(), "exit": proc.ExitInfo().String(),
			"note": "after its failure was recorded; not a second failure"})
		return
	}
	if symptom != "" {
		if f.Detail == nil {
			f.Detail = map[string]any{}
		}
		f.Detail["seen_first"] = symptom
	}
	p.failed(ctx, f, "death")
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

// failed records f and decides: report (unmanaged), hold (a campaign has
// production), stay down (budget spent) or restart after a backoff.
func (p *prodCtl) failed(ctx context.Context, f *failure.Failure, what string) {
	prof := p.prof()
	if !prof.Unmanaged {
		if h := p.campaign(); h != nil {
			// Another hiro holds production's endpoint (a campaign or a
			// switch took production over and stopped it): what the
			// check saw is the hand-over, not a failure of production.
			// It is not recorded as one (nor kept as the last failure).
			p.s.event("check_discarded", map[string]any{"backend": prof.Name, "what": what, "class": f.Class, "holder": h.Campaign, "lease_owner_pid": h.OwnerPID,
				"reason": "production's endpoint is held by another hiro: the check raced its hand-over"})
			p.stopAny(ctx)
			p.holdFor(h)
			return
		}
	}
	if !prof.Unmanaged {
		if o := p.otherRecord(); o != nil {
			// Another hiro sharing state_dir replaced production: what
			// the check saw is not a failure of the process this router
			// runs, and the one now recorded is not its own to stop.
			p.s.event("check_discarded", map[string]any{"backend": prof.Name, "what": what, "class": f.Class, "pid": o.PID,
				"reason": "production's record names a process this router did not start or adopt"})
			p.stopAny(ctx)
			if p.recorded(ctx, what) {
				return
			}
		}
	}
	p.recordFailure(f, what)
	if prof.Unmanaged {
		p.setState(control.StateDown, fmt.Sprintf("unmanaged: %s; not restarted by hiro, watched until it answers ready", f.Error()))
		return
	}
	now := time.Now()
	p.mu.Lock()
	keep := p.window[:0]
	for _, t := range p.window {
		if now.Sub(t) < p.sc.RestartWindow.Duration {
			keep = append(keep, t)
		}
	}
	p.window = keep
	n := len(p.window)
	p.mu.Unlock()
	if n >= p.sc.RestartBudget {
		p.stopAny(ctx)
		p.setState(control.StateDown, fmt.Sprintf("restart budget spent (%d restarts in %s; restart_budget = %d); production stays down: last failure %s; fix it and restart hiro serve",
			n, p.sc.RestartWindow.Duration, p.sc.RestartBudget, f.Error()))
		p.s.event("restart_budget_spent", map[string]any{"backend": prof.Name, "restarts_in_window": n})
		return
	}
	wait := p.sc.RestartBackoff.Duration << n
	if wait > p.sc.RestartBackoffMax.Duration || wait <= 0 {
		wait = p.sc.RestartBackoffMax.Duration
	}
	// Due time first: the gate never pairs "restarting" with an earlier
	// restart's due time.
	p.mu.Lock()
	p.restartAt = time.Now().Add(wait)
	p.mu.Unlock()
	p.setState(control.StateRestarting, fmt.Sprintf("%s; restart %d of %d in %s", f.Error(), n+1, p.sc.RestartBudget, wait))
	p.restart = time.After(wait)
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
		_, sr := supervisor.StopRecord(ctx, p.stateDir(), rec, 0)
		return &sr
	}
	return nil
}

func (p *prodCtl) doRestart(ctx context.Context) {
	if p.state() != control.StateRestarting {
		return
	}
	restarted := p.underLease("restart", func() {
		if pid := p.pid.Load(); pid != 0 {
			// A hung engine takes up to stop_grace to stop: the status
			// says so, not the restart's due time.
			p.mu.Lock()
			p.restartAt = time.Time{}
			p.mu.Unlock()
			p.setState(control.StateRestarting, fmt.Sprintf("stopping the old process (pid %d: SIGTERM, SIGKILL after stop_grace %s) before restart %d of %d",
				pid, p.prof().StopGrace.Duration, len(p.window)+1, p.sc.RestartBudget))
		}
		p.stopAny(ctx)
		if p.recorded(ctx, "restart") {
			// Adopted, or left to a process of another configuration.
			return
		}
		p.mu.Lock()
		p.window = append(p.window, time.Now())
		p.restarts++
		n := p.restarts
		p.mu.Unlock()
		p.s.metrics.restarts.WithLabelValues(p.name()).Inc()
		p.s.event("restart", map[string]any{"backend": p.name(), "restart": n})
		p.start(ctx, fmt.Sprintf("restart %d", n))
	})
	if !restarted {
		// Another hiro took production's endpoint while the restart
		// waited: what the router started (dead or failed) is still its
		// own to stop; production is that hiro's now.
		p.stopAny(ctx)
	}
}

func (p *prodCtl) setHealth(ok bool, msg string) {
	p.mu.Lock()
	p.lastHealth = &control.Check{At: time.Now(), OK: ok, Error: msg}
	p.mu.Unlock()
}

// checkHealth runs on the health tick and on pokes.
func (p *prodCtl) checkHealth(ctx context.Context) {
	switch p.state() {
	case control.StateReady:
	case control.StateDown:
		if p.prof().Unmanaged {
			p.checkUnmanaged(ctx)
		} else if p.foreign != nil {
			p.checkForeign(ctx)
		}
		return
	case control.StateHandedOver:
		p.mu.Lock()
		h := p.handover
		p.mu.Unlock()
		if h != nil && h.Source == "lease" && p.campaign() == nil {
			p.mu.Lock()
			p.handover = nil
			p.mu.Unlock()
			p.s.event("lease_released", map[string]any{"backend": p.name(), "campaign": h.Campaign})
			p.bringUp(ctx)
		}
		return
	default:
		return
	}
	prof := p.prof()
	if p.adopted != nil {
		if st, err := supervisor.Status(p.stateDir(), prof.Name); err != nil || st.Status != supervisor.StatusRunning || st.PID != p.adopted.PID {
			rec := p.adopted
			if err == nil && st.Status == supervisor.StatusRunning {
				// Another process is recorded under production's name:
				// replaced, not dead (failed says so). The adopted one,
				// if still alive, is no longer recorded: stopAny stops it.
				p.failed(ctx, adoptedDeath(rec), "health")
				return
			}
			p.adopted = nil
			p.pid.Store(0)
			p.failed(ctx, adoptedDeath(rec), "death")
			return
		}
	}
	start := time.Now()
	hctx, cancel := context.WithTimeout(ctx, supervisor.DefaultHealthRequestTimeout)
	h := p.current().eng.CheckHealth(hctx, p.current().hc, prof.BaseURL, prof.Model)
	cancel()
	if ctx.Err() != nil {
		return
	}
	if h.State == engine.HealthReady {
		p.mu.Lock()
		p.lastHealth = &control.Check{At: start, OK: true, DurationMS: msSince(start)}
		p.mu.Unlock()
		return
	}
	p.mu.Lock()
	p.lastHealth = &control.Check{At: start, OK: false, DurationMS: msSince(start), Error: h.Message}
	p.mu.Unlock()
	if p.exitedMeanwhile() {
		p.died(ctx, "health: "+h.Message)
		return
	}
	f := p.tracker().Classify(engine.Outcome{Kind: engine.OutcomeHealthFailed, Health: &h, Message: h.Message, Elapsed: time.Since(p.since)})
	servingPhase(f)
	if !prof.Unmanaged {
		processFacts(f, int(p.pid.Load()), noAnswer(h))
	}
	p.failed(ctx, f, "health")
}

// tracker returns the log tracker of the running engine (an empty one
// when the router did not start it).
func (p *prodCtl) tracker() *engine.Tracker {
	if p.proc != nil {
		return p.proc.Tracker()
	}
	return p.current().eng.NewTracker()
}

// adoptedDeath classifies the death of a process another hiro started,
// from its log file.
func adoptedDeath(rec *supervisor.Record) *failure.Failure {
	var f *failure.Failure
	if lf, err := os.Open(rec.LogPath); err == nil {
		f, _ = engine.Diagnose(lf, rec.Engine, engine.ExitInfo{})
		lf.Close()
	}
	if f == nil {
		f = &failure.Failure{Class: failure.ClassEngineDied, RootCause: fmt.Sprintf("pid %d ended (exit status unknown: not this router's child)", rec.PID)}
	}
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

// canary launches the bounded canary completion when no real request
// succeeded within the interval and none is in flight (a tick that finds
// one in flight is skipped). Its requests run in probeCanary, beside the
// owning goroutine; canaryResult acts on what it found.
func (p *prodCtl) canary(ctx context.Context) {
	if p.canaryCancel != nil || p.state() != control.StateReady {
		return
	}
	rt := p.current()
	if last := p.lastOK.Load(); last > 0 && time.Since(time.Unix(0, last)) < p.sc.CanaryInterval.Duration {
		p.canarySkipped(rt, "a request succeeded within the canary interval")
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	p.canaryCancel = cancel
	gen, t := p.canaryGen, p.tracker()
	go func() { p.canaryDone <- probeCanary(cctx, rt, t, gen) }()
}

// canaryOutcome is what one canary found.
type canaryOutcome struct {
	gen     uint64        // the prodCtl's canaryGen at launch
	rt      *route        // the route probed
	start   time.Time     // when the completion was sent
	took    time.Duration // how long it took
	skipped string        // not empty: no completion was made, and why
	rr      supervisor.ReadyResult
	aborted bool // its context ended: nothing to judge
}

// probeCanary makes the canary completion on rt (t: the engine's log
// tracker, for classifying a failure), and not when it would reload a
// model its engine unloaded (Ollama's keep-alive). Off the owning
// goroutine: it reads nothing of the prodCtl and decides nothing.
func probeCanary(ctx context.Context, rt *route, t *engine.Tracker, gen uint64) canaryOutcome {
	o := canaryOutcome{gen: gen, rt: rt, start: time.Now()}
	var keepAlive time.Duration // > 0: the canary must not extend the model's stay
	if rt.prof.Engine == "ollama" {
		ps := ollamaPS(ctx, rt.hc, rt.prof.BaseURL, rt.eng, rt.prof.Model)
		if ps.known && !ps.loaded {
			o.skipped = "the model is not loaded (keep-alive expired); a canary would reload it"
			return o
		}
		if ps.loaded && !ps.expires.IsZero() && time.Until(ps.expires) < 24*time.Hour {
			if keepAlive = time.Until(ps.expires); keepAlive < time.Second {
				o.skipped = "the model is about to be unloaded (keep-alive); a canary would keep it"
				return o
			}
		}
	}
	o.start = time.Now()
	if keepAlive > 0 {
		o.rr = ollamaCanary(ctx, rt, keepAlive, t)
	} else {
		o.rr = supervisor.CheckReadyTracked(ctx, rt.prof, rt.hc, t)
	}
	o.took = time.Since(o.start)
	o.aborted = ctx.Err() != nil
	return o
}

// canarySkipped records a canary not made, and why.
func (p *prodCtl) canarySkipped(rt *route, why string) {
	p.mu.Lock()
	p.lastCanary = &control.Check{At: time.Now(), OK: true, Skipped: why}
	p.mu.Unlock()
	p.s.metrics.canaries.WithLabelValues(rt.name, "skipped").Inc()
}

// canaryResult acts on a canary's outcome, on the owning goroutine: it is
// recorded, and a failure is handled as any other (failed). An outcome
// about a production that is no longer the one served, or no longer
// ready, is dropped.
func (p *prodCtl) canaryResult(ctx context.Context, o canaryOutcome) {
	if o.aborted || ctx.Err() != nil || o.gen != p.canaryGen || o.rt != p.current() || p.state() != control.StateReady {
		return
	}
	rt, rr := o.rt, o.rr
	if o.skipped != "" {
		p.canarySkipped(rt, o.skipped)
		return
	}
	c := &control.Check{At: o.start, OK: rr.OK, DurationMS: float64(o.took.Microseconds()) / 1000, Reply: rr.Reply}
	if rr.Failure != nil {
		c.Error = rr.Failure.Error()
	}
	p.mu.Lock()
	p.lastCanary = c
	p.mu.Unlock()
	if rr.OK {
		p.s.metrics.canaries.WithLabelValues(rt.name, "ok").Inc()
		return
	}
	p.s.metrics.canaries.WithLabelValues(rt.name, "failed").Inc()
	if p.exitedMeanwhile() {
		p.died(ctx, "canary: "+c.Error)
		return
	}
	f := rr.Failure
	if f == nil {
		f = &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseReady, RootCause: "canary failed"}
	}
	servingPhase(f)
	if !p.prof().Unmanaged {
		processFacts(f, int(p.pid.Load()), noAnswer(rr.Health) ||
			(f.Class == failure.ClassProbeFailed && strings.HasPrefix(f.RootCause, "chat completion got no answer")))
	}
	p.failed(ctx, f, "canary")
}

// endCanary cancels a canary in flight and waits for its prober to
// return, so nothing of it outlives run.
func (p *prodCtl) endCanary() {
	if p.canaryCancel == nil {
		return
	}
	p.canaryCancel()
	p.canaryCancel = nil
	<-p.canaryDone
}

// holdFor marks production held by campaign h (a live lease).
func (p *prodCtl) holdFor(h *control.HandoverInfo) {
	p.mu.Lock()
	p.handover = h
	p.mu.Unlock()
	p.setState(control.StateHandedOver, fmt.Sprintf("held by campaign %s (hiro pid %d); the router waits for it to end", h.Campaign, h.OwnerPID))
}

// handover drains, stops a managed production and holds it for campaign.
func (p *prodCtl) handOver(ctx context.Context, campaign string, ownerPID int, drain time.Duration) (*control.HandoverResult, int, error) {
	ticks, ok := procfs.StartTicks(ownerPID)
	if !ok {
		return nil, http.StatusBadRequest, fmt.Errorf("lease owner pid %d is not running", ownerPID)
	}
	var res *control.HandoverResult
	code, err := 0, error(nil)
	derr := p.do(ctx, func(ctx context.Context) {
		p.mu.Lock()
		h := p.handover
		p.mu.Unlock()
		if h != nil && h.Campaign != campaign {
			code, err = http.StatusConflict, fmt.Errorf("production is already handed over to campaign %s (hiro pid %d)", h.Campaign, h.OwnerPID)
			return
		}
		if p.prof().Unmanaged {
			code, err = http.StatusConflict, fmt.Errorf("production %s is unmanaged: hiro cannot stop it for a campaign", p.name())
			return
		}
		res = &control.HandoverResult{Production: p.name()}
		res.Drain = p.s.drain(ctx, drain)
		p.restart = nil
		if sr := p.stopAny(ctx); sr != nil {
			res.Stopped, res.Stop = true, sr
		}
		p.owner = ticks
		p.mu.Lock()
		p.handover = &control.HandoverInfo{Campaign: campaign, OwnerPID: ownerPID, Since: time.Now(), Source: "control"}
		p.mu.Unlock()
		p.setState(control.StateHandedOver, fmt.Sprintf("handed over to campaign %s (hiro pid %d)", campaign, ownerPID))
		p.s.event("handover", map[string]any{"backend": p.name(), "campaign": campaign, "lease_owner_pid": ownerPID, "drain": res.Drain, "stopped": res.Stopped})
	})
	if derr != nil {
		return nil, http.StatusServiceUnavailable, derr
	}
	return res, code, err
}

// checkOwner takes production back when a hand-over's owner died.
func (p *prodCtl) checkOwner(ctx context.Context) {
	p.mu.Lock()
	h := p.handover
	p.mu.Unlock()
	if h == nil || h.Source != "control" {
		return
	}
	if t, ok := procfs.StartTicks(h.OwnerPID); ok && t == p.owner {
		return
	}
	p.s.event("lease_owner_died", map[string]any{"backend": p.name(), "campaign": h.Campaign, "lease_owner_pid": h.OwnerPID})
	p.takebackNow(ctx, h.Campaign)
}

// takeback ends campaign's hand-over (auto: the owner died).
func (p *prodCtl) takeback(ctx context.Context, campaign string, auto bool) (*control.Takeback, int, error) {
	var v *control.Takeback
	code, err := 0, error(nil)
	derr := p.do(ctx, func(ctx context.Context) {
		p.mu.Lock()
		h := p.handover
		p.mu.Unlock()
		if h != nil && h.Campaign != campaign {
			code, err = http.StatusConflict, fmt.Errorf("production is handed over to campaign %s, not %s", h.Campaign, campaign)
			return
		}
		if h == nil && p.state() == control.StateReady {
			v = p.verifyRunning(ctx)
			return
		}
		v = p.takebackNow(ctx, campaign)
	})
	if derr != nil {
		return nil, http.StatusServiceUnavailable, derr
	}
	return v, code, err
}

// takebackNow starts production, verifies it (readiness and a READY
// completion) and resumes serving. On the owning goroutine.
func (p *prodCtl) takebackNow(ctx context.Context, campaign string) *control.Takeback {
	p.mu.Lock()
	p.handover = nil
	p.mu.Unlock()
	p.owner = 0
	prof := p.prof()
	v := newTakeback(prof)
	if prof.Unmanaged {
		p.checkUnmanaged(ctx)
	} else if p.proc == nil && p.adopted == nil {
		res := p.start(ctx, "take back from campaign "+campaign)
		v.PID, v.ReadyAfterMS = res.PID, res.ReadyAfterMS
		if len(res.ModelIDs) > 0 {
			v.Model = production.PickModel(prof, res.ModelIDs)
		}
		if res.State != supervisor.StateReady {
			v.Error = res.Error
			if res.Failure != nil {
				v.Error = res.Failure.Error()
			}
			p.s.draining.Store(false)
			p.s.event("takeback", map[string]any{"backend": prof.Name, "campaign": campaign, "ok": false})
			return v
		}
	}
	vv := p.verifyRunning(ctx)
	vv.ReadyAfterMS = v.ReadyAfterMS
	if vv.PID == 0 {
		vv.PID = v.PID
	}
	p.s.draining.Store(false)
	p.s.event("takeback", map[string]any{"backend": prof.Name, "campaign": campaign, "ok": vv.OK})
	return vv
}

// verifyRunning checks production with the rules of readiness, the ready
// probe included (its reply judged by supervisor.JudgeReply, the one rule
// the supervisor, the restore and the switch use).
func (p *prodCtl) verifyRunning(ctx context.Context) *control.Takeback {
	prof := p.prof()
	v := newTakeback(prof)
	if p.proc != nil {
		v.PID = p.proc.PID()
	} else if p.adopted != nil {
		v.PID = p.adopted.PID
	}
	rr := supervisor.CheckReadyTracked(ctx, prof, p.current().hc, p.tracker())
	production.Fill(&v.Verification, prof, rr)
	if !rr.OK {
		p.failed(ctx, rr.Failure, "verify")
		return v
	}
	p.setState(control.StateReady, "verified ready (health, identity, ready probe)")
	return v
}

// newTakeback is a take-back answer for prof, one attempt made now.
func newTakeback(prof *config.Profile) *control.Takeback {
	now := time.Now().UTC()
	return &control.Takeback{Production: prof.Name, Verification: production.Verification{Attempts: 1, At: &now}}
}

// switchTo makes name (effective, when given) the production the router
// serves: the caller started and verified it.
// campaign, when production is handed over to it, ends that hand-over.
func (p *prodCtl) switchTo(ctx context.Context, name string, effective *config.Profile, campaign string) (*control.SwitchResult, int, error) {
	prof := effective
	if prof == nil {
		var err error
		if prof, err = p.s.cfg.Backend(name); err != nil {
			return nil, http.StatusBadRequest, err
		}
	}
	if prof.Name == "" {
		prof.Name = name
	}
	if prof.Name != name {
		return nil, http.StatusBadRequest, fmt.Errorf("effective_profile is named %q, not %q", prof.Name, name)
	}
	if err := prof.Validate(p.s.cfg.Path, "effective_profile"); err != nil {
		return nil, http.StatusBadRequest, err
	}
	rt, err := newRoute(prof, p.s.tr, p.s.upstreamError)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	var res *control.SwitchResult
	var prev *route
	code, serr := 0, error(nil)
	derr := p.do(ctx, func(ctx context.Context) {
		endHandover := false
		if p.handedOver() {
			p.mu.Lock()
			h := p.handover
			p.mu.Unlock()
			if campaign == "" || h == nil || h.Campaign != campaign {
				code, serr = http.StatusConflict, errors.New("production is handed over to a campaign; take it back first")
				return
			}
			endHandover = true
		}
		var adopted *supervisor.Record
		if !prof.Unmanaged {
			st, err := supervisor.Status(p.stateDir(), prof.Name)
			if err != nil || st.Status != supervisor.StatusRunning {
				code, serr = http.StatusConflict, fmt.Errorf("backend %s is not running as a recorded backend (start it with `hiro backend start %s` or through activation first)", prof.Name, shellquote.Quote(prof.Name))
				return
			}
			rec := st.Record
			adopted = &rec
		}
		old := p.current()
		prev = old
		res = &control.SwitchResult{Previous: old.name, Active: prof.Name}
		if p.proc != nil {
			res.PreviousPID = p.proc.PID()
			// The previous engine keeps running (the caller stops it);
			// its record stays so it can be stopped by name.
			_, _ = p.proc.Detach()
		} else if p.adopted != nil {
			res.PreviousPID = p.adopted.PID
		}
		p.proc, p.adopted, p.restart, p.foreign = nil, adopted, nil, nil
		p.pid.Store(0)
		if adopted != nil {
			p.pid.Store(int64(adopted.PID))
		}
		p.mu.Lock()
		// A new production: its own restarts, failures and canaries, and
		// "ready since" the switch.
		p.window, p.lastFailure, p.lastCanary = nil, nil, nil
		p.since = time.Now()
		p.mu.Unlock()
		p.rt.Store(rt)
		if endHandover {
			p.mu.Lock()
			p.handover = nil
			p.mu.Unlock()
			p.owner = 0
			p.s.draining.Store(false)
		}
		p.setState(control.StateReady, "switched from "+old.name)
		p.s.event("switch", map[string]any{"from": old.name, "to": prof.Name})
	})
	if derr != nil {
		return nil, http.StatusServiceUnavailable, derr
	}
	if serr == nil && res != nil && prev != nil && prev != rt {
		// Requests already on the previous production finish there
		// before the caller stops it.
		res.PreviousInFlight = waitIdle(ctx, prev, p.s.sc.DrainTimeout.Duration)
	}
	return res, code, serr
}

// waitIdle waits up to bound for rt's in-flight requests to end and
// returns how many were left.
func waitIdle(ctx context.Context, rt *route, bound time.Duration) int64 {
	deadline := time.Now().Add(bound)
	for rt.inFlight.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(2 * time.Millisecond)
	}
	return rt.inFlight.Load()
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
		// Adopted from an earlier router: its record stays as it was.
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
