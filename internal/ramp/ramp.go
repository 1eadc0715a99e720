package ramp

import (
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// Sides of a request.
const (
	SideProduction = 0
	SideCandidate  = 1
)

// Ramp is one progressive activation's state: the step serving, its two
// samples, production's from the earlier steps and the account. Tick
// decides (Decide) and applies the decision; it contacts nothing. Not
// safe for concurrent use: the router guards it.
type Ramp struct {
	pol       Policy
	salt      string
	step      int
	stepStart time.Time
	cur       [2]Sample
	earlier   Sample
	res       evidence.RampResult
	// since counts both sides' answered requests and failures since the
	// last point of res.Series.
	since [2][2]int
	// looks counts the step's looks, lookN the candidate's requests at
	// the last one; soakLooked says the look at the soak's end was taken.
	looks, lookN int
	soakLooked   bool
	// shortHold says the step's last look held for too few candidate
	// requests: its reason is then a count, said anew from the sample
	// shown (countReason).
	shortHold bool
	// soakHold says the step's last look held for the soak alone (no
	// check failed, the step had served less than the soak): its reason
	// is then the soak clock, said anew as of the moment it is read
	// (ResultAt).
	soakHold bool
}

// New starts a ramp from production to candidate under pol (filled) at
// now, at its first step.
func New(pol Policy, candidate, production string, now time.Time) *Ramp {
	r := &Ramp{pol: pol, salt: now.UTC().Format(time.RFC3339Nano), stepStart: now}
	r.res = evidence.RampResult{Candidate: candidate, Production: production, Steps: append([]float64(nil), pol.Steps...),
		Soak: pol.Soak.Duration.String(), MinRequests: pol.MinRequests, State: evidence.RampRamping,
		Share: pol.Steps[0], StartedAt: now.UTC()}
	r.res.History = []evidence.RampStep{{Share: pol.Steps[0], StartedAt: now.UTC(), Decision: evidence.RampHold, Reason: "started"}}
	return r
}

// Salt is the ramp's salt of Bucket.
func (r *Ramp) Salt() string { return r.salt }

// Share is the candidate's share now (0 once reversed or stopped).
func (r *Ramp) Share() float64 { return r.res.Share }

// Active reports whether the ramp still routes (ramping or completed,
// until the activation switches or stops it).
func (r *Ramp) Active() bool {
	return r.res.State == evidence.RampRamping || r.res.State == evidence.RampCompleted
}

// Step is the index of the step serving (in the policy's steps).
func (r *Ramp) Step() int { return r.step }

// Observe counts one answered request of side (SideProduction or
// SideCandidate) routed during step (Step when it was routed): a request
// of an earlier step, answered after its step ended, is not counted in
// the next one.
func (r *Ramp) Observe(step, side int, failed bool, latency time.Duration, checked, invalid bool) {
	if r.res.State != evidence.RampRamping || step != r.step {
		return
	}
	r.cur[side].Add(failed, latency, checked, invalid)
	r.since[side][0]++
	if failed {
		r.since[side][1]++
	}
}

// Resent counts a candidate request sent to production because the
// candidate failed before any byte of its reply reached the client
// (evidence.RampResult.Resent), also once the ramp ended: the request
// was routed while it ran.
func (r *Ramp) Resent() { r.res.Resent++ }

// CutMidReply counts a candidate reply that broke after bytes had
// reached the client (evidence.RampResult.CutMidReply), also once the
// ramp ended.
func (r *Ramp) CutMidReply() { r.res.CutMidReply++ }

// point adds a look at now to the series (the share after the look),
// pooling neighbouring points pairwise when the series is full.
func (r *Ramp) point(now time.Time) {
	c, p := r.since[SideCandidate], r.since[SideProduction]
	r.since = [2][2]int{}
	r.res.Series = append(r.res.Series, evidence.RampPoint{At: now.UTC(), Share: r.res.Share,
		CandidateRequests: c[0], CandidateErrors: c[1], ProductionRequests: p[0], ProductionErrors: p[1]})
	if len(r.res.Series) <= evidence.MaxRampPoints {
		return
	}
	s := r.res.Series
	out := s[:0]
	for i := 0; i < len(s); i += 2 {
		q := s[i]
		if i+1 < len(s) {
			n := s[i+1]
			q.At, q.Share = n.At, n.Share
			q.CandidateRequests += n.CandidateRequests
			q.CandidateErrors += n.CandidateErrors
			q.ProductionRequests += n.ProductionRequests
			q.ProductionErrors += n.ProductionErrors
		}
		out = append(out, q)
	}
	r.res.Series = out
}

// Tick decides the current step at now (down: see Input.Down) and
// applies the decision: advance starts the next step with fresh samples,
// complete ends the ramp with the candidate at share 1, reverse ends it
// with share 0. A ramp no longer ramping is not decided again.
func (r *Ramp) Tick(now time.Time, down string) Decision {
	if r.res.State != evidence.RampRamping {
		return Decision{Action: r.res.State}
	}
	in := Input{Share: r.res.Share, Last: r.step == len(r.pol.Steps)-1, Elapsed: now.Sub(r.stepStart),
		Candidate: r.cur[SideCandidate], Production: r.cur[SideProduction], Earlier: r.earlier, Down: down}
	h := &r.res.History[len(r.res.History)-1]
	h.Candidate, h.Production = r.cur[SideCandidate].Evidence(), r.cur[SideProduction].Evidence()
	var d Decision
	if n := in.Candidate.Requests; down != "" || n >= max(1, 2*r.lookN) || (!r.soakLooked && in.Elapsed >= r.pol.Soak.Duration) {
		// A look (see LookAlpha): the checks read the samples.
		r.looks++
		r.lookN = n
		r.soakLooked = r.soakLooked || in.Elapsed >= r.pol.Soak.Duration
		in.Look = r.looks
		d = Decide(r.pol, in)
		h.Checks, h.Looks = d.Checks, r.looks
		// Decide's order: a failed check, then the soak, then the count.
		r.shortHold = d.Action == evidence.RampHold && in.Elapsed >= r.pol.Soak.Duration && n < r.pol.MinRequests
		r.soakHold = d.Action == evidence.RampHold && in.Elapsed < r.pol.Soak.Duration
		h.Reason = d.Reason
	} else {
		// Between looks only the step timeout decides: the last look's
		// checks stand, and so does its reason, unless it is a count.
		d = Decision{Action: evidence.RampHold, Reason: fmt.Sprintf("next look at %d candidate requests (%d now; look %d held: %s)", max(1, 2*r.lookN), n, r.looks, h.Reason)}
		if c, ok := r.countReason(n); ok {
			d.Reason = c
			h.Reason = c
		}
		if r.pol.StepTimeout.Duration > 0 && in.Elapsed >= r.pol.StepTimeout.Duration {
			d = Decision{Action: evidence.RampReverse, Reason: fmt.Sprintf("still undecided after the step timeout (%s)", r.pol.StepTimeout.Duration)}
			h.Reason = d.Reason
		}
		d.Checks = h.Checks
	}
	if d.Action == evidence.RampHold && r.pol.MaxDuration.Duration > 0 && now.Sub(r.res.StartedAt) >= r.pol.MaxDuration.Duration {
		// The ramp's overall bound: traffic that stopped, or checks that
		// cannot decide, do not hold the two backends for ever.
		d = Decision{Action: evidence.RampReverse, Checks: d.Checks,
			Reason: fmt.Sprintf("the ramp's bound (max_duration %s) passed %s after its start with the step at %s still holding (%s); the old backend serves every request again",
				r.pol.MaxDuration.Duration, now.Sub(r.res.StartedAt).Round(time.Second), Percent(r.res.Share), d.Reason)}
		h.Reason = d.Reason
	}
	h.Decision = d.Action
	switch d.Action {
	case evidence.RampAdvance:
		r.endStep(now)
		r.earlier = r.earlier.Merge(r.cur[SideProduction])
		r.cur = [2]Sample{}
		r.looks, r.lookN, r.soakLooked, r.shortHold, r.soakHold = 0, 0, false, false, false
		r.step++
		r.stepStart = now
		r.res.Step, r.res.Share = r.step, r.pol.Steps[r.step]
		r.res.History = append(r.res.History, evidence.RampStep{Share: r.res.Share, StartedAt: now.UTC(), Decision: evidence.RampHold, Reason: "started"})
	case evidence.RampComplete:
		r.endStep(now)
		r.end(now, evidence.RampCompleted, "")
	case evidence.RampReverse:
		r.endStep(now)
		r.end(now, evidence.RampReversed, fmt.Sprintf("reversed at %s: %s", Percent(r.res.Share), d.Reason))
		r.res.Share = 0
	}
	r.point(now)
	return d
}

// Stop ends a ramp that is ramping at now, as state (evidence.RampStopped
// by command, RampReversed when the router reverses it for a reason of
// its own: the activation that owned it is gone) with reason: share 0,
// production serves every request. A ramp that ended (completed
// included: the activation switches) keeps its end.
func (r *Ramp) Stop(now time.Time, state, reason string) {
	if r.res.State != evidence.RampRamping {
		return
	}
	h := &r.res.History[len(r.res.History)-1]
	h.Candidate, h.Production = r.cur[SideCandidate].Evidence(), r.cur[SideProduction].Evidence()
	h.Decision, h.Reason = evidence.RampReverse, reason
	r.endStep(now)
	r.end(now, state, reason)
	r.res.Share = 0
	r.point(now)
}

// Reverse ends a ramp that still routes (ramping, or completed but not
// yet switched: the candidate went down before the activation made it
// production) at now as reversed with reason: share 0, production
// serves every request. It reports whether it did (false once reversed
// or stopped).
func (r *Ramp) Reverse(now time.Time, reason string) bool {
	switch r.res.State {
	case evidence.RampRamping:
		r.Stop(now, evidence.RampReversed, reason)
		return true
	case evidence.RampCompleted:
		r.end(now, evidence.RampReversed, reason)
		r.res.Share = 0
		r.point(now)
		return true
	}
	return false
}

func (r *Ramp) endStep(now time.Time) {
	t := now.UTC()
	r.res.History[len(r.res.History)-1].EndedAt = &t
}

func (r *Ramp) end(now time.Time, state, reason string) {
	t := now.UTC()
	r.res.State, r.res.Reason, r.res.EndedAt = state, reason, &t
}

// Result is the account as of the last tick, the current step's samples
// included (ResultAt without a clock: a soak hold keeps its look's time).
func (r *Ramp) Result() evidence.RampResult { return r.ResultAt(time.Time{}) }

// ResultAt is the account at now, the current step's samples included
// (the requests answered so far, not only those of the last tick): a
// hold for too few requests is said from that same sample (countReason),
// so the count `hiro status` shows and the hold's reason never disagree;
// a hold for the soak says the soak clock at now (soakReason), not the
// time the last look read; any other hold read on fewer requests than
// the step has now says the look it was and the count of the next. A
// zero now reads the clock of the last look.
func (r *Ramp) ResultAt(now time.Time) evidence.RampResult {
	res := r.res
	res.Steps = append([]float64(nil), r.res.Steps...)
	res.History = append([]evidence.RampStep(nil), r.res.History...)
	res.Series = append([]evidence.RampPoint(nil), r.res.Series...)
	if r.res.State == evidence.RampRamping {
		h := &res.History[len(res.History)-1]
		h.Candidate, h.Production = r.cur[SideCandidate].Evidence(), r.cur[SideProduction].Evidence()
		if c, ok := r.countReason(h.Candidate.Requests); ok && h.Decision == evidence.RampHold {
			h.Reason = c
		} else if c, ok := r.soakReason(now, h.Candidate.Requests); ok && h.Decision == evidence.RampHold {
			h.Reason = c
		} else if h.Decision == evidence.RampHold && r.looks > 0 && h.Candidate.Requests > r.lookN {
			// The reason is the last look's, on fewer requests than
			// the step has now: say which, and when the next look is.
			h.Reason += fmt.Sprintf(" (look %d, at %d candidate requests; the next look at %d)", r.looks, r.lookN, max(1, 2*r.lookN))
		}
	}
	return res
}

// soakReason is the reason of the current step's hold when its last look
// held for the soak alone, said at now for n candidate requests: the
// step's time served so far, then when the next look comes (at the
// soak's end or at twice the last look's count, whichever is first) and
// what the last look was. ok is false for a zero now or another hold.
func (r *Ramp) soakReason(now time.Time, n int) (reason string, ok bool) {
	if now.IsZero() || !r.soakHold || r.looks == 0 {
		return "", false
	}
	soak := r.pol.Soak.Duration
	served := max(0, now.Sub(r.stepStart)).Round(time.Second)
	last := fmt.Sprintf("look %d, at %d candidate requests, held for the soak", r.looks, r.lookN)
	if now.Sub(r.stepStart) >= soak {
		return fmt.Sprintf("soaking: %s of %s served, soak done: the next tick looks at the %d candidate requests (%s)", min(served, soak), soak, n, last), true
	}
	next := max(1, 2*r.lookN)
	if n >= next {
		return fmt.Sprintf("soaking: %s of %s served; the next tick looks at the %d candidate requests (%s)", served, soak, n, last), true
	}
	return fmt.Sprintf("soaking: %s of %s served; the next look at the soak's end or at %d candidate requests (%d now; %s)", served, soak, next, n, last), true
}

// countReason is the reason of the current step's hold when it holds
// for its count of candidate requests, said for n of them: none yet
// before the step's first look, or fewer than MinRequests after a look
// that held for that (the next look comes at twice the last one's
// count, at the first tick that finds that many: a count already past it
// is said to be looked at by the next tick, never "at" a count already
// passed). ok is false when the hold is for another reason (soaking, an
// inconclusive check), which stands as the last look gave it.
func (r *Ramp) countReason(n int) (reason string, ok bool) {
	switch {
	case r.looks == 0 && n == 0:
		return "no candidate request yet", true
	case r.looks == 0:
		return fmt.Sprintf("%d candidate requests, not looked at yet (the step's first look comes at the next tick)", n), true
	case !r.shortHold:
		return "", false
	case n < r.pol.MinRequests:
		return fmt.Sprintf("%d of the %d candidate requests a step advances on", n, r.pol.MinRequests), true
	}
	if next := max(1, 2*r.lookN); n < next {
		return fmt.Sprintf("%d candidate requests, at least the %d a step advances on: the next look, at %d, decides", n, r.pol.MinRequests, next), true
	}
	// Past the next look's count: the look is taken at the router's next
	// tick, on the requests answered by then (these n at the least).
	return fmt.Sprintf("%d candidate requests, at least the %d a step advances on: the next tick looks at them and decides", n, r.pol.MinRequests), true
}
