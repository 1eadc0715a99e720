package activation

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/preflight"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/ramp"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Exit statuses of a switch.
const (
	// ExitSwitched: the new production serves, verified.
	ExitSwitched = 0
	// ExitRefused: refused (evidence, configuration, lock), or the new
	// production failed and the old one is back and verified.
	ExitRefused = 1
	// ExitAborted: interrupted; the old production is back and verified.
	ExitAborted = 3
	// ExitCritical: the old production could not be put back.
	ExitCritical = 4
)

// Options tune Activate and Rollback.
type Options struct {
	// Progress receives one line per step; nil discards.
	Progress func(string)
	// JournalDir is where the journal entry is written; "" writes none.
	JournalDir string
	// LeaseDir is the lease folder (package lease); default lease.Dir().
	LeaseDir string
	// Router, when not nil, is the running router to switch.
	Router Router
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Accept are the shortfalls the user accepted (Check); the record
	// names each. Its trust list and Unsigned also decide which
	// signatures a rollback acts on (the active record's).
	Accept Accept
	// NoPreflight activates without predicting the new production's
	// memory fit and host capabilities first; HostFacts, when set, are
	// the host predicted against instead of this one.
	NoPreflight bool
	HostFacts   *preflight.Host
	// Progressive, when not nil, ramps production's requests to the new
	// production step by step through the router (ramp.go) instead of
	// switching them at once; it needs a running router and a candidate
	// that can serve beside production.
	Progressive *ramp.Policy
}

func (o *Options) fill() {
	if o.Progress == nil {
		o.Progress = func(string) {}
	}

	if o.Now == nil {
		o.Now = time.Now
	}
}

// Outcome is what a switch did.
type Outcome struct {
	// Record is the switch's record (its evidence); nil when refused.
	Record *production.Record
	// ExitCode is one of the Exit constants.
	ExitCode int
	// Journal is the journal entry's path, relative to the journal folder.
	Journal string
}

// Activate switches cfg's production to the candidate of the evidence at
// path (see EvidencePath) when Check passes. A refusal returns a
// *RefusedError (or *production.BusyError) and starts nothing; otherwise
// the Outcome says what happened (its record is written). ctx
// cancellation stops the switch; the old production is put back with a
// bound of its own.
func Activate(ctx context.Context, cfg *config.Config, path string, opts Options) (*Outcome, error) {
	opts.fill()
	lock, err := production.TryLock(cfg.Path, "activate "+path)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	q, err := Check(ctx, cfg, path, opts.Now(), opts.Accept)
	if err != nil {
		return nil, err
	}
	if q.Active == nil {
		return nil, refuse("production.backend", "%s names no production: there is nothing to switch from; set [production] backend", cfg.Path)
	}
	if opts.Progressive != nil {
		if err := canRamp(q.Active.Profile, q.Profile, opts.Router); err != nil {
			return nil, err
		}
	}
	rec := &production.Record{Kind: production.KindActivate, Config: cfg.Path, From: &q.Active.Snapshot,
		To:       production.Snap(q.Profile, q.Variant, ""),
		Campaign: q.Evidence.ID, Evidence: q.Path, Accepted: q.Accepted, Trust: q.Trust,
		RollbackTo: &q.Active.Snapshot, RollbackSeq: q.Active.Seq}
	art := ""
	if q.Artifact != nil {
		art = ", artifact " + q.Artifact.Repo + "@" + q.Artifact.Revision + " verified again"
	}
	for _, a := range q.Accepted {
		opts.Progress(a)
	}
	opts.Progress(fmt.Sprintf("evidence of campaign %s holds: %s %s ago, fingerprints match%s, compared against the active production %s",
		q.Evidence.ID, q.Evidence.Verdict, opts.Now().Sub(*q.Evidence.FinishedAt).Round(time.Second), art, q.Active.Name))
	return run(ctx, cfg, rec, q.Active.Profile, q.Profile, opts)
}

// Rollback switches cfg's production back to the one the active
// activation replaced, when its recorded configuration still matches what
// would run (else a *RefusedError naming the field). It is verified the
// same way as an activation.
func Rollback(ctx context.Context, cfg *config.Config, opts Options) (*Outcome, error) {
	opts.fill()
	lock, err := production.TryLock(cfg.Path, "rollback")
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	a, err := production.Resolve(cfg)
	if err != nil {
		return nil, err
	}
	if a == nil || a.Record == nil {
		return nil, refuse("", "no activation to roll back: production is the configuration's %s", orNone(cfg.Production.Backend))
	}
	target := a.Record.RollbackTo
	if target == nil {
		return nil, refuse("", "nothing to roll back to: %s", noEarlier(cfg, a))
	}
	// The record says where to go back to: only one a trusted key signed.
	trust, err := opts.Accept.Verify(a.Record.Path, "production record")
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("previous production %s (%s)", target.Name, target.Source)
	prof, err := target.Check(cfg, what)
	if err != nil {
		var me *production.MismatchError
		if errors.As(err, &me) {
			return nil, refuse(me.Field, "%v; the %s no longer matches its record, so rolling back would not restore it", err, what)
		}
		return nil, refuse("backends."+target.Name, "%v", err)
	}
	to := *target
	to.Profile = prof
	to.Source = ""
	rec := &production.Record{Kind: production.KindRollback, Config: cfg.Path, From: &a.Snapshot, To: &to, Undid: a.Seq, Trust: trust}
	if a.Record.RollbackSeq > 0 {
		hist, err := production.History(cfg.Path)
		if err != nil {
			return nil, err
		}
		for _, r := range hist {
			if r.Seq == a.Record.RollbackSeq {
				rec.RollbackTo, rec.RollbackSeq = r.RollbackTo, r.RollbackSeq
			}
		}
	}
	return run(ctx, cfg, rec, a.Profile, prof, opts)
}

// noEarlier says why the active record a has nothing to roll back to:
// what the record did and, for a rollback (the only record left without
// a rollback target), that it reached the production from before any
// activation of cfg, so a switch back needs the evidence again.
func noEarlier(cfg *config.Config, a *production.Active) string {
	r := a.Record
	if r.Kind != production.KindRollback || r.From == nil {
		return fmt.Sprintf("%s (%s) records no earlier production to return to", a.Name, a.Source)
	}
	undone := fmt.Sprintf("record %d", r.Undid)
	campaign := ""
	if hist, err := production.History(cfg.Path); err == nil {
		for _, h := range hist {
			if h.Seq == r.Undid {
				if h.Kind == production.KindActivate {
					undone = fmt.Sprintf("activation %d", h.Seq)
				}
				if h.Campaign != "" {
					campaign = fmt.Sprintf(", as %s did with campaign %s", undone, h.Campaign)
				}
			}
		}
	}
	return fmt.Sprintf("%s came back by %s, which undid %s and replaced %s; %s is the production this configuration had before any activation, so there is none earlier to return to (a rollback is not undone by another): to switch to %s again, activate its evidence ('hiro activate EVIDENCE'%s)",
		a.Name, a.Source, undone, r.From.Name, a.Name, r.From.Name, campaign)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// holdResources takes the lease keys of a switch; a key held by a live
// campaign or command is a refusal naming it.
func holdResources(dir string, rec *production.Record, old, next *config.Profile, exclusive bool) (*lease.Hold, error) {
	if dir == "" {
		d, err := lease.Dir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	// The switch acts on the managed ones: it starts or stops them.
	var acted []*config.Profile
	for _, p := range []*config.Profile{old, next} {
		if !p.Unmanaged {
			acted = append(acted, p)
		}
	}
	keys := production.LeaseKeys(exclusive, acted...)
	h, err := lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "hiro " + rec.Kind, Config: rec.Config, Production: old.Name, Candidate: next.Name}, keys...)
	if err != nil {
		if errors.Is(err, lease.ErrHeld) {
			return nil, &RefusedError{Msg: err.Error(), Err: err}
		}
		return nil, err
	}
	return h, nil
}

// switcher is one switch's state.
type switcher struct {
	cfg       *config.Config
	rec       *production.Record
	intent    *production.Intent
	old, next *config.Profile
	opts      Options
}

func (s *switcher) step(name string, t0 time.Time, ok bool, detail string) {
	s.rec.Steps = append(s.rec.Steps, production.Step{Name: name, OK: ok, Detail: detail, At: time.Now().UTC(), DurationMS: time.Since(t0).Milliseconds()})
	mark := "done"
	if !ok {
		mark = "FAILED"
	}
	if detail != "" {
		detail = ": " + detail
	}
	s.opts.Progress(fmt.Sprintf("%s: %s%s", name, mark, detail))
}

// run does the switch from old to next and records it.
func run(ctx context.Context, cfg *config.Config, rec *production.Record, old, next *config.Profile, opts Options) (*Outcome, error) {
	s := &switcher{cfg: cfg, rec: rec, old: old, next: next, opts: opts}
	rec.StartedAt = opts.Now().UTC()
	exclusive := next.ExclusiveAccelerator || old.ExclusiveAccelerator
	k := production.Keeper{StateDir: cfg.StateDir}
	oldFound, _ := k.Look(old)
	oldRecorded := oldFound == production.FoundOwn || oldFound == production.FoundForeign
	if exclusive && !oldRecorded && !old.Unmanaged {
		if cr := supervisor.CheckReady(ctx, old, nil); cr.OK {
			return nil, refuse("", "production %s answers at %s but was not started by hiro (no running record in %s): hiro cannot stop it to free the accelerator; stop it and start it with 'hiro backend start %s', then retry", old.Name, old.BaseURL, cfg.StateDir, shellquote.Quote(old.Name))
		}
	}
	if exclusive && old.Unmanaged {
		return nil, refuse("", "the switch needs the accelerator exclusively but production %s is unmanaged: hiro cannot stop it", old.Name)
	}
	if f, st := k.Look(next); f == production.FoundForeign {
		return nil, refuse("backends."+next.Name, "%s is already running (pid %d) with another configuration; stop it with 'hiro backend stop %s' and retry", next.Name, st.PID, shellquote.Quote(next.Name))
	}
	if err := s.preflight(ctx, exclusive); err != nil {
		return nil, err
	}
	// One owner of production at a time: the endpoints of both
	// productions (and the accelerator for an exclusive switch) are held
	// for the switch, so no campaign or 'backend start|stop' acts meanwhile.
	hold, err := holdResources(opts.LeaseDir, rec, old, next, exclusive)
	if err != nil {
		return nil, err
	}
	defer hold.Release()
	s.intent = &production.Intent{Config: cfg.Path, Kind: rec.Kind, From: rec.From, To: rec.To, Router: opts.Router != nil, PID: os.Getpid(), StartedAt: rec.StartedAt}
	if opts.Router != nil && exclusive {
		// The name clients are told (a 503's reason): the kind and when,
		// never a pid (serve's clientReason names it an activation).
		s.intent.Handover = rec.Kind + "-" + rec.StartedAt.UTC().Format("20060102T150405.000Z")
	}
	if err := production.WriteIntent(s.intent); err != nil {
		return nil, err
	}
	opts.Progress(fmt.Sprintf("switching production from %s to %s%s", old.Name, next.Name, map[bool]string{true: " (exclusive: the old one stops first)", false: ""}[exclusive]))

	failed := ""
	oldStopped := false
	if exclusive {
		if opts.Router != nil {
			t0 := time.Now()
			err := opts.Router.Hold(ctx, s.intent.Handover)
			s.step("router: drain and hand production over", t0, err == nil, errText(err))
			if err != nil {
				failed = "the router did not hand production over: " + err.Error()
			}
		}
		if failed == "" {
			t0 := time.Now()
			if err := stop(ctx, cfg, old); err != nil {
				s.step("stop old production "+old.Name, t0, false, err.Error())
				failed = err.Error()
			} else {
				s.step("stop old production "+old.Name, t0, true, "the accelerator is free")
			}
			oldStopped = true
		}
	}
	if failed == "" {
		t0 := time.Now()
		vr := startVerified(ctx, cfg, next)
		rec.Verified = vr
		if vr.OK {
			s.step("start and verify "+next.Name, t0, true, fmt.Sprintf("ready: health %s, model %s, READY reply %q", vr.Health, vr.Model, vr.Reply))
		} else {
			failed = vr.Error
			s.step("start and verify "+next.Name, t0, false, vr.Error)
		}
	}
	if failed == "" && opts.Router != nil && opts.Progressive != nil {
		failed = s.progressive(ctx)
	}
	if failed == "" && opts.Router != nil {
		t0 := time.Now()
		err := opts.Router.Switch(ctx, next)
		rec.Router = err == nil
		s.step("router: point at "+next.Name, t0, err == nil, errText(err))
		if err != nil {
			failed = "the router did not switch: " + err.Error()
		}
		if rec.Ramp != nil {
			// The completed ramp routed every request to next; the
			// switch made it production: the ramp ends.
			if out, err := opts.Router.StopRamp(context.WithoutCancel(ctx), "switched: "+next.Name+" is production"); err == nil && out != nil {
				rec.Ramp = out
			}
		}
	}
	if failed == "" && ctx.Err() != nil {
		failed = interruptText(ctx)
	}
	if failed != "" {
		return s.putBack(ctx, failed, oldStopped)
	}
	// Commit: from here the new one is production.
	rec.Outcome = production.OutcomeSwitched
	rec.FinishedAt = opts.Now().UTC()
	if err := production.Append(rec); err != nil {
		return s.putBack(ctx, "writing the activation record: "+err.Error(), oldStopped)
	}
	s.intent.Committed = true
	_ = production.WriteIntent(s.intent)
	if !exclusive && old.Name != next.Name {
		t0 := time.Now()
		if old.Unmanaged {
			s.step("stop old production "+old.Name, t0, true, "unmanaged: left running, no longer routed")
		} else if err := stop(context.WithoutCancel(ctx), cfg, old); err != nil {
			s.step("stop old production "+old.Name, t0, false, err.Error())
		} else {
			s.step("stop old production "+old.Name, t0, true, "")
		}
	}
	rec.FinishedAt = opts.Now().UTC()
	if err := rewrite(rec); err != nil {
		return nil, err
	}
	_ = production.RemoveIntent(cfg.Path)
	out := &Outcome{Record: rec, ExitCode: ExitSwitched}
	out.Journal = s.journal()
	return out, nil
}

// preflight predicts the new production before the old one is stopped
// (an activation only: a rollback returns to what ran): a predicted
// failure is a refusal, nothing started or stopped; for a switch that
// is not exclusive, fitting only with the old production stopped is one
// too.
func (s *switcher) preflight(ctx context.Context, exclusive bool) error {
	if s.rec.Kind != production.KindActivate || s.opts.NoPreflight {
		return nil
	}
	h := s.opts.HostFacts
	if h == nil {
		h = preflight.ForProduction(ctx, s.cfg.StateDir, s.old.Name)
	}
	pr := preflight.Predict(s.next, h, exclusive)
	switch {
	case pr.Runs:
		s.opts.Progress(fmt.Sprintf("preflight: %s is predicted to run (%s)", s.next.Name, pr.Fit.Detail))
	case pr.Rule != "":
		return refuse("", "preflight: %s is predicted to fail on %s (%s, rule %s): %s; nothing was stopped ('hiro fit %s' shows the prediction; --no-preflight activates anyway)",
			s.next.Name, h.Source, pr.Class, pr.Rule, pr.Reason, shellquote.Quote(s.next.Name))
	default:
		s.opts.Progress(fmt.Sprintf("preflight: %s: %s", s.next.Name, pr.CannotPredict))
	}
	return nil
}

// putBack stops the new production and restores the old one, verified,
// with a bound of its own (ctx may be cancelled already).
func (s *switcher) putBack(ctx context.Context, why string, oldStopped bool) (*Outcome, error) {
	rec, cfg := s.rec, s.cfg
	rec.Error = why
	s.opts.Progress(fmt.Sprintf("the switch failed (%s): putting %s back", why, s.old.Name))
	bound := time.Duration(cfg.Production.RestoreAttempts)*(s.old.ReadyTimeout.Duration+s.old.StopGrace.Duration) + s.next.StopGrace.Duration + 30*time.Second
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	if s.next.Name != s.old.Name && !s.next.Unmanaged {
		t0 := time.Now()
		err := stop(rctx, cfg, s.next)
		s.step("stop "+s.next.Name, t0, err == nil, errText(err))
	}
	t0 := time.Now()
	var rr *evidence.Restored
	if s.opts.Router != nil && s.opts.Router.Held() {
		// The router stopped production for this switch: it takes it back.
		rr = s.opts.Router.Release(rctx)
	}
	if rr == nil || !rr.OK {
		rr = production.Keeper{StateDir: cfg.StateDir}.Restore(rctx, s.old, cfg.Production.RestoreAttempts, s.opts.Progress)
	}
	rec.Restored = rr
	code := ExitRefused
	if ctx.Err() != nil {
		code = ExitAborted
	}
	if rr.OK {
		s.step("put back and verify "+s.old.Name, t0, true, fmt.Sprintf("health %s, model %s, READY reply %q", rr.Health, rr.Model, rr.Reply))
		rec.Outcome = production.OutcomeFailed
		if s.opts.Router != nil && rec.Router {
			t1 := time.Now()
			err := s.opts.Router.Switch(rctx, s.old)
			s.step("router: point back at "+s.old.Name, t1, err == nil, errText(err))
		}
	} else {
		s.step("put back and verify "+s.old.Name, t0, false, rr.Error)
		rec.Outcome = production.OutcomeCritical
		code = ExitCritical
	}
	rec.FinishedAt = s.opts.Now().UTC()
	if err := production.Append(rec); err != nil {
		return nil, err
	}
	if rr.OK {
		_ = production.RemoveIntent(cfg.Path)
	}
	out := &Outcome{Record: rec, ExitCode: code}
	out.Journal = s.journal()
	return out, nil
}

// startVerified starts next and proves it ready: the keeper's
// production.Keeper.StartVerified (recorded from its first moment,
// detached, verified; one already running and recorded is verified, not
// started again).
func startVerified(ctx context.Context, cfg *config.Config, next *config.Profile) *evidence.Restored {
	return production.Keeper{StateDir: cfg.StateDir}.StartVerified(ctx, next, "activate")
}

// stop stops a managed profile's recorded process (production.Keeper.Stop).
func stop(ctx context.Context, cfg *config.Config, p *config.Profile) error {
	return production.Keeper{StateDir: cfg.StateDir}.Stop(ctx, p)
}

// rewrite writes an already appended record again (steps added after the
// commit).
func rewrite(r *production.Record) error {
	return production.Rewrite(r)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func interruptText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && c != context.Canceled {
		return c.Error()
	}
	return "interrupted"
}

// verifiedText is one line about a readiness proof.
func verifiedText(r *evidence.Restored) string {
	if r == nil {
		return "not verified"
	}
	if !r.OK {
		return "not ready: " + r.Error
	}
	return strings.TrimSpace(fmt.Sprintf("health %s; model %s; READY reply %q", r.Health, r.Model, r.Reply))
}
