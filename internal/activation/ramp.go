package activation

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/journal"
	"github.com/hiro-dev/hiro/internal/ramp"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// A progressive activation (`hiro activate --progressive`, docs/shadow.md
// "Progressive activation"): the new production is started and verified
// beside the old one, then the router ramps a growing share of
// production's requests to it (package ramp decides each step on the
// live comparison, the router acts). Mid-ramp "production" is still the
// old one for every command (no record is written until the end); the
// router's status shows the ramp. A completed ramp is switched and
// committed as any activation, with the ramp in the record; a reversed
// or stopped one puts the old production back (it never stopped
// serving) and is recorded as a failed activation with the ramp and its
// reason.

// rampPoll is how often the activation reads the ramp's account.
const rampPoll = 250 * time.Millisecond

// Ramp asks the router to ramp production's requests to prof under pol
// (owned by this process: if it dies, the router reverses by itself) and
// follows it until it ends (progress gets a line per step). ctx's end
// stops the ramp (every request back on production) and returns the
// account with ctx's error.
func (r *controlRouter) Ramp(ctx context.Context, prof *config.Profile, pol ramp.Policy, progress func(string)) (*evidence.RampResult, error) {
	st, err := r.c.RampStart(ctx, control.RampStartRequest{Candidate: prof.Name, Effective: prof, Policy: pol, OwnerPID: os.Getpid()})
	if err != nil {
		return nil, err
	}
	told := 0 // steps said
	for {
		res := st.Result
		for ; told < len(res.History); told++ {
			progress(fmt.Sprintf("ramp: step %d of %d: %s of production's requests to %s", told+1, len(res.Steps), ramp.Percent(res.History[told].Share), prof.Name))
		}
		if res.State != evidence.RampRamping {
			return res, nil
		}
		select {
		case <-ctx.Done():
			out, err := r.StopRamp(context.WithoutCancel(ctx), "interrupted: "+interruptText(ctx))
			if err != nil || out == nil {
				out = res
			}
			return out, ctx.Err()
		case <-time.After(rampPoll):
		}
		if st, err = r.c.RampStatus(ctx); err != nil && ctx.Err() == nil {
			return res, fmt.Errorf("reading the ramp's status from hiro serve: %w", err)
		}
		if st == nil || st.Result == nil {
			st = &control.RampStatus{Result: res}
		}
	}
}

// StopRamp ends the router's ramp (every request back on production,
// the candidate's requests in flight finished there) and returns its
// account.
func (r *controlRouter) StopRamp(ctx context.Context, reason string) (*evidence.RampResult, error) {
	st, err := r.c.RampStop(ctx, reason)
	if err != nil {
		return nil, err
	}
	return st.Result, nil
}

// ReverseRamp reverses the router's ramp, completed or not, and returns
// its account.
func (r *controlRouter) ReverseRamp(ctx context.Context, reason string) (*evidence.RampResult, error) {
	st, err := r.c.RampReverse(ctx, reason)
	if err != nil {
		return nil, err
	}
	return st.Result, nil
}

// candidateAtSwitch checks a completed ramp's candidate once more before
// the router makes it production: one that died after the last step
// (or no longer answers as it should) is not switched to. The router's
// ramp is reversed with the reason (every request back on production,
// which never stopped) and the reason is returned; "" when it is ready.
func (s *switcher) candidateAtSwitch(ctx context.Context) string {
	t0 := time.Now()
	name := "check " + s.next.Name + " before the switch"
	rr := supervisor.CheckReady(ctx, s.next, nil)
	if rr.OK {
		s.step(name, t0, true, fmt.Sprintf("ready: health %s %d (%s), model %s, READY reply %q", rr.Health.Path, rr.Health.StatusCode, rr.Health.State, s.next.Model, rr.Reply))
		return ""
	}
	why := "not ready"
	if rr.Failure != nil {
		why = rr.Failure.RootCause
	}
	why = fmt.Sprintf("the ramp completed but %s failed its check at the switch (%s)", s.next.Name, why)
	if out, err := s.opts.Router.ReverseRamp(context.WithoutCancel(ctx), why); err == nil && out != nil {
		s.rec.Ramp = out
	} else if s.rec.Ramp != nil {
		s.rec.Ramp.State, s.rec.Ramp.Reason, s.rec.Ramp.Share = evidence.RampReversed, why, 0
	}
	s.step(name, t0, false, why+"; every request is production's ("+s.old.Name+")")
	return why
}

// progressive runs the ramp step of a progressive activation; it returns
// why the activation fails ("" when the ramp completed).
func (s *switcher) progressive(ctx context.Context) string {
	t0 := time.Now()
	name := "router: ramp production's requests to " + s.next.Name
	res, err := s.opts.Router.Ramp(ctx, s.next, *s.opts.Progressive, s.opts.Progress)
	s.rec.Ramp = res
	if err != nil && res == nil {
		s.step(name, t0, false, err.Error())
		return "the router did not ramp: " + err.Error()
	}
	if res.State == evidence.RampCompleted {
		s.step(name, t0, true, fmt.Sprintf("%s (%s), every check passed at each", termtext.Plural(len(res.History), "step", "steps"), shares(res)))
		return s.candidateAtSwitch(ctx)
	}
	if res.State == evidence.RampRamping {
		// Interrupted while ramping and the stop did not answer.
		if out, serr := s.opts.Router.StopRamp(context.WithoutCancel(ctx), "interrupted"); serr == nil && out != nil {
			s.rec.Ramp, res = out, out
		}
	} else if out, serr := s.opts.Router.StopRamp(context.WithoutCancel(ctx), ""); serr == nil && out != nil {
		// Reversed by the router: the stop waits for the candidate's
		// requests in flight before it is stopped.
		s.rec.Ramp = out
	}
	why := res.Reason
	if why == "" && err != nil {
		why = err.Error()
	}
	s.step(name, t0, false, fmt.Sprintf("%s: %s; every request is production's (%s)", res.State, why, s.old.Name))
	if err != nil {
		return interruptText(ctx)
	}
	return fmt.Sprintf("the progressive ramp was %s: %s", res.State, why)
}

// shares lists a ramp's steps served ("1 %, 5 %, 25 %, 100 %").
func shares(r *evidence.RampResult) string {
	s := ""
	for i, h := range r.History {
		if i > 0 {
			s += ", "
		}
		s += ramp.Percent(h.Share)
	}
	return s
}

// StopRamp stops a progressive ramp the router of cfg runs (hiro
// rollback at any step of a ramp): every request goes back to
// production, and the activation that owns the ramp puts production back
// and records it. It returns the ramp's account, or nil when no ramp is
// routing.
func StopRamp(ctx context.Context, cfg *config.Config, reason string) (*evidence.RampResult, error) {
	r, _ := RouterFor(ctx, cfg).(*controlRouter)
	if r == nil {
		return nil, nil
	}
	st, err := r.c.RampStatus(ctx)
	if err != nil || !st.Active || st.Result == nil || st.Result.State != evidence.RampRamping {
		return nil, nil
	}
	return r.StopRamp(ctx, reason)
}

// canRamp refuses a progressive activation that cannot ramp: without a
// running router, or when either side needs the accelerator alone on
// this machine (they cannot serve side by side); the refusal names what
// works instead.
func canRamp(old, next *config.Profile, r Router) error {
	if next.ExclusiveAccelerator || old.ExclusiveAccelerator {
		who := next.Name
		if !next.ExclusiveAccelerator {
			who = old.Name
		}
		return refuse("backends."+who+".exclusive_accelerator", "%s needs the accelerator alone: %s and %s cannot serve side by side on this machine, so a progressive activation is impossible here; activate at once (without --progressive; the frozen-corpus semantic gate qualifies it), or serve the candidate on a second machine and activate that endpoint (an unmanaged profile) progressively", who, old.Name, next.Name)
	}
	if r == nil {
		return refuse("", "a progressive activation moves production's requests through hiro serve, and none runs for this configuration: start 'hiro serve' first, or activate at once without --progressive")
	}
	return nil
}

// rampJournal is the ramp in the journal entry: a section with one item
// per step served (share, both sides' live requests, the decision and
// why) and a validation row for the ramp's end.
func rampJournal(r *evidence.RampResult) (journal.Section, journal.ValidationRow) {
	sec := journal.Section{Title: "Progressive ramp", Status: "Completed"}
	for _, h := range r.History {
		item := fmt.Sprintf("%s of production's requests to %s: candidate %s; production %s: %s",
			ramp.Percent(h.Share), r.Candidate, sampleWords(h.Candidate), sampleWords(h.Production), h.Decision)
		if h.Reason != "" {
			item += " (" + h.Reason + ")"
		}
		if h.EndedAt != nil {
			item += fmt.Sprintf(", served %s", h.EndedAt.Sub(h.StartedAt).Round(time.Second))
		}
		sec.Items = append(sec.Items, item)
	}
	row := journal.ValidationRow{Check: fmt.Sprintf("Live comparison of %s with %s, step by step (%s)", r.Candidate, r.Production, shares(r)), Status: journal.StatusPassed,
		Result: fmt.Sprintf("completed: every step's error rate, latency and reply checks passed on at least %d candidate requests after a soak of %s", r.MinRequests, r.Soak)}
	switch r.State {
	case evidence.RampCompleted:
	case evidence.RampStopped:
		// Stopped by command (hiro rollback, a Ctrl-C of the activation)
		// before the comparison decided: the candidate did not fail it
		// (trial 12, S14: the journal said "failed" of a candidate that
		// answered every request).
		sec.Status = "Stopped"
		row.Status, row.Result = journal.StatusInconclusive, "stopped before the comparison decided (nothing failed): "+r.Reason
	default:
		sec.Status = "Failed"
		row.Status, row.Result = journal.StatusFailed, r.State+": "+r.Reason
	}
	return sec, row
}

// sampleWords is one side's requests of a step in words.
func sampleWords(s evidence.RampSample) string {
	out := fmt.Sprintf("%s, %d failed", termtext.Plural(s.Requests, "request", "requests"), s.Errors)
	if s.Checked > 0 {
		out += fmt.Sprintf(", %d of %d checked replies invalid", s.Invalid, s.Checked)
	}
	if s.Latency != nil {
		out += fmt.Sprintf(", p50 %.1f ms", s.Latency.P50)
	}
	return out
}
