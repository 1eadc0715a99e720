package qualify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/prompt"
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

// Restore starts the production profile and proves it ready: the
// supervisor's readiness (health, identity, its probe) and then a bounded
// READY completion (prompt.ReadyPrompt, reply exactly prompt.ReadyReply).
// It tries up to attempts times, each bounded by the profile's ready
// timeout; a server already answering ready (someone restarted it) counts
// as restored. The started engine is detached (recorded in the state
// directory) so it outlives hiro. progress may be nil.
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
		if cr := supervisor.CheckReady(ctx, prod, nil); cr.OK {
			// Already serving (restarted by someone else, or a record we lost).
			if verifyReadyReply(ctx, prod, rr) {
				rr.OK = true
				break
			}
		}
		if prod.Unmanaged {
			errs = append(errs, fmt.Sprintf("attempt %d: production %s is unmanaged and does not answer ready at %s", i, prod.Name, prod.BaseURL))
			time.Sleep(time.Second)
			continue
		}
		proc, res := supervisor.Start(ctx, prod, supervisor.Options{StateDir: cfg.StateDir, Attempt: "restore"})
		if res.State != supervisor.StateReady {
			why := res.Error
			if res.Failure != nil {
				why = res.Failure.Error()
			}
			errs = append(errs, fmt.Sprintf("attempt %d: %s", i, why))
			continue
		}
		if _, err := proc.Detach(); err != nil {
			errs = append(errs, fmt.Sprintf("attempt %d: production is running but its state record could not be written: %v", i, err))
		}
		if len(res.ModelIDs) > 0 {
			rr.Model = res.ModelIDs[0]
		}
		if verifyReadyReply(ctx, prod, rr) {
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

// verifyReadyReply makes the bounded READY completion against prod and
// fills rr's Health, Model and Reply.
func verifyReadyReply(ctx context.Context, prod *config.Profile, rr *RestoreResult) bool {
	cr := supervisor.CheckReady(ctx, prod, nil)
	rr.Health = fmt.Sprintf("%s %d (%s)", cr.Health.Path, cr.Health.StatusCode, cr.Health.State)
	if len(cr.ModelIDs) > 0 {
		rr.Model = pickModel(prod, cr.ModelIDs)
	}
	if !cr.OK {
		if cr.Failure != nil {
			rr.Error = cr.Failure.Error()
		} else {
			rr.Error = "not ready"
		}
		return false
	}
	zero := 0.0
	c := llm.New(prod.BaseURL, &http.Client{})
	reply, err := c.Chat(ctx, llm.Request{Model: prod.Model, Messages: []llm.Message{{Role: "user", Content: prompt.ReadyPrompt}},
		MaxTokens: config.DefaultProbeMaxTokens, Temperature: &zero, Timeout: prod.ReadyProbe.Timeout.Duration})
	if err != nil {
		rr.Error = "READY completion failed: " + err.Error()
		return false
	}
	rr.Reply = strings.TrimSpace(reply.Text)
	if rr.Reply != prompt.ReadyReply {
		rr.Error = fmt.Sprintf("READY completion answered %q, want %q", rr.Reply, prompt.ReadyReply)
		return false
	}
	return true
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
	Err      error
}

// ErrLeaseHeld is returned by Recover for a lease whose campaign is still
// running.
var ErrLeaseHeld = errors.New("the campaign holding production is still running")

// Recover restores production for every lease in dir whose owner is gone
// (hiro was killed mid-campaign), removes those leases once production is
// verified, and marks the campaign's evidence aborted with the restore
// recorded. Leases of live campaigns are left alone (reported with
// ErrLeaseHeld). progress may be nil.
func Recover(ctx context.Context, dir string, progress func(string)) []RecoverResult {
	if progress == nil {
		progress = func(string) {}
	}
	leases, err := Leases(dir)
	if err != nil {
		return []RecoverResult{{Err: err}}
	}
	var out []RecoverResult
	for _, l := range leases {
		if l.OwnerAlive() {
			out = append(out, RecoverResult{Lease: l, Err: ErrLeaseHeld})
			continue
		}
		progress(fmt.Sprintf("production %s was left stopped by campaign %s (hiro pid %d is gone): restoring it first", l.Production, l.Campaign, l.PID))
		r := RecoverResult{Lease: l}
		cfg, err := config.Load(l.Config)
		if err != nil {
			r.Err = fmt.Errorf("lease %s: %w", l.Path, err)
			out = append(out, r)
			continue
		}
		prod, err := production.ProfileFor(cfg, l.Production)
		if err != nil {
			r.Err = fmt.Errorf("lease %s: %w", l.Path, err)
			out = append(out, r)
			continue
		}
		if l.Candidate != "" {
			if st, err := supervisor.Status(cfg.StateDir, l.Candidate); err == nil && st.Status == supervisor.StatusRunning {
				progress(fmt.Sprintf("stopping candidate %s (pid %d) left running by the killed campaign", l.Candidate, st.PID))
			}
			_, sr, err := supervisor.StopRecorded(ctx, cfg.StateDir, l.Candidate, 0)
			if err == nil && sr.Leak != nil {
				progress("stopping the candidate left processes behind: " + sr.Leak.RootCause)
			}
		}
		r.Restored = Restore(ctx, cfg, prod, cfg.Production.RestoreAttempts, progress)
		if r.Restored.OK {
			os.Remove(l.Path)
			markRecovered(l, r.Restored, prod)
		} else {
			r.Err = fmt.Errorf("production %s could not be restored: %s", l.Production, r.Restored.Error)
		}
		out = append(out, r)
	}
	return out
}

// markRecovered updates the killed campaign's evidence: verdict aborted,
// the restore recorded.
func markRecovered(l *Lease, rr *RestoreResult, prod *config.Profile) {
	if l.EvidenceDir == "" {
		return
	}
	e, err := evidence.Load(l.EvidenceDir + "/" + evidence.PrivateFile)
	if err != nil {
		return
	}
	now := time.Now().UTC()
	e.Verdict = evidence.VerdictAborted
	e.ExitCode = 3
	e.TerminationReason = fmt.Sprintf("hiro (pid %d) was killed mid-campaign; a later hiro restored production from the lease", l.PID)
	e.FinishedAt = &now
	e.Production.Restored = rr
	after, _ := ProductionConfigHash(prod)
	e.Production.ConfigHashAfter = after
	e.Fingerprints.ProductionConfigAfter = after
	e.Production.ConfigUnchanged = after == e.Production.ConfigHashBefore
	for i := range e.Gates {
		if e.Gates[i].Status == evidence.StatusRunning {
			e.Gates[i].Status = evidence.StatusFailed
			e.Gates[i].Reason = "interrupted: hiro was killed"
		}
	}
	e.Report = buildReport(e, nil)
	_ = evidence.WriteBoth(l.EvidenceDir, e)
	_ = writeMarkdown(l.EvidenceDir, e)
}
