package serve

import (
	"context"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// launchCanary sends the bounded canary completion (the watch's
// effCanaryLaunch: a ready production, no canary in flight, no request
// succeeded within the interval). Its requests run in probeCanary, beside
// the owning goroutine; its outcome comes back as evCanaryDone.
func (p *prodCtl) launchCanary(ctx context.Context) {
	rt := p.current()
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
		pctx, cancel := context.WithTimeout(ctx, supervisor.DefaultHealthRequestTimeout)
		ps := engine.OllamaPS(pctx, rt.hc, rt.prof.BaseURL, rt.prof.Model)
		cancel()
		if keepAlive, o.skipped = ps.CanaryKeepAlive(time.Now()); o.skipped != "" {
			return o
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

// canaryResult records a canary's outcome, on the owning goroutine (the
// watch's effCanaryJudge: step dropped an outcome about a production no
// longer served or no longer ready); a failure comes back as the event
// to decide on (evFailure, or evExited when the process died meanwhile).
func (p *prodCtl) canaryResult(ctx context.Context, o canaryOutcome) (event, bool) {
	rt, rr := o.rt, o.rr
	if o.skipped != "" {
		p.canarySkipped(rt, o.skipped)
		return event{}, false
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
		return event{}, false
	}
	p.s.metrics.canaries.WithLabelValues(rt.name, "failed").Inc()
	if p.exitedMeanwhile() {
		return p.died(ctx, "canary: "+c.Error), true
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
	return p.sense(evFailure, f, "canary"), true
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
