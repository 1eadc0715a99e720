package activation

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/production"
)

// RecoverResult is what Recover did with one switch left in progress.
type RecoverResult struct {
	Intent *production.Intent
	// Record is the recovery's record (kind of the switch, outcome failed
	// when the old production is back, switched when the committed new one
	// is verified, critical when neither).
	Record *production.Record
	Err    error
}

// ErrSwitchRunning is reported for a switch whose hiro still runs.
var ErrSwitchRunning = errors.New("a switch is in progress")

// Recover settles every switch left in progress by a hiro that died
// (SIGKILL, power loss): a switch that was not committed is undone (the
// new production stopped, the old one put back and verified); a committed
// one is finished (the new production verified, started again if needed,
// and the old one stopped). Each is recorded. Switches whose hiro still
// runs (their lock is held) are reported with ErrSwitchRunning and left
// alone. progress may be nil.
func Recover(ctx context.Context, progress func(string)) []RecoverResult {
	if progress == nil {
		progress = func(string) {}
	}
	ins, err := production.Intents()
	if err != nil {
		return []RecoverResult{{Err: err}}
	}
	var out []RecoverResult
	for _, in := range ins {
		r := RecoverResult{Intent: in}
		lock, err := production.TryLock(in.Config, "recovering a switch")
		if err != nil {
			var be *production.BusyError
			if errors.As(err, &be) {
				r.Err = fmt.Errorf("%w (%v)", ErrSwitchRunning, err)
			} else {
				r.Err = err
			}
			out = append(out, r)
			continue
		}
		r.Record, r.Err = recoverOne(ctx, in, progress)
		lock.Unlock()
		out = append(out, r)
	}
	return out
}

func recoverOne(ctx context.Context, in *production.Intent, progress func(string)) (*production.Record, error) {
	cfg, err := config.Load(in.Config)
	if err != nil {
		return nil, fmt.Errorf("switch intent %s: %w", in.Path, err)
	}
	if in.From == nil || in.To == nil || in.From.Profile == nil || in.To.Profile == nil {
		return nil, fmt.Errorf("switch intent %s is incomplete; move it away once production is known to be serving", in.Path)
	}
	keep, drop := in.From, in.To
	if in.Committed {
		keep, drop = in.To, in.From
	}
	progress(fmt.Sprintf("a switch of production from %s to %s was cut short (hiro pid %d is gone): putting %s back in a verified state", in.From.Name, in.To.Name, in.PID, keep.Name))
	rec := &production.Record{Kind: in.Kind, Config: cfg.Path, From: in.From, To: in.To, StartedAt: time.Now().UTC(),
		Error: fmt.Sprintf("hiro (pid %d) was killed mid-switch; a later hiro settled it", in.PID)}
	// One owner of production at a time: the endpoints (and the
	// accelerator for an exclusive switch) are held while production is
	// put back, so no campaign or 'hiro backend start|stop' acts
	// meanwhile; a live holder refuses the recovery, naming it.
	exclusive := in.From.Profile.ExclusiveAccelerator || in.To.Profile.ExclusiveAccelerator
	hold, err := holdResources("", rec, in.From.Profile, in.To.Profile, exclusive)
	if err != nil {
		return nil, fmt.Errorf("a switch of production from %s to %s was cut short; it cannot be settled now: %w", in.From.Name, in.To.Name, err)
	}
	defer hold.Release()
	bound := time.Duration(cfg.Production.RestoreAttempts)*(keep.Profile.ReadyTimeout.Duration+keep.Profile.StopGrace.Duration) + drop.Profile.StopGrace.Duration + 30*time.Second
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	if drop.Name != keep.Name {
		t0 := time.Now()
		err := stop(rctx, cfg, drop.Profile)
		rec.Steps = append(rec.Steps, production.Step{Name: "stop " + drop.Name, OK: err == nil, Detail: errText(err), At: time.Now().UTC(), DurationMS: time.Since(t0).Milliseconds()})
	}
	t0 := time.Now()
	var rr *evidence.Restored
	if in.Handover != "" && !in.Committed {
		// The router holds production for the dead switch: it takes it back.
		if r, ok := takeBack(rctx, cfg, in.Handover); ok {
			rr = r
		}
	}
	if rr == nil {
		rr = production.Keeper{StateDir: cfg.StateDir}.Restore(rctx, keep.Profile, cfg.Production.RestoreAttempts, progress)
	}
	rec.Steps = append(rec.Steps, production.Step{Name: "put back and verify " + keep.Name, OK: rr.OK, Detail: verifiedText(rr), At: time.Now().UTC(), DurationMS: time.Since(t0).Milliseconds()})
	if in.Committed {
		rec.Verified = rr
	} else {
		rec.Restored = rr
	}
	rec.FinishedAt = time.Now().UTC()
	switch {
	case !rr.OK:
		rec.Outcome = production.OutcomeCritical
	case in.Committed:
		// The committed record already names To; this one is the account.
		rec.Outcome = production.OutcomeRecovered
		rec.Error += "; the switch had been committed: " + in.To.Name + " stays production"
	default:
		rec.Outcome = production.OutcomeRecovered
		rec.Error += "; the switch had not been committed: " + in.From.Name + " stays production"
	}
	if err := production.Append(rec); err != nil {
		return rec, err
	}
	if !rr.OK {
		return rec, fmt.Errorf("production %s could not be put back: %s. Once it answers ready at %s (the cause fixed; a server started by hand outside hiro counts), the next hiro command verifies it and settles this switch; deleting %s gives up settling it", keep.Name, rr.Error, keep.Profile.BaseURL, in.Path)
	}
	return rec, production.RemoveIntent(cfg.Path)
}
