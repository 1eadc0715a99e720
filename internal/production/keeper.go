package production

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Verification is the one record of "production is back and verified"
// (the campaign's restore, the switch's start and put-back, the router's
// take-back): health, identity, the bounded READY completion. Its JSON
// form is the evidence's (evidence.Restored, schema hiro.evidence).
type Verification = evidence.Restored

// LeaseKeys is the one policy of which lease keys acting on production
// takes (package lease): the endpoint key (lease.ProductionKey) of every
// profile acted on, nil ones skipped and each key once, and the
// accelerator's key when the action needs it alone (exclusive). 'hiro
// backend start|stop', the switch, the router's own starts and a
// campaign all take theirs here.
func LeaseKeys(exclusive bool, ps ...*config.Profile) []string {
	var keys []string
	if exclusive {
		keys = append(keys, lease.AcceleratorKey)
	}
	seen := map[string]bool{}
	for _, p := range ps {
		if p == nil {
			continue
		}
		if k := lease.ProductionKey(p.BaseURL); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// Found is what the state record says of a profile.
type Found string

// What a profile's state record can say (Look).
const (
	// FoundUnmanaged: the profile is unmanaged; hiro keeps no record of it.
	FoundUnmanaged Found = "unmanaged"
	// FoundNone: no record.
	FoundNone Found = "none"
	// FoundStale: a record whose process is gone or whose pid belongs to
	// another process now.
	FoundStale Found = "stale"
	// FoundOwn: a live process recorded with this configuration
	// (config.Profile.Hash): hiro's own, to adopt or stop.
	FoundOwn Found = "own"
	// FoundForeign: a live process recorded with another configuration
	// (another hiro sharing state_dir, or the file changed since): never
	// stopped or overwritten by the one that finds it.
	FoundForeign Found = "foreign"
)

// Keeper keeps production: it starts a profile recorded from launch,
// detaches and verifies it, adopts a recorded live process or drops a
// stale record, and restores production with attempts (resuming a
// restore cut short). It is the one caller of supervisor.Start outside
// tests. The zero value is not usable: StateDir is required.
type Keeper struct {
	// StateDir is the configuration's state_dir (records and logs).
	StateDir string
	// HTTP, when not nil, is the client of readiness checks (the
	// router's pool); default the profile's own (llm.HTTPClient).
	HTTP *http.Client
}

// Look reads prof's state record: what it says (Found) and the record's
// status (zero for FoundUnmanaged and FoundNone).
func (k Keeper) Look(prof *config.Profile) (Found, supervisor.RecordStatus) {
	if prof.Unmanaged {
		return FoundUnmanaged, supervisor.RecordStatus{}
	}
	st, err := supervisor.Status(k.StateDir, prof.Name)
	switch {
	case err != nil:
		return FoundNone, supervisor.RecordStatus{}
	case st.Status != supervisor.StatusRunning:
		return FoundStale, st
	case st.ProfileHash != prof.Hash():
		return FoundForeign, st
	}
	return FoundOwn, st
}

// DropStale removes prof's record when it is stale and returns it (ok
// false when there was none to drop), first stopping the members of its
// group that outlived the dead leader and are provably hiro's
// (supervisor.Leftovers); the stop's account is returned with it.
func (k Keeper) DropStale(prof *config.Profile) (supervisor.RecordStatus, supervisor.StopResult, bool, error) {
	f, st := k.Look(prof)
	if f != FoundStale {
		return st, supervisor.StopResult{}, false, nil
	}
	_, sr := supervisor.StopRecord(context.Background(), k.StateDir, st.Record, 0)
	return st, sr, true, supervisor.RemoveRecord(k.StateDir, prof.Name)
}

// Adopt marks the recorded process st (FoundOwn, proven ready by the
// caller) as adopted: its record says when it was proven ready.
func (k Keeper) Adopt(st supervisor.RecordStatus) {
	rec := st.Record
	rec.ReadyAt = time.Now()
	_ = supervisor.WriteRecord(k.StateDir, rec)
}

// RouterOwner is what a router ('hiro serve') records as the Owner of
// the production process it starts or adopts (supervisor.Record.Owner.
// What): a hiro that finds production's record names a live one knows a
// router watches and restarts it, whatever lease folder it uses
// (RouterWatching).
const RouterOwner = "hiro serve"

// RouterWatching returns production name's record when it names a
// running process that a live router other than this process watches
// (Owner.What RouterOwner); ok false otherwise (no record, a stale one,
// no live owner, an owner that is not a router).
func RouterWatching(stateDir, name string) (st supervisor.RecordStatus, ok bool) {
	st, err := supervisor.Status(stateDir, name)
	if err != nil || st.Status != supervisor.StatusRunning || !st.OwnerAlive() || !strings.HasPrefix(st.Owner.What, RouterOwner) ||
		st.Owner.PID == os.Getpid() {
		return st, false
	}
	return st, true
}

// Claim marks the recorded process st (FoundOwn, proven ready by the
// caller) as adopted and watched by this hiro: its record says when it
// was proven ready and names this process as its Owner (pid, start
// time, what: "hiro serve" for the router), so that another hiro sharing
// the state_dir, under another HOME whose lease folder it does not see,
// finds production watched by a live hiro instead of free to stop
// (supervisor.Record.OwnerAlive). The record is written only while it
// still names st's process (another hiro may have replaced it); false
// when it did not.
func (k Keeper) Claim(st supervisor.RecordStatus, what string) bool {
	cur, err := supervisor.ReadRecord(k.StateDir, st.Name)
	if err != nil || cur.PID != st.PID || cur.StartTicks != st.StartTicks {
		return false
	}
	cur.ReadyAt = time.Now()
	cur.Owner = supervisor.ThisHiro(what)
	return supervisor.WriteRecord(k.StateDir, cur) == nil
}

// Release ends this hiro's Claim of rec's process: its record no longer
// names an Owner (the engine runs on its own, as after 'hiro backend
// start'), when it still names rec's process and this hiro as Owner.
func (k Keeper) Release(rec supervisor.Record) {
	cur, err := supervisor.ReadRecord(k.StateDir, rec.Name)
	if err != nil || cur.PID != rec.PID || cur.StartTicks != rec.StartTicks || cur.Owner == nil {
		return
	}
	if me := supervisor.ThisHiro("-"); me == nil || cur.Owner.PID != me.PID || cur.Owner.StartTicks != me.StartTicks {
		return
	}
	cur.Owner = nil
	_ = supervisor.WriteRecord(k.StateDir, cur)
}

// Start launches prof through the supervisor, recorded from launch in
// StateDir, and waits for ready; the process stays the caller's (its
// exit is watched with Process.Exited). opts.StateDir is set here.
func (k Keeper) Start(ctx context.Context, prof *config.Profile, opts supervisor.Options) (*supervisor.Process, *supervisor.Result) {
	opts.StateDir = k.StateDir
	if opts.HTTPClient == nil {
		opts.HTTPClient = k.HTTP
	}
	return supervisor.Start(ctx, prof, opts)
}

// StartDetached is Start, then Detach once ready: the engine outlives
// hiro. A ready engine whose record cannot be written is stopped and the
// write's error returned (the result is then the ready one: what was
// started and stopped).
func (k Keeper) StartDetached(ctx context.Context, prof *config.Profile, opts supervisor.Options) (*supervisor.Result, error) {
	proc, res := k.Start(ctx, prof, opts)
	if res.State == supervisor.StateReady {
		if _, err := proc.Detach(); err != nil {
			proc.Stop(context.WithoutCancel(ctx))
			return res, err
		}
	}
	return res, nil
}

// StopRecorded stops the process recorded under name in StateDir
// (production, a candidate, any backend hiro recorded): SIGTERM to its
// group, grace (<= 0: the recorded stop grace), SIGKILL, and the proof
// that nothing of the group is left (supervisor.StopRecorded). A stale
// record's process is not signalled; the members of its group that
// outlived it and are provably hiro's are stopped and the record removed.
// The error is supervisor.ErrNoRecord when nothing is recorded. Outside
// this package, the one way a recorded process is stopped by name
// (TestOnlyTheKeeperStopsRecordedProcesses); the caller holds the lease keys
// (LeaseKeys) of what it stops.
func (k Keeper) StopRecorded(ctx context.Context, name string, grace time.Duration) (supervisor.RecordStatus, supervisor.StopResult, error) {
	return supervisor.StopRecorded(ctx, k.StateDir, name, grace)
}

// StopRecord stops exactly the process rec describes (one the caller
// adopted), never whatever the record of rec.Name names now: another hiro
// sharing StateDir may have replaced it (supervisor.StopRecord). grace
// <= 0 uses the recorded stop grace.
func (k Keeper) StopRecord(ctx context.Context, rec supervisor.Record, grace time.Duration) (supervisor.RecordStatus, supervisor.StopResult) {
	return supervisor.StopRecord(ctx, k.StateDir, rec, grace)
}

// Stop stops prof's recorded process; a profile with no running record
// (or an unmanaged one) is already stopped; a stale record's leftovers
// (supervisor.Leftovers) are stopped. A stop that leaves processes behind
// is an error naming the root cause.
func (k Keeper) Stop(ctx context.Context, prof *config.Profile) error {
	if prof.Unmanaged {
		return nil
	}
	_, sr, err := k.StopRecorded(ctx, prof.Name, 0)
	if err != nil {
		if errors.Is(err, supervisor.ErrNoRecord) {
			return nil
		}
		return err
	}
	if sr.Leak != nil {
		return fmt.Errorf("stopping %s left processes behind: %s", prof.Name, sr.Leak.RootCause)
	}
	return nil
}

// StartVerified starts prof recorded from its first moment (a hiro
// killed now leaves a record the recovery can stop), waits for the
// supervisor's readiness, detaches it, and proves it with Restore's
// verification (one attempt: the same readiness rule, and a recorded
// process of hiro's is verified, never started twice). One already
// running and recorded is not started again.
func (k Keeper) StartVerified(ctx context.Context, prof *config.Profile, attempt string) *Verification {
	if f, st := k.Look(prof); f != FoundOwn && f != FoundForeign && f != FoundUnmanaged {
		if f == FoundStale {
			// What outlived its dead leader would keep the port (and VRAM).
			supervisor.StopRecord(context.WithoutCancel(ctx), k.StateDir, st.Record, 0)
		}
		_ = supervisor.RemoveRecord(k.StateDir, prof.Name)
		res, err := k.StartDetached(ctx, prof, supervisor.Options{Attempt: attempt})
		if err != nil {
			now := time.Now().UTC()
			return &Verification{Attempts: 1, Error: "its state record could not be written: " + err.Error(), At: &now}
		}
		if res.State != supervisor.StateReady {
			now := time.Now().UTC()
			why := res.Error
			if res.Failure != nil {
				why = res.Failure.Error()
			}
			if why == "" {
				why = string(res.State)
			}
			_ = supervisor.RemoveRecord(k.StateDir, prof.Name)
			return &Verification{Attempts: 1, Error: prof.Name + " did not become ready: " + why, At: &now}
		}
	}
	// Already running and recorded: Restore's verification adopts it.
	return k.Restore(ctx, prof, 1, nil)
}

// Restore starts prof and proves it ready with the supervisor's
// readiness, the one rule everywhere (health, identity, and the profile's
// bounded probe completion, whose default prompt is the READY prompt,
// its reply judged by supervisor.JudgeReply against ready_probe.expect):
// what 'hiro backend start' and the router call ready is restored. It
// tries up to attempts times, each bounded by the profile's ready
// timeout; a server already answering ready (someone restarted it)
// counts as restored. The state record is read first: a process of
// hiro's that is alive is verified (waited for while it starts) and
// never started a second time onto its own port; when it answers but
// fails the rule, the attempt reports that answer (e.g. `the reply
// "READY w0" is not the expected "READY"`). The started engine is
// detached (recorded in the state directory) so it outlives hiro.
// progress may be nil.
func (k Keeper) Restore(ctx context.Context, prof *config.Profile, attempts int, progress func(string)) *Verification {
	if progress == nil {
		progress = func(string) {}
	}
	if attempts < 1 {
		attempts = 1
	}
	start := time.Now()
	rr := &Verification{}
	var errs []string
	for i := 1; i <= attempts; i++ {
		rr.Attempts = i
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err().Error())
			break
		}
		progress(fmt.Sprintf("restoring production %s (attempt %d/%d)", prof.Name, i, attempts))
		done, held := k.resume(ctx, prof, rr, progress)
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
		ok, answered := k.verify(ctx, prof, rr)
		if ok {
			// Already serving (restarted by someone else, or a record we lost).
			rr.OK = true
			break
		}
		answering := ""
		if answered {
			answering = fmt.Sprintf(" (a server not recorded by hiro answers at %s: %s)", prof.BaseURL, rr.Error)
		}
		if prof.Unmanaged {
			errs = append(errs, fmt.Sprintf("attempt %d: production %s is unmanaged and is not ready at %s: %s", i, prof.Name, prof.BaseURL, rr.Error))
			time.Sleep(time.Second)
			continue
		}
		proc, res := k.Start(ctx, prof, supervisor.Options{Attempt: "restore"})
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
		if ok, _ := k.verify(ctx, prof, rr); ok {
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

// resume handles prof's state record before anything is started: a
// production start that an earlier hiro began and did not see through
// (killed while restoring), or production hiro started and keeps. When
// the record names a live process whose pid, process group and start
// time match, hiro waits for it to become ready (bounded by the
// profile's ready timeout) and adopts it, instead of starting a second
// one that would fail on the port. A recorded process that does not
// become ready in time is stopped (it is provably hiro's) and may be
// started afresh. One that answers but fails the readiness rule (a wrong
// reply, another model: waiting or restarting changes nothing) is left
// running and reported: held is that reason, naming the pid. done is
// true when production is ready and verified.
func (k Keeper) resume(ctx context.Context, prof *config.Profile, rr *Verification, progress func(string)) (done bool, held string) {
	f, st := k.Look(prof)
	if f != FoundOwn && f != FoundForeign {
		return false, ""
	}
	progress(fmt.Sprintf("production %s is already starting or running (pid %d, recorded %s): waiting for it to be ready", prof.Name, st.PID, st.StartedAt.Format(time.RFC3339)))
	wctx, cancel := context.WithTimeout(ctx, prof.ReadyTimeout.Duration)
	defer cancel()
	for {
		ok, answered := k.verify(wctx, prof, rr)
		if ok {
			break
		}
		if answered {
			return false, fmt.Sprintf("production %s (pid %d, started by hiro) is running but not ready: %s; it was left running and not started again", prof.Name, st.PID, rr.Error)
		}
		select {
		case <-wctx.Done():
			if ctx.Err() != nil {
				return false, fmt.Sprintf("interrupted while waiting for production %s (pid %d) to be ready: %v", prof.Name, st.PID, ctx.Err())
			}
			progress(fmt.Sprintf("production %s (pid %d) did not become ready within %s (%s): stopping it to start it afresh", prof.Name, st.PID, prof.ReadyTimeout.Duration, rr.Error))
			_, _, _ = supervisor.StopRecorded(context.WithoutCancel(ctx), k.StateDir, prof.Name, 0)
			return false, ""
		case <-time.After(250 * time.Millisecond):
		}
	}
	k.Adopt(st)
	rr.Adopted = true
	progress(fmt.Sprintf("production %s (pid %d) adopted: ready and verified", prof.Name, st.PID))
	return true, ""
}

// Verify checks prof once with the supervisor's readiness and returns
// the verification (one attempt).
func (k Keeper) Verify(ctx context.Context, prof *config.Profile) *Verification {
	v := &Verification{Attempts: 1}
	v.OK, _ = k.verify(ctx, prof, v)
	now := time.Now().UTC()
	v.At = &now
	return v
}

// verify checks prof once with the supervisor's readiness
// (supervisor.CheckReady: health, identity, the bounded probe completion
// judged by supervisor.JudgeReply) and fills rr (Fill). answered is true
// when not ready is the server's settled answer
// (supervisor.ReadyResult.Answered: a reply that fails the rule, another
// model).
func (k Keeper) verify(ctx context.Context, prof *config.Profile, rr *Verification) (ok, answered bool) {
	cr := supervisor.CheckReady(ctx, prof, k.HTTP)
	Fill(rr, prof, cr)
	if cr.OK {
		if ok, why := k.Attribute(prof); !ok {
			// An impostor's answer is settled: waiting changes nothing.
			rr.OK, rr.Error = false, why
			return false, true
		}
	}
	return cr.OK, !cr.OK && cr.Answered
}

// Attribute says whether the server listening on prof's port (its base
// URL's) is hiro's: a process in the process group of prof's state
// record, whose pid, group and start time match (/proc, package procfs).
// Otherwise why names what holds the port: a listener hiro cannot
// attribute to the group it started is never counted as production,
// whoever holds it. An unmanaged profile, or one whose base URL names no
// port, is not checked.
func (k Keeper) Attribute(prof *config.Profile) (ok bool, why string) {
	port := urlPort(prof.BaseURL)
	if prof.Unmanaged || port == 0 {
		return true, ""
	}
	found, st := k.Look(prof)
	hs, unseen := procfs.Listeners(port)
	if found == FoundOwn || found == FoundForeign {
		for _, h := range hs {
			if h.PGID == st.PGID {
				return true, ""
			}
		}
	}
	var who []string
	for _, h := range hs {
		who = append(who, fmt.Sprintf("pid %d (%s, process group %d)", h.PID, h.Comm, h.PGID))
	}
	if unseen > 0 || len(who) == 0 {
		who = append(who, procfs.UnseenHolder())
	}
	rec := "no live state record of hiro's names it"
	if found == FoundOwn || found == FoundForeign {
		rec = fmt.Sprintf("hiro started pid %d, process group %d", st.PID, st.PGID)
	}
	return false, fmt.Sprintf("production %s answers on port %d, but the listener is not in the process group hiro started (%s): it is held by %s; hiro does not count it as production: stop that process, then restore (hiro backend start %s)",
		prof.Name, port, rec, strings.Join(who, ", "), prof.Name)
}

// urlPort returns the port of base URL u (80 or 443 by scheme when
// absent), 0 when it names none.
func urlPort(u string) int {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return 0
	}
	p := pu.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
	}
	n, _ := strconv.Atoi(p)
	return n
}

// Fill sets v's OK, Health, Model (the reported id that is prof's model),
// Reply and Error (the failure, with the TLS or key advice) from cr, a
// readiness check of prof.
func Fill(v *Verification, prof *config.Profile, cr supervisor.ReadyResult) {
	v.OK = cr.OK
	v.Health = fmt.Sprintf("%s %d (%s)", cr.Health.Path, cr.Health.StatusCode, cr.Health.State)
	if len(cr.ModelIDs) > 0 {
		v.Model = PickModel(prof, cr.ModelIDs)
	}
	v.Reply = cr.Reply
	v.Error = ""
	if !cr.OK {
		if cr.Failure != nil {
			v.Error = cr.Failure.Error()
			if cr.Advice != "" { // TLS or the key: which setting to fix
				v.Error += "; " + cr.Advice
			}
		} else {
			v.Error = "not ready"
		}
	}
}

// PickModel returns the reported id that is prof's model as its engine
// compares ids (Ollama: with or without ":latest"), else the first.
func PickModel(prof *config.Profile, ids []string) string {
	if e, err := engine.Lookup(prof.Engine); err == nil {
		for _, id := range ids {
			if e.MatchModel(prof.Model, []string{id}) {
				return id
			}
		}
	}
	return ids[0]
}
