package qualify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// prodWatchEvery is how often a campaign that runs beside production
// checks that production still serves (health and identity, no
// completion: supervisor.CheckServing).
var prodWatchEvery = 2 * time.Second

// prodWatchGrace is how long production may fail its checks in a row
// before it is lost, when the failure may pass (a slow answer on a
// loaded machine, a 5xx); a refused connection (nothing listens on
// production's port) is lost at once.
const prodWatchGrace = 30 * time.Second

// refused is CheckServing's problem when nothing listens.
const refused = "connection refused"

// ProductionLostError says production stopped answering during the
// campaign: a gate that compares with production ends on it at once.
// When a live 'hiro serve' serves production the campaign waits for its
// restart and runs the gate's production side again (campaign.runGate);
// otherwise, when production is not back within the bound, or when it is
// lost a second time in the same gate, the gate has no result and the
// campaign is aborted (exit 3).
type ProductionLostError struct {
	Production string
	// At is the first failed check of the streak; Problem its reason.
	At      time.Time
	Problem string
	// Note says what came of the loss when the campaign could not go
	// on ("hiro serve pid 42 did not have it back within 45s"); "" when
	// nothing was tried.
	Note string
}

func (e *ProductionLostError) Error() string {
	s := fmt.Sprintf("production %s stopped answering at %s (%s)", e.Production, e.At.UTC().Format("15:04:05 UTC"), e.Problem)
	if e.Note != "" {
		s += "; " + e.Note
	}
	return s
}

// productionWatch polls production while the gates run beside it. The
// first time production is lost it says so at once (logf), records it,
// and cancels lost: gates that ask production run under a context
// derived from it (productionUser).
type productionWatch struct {
	prof  *config.Profile
	hc    *http.Client // one client (one pool) for every check
	logf  func(string)
	every time.Duration

	lost   context.Context
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	mu  sync.Mutex
	err *ProductionLostError
	// first is the campaign's first loss, kept across resume
	// (evidence.Production.Lost).
	first *ProductionLostError
}

// watchProduction starts the watch of prof every interval.
func watchProduction(prof *config.Profile, every time.Duration, logf func(string)) *productionWatch {
	w := &productionWatch{prof: prof, logf: logf, every: every, stop: make(chan struct{}), done: make(chan struct{})}
	w.hc, _ = llm.HTTPClient(prof) // nil on error: CheckServing then says why
	w.lost, w.cancel = context.WithCancelCause(context.Background())
	go w.run(every)
	return w
}

// resume watches production again once it serves again after a loss (a
// router restarted it): the loss is forgotten (First keeps the
// campaign's first one), lost is a fresh context, and the polling
// starts over. Contexts guard made before stay cancelled. Called from
// the goroutine that runs the gates, as guard and close are.
func (w *productionWatch) resume() {
	if w == nil {
		return
	}
	w.halt()
	w.mu.Lock()
	w.err = nil
	w.lost, w.cancel = context.WithCancelCause(context.Background())
	w.stop, w.done = make(chan struct{}), make(chan struct{})
	w.mu.Unlock()
	go w.run(w.every)
}

func (w *productionWatch) run(every time.Duration) {
	defer close(w.done)
	t := time.NewTicker(every)
	defer t.Stop()
	var first time.Time // of the failing streak; zero while production serves
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		r := supervisor.CheckServing(w.lost, w.prof, w.hc)
		if r.OK {
			first = time.Time{}
			continue
		}
		if first.IsZero() {
			first = now
		}
		if r.Problem != refused && now.Sub(first) < prodWatchGrace {
			continue
		}
		w.declare(first, r.Problem)
		return
	}
}

// declare records the loss (the first one only), says it and cancels
// lost.
func (w *productionWatch) declare(at time.Time, problem string) *ProductionLostError {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.err = &ProductionLostError{Production: w.prof.Name, At: at, Problem: problem}
	if w.first == nil {
		w.first = w.err
	}
	w.logf(w.err.Error() + ": a gate comparing with production ends at once, with no result")
	w.cancel(w.err)
	return w.err
}

// confirm checks production now, once, and declares it lost when
// nothing listens on its port: a gate whose requests to production
// failed asks it (a refused connection fails a request faster than the
// watch polls). A slow answer is left to the watch's grace.
func (w *productionWatch) confirm(ctx context.Context) *ProductionLostError {
	if w == nil {
		return nil
	}
	if l := w.Lost(); l != nil {
		return l
	}
	now := time.Now()
	if r := supervisor.CheckServing(ctx, w.prof, w.hc); r.Problem == refused {
		return w.declare(now, r.Problem)
	}
	return nil
}

// Lost is the loss, nil while production serves (or was not watched).
func (w *productionWatch) Lost() *ProductionLostError {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// First is the campaign's first loss of production, kept when the watch
// resumed after it; nil when production never stopped answering.
func (w *productionWatch) First() *ProductionLostError {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.first
}

// halt stops the polling goroutine and waits for it.
func (w *productionWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// close ends the watch and waits for its goroutine.
func (w *productionWatch) close() {
	if w == nil {
		return
	}
	w.halt()
	if w.hc != nil {
		w.hc.CloseIdleConnections()
	}
}

// guard returns ctx cancelled, with the loss as its cause, when
// production is lost; release stops that.
func (w *productionWatch) guard(ctx context.Context) (gctx context.Context, release func()) {
	if w == nil {
		return ctx, func() {}
	}
	gctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(w.lost, func() { cancel(context.Cause(w.lost)) })
	return gctx, func() { stop(); cancel(nil) }
}

// productionUser is a gate that asks production all along its run (a
// request gate comparing with production): a campaign watching
// production ends it when production stops answering. A gate that asks
// production in one step only (the semantic gate's production side)
// guards that step itself (Handle.guardProduction). The shadow gate is
// neither: the router in front of production restarts it.
type productionUser interface {
	usesProduction(h *Handle) bool
}

func (p *PerfCompare) usesProduction(h *Handle) bool {
	return p.CompareWithProduction && !h.Exclusive && h.Production != nil
}

// lostProduction is the loss that cut a gate (or its step that asks
// production) short: the cause of gctx, the gate's error, or, when the
// step ended with an error, a check made now that finds production
// gone. nil otherwise, and always nil without a watch.
func (h *Handle) lostProduction(gctx context.Context, err error) *ProductionLostError {
	var lost *ProductionLostError
	if errors.As(context.Cause(gctx), &lost) || errors.As(err, &lost) {
		return lost
	}
	if err != nil {
		return h.shared.watch.confirm(context.WithoutCancel(gctx))
	}
	return nil
}

// servingAtEnd is the check of health and identity at the end of a
// campaign that did not stop production.
func servingAtEnd(ctx context.Context, prof *config.Profile) *evidence.ServingCheck {
	r := supervisor.CheckServing(ctx, prof, nil)
	c := &evidence.ServingCheck{OK: r.OK, At: time.Now().UTC(), Error: r.Problem}
	if r.OK {
		c.Model = prof.Model
	}
	return c
}

// guardProduction returns ctx cancelled, with a *ProductionLostError as
// its cause, when the campaign's watch finds production lost; release
// stops that. Without a watch (an exclusive campaign, production not
// serving before, a gate run alone) it returns ctx.
func (h *Handle) guardProduction(ctx context.Context) (context.Context, func()) {
	return h.shared.watch.guard(ctx)
}

// productionRerun: a request gate's requests to production interleave
// with the candidate's (alternating, or ABBA phases), so its production
// side cannot be measured again alone: the whole gate runs again.
func (p *PerfCompare) productionRerun() string {
	return "the whole gate (production's requests interleave with the candidate's, so both sides are measured again)"
}
