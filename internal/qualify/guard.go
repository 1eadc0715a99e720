package qualify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/signing"
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
type RestoreResult = production.Verification

// Restore starts the production profile and proves it ready: the
// keeper's restore (production.Keeper.Restore: the supervisor's
// readiness, the one rule everywhere; a recorded process of hiro's is
// verified, waited for and adopted, never started twice; attempts tries,
// each bounded by the profile's ready timeout). progress may be nil.
func Restore(ctx context.Context, cfg *config.Config, prod *config.Profile, attempts int, progress func(string)) *RestoreResult {
	return production.Keeper{StateDir: cfg.StateDir}.Restore(ctx, prod, attempts, progress)
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

// RecoverCampaign is Recover for the leases of one campaign whose hiro
// died (campaign: its id): the router calls it after it took production
// back from that campaign's cut-short hand-over, so the candidate the
// campaign left running is stopped and its leases are released at once,
// as 'hiro recover' would (production, already back, is verified through
// the router). Leases of other campaigns are left alone.
func RecoverCampaign(ctx context.Context, dir, campaign string, progress func(string)) []RecoverResult {
	if progress == nil {
		progress = func(string) {}
	}
	dead, _, err := lease.Scan(dir)
	if err != nil {
		return []RecoverResult{{Err: err}}
	}
	var out []RecoverResult
	for _, l := range dead {
		if l.Campaign == campaign {
			out = append(out, recoverOne(ctx, l, progress))
		}
	}
	return out
}

func recoverOne(ctx context.Context, l *Lease, progress func(string)) RecoverResult {
	r := RecoverResult{Lease: l}
	// The campaign's hiro, not a recoverer that failed before this one.
	deadPID := l.OriginalPID()
	left := l.Left()
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
		_, sr, err := production.Keeper{StateDir: cfg.StateDir}.StopRecorded(ctx, l.Candidate, 0)
		if err == nil && sr.Leak != nil {
			progress("stopping the candidate left processes behind: " + sr.Leak.RootCause)
		}
	}
	if l.ProductionStopped && prod != nil {
		progress(fmt.Sprintf("production %s was left stopped by %s, whose hiro is gone: restoring it first", l.Production, left))
		r.Restored = restoreAfterDeath(ctx, cfg, prod, l.Campaign, progress)
		if !r.Restored.OK {
			ev := ""
			if l.EvidenceDir != "" {
				ev = fmt.Sprintf(" (its evidence: %s)", l.EvidenceDir)
			}
			return fail(fmt.Errorf("production %s, left stopped by campaign %s%s, could not be restored: %s", l.Production, l.Campaign, ev, r.Restored.Error))
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
	// Only a campaign folder of this user's is written into: never one
	// another user made, or a symbolic link planted in its place.
	if err := private.CheckDir(l.EvidenceDir, "campaign evidence folder"); err != nil {
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
	// Signed with this user's key, like the dead campaign's own writes: a
	// key that cannot be read leaves the settled evidence unsigned (it
	// then cannot activate anything), never unwritten.
	key, _ := signing.LoadOrCreate()
	_ = evidence.WriteBoth(l.EvidenceDir, e, key)
	_ = writeMarkdown(l.EvidenceDir, e)
	return ""
}
