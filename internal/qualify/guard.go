package qualify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// ProductionConfigHash returns the SHA-256 (hex) of production's whole
// configuration and the per-file digests: production.ConfigHash, the one
// definition of "restored exactly". The evidence compares it before and
// after a campaign.
func ProductionConfigHash(p *config.Profile) (string, map[string]string) {
	return production.ConfigHash(p)
}

// RestoreResult is the outcome of restoring production.
type RestoreResult = evidence.Restored

// Restore starts the production profile and proves it ready with the
// supervisor's readiness, the one rule everywhere (health, identity, and
// the profile's bounded probe completion, whose default prompt is the
// READY prompt, its reply judged by supervisor.JudgeReply against
// ready_probe.expect): what 'hiro backend start' and the router call
// ready is restored. It tries up to attempts times, each bounded by the
// profile's ready timeout; a server already answering ready (someone
// restarted it) counts as restored. Production's state record is read
// first: a process of hiro's that is alive is verified (waited for while
// it starts) and never started a second time onto its own port; when it
// answers but fails the rule, the attempt reports that answer (e.g. `the
// reply "READY w0" is not the expected "READY"`). The started engine is
// detached (recorded in the state directory) so it outlives hiro.
// progress may be nil.
func Restore(ctx context.Context, cfg *config.Config, prod *config.Profile, attempts int, progress func(string)) *RestoreResult {
	if progress == nil {
		progress = func(string) {}
	}
	if attempts < 1 {
		attempts = 1
	}
	start := time.Now()
	rr := &RestoreResult{}
	var errs []string
	for i := 1; i <= attempts; i++ {
		rr.Attempts = i
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err().Error())
			break
		}
		progress(fmt.Sprintf("restoring production %s (attempt %d/%d)", prod.Name, i, attempts))
		done, held := resumeRestore(ctx, cfg, prod, rr, progress)
		if done {
			rr.OK = true
			break
		}
		if held != "" {
			// hiro's own process holds production's port: starting
			// another would only fail on it.
			errs = append(errs, fmt.Sprintf("attempt %d: %s", i, held))
			continue
		}
		ok, answered := verifyReady(ctx, prod, rr)
		if ok {
			// Already serving (restarted by someone else, or a record we lost).
			rr.OK = true
			break
		}
		answering := ""
		if answered {
			answering = fmt.Sprintf(" (a server not recorded by hiro answers at %s: %s)", prod.BaseURL, rr.Error)
		}
		if prod.Unmanaged {
			errs = append(errs, fmt.Sprintf("attempt %d: production %s is unmanaged and is not ready at %s: %s", i, prod.Name, prod.BaseURL, rr.Error))
			time.Sleep(time.Second)
			continue
		}
		proc, res := supervisor.Start(ctx, prod, supervisor.Options{StateDir: cfg.StateDir, Attempt: "restore", OnStart: func(p *supervisor.Process) {
			// Recorded from the start (pid, process group, start time): a
			// hiro killed during the restore leaves a record the next one
			// can prove, wait for and adopt (resumeRestore).
			_ = supervisor.WriteRecord(cfg.StateDir, p.Record())
		}})
		if res.State != supervisor.StateReady {
			why := res.Error
			if res.Failure != nil {
				why = res.Failure.Error()
			}
			errs = append(errs, fmt.Sprintf("attempt %d: %s%s", i, why, answering))
			continue
		}
		if _, err := proc.Detach(); err != nil {
			errs = append(errs, fmt.Sprintf("attempt %d: production is running but its state record could not be written: %v", i, err))
		}
		if len(res.ModelIDs) > 0 {
			rr.Model = res.ModelIDs[0]
		}
		if ok, _ := verifyReady(ctx, prod, rr); ok {
			rr.OK = true
			break
		}
		errs = append(errs, fmt.Sprintf("attempt %d: %s", i, rr.Error))
	}
	now := time.Now().UTC()
	rr.At = &now
	rr.ReadyAfterMS = time.Since(start).Milliseconds()
	if !rr.OK {
		rr.Error = strings.Join(errs, "; ")
	} else {
		rr.Error = ""
	}
	return rr
}

// resumeRestore handles production's state record before anything is
// started: a production start that an earlier hiro began and did not see
// through (killed while restoring), or production hiro started and keeps.
// When the record names a live process whose pid, process group and
// start time match, hiro waits for it to become ready (bounded by the
// profile's ready timeout) and adopts it, instead of starting a second
// one that would fail on the port. A recorded process that does not
// become ready in time is stopped (it is provably hiro's) and may be
// started afresh. One that answers but fails the readiness rule (a wrong
// reply, another model: waiting or restarting changes nothing) is left
// running and reported: held is that reason, naming the pid. done is
// true when production is ready and verified.
func resumeRestore(ctx context.Context, cfg *config.Config, prod *config.Profile, rr *RestoreResult, progress func(string)) (done bool, held string) {
	if prod.Unmanaged {
		return false, ""
	}
	st, err := supervisor.Status(cfg.StateDir, prod.Name)
	if err != nil || st.Status != supervisor.StatusRunning {
		return false, ""
	}
	progress(fmt.Sprintf("production %s is already starting or running (pid %d, recorded %s): waiting for it to be ready", prod.Name, st.PID, st.StartedAt.Format(time.RFC3339)))
	wctx, cancel := context.WithTimeout(ctx, prod.ReadyTimeout.Duration)
	defer cancel()
	for {
		ok, answered := verifyReady(wctx, prod, rr)
		if ok {
			break
		}
		if answered {
			return false, fmt.Sprintf("production %s (pid %d, started by hiro) is running but not ready: %s; it was left running and not started again", prod.Name, st.PID, rr.Error)
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return false, fmt.Sprintf("interrupted while waiting for production %s (pid %d) to be ready: %v", prod.Name, st.PID, ctx.Err())
			}
			progress(fmt.Sprintf("production %s (pid %d) did not become ready within %s (%s): stopping it to start it afresh", prod.Name, st.PID, prod.ReadyTimeout.Duration, rr.Error))
			_, _, _ = supervisor.StopRecorded(context.WithoutCancel(ctx), cfg.StateDir, prod.Name, 0)
			return false, ""
		case <-time.After(250 * time.Millisecond):
		}
	}
	// Adopted: the record now says when it was proven ready.
	rec := st.Record
	rec.ReadyAt = time.Now()
	_ = supervisor.WriteRecord(cfg.StateDir, rec)
	rr.Adopted = true
	progress(fmt.Sprintf("production %s (pid %d) adopted: ready and verified", prod.Name, st.PID))
	return true, ""
}

// verifyReady checks prod once with the supervisor's readiness
// (supervisor.CheckReady: health, identity, the bounded probe completion
// judged by supervisor.JudgeReply) and fills rr's Health, Model, Reply
// and Error. answered is true when not ready is the server's settled
// answer (supervisor.ReadyResult.Answered: a reply that fails the rule,
// another model).
func verifyReady(ctx context.Context, prod *config.Profile, rr *RestoreResult) (ok, answered bool) {
	cr := supervisor.CheckReady(ctx, prod, nil)
	rr.Health = fmt.Sprintf("%s %d (%s)", cr.Health.Path, cr.Health.StatusCode, cr.Health.State)
	if len(cr.ModelIDs) > 0 {
		rr.Model = pickModel(prod, cr.ModelIDs)
	}
	rr.Reply = cr.Reply
	if !cr.OK {
		if cr.Failure != nil {
			rr.Error = cr.Failure.Error()
			if cr.Advice != "" { // TLS or the key: which setting to fix
				rr.Error += "; " + cr.Advice
			}
		} else {
			rr.Error = "not ready"
		}
		return false, cr.Answered
	}
	rr.Error = ""
	return true, false
}

// pickModel returns the reported id that is prod's model as its engine
// compares ids (Ollama: with or without ":latest"), else the first.
func pickModel(prod *config.Profile, ids []string) string {
	if e, err := engine.Lookup(prod.Engine); err == nil {
		for _, id := range ids {
			if e.MatchModel(prod.Model, []string{id}) {
				return id
			}
		}
	}
	return ids[0]
}

// RecoverResult reports what Recover did with one lease.
type RecoverResult struct {
	Lease    *Lease
	Restored *RestoreResult
	// Event is the event file written into a finished campaign's
	// evidence folder (recovery never rewrites finished evidence).
	Event string
	Err   error
	// Warning is a lease that was refused or set aside (unreadable, not
	// the user's): reported, it does not stop the others' recovery.
	Warning error
}

// ErrLeaseHeld is returned by Recover for a lease whose campaign is still
// running.
var ErrLeaseHeld = errors.New("the campaign holding production is still running")

// Recover settles every lease in dir whose holder died (hiro was killed
// mid-campaign, or while restoring production): it takes the lease over
// (lease.Claim: one recoverer at a time), stops the candidate the campaign
// left running (only through a record whose pid, process group and start
// time match), restores production when the campaign had stopped it (a
// restore cut short is resumed: see Restore), and releases the lease once
// production is verified. The campaign's evidence is finalized as aborted
// only when the campaign never finished; a finished campaign's evidence is
// left as it is and the recovery is recorded as an event file beside it.
// Leases of live campaigns are left alone (ErrLeaseHeld); an unreadable
// lease is set aside and reported as a Warning, the others recovered.
// progress may be nil.
func Recover(ctx context.Context, dir string, progress func(string)) []RecoverResult {
	if progress == nil {
		progress = func(string) {}
	}
	dead, found, err := lease.Scan(dir)
	if err != nil {
		return []RecoverResult{{Err: err}}
	}
	var out []RecoverResult
	live := map[string]bool{}
	for _, f := range found {
		switch {
		case f.Err != nil:
			out = append(out, RecoverResult{Warning: f.Err})
		case f.Live && f.Lease != nil && f.Lease.Kind == lease.KindCampaign && !live[f.Lease.Campaign]:
			live[f.Lease.Campaign] = true
			out = append(out, RecoverResult{Lease: f.Lease, Err: ErrLeaseHeld})
		}
	}
	for _, l := range dead {
		out = append(out, recoverOne(ctx, l, progress))
	}
	return out
}

func recoverOne(ctx context.Context, l *Lease, progress func(string)) RecoverResult {
	r := RecoverResult{Lease: l}
	deadPID := l.PID
	h, err := lease.Claim(l)
	if err != nil {
		if errors.Is(err, lease.ErrHeld) {
			r.Err = ErrLeaseHeld
		} else {
			r.Err = err
		}
		return r
	}
	fail := func(err error) RecoverResult {
		h.Abandon()
		r.Err = err
		return r
	}
	// The lease names a configuration whose commands hiro would run: it
	// must be the user's and writable by no one else.
	if err := lease.CheckOwnedPath(l.Config); err != nil {
		return fail(fmt.Errorf("lease of campaign %s refused: configuration %w", l.Campaign, err))
	}
	cfg, err := config.Load(l.Config)
	if err != nil {
		return fail(fmt.Errorf("lease of campaign %s: %w", l.Campaign, err))
	}
	registerSecrets(cfg, nil)
	var prod *config.Profile
	if l.Production != "" {
		if prod, err = production.ProfileFor(cfg, l.Production); err != nil {
			return fail(fmt.Errorf("lease of campaign %s: %w", l.Campaign, err))
		}
	}
	if l.Candidate != "" {
		if st, err := supervisor.Status(cfg.StateDir, l.Candidate); err == nil && st.Status == supervisor.StatusRunning {
			progress(fmt.Sprintf("stopping candidate %s (pid %d) left running by campaign %s", l.Candidate, st.PID, l.Campaign))
		}
		_, sr, err := supervisor.StopRecorded(ctx, cfg.StateDir, l.Candidate, 0)
		if err == nil && sr.Leak != nil {
			progress("stopping the candidate left processes behind: " + sr.Leak.RootCause)
		}
	}
	if l.ProductionStopped && prod != nil {
		progress(fmt.Sprintf("production %s was left stopped by campaign %s (hiro pid %d is gone): restoring it first", l.Production, l.Campaign, deadPID))
		r.Restored = restoreAfterDeath(ctx, cfg, prod, l.Campaign, progress)
		if !r.Restored.OK {
			return fail(fmt.Errorf("production %s could not be restored: %s", l.Production, r.Restored.Error))
		}
	}
	r.Event = settleEvidence(l, deadPID, r.Restored, prod)
	if err := h.Release(); err != nil {
		progress("releasing the recovered lease: " + err.Error())
	}
	return r
}

// settleEvidence records what recovery did in the dead campaign's
// evidence folder. A campaign that never finished (verdict running: hiro
// was killed mid-campaign) gets its end written now: aborted, exit 3, the
// restore recorded. A finished campaign's evidence is final and is not
// touched: the recovery is written as an event file that refers to it.
// It returns the event file's path ("" when the evidence was finalized
// or there is none).
func settleEvidence(l *Lease, deadPID int, rr *RestoreResult, prod *config.Profile) string {
	if l.EvidenceDir == "" {
		return ""
	}
	e, err := evidence.Load(filepath.Join(l.EvidenceDir, evidence.PrivateFile))
	if err != nil {
		return ""
	}
	after := ""
	if prod != nil {
		after, _ = ProductionConfigHash(prod)
	}
	if e.Finished() {
		ev := &evidence.Event{Campaign: e.ID, Kind: evidence.EventLeaseReleased, By: fmt.Sprintf("hiro (pid %d) recovering the lease", os.Getpid()),
			Restored: rr, ConfigHash: after, ConfigUnchanged: after == e.Production.ConfigHashBefore,
			Summary: fmt.Sprintf("Campaign %s had finished (%s, exit %d) leaving its lease; a later hiro released it.", e.ID, e.Verdict, e.ExitCode)}
		if rr != nil && prod != nil {
			ev.Kind = evidence.EventProductionRestored
			ev.Summary = fmt.Sprintf("Production %s, left down by campaign %s (%s, exit %d), was restored and verified by a later hiro from the lease: model %s, reply %q.",
				prod.Name, e.ID, e.Verdict, e.ExitCode, rr.Model, rr.Reply)
		}
		path, _ := evidence.WriteEvent(l.EvidenceDir, ev)
		return path
	}
	now := time.Now().UTC()
	e.Verdict = evidence.VerdictAborted
	e.ExitCode = ExitAborted
	e.TerminationReason = fmt.Sprintf("hiro (pid %d) was killed mid-campaign; a later hiro settled its lease", deadPID)
	if rr != nil {
		e.TerminationReason = fmt.Sprintf("hiro (pid %d) was killed mid-campaign; a later hiro restored production from the lease", deadPID)
		e.Production.Restored = rr
	}
	e.FinishedAt = &now
	// The wall time up to this settling: hiro's own share (HarnessMS) died
	// with it and stays unknown.
	if d := now.Sub(e.StartedAt); d > 0 {
		e.DurationMS = d.Milliseconds()
	}
	e.Production.ConfigHashAfter = after
	e.Fingerprints.ProductionConfigAfter = after
	e.Production.ConfigUnchanged = after == e.Production.ConfigHashBefore
	for i := range e.Gates {
		if e.Gates[i].Status == evidence.StatusRunning {
			e.Gates[i].Status = evidence.StatusNotRun
			e.Gates[i].Reason = "interrupted: hiro was killed; no result"
		}
	}
	e.Report = buildReport(e, nil)
	_ = evidence.WriteBoth(l.EvidenceDir, e)
	_ = writeMarkdown(l.EvidenceDir, e)
	return ""
}
