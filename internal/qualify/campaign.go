package qualify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/exitcode"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/preflight"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/signing"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// Exit statuses of a campaign (docs/design.md "Contracts other tools read"): package exitcode's.
const (
	ExitQualified    = exitcode.OK
	ExitNotQualified = exitcode.Failed
	ExitBadPlan      = exitcode.Usage
	ExitAborted      = exitcode.Aborted
	ExitCritical     = exitcode.Critical
	ExitInconclusive = exitcode.Inconclusive
	// ExitBusy: not started, another hiro holds production's, the
	// candidate's or the accelerator's lease (Run's lease.ErrHeld).
	ExitBusy = exitcode.Busy
)

// ReasonSkipped is the reason of a gate the plan skips (status not_run):
// package evidence's, whose consistency check reads it.
const ReasonSkipped = evidence.ReasonSkipped

// Options tune Run.
type Options struct {
	// Progress receives one line per event (gate, attempt, phase,
	// elapsed, bound); nil discards.
	Progress io.Writer
	// Terminal rewrites the current line for phase updates.
	Terminal bool
	// LeaseDir overrides LeaseDir().
	LeaseDir string
	// EvidenceDir overrides the plan's evidence directory.
	EvidenceDir string
	// Host is the host fingerprint to record (doctor's facts); optional.
	Host map[string]any
	// Now is the clock; default time.Now.
	Now func() time.Time
	// NoPreflight launches every attempt without predicting it first
	// (recorded in the evidence); HostFacts, when set, are the host the
	// preflight predicts against instead of this one (a replay).
	NoPreflight bool
	HostFacts   *preflight.Host
}

// Outcome is what Run did.
type Outcome struct {
	Evidence *evidence.Evidence
	// Dir is the campaign's evidence directory.
	Dir string
	// ExitCode is the documented exit status.
	ExitCode int
}

// campaign is one Run's state. Only Run's goroutine touches it.
type campaign struct {
	plan *Plan
	cfg  *config.Config
	opts Options
	ev   *evidence.Evidence
	dir  string
	out  *progress

	candidate *config.Profile
	prod      *config.Profile
	sv        *saver
	// h is the gates' handle; its shared part holds the ready candidate
	// and the time spent waiting on engines (launch, readiness, requests,
	// stops): Evidence.HarnessMS is the rest.
	h *Handle
	// hold is the lease on production and the accelerator (exclusive
	// campaigns only), held from the start to the end of Run.
	hold *lease.Hold
	// accel is the shared hold on the accelerator of a non-exclusive
	// campaign.
	accel *lease.Hold
	// router is the running 'hiro serve' that handed production over.
	router *control.Client
}

// engineWait is the time spent waiting on engines so far.
func (c *campaign) engineWait() time.Duration { return c.h.shared.engineWait }

// waited adds the time since t0 to the engine wait.
func (c *campaign) waited(t0 time.Time) { c.h.Waited(t0) }

// Run executes the campaign: production guard, gates in order, evidence
// after every gate, the report, and the guard's restore on every path.
// ctx cancellation (SIGINT/SIGTERM) aborts the gates; production is still
// restored (with its own bound). Use context.Cause(ctx) to carry the
// signal name. The returned error is non-nil only when evidence could not
// be written at all, or when the campaign could not take production's
// lease (errors.Is(err, lease.ErrHeld): another campaign or command owns
// production or the accelerator; nothing was started or stopped).
func Run(ctx context.Context, plan *Plan, cfg *config.Config, opts Options) (*Outcome, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LeaseDir == "" {
		d, err := LeaseDir()
		if err != nil {
			return nil, err
		}
		opts.LeaseDir = d
	}
	if es := plan.CheckRun(cfg); len(es) > 0 {
		return nil, es
	}
	if err := plan.CheckBusy(cfg); err != nil {
		return nil, err
	}
	if err := plan.CheckLeases(cfg, opts.LeaseDir); err != nil {
		return nil, fmt.Errorf("campaign not started: %w", err)
	}
	start := opts.Now()
	c := &campaign{plan: plan, cfg: cfg, opts: opts, out: newProgress(opts.Progress, opts.Terminal)}
	c.candidate, _ = cfg.Backend(plan.Candidate)
	if plan.Production != "" {
		// The active production's effective profile (after an activation:
		// the qualified variant), or the configuration's profile.
		c.prod, _ = production.ProfileFor(cfg, plan.Production)
	}
	c.h = &Handle{Candidate: c.candidate, Production: c.prod, Exclusive: *plan.Exclusive, StateDir: cfg.StateDir,
		Now: opts.Now, HTTP: &http.Client{}, Save: c.save, out: c.out, shared: &shared{}}
	// Every document the campaign writes is signed: a key that cannot be
	// made or read stops the campaign before anything is started.
	key, err := signing.LoadOrCreate()
	if err != nil {
		return nil, fmt.Errorf("campaign not started: %w", err)
	}
	root := plan.EvidenceDir
	if opts.EvidenceDir != "" {
		root = opts.EvidenceDir
	}
	id, dir, err := createCampaignDir(root, start, plan.Candidate)
	if err != nil {
		return nil, fmt.Errorf("campaign not started: %w", err)
	}
	c.dir = dir
	c.h.Dir = c.dir
	if *plan.Exclusive {
		// One owner of production and of the accelerator at a time, taken
		// before anything else (atomically: lock files held for the whole
		// campaign).
		abs, _ := filepath.Abs(c.dir)
		var cand *config.Profile
		if c.candidate != nil && !c.candidate.Unmanaged {
			// The candidate is the campaign's too (see below).
			cand = c.candidate
		}
		prodName := ""
		if c.prod != nil {
			prodName = c.prod.Name
		}
		keys := production.LeaseKeys(true, cand, c.prod)
		h, err := lease.Acquire(opts.LeaseDir, &lease.Lease{Kind: lease.KindCampaign, Campaign: id, EvidenceDir: abs,
			Config: cfg.Path, Production: prodName, Candidate: plan.Candidate}, keys...)
		if err == nil {
			if err = routerElsewhere(ctx, cfg, c.prod); err != nil {
				h.Release()
			}
		}
		if err != nil {
			os.Remove(c.dir)
			return nil, fmt.Errorf("campaign %s not started: %w", id, err)
		}
		c.hold = h
	} else if c.candidate != nil && !c.candidate.Unmanaged {
		// The candidate is the campaign's for its whole length: its
		// endpoint's key is held (with the campaign's record), so that
		// 'hiro backend start|stop' of it, from any configuration naming
		// the same endpoint, is refused naming the campaign. The record
		// also says the campaign shares the accelerator, so that an
		// exclusive user refused it is told who holds it.
		abs, _ := filepath.Abs(c.dir)
		uses := ""
		if c.prod != nil && !c.prod.Unmanaged {
			uses = c.prod.BaseURL
		}
		h, err := lease.Acquire(opts.LeaseDir, &lease.Lease{Kind: lease.KindCampaign, Campaign: id, EvidenceDir: abs,
			Config: cfg.Path, Candidate: plan.Candidate, SharesAccelerator: true, UsesProduction: uses}, production.LeaseKeys(false, c.candidate)...)
		if err != nil {
			os.Remove(c.dir)
			return nil, fmt.Errorf("campaign %s not started: %w", id, err)
		}
		c.hold = h
		// A candidate beside production still uses the accelerator: not
		// while another campaign's candidate needs it alone (shared hold
		// for the whole campaign).
		a, err := lease.AcquireShared(opts.LeaseDir, lease.AcceleratorKey)
		if err != nil {
			c.hold.Release()
			os.Remove(c.dir)
			return nil, fmt.Errorf("campaign %s not started: %w", id, err)
		}
		c.accel = a
		defer c.accel.Release()
	}
	registerSecrets(cfg, plan)
	c.ev = c.newEvidence(id, start)
	c.h.Fingerprints = &c.ev.Fingerprints
	c.sv = newSaver(c.dir, key)
	err = c.save()
	if err == nil {
		err = c.sv.flush()
	}
	if err != nil {
		c.sv.close()
		c.hold.Release()
		return nil, fmt.Errorf("writing evidence: %w", err)
	}
	c.out.line("campaign %s: %s (evidence %s)", id, plan.Title, c.dir)

	// The guard: everything after this point ends in finish().
	aborted, abortReason := false, ""
	if err := c.recovered("production guard", func() error { return c.guardBefore(ctx) }); err != nil {
		aborted, abortReason = true, err.Error()
	}
	failedGate, inconclusive := "", []string(nil)
	if !aborted {
		if c.prod != nil && !*plan.Exclusive && c.ev.Production.WasRunning {
			// Production serves beside the candidate: the campaign
			// watches it, so that production going away is said at
			// once, not document by document.
			c.h.shared.watch = watchProduction(c.prod, prodWatchEvery, func(s string) { c.out.line("%s", s) })
		}
		failedGate, inconclusive, aborted, abortReason = c.runGates(ctx)
		c.h.shared.watch.close()
		if lost := c.h.shared.watch.First(); lost != nil {
			c.ev.Production.Lost = &evidence.ServingCheck{At: lost.At.UTC(), Error: lost.Problem}
		}
	}
	if err := c.recovered("stopping the candidate", func() error { c.stopCandidate(); return nil }); err != nil && !aborted {
		aborted, abortReason = true, err.Error()
	}
	return c.finish(start, failedGate, inconclusive, aborted, abortReason)
}

// createCampaignDir makes the campaign's evidence folder under root and
// returns its id and path. The id is the UTC start second, the
// candidate's slug and a random suffix (unique by construction: two
// campaigns of one candidate started in the same second get two
// folders); the folder is made with mkdir (exclusive: an existing name,
// a symbolic link included, is never reused or followed, another suffix
// is drawn), 0700, and checked to be a folder of this user's. root
// (evidence_dir) is created when missing.
func createCampaignDir(root string, start time.Time, candidate string) (id, dir string, err error) {
	if err := os.MkdirAll(root, evidence.PrivateDirMode); err != nil {
		return "", "", fmt.Errorf("creating the evidence folder: %w", err)
	}
	stamp := start.UTC().Format("20060102T150405Z") + "-" + slug(candidate)
	for try := 0; try < 16; try++ {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", "", err
		}
		id = stamp + "-" + hex.EncodeToString(b[:])
		dir = filepath.Join(root, id)
		err = os.Mkdir(dir, evidence.PrivateDirMode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", "", fmt.Errorf("creating the evidence folder: %w", err)
		}
		return id, dir, private.CheckDir(dir, "campaign evidence folder")
	}
	return "", "", fmt.Errorf("creating the evidence folder in %s: 16 names taken in a row; look at what fills the folder", root)
}

func slug(s string) string {
	s = strings.ToLower(s)
	s = regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(s, "-")
	return strings.Trim(s, "-")
}

func (c *campaign) newEvidence(id string, start time.Time) *evidence.Evidence {
	e := &evidence.Evidence{
		Schema: evidence.SchemaID, ID: id, Title: c.plan.Title, Plan: c.plan.Path,
		Candidate: c.plan.Candidate, ProductionBackend: c.plan.Production, Exclusive: *c.plan.Exclusive,
		CandidateEngine: c.candidate.Engine,
		Verdict:         evidence.VerdictRunning, TerminationReason: "campaign in progress",
		StartedAt: start.UTC(), Host: c.opts.Host, Methods: methods,
		NotJudged: c.plan.NotJudged(c.cfg.Activation.Require),
	}
	for _, g := range c.plan.Gates {
		e.Gates = append(e.Gates, evidence.Gate{ID: g.ID, Kind: g.Kind, Title: g.DisplayTitle(), Status: evidence.StatusNotRun, Reason: "not reached", BoundMS: g.Bound(c.h).Milliseconds()})
	}
	e.Fingerprints = Fingerprints(c.plan, c.candidate)
	e.Fingerprints.Environment = EnvironmentOf(context.Background(), c.candidate)
	e.Intent = planIntent(c.plan)
	e.Report = evidence.Report{Sections: []evidence.Section{}, Validation: []evidence.Validation{}}
	return e
}

// methods says how each number in the evidence is computed.
var methods = map[string]string{
	"ttft_ms":                  "time from sending the request to the first streamed chunk carrying content (time to first token), milliseconds",
	"latency_ms":               "end-to-end: sending the request to the end of the stream, milliseconds",
	"percentiles":              "nearest-rank p50/p95/p99 over successful requests",
	"output_tokens_per_second": "sum of completion_tokens from the server's usage divided by the sum of end-to-end latencies (sequential requests)",
	"tpot_ms":                  "mean over requests of (latency - ttft) / (completion_tokens - 1): time per output token after the first",
	"duration_ms":              "wall-clock time of the gate or attempt",
	"harness_ms":               "campaign wall time minus the time spent waiting on engines (launch, readiness, requests, stops)",
	"config_hash":              "SHA-256 over the production profile's canonical JSON and the content of each of its config_files",
}

// save hands a snapshot of the evidence to the writer goroutine, which
// rewrites both copies atomically; finish flushes it.
func (c *campaign) save() error {
	return c.sv.save(c.ev)
}

// guardBefore records production's state and configuration hash, runs the
// semantic baselines while production serves, and stops production for an
// exclusive candidate (lease first).
func (c *campaign) guardBefore(ctx context.Context) error {
	if c.prod == nil {
		return nil
	}
	p := &c.ev.Production
	p.Backend, p.Model = c.prod.Name, c.prod.Model
	before, files := ProductionConfigHash(c.prod)
	p.ConfigHashBefore = before
	c.ev.Fingerprints.ProductionConfigBefore = before
	for f, d := range files {
		c.ev.Fingerprints.Files[f] = d
	}
	c.h.ProductionFingerprint = before
	t0 := time.Now()
	cr := supervisor.CheckReady(ctx, c.prod, nil)
	c.waited(t0)
	p.WasRunning = cr.OK
	if cr.OK {
		c.out.line("production %s is ready at %s (%s)", c.prod.Name, c.prod.BaseURL, c.prod.Model)
	} else {
		c.out.line("production %s is not ready at %s before the campaign", c.prod.Name, c.prod.BaseURL)
		if cr.Advice != "" { // it answered, but refused hiro's TLS or key
			c.out.line("  %s", cr.Advice)
		}
		if gates := c.plan.GatesAskingProduction(c.prod, c.cfg.StateDir); len(gates) > 0 {
			c.out.line("  %s", productionNeededNote(c.prod, gates, "and rerun"))
		}
	}
	for _, g := range c.plan.Gates {
		if pr, ok := g.Gate.(Preparer); ok && !g.Skip {
			if err := pr.Prepare(ctx, c.h.forGate(g.ID), cr.OK); err != nil {
				return err
			}
		}
	}
	if c.opts.NoPreflight {
		c.ev.Preflight = &evidence.PreflightRun{Enabled: false}
	} else if preds, runs := c.predictLadder(ctx); preds != nil {
		c.h.shared.predictions = preds
		if !runs && *c.plan.Exclusive {
			c.out.line("production %s keeps serving: every launch attempt is predicted to fail", c.prod.Name)
			return c.save()
		}
	}
	if !*c.plan.Exclusive {
		return c.save()
	}
	if c.prod.Unmanaged {
		return fmt.Errorf("the candidate needs the accelerator exclusively but production %s is unmanaged: hiro cannot stop it; stop it yourself and rerun, or set exclusive = false", c.prod.Name)
	}
	st, err := supervisor.Status(c.cfg.StateDir, c.prod.Name)
	running := err == nil && st.Status == supervisor.StatusRunning
	if !running && cr.OK {
		return fmt.Errorf("production %s answers at %s but was not started by hiro (no running record in %s): hiro cannot stop it safely; stop it and start it with 'hiro backend start %s', then rerun", c.prod.Name, c.prod.BaseURL, c.cfg.StateDir, shellquote.Quote(c.prod.Name))
	}
	if c.hold == nil {
		return harnessErr("no lease on production %s: refusing to stop it", c.prod.Name)
	}
	// The prereq and artifact gates run while production serves: with a
	// launch gate, production is stopped once, just before its first
	// attempt that is launched (stopProduction).
	if c.launchGate() != nil {
		c.h.shared.stopProduction = func(ctx context.Context) error { return c.stopProduction(ctx, st, running) }
		return c.save()
	}
	return c.stopProduction(ctx, st, running)
}

// stopProduction stops production for an exclusive candidate, lease
// first; running says production runs under hiro's record st.
func (c *campaign) stopProduction(ctx context.Context, st supervisor.RecordStatus, running bool) error {
	p := &c.ev.Production
	// The candidate's port, taken since the plan was checked: production
	// is not stopped for a launch that would fail port_in_use.
	if c.candidate != nil && !c.candidate.Unmanaged {
		if err := candidatePortHeld(c.cfg, c.candidate, c.prod, true); err != nil {
			return fmt.Errorf("production %s was not stopped: %s", c.prod.Name, strings.TrimSuffix(err.Error(), " (nothing was started or stopped)"))
		}
	}
	if !running {
		rc, _, err := control.DialFor(ctx, c.cfg.Path, c.prod.BaseURL)
		if err == nil {
			rc.Close()
		} else {
			// Stopped on purpose (or never started), and no router to
			// bring it back: the guard puts production back as it found
			// it, so it is not started at the end (nor by a recovery:
			// the lease does not say production was stopped).
			c.out.line("production %s is not running: the campaign leaves it stopped and will not start it at the end", c.prod.Name)
			p.LeftStopped = true
			return c.save()
		}
	}
	// Lease first: if hiro dies from here on, the next hiro restores.
	if err := c.hold.Update(func(l *lease.Lease) { l.ProductionStopped = true }); err != nil {
		return err
	}
	if handled, err := c.handOver(ctx); handled {
		if err != nil {
			return err
		}
		return c.save()
	}
	if running {
		why := "the candidate needs the accelerator exclusively"
		if NoAcceleratorNote(ctx) != "" {
			why = "the plan is exclusive; this host has no accelerator, so the candidate gets the machine's CPU and memory alone"
		}
		c.out.line("stopping production %s (pid %d): %s", c.prod.Name, st.PID, why)
		t0 := time.Now()
		_, sr, err := production.Keeper{StateDir: c.cfg.StateDir}.StopRecorded(ctx, c.prod.Name, 0)
		c.waited(t0)
		now := time.Now().UTC()
		p.Stopped, p.StoppedAt = true, &now
		if err != nil {
			return fmt.Errorf("stopping production %s: %w", c.prod.Name, err)
		}
		if sr.Leak != nil {
			return fmt.Errorf("stopping production %s left processes behind: %s", c.prod.Name, sr.Leak.RootCause)
		}
	} else {
		// Not running while a router is up (it restarts production): the
		// guard owns bringing it up.
		c.out.line("production %s is not running; it will be started at the end", c.prod.Name)
		p.Stopped = true // the guard owns bringing it up
	}
	return c.save()
}

// runGates runs the plan's gates in order with authorization. It returns
// the id of the first failed gate, the ids of the inconclusive ones (an
// inconclusive gate withholds nothing), or aborted with a reason.
func (c *campaign) runGates(ctx context.Context) (failedGate string, inconclusive []string, aborted bool, reason string) {
	for i, spec := range c.plan.Gates {
		g := &c.ev.Gates[i]
		switch {
		case aborted:
			g.Status, g.Reason = evidence.StatusNotRun, "not run: campaign aborted ("+reason+")"
			continue
		case failedGate != "":
			g.Status, g.Reason = evidence.StatusNotRun, "not authorized: "+failedGate+" failed"
			continue
		case spec.Skip:
			g.Status, g.Reason = evidence.StatusNotRun, ReasonSkipped
			c.out.line("[%s] skipped by plan", spec.ID)
			_ = c.save()
			continue
		}
		if err := context.Cause(ctx); err != nil {
			aborted, reason = true, interruptReason(ctx)
			g.Status, g.Reason = evidence.StatusNotRun, "not run: campaign aborted ("+reason+")"
			continue
		}
		now := time.Now().UTC()
		g.StartedAt, g.Status, g.Reason = &now, evidence.StatusRunning, ""
		_ = c.save()
		c.out.line("[%s] %s gate: started (bound %s)", spec.ID, spec.Kind, spec.Bound(c.h))
		err := c.runGate(ctx, spec, g)
		var lost *ProductionLostError
		g.DurationMS = time.Since(now).Milliseconds()
		switch {
		case ctx.Err() != nil:
			// Cut short, the gate has no result: it neither passed nor failed.
			aborted, reason = true, interruptReason(ctx)
			g.Status = evidence.StatusNotRun
			g.Reason = fmt.Sprintf("%s after %s: no result", reason, time.Duration(g.DurationMS)*time.Millisecond)
		case errors.As(err, &lost):
			// Production went away (and no router had it back in time,
			// or it went away twice): the candidate was not compared, so
			// the gate has no result, and the campaign cannot go on.
			aborted, reason = true, lost.Error()
			g.Status = evidence.StatusNotRun
			g.Reason = fmt.Sprintf("cut short after %s: %s; the candidate was not compared: no result", time.Duration(g.DurationMS)*time.Millisecond, lost.Error())
		case err != nil && (errors.Is(err, ErrHarness) || errors.Is(err, ErrConfiguration)):
			// hiro's own error, or a profile the engine refused, not the
			// candidate's: no result either.
			aborted, reason = true, err.Error()
			g.Status, g.Reason = evidence.StatusNotRun, err.Error() // "harness error: ..." (ErrHarness wraps it)
		case err != nil && errors.Is(err, ErrInconclusive):
			inconclusive = append(inconclusive, spec.ID)
			g.Status, g.Reason = evidence.StatusInconclusive, err.Error()
		case err != nil:
			failedGate = spec.ID
			g.Status, g.Reason = evidence.StatusFailed, err.Error()
		default:
			g.Status = evidence.StatusPassed
		}
		c.out.line("[%s] %s (%s)%s", spec.ID, g.Status, time.Duration(g.DurationMS)*time.Millisecond, suffix(g.Reason))
		_ = c.save()
	}
	return failedGate, inconclusive, aborted, reason
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return ": " + reason
}

// ErrInconclusive is wrapped by a gate's error when its comparison with
// production could not decide (package stats' inconclusive outcome): the
// gate's status is inconclusive, and later gates still run.
var ErrInconclusive = errors.New("inconclusive")

// ErrHarness marks an error of hiro itself (not of the candidate): a gate
// returning an error that wraps it aborts the campaign (exit 3) instead
// of failing.
var ErrHarness = errors.New("harness error")

// ErrConfiguration marks a launch the engine refused for the profile it
// was given (failure class invalid_configuration: a variable it needs
// unset, a flag or value it does not take): the profile, or the plan's
// variant, is wrong, not the candidate, so the campaign aborts (exit 3,
// production restored) instead of calling it not qualified. Not exit 2:
// by then the attempt was started (and production maybe stopped).
var ErrConfiguration = errors.New("configuration error")

func harnessErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrHarness, fmt.Sprintf(format, a...))
}

// recovered runs f and turns a panic in it into a harness error (the
// campaign aborts: exit 3, production restored, lease released), with the
// stack on the progress writer. A panic must never end hiro with Go's
// exit 2, which means "nothing was touched".
func (c *campaign) recovered(what string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.out.line("internal error in %s: %v\n%s", what, r, debug.Stack())
			err = harnessErr("internal error in %s: %v (a bug in hiro: please report it with the evidence)", what, r)
		}
	}()
	return f()
}

// interruptReason names what cancelled ctx ("interrupted by SIGTERM").
func interruptReason(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil && c != context.Canceled {
		return c.Error()
	}
	return "interrupted"
}

// runGate runs one gate under its bound. A returned error fails the gate
// (its message is the reason); an error wrapping ErrHarness aborts.
//
// When production, serving beside the candidate, is lost while the gate
// asks it and a live 'hiro serve' serves production, the campaign waits
// for the router's restart (awaitRouter) and runs the gate again under a
// bound of its own: its production side (productionRerunner says what
// that is). Each loss is recorded on the gate (ProductionLosses). A
// *ProductionLostError comes back when there was no router, production
// was not back within the bound, or it was lost again in the re-run.
func (c *campaign) runGate(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	err := c.runGateOnce(ctx, spec, g)
	var lost *ProductionLostError
	if !errors.As(err, &lost) || ctx.Err() != nil {
		return err
	}
	loss, back, note := c.awaitRouter(ctx, lost)
	if !back {
		g.ProductionLosses = append(g.ProductionLosses, loss)
		l := *lost
		l.Note = note
		return &l
	}
	loss.Rerun = "the whole gate"
	if r, ok := spec.Gate.(productionRerunner); ok {
		loss.Rerun = r.productionRerun()
	}
	g.ProductionLosses = append(g.ProductionLosses, loss)
	c.out.line("[%s] production %s serves again (%s had it back after %s away): running %s again", spec.ID, c.prod.Name, loss.Router,
		(time.Duration(loss.AwayMS) * time.Millisecond).Round(100*time.Millisecond), loss.Rerun)
	_ = c.save()
	g.Requests, g.Semantic, g.Failure = nil, nil, nil // the re-run's results replace the cut run's
	c.h.shared.watch.resume()
	err = c.runGateOnce(ctx, spec, g)
	if errors.As(err, &lost) && ctx.Err() == nil {
		g.ProductionLosses = append(g.ProductionLosses, evidence.ProductionLoss{At: lost.At.UTC(), Error: lost.Problem, Router: loss.Router})
		l := *lost
		l.Note = fmt.Sprintf("lost a second time in this gate, after %s had it back at %s: the campaign waits for a restart once a gate", loss.Router, loss.BackAt.UTC().Format("15:04:05 UTC"))
		return &l
	}
	return err
}

// productionRerunner is a gate that names what of it runs again when
// production, lost mid-gate, is back (evidence.ProductionLoss.Rerun).
type productionRerunner interface {
	productionRerun() string
}

// runGateOnce is one run of a gate under its bound.
func (c *campaign) runGateOnce(ctx context.Context, spec *GateSpec, g *evidence.Gate) error {
	h := c.h.forGate(spec.ID)
	bound := spec.Bound(h)
	gctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	if pu, ok := spec.Gate.(productionUser); ok && pu.usesProduction(h) {
		var release func()
		gctx, release = h.guardProduction(gctx)
		defer release()
	}
	err := c.recovered(spec.ID+" gate", func() error { return spec.Gate.Run(gctx, h, g) })
	if pu, ok := spec.Gate.(productionUser); ok && pu.usesProduction(h) {
		if lost := h.lostProduction(gctx, err); lost != nil && ctx.Err() == nil {
			return lost
		}
	}
	if err != nil && gctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return fmt.Errorf("gate bound of %s exceeded: %w", bound, err)
	}
	return err
}

// stopCandidate stops the candidate if it is running, recording the stop
// on its attempt.
func (c *campaign) stopCandidate() {
	r := c.h.shared.ready
	if r == nil || r.Proc == nil {
		return
	}
	c.out.line("stopping candidate %s", c.candidate.Name)
	ctx, cancel := context.WithTimeout(context.Background(), c.candidate.StopGrace.Duration+10*time.Second)
	defer cancel()
	t0 := time.Now()
	sr := r.Proc.Stop(ctx)
	c.waited(t0)
	c.h.shared.ready = nil
	for gi := range c.ev.Gates {
		g := &c.ev.Gates[gi]
		if g.Kind != KindLaunch || len(g.Attempts) == 0 {
			continue
		}
		a := &g.Attempts[len(g.Attempts)-1]
		a.Stop = &evidence.Stop{Graceful: sr.Graceful, Killed: sr.Killed, Leak: sr.Leak}
		if sr.Leak != nil {
			c.out.line("candidate stop left processes behind: %s", sr.Leak.RootCause)
		}
	}
	_ = c.save()
}

// finish restores production when the guard stopped it, settles the
// verdict and exit code, writes the report and the final evidence.
func (c *campaign) finish(start time.Time, failedGate string, inconclusive []string, aborted bool, abortReason string) (*Outcome, error) {
	e := c.ev
	critical := false
	if c.prod != nil && e.Production.Stopped {
		// Restore with a bound of its own: the campaign's context may be
		// cancelled already (Ctrl-C), production must come back anyway.
		bound := time.Duration(c.cfg.Production.RestoreAttempts)*(c.prod.ReadyTimeout.Duration+c.prod.StopGrace.Duration) + 30*time.Second
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		t0 := time.Now()
		e.Production.Restored = c.restoreProduction(ctx)
		c.waited(t0)
		cancel()
		if e.Production.Restored.OK {
			c.out.line("production %s restored: model %s, reply %q", c.prod.Name, e.Production.Restored.Model, e.Production.Restored.Reply)
		} else {
			critical = true
			c.out.line("PRODUCTION NOT RESTORED: %s", e.Production.Restored.Error)
		}
	}
	if c.prod != nil && !e.Production.Stopped && e.Production.WasRunning {
		// The campaign did not stop production: whether it still serves
		// is checked, not assumed (someone else may have stopped it).
		ctx, cancel := context.WithTimeout(context.Background(), 3*supervisor.DefaultHealthRequestTimeout)
		e.Production.AtEnd = servingAtEnd(ctx, c.prod)
		cancel()
		router, note := "", ""
		if !e.Production.AtEnd.OK {
			if router = routerOf(c.prod); router != "" {
				// The router restarts a production that died: give it
				// the profile's ready_timeout, and its backoff, to be back
				// (less when the router says it will not restart it).
				c.out.line("production %s does not serve now (%s); %s serves it and restarts it: waiting up to %s for it to serve again", c.prod.Name, e.Production.AtEnd.Error, router, c.prod.ReadyTimeout.Duration+routerBackoff)
				t0 := time.Now()
				e.Production.AtEnd, note = servingWithin(context.Background(), c.prod, router, c.prod.ReadyTimeout.Duration+routerBackoff)
				c.waited(t0)
			}
		}
		switch {
		case !e.Production.AtEnd.OK && router != "":
			c.out.line("production %s does not serve at the end of the campaign (%s); the campaign did not stop it, and %s: see 'hiro status' and 'hiro backend logs %s'", c.prod.Name, e.Production.AtEnd.Error, note, shellquote.Quote(c.prod.Name))
		case !e.Production.AtEnd.OK:
			c.out.line("production %s does not serve at the end of the campaign (%s); the campaign did not stop it: start it with 'hiro backend start %s'", c.prod.Name, e.Production.AtEnd.Error, shellquote.Quote(c.prod.Name))
		case router != "":
			c.out.line("production %s serves again: %s restarted it (health and model checked at %s)", c.prod.Name, router, e.Production.AtEnd.At.Format("15:04:05 UTC"))
		}
	}
	if c.prod != nil {
		after, files := ProductionConfigHash(c.prod)
		e.Production.ConfigHashAfter = after
		e.Fingerprints.ProductionConfigAfter = after
		e.Production.ConfigUnchanged = after == e.Production.ConfigHashBefore
		for f, d := range files {
			e.Fingerprints.Files[f+" (after)"] = d
		}
	}
	leak := c.candidateLeak()
	switch {
	case aborted:
		e.Verdict, e.ExitCode = evidence.VerdictAborted, ExitAborted
		e.TerminationReason = "aborted: " + abortReason
	case failedGate != "":
		e.Verdict, e.ExitCode = evidence.VerdictNotQualified, ExitNotQualified
		e.TerminationReason = fmt.Sprintf("gate %s failed", failedGate)
		if withheld := countWithheld(e); withheld > 0 {
			e.TerminationReason += fmt.Sprintf("; every later gate (%d) was withheld", withheld)
		}
	case leak != "":
		e.Verdict, e.ExitCode = evidence.VerdictNotQualified, ExitNotQualified
		e.TerminationReason = "every gate passed, but stopping the candidate left processes behind: " + leak
	case len(inconclusive) > 0:
		e.Verdict, e.ExitCode = evidence.VerdictInconclusive, ExitInconclusive
		e.TerminationReason = fmt.Sprintf("no gate failed, but %s could not decide (%s inconclusive)", account.Plural(len(inconclusive), "gate's comparison", "gates' comparisons"), strings.Join(inconclusive, ", "))
	default:
		e.Verdict, e.ExitCode = evidence.VerdictQualified, ExitQualified
		e.TerminationReason = "every gate passed"
	}
	if critical {
		e.ExitCode = ExitCritical
		e.TerminationReason += "; PRODUCTION COULD NOT BE RESTORED"
	}
	now := c.opts.Now()
	fin := now.UTC()
	e.FinishedAt = &fin
	e.DurationMS = now.Sub(start).Milliseconds()
	e.HarnessMS = (now.Sub(start) - c.engineWait()).Milliseconds()
	if e.HarnessMS < 0 {
		e.HarnessMS = 0
	}
	e.Report = buildReport(e, c.plan)
	if err := c.save(); err != nil {
		return nil, err
	}
	werr := c.sv.close()
	if werr == nil {
		werr = writeMarkdown(c.dir, e)
	}
	// The evidence is final: give production's lease back, or, when
	// production could not be restored, leave it for recovery.
	if critical {
		c.hold.Abandon()
	} else if err := c.hold.Release(); err != nil {
		c.out.line("releasing the lease: %v", err)
	}
	if werr != nil {
		return nil, fmt.Errorf("writing evidence: %w", werr)
	}
	c.out.line("verdict: %s (exit %d): %s", e.Verdict, e.ExitCode, e.TerminationReason)
	c.out.line("evidence: %s", filepath.Join(c.dir, evidence.PublicFile))
	return &Outcome{Evidence: e, Dir: c.dir, ExitCode: e.ExitCode}, nil
}

func (c *campaign) candidateLeak() string {
	for _, g := range c.ev.Gates {
		for _, a := range g.Attempts {
			if a.Stop != nil && a.Stop.Leak != nil {
				return a.Stop.Leak.RootCause
			}
		}
	}
	return ""
}

// progress writes campaign events; on a terminal, phase updates rewrite
// the current line.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	inLine   bool
}

func newProgress(w io.Writer, terminal bool) *progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w, terminal: terminal}
}

// line writes one line of progress. Its text may quote an engine's log (a
// gate's reason, a root cause): control bytes are escaped (package
// termtext).
func (p *progress) line(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inLine {
		fmt.Fprint(p.w, "\r\033[K")
		p.inLine = false
	}
	fmt.Fprintf(p.w, "hiro: %s\n", termtext.Escape(fmt.Sprintf(format, a...)))
}

// status shows a transient status (terminal only: rewritten in place).
func (p *progress) status(format string, a ...any) {
	if !p.terminal {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "\r\033[K  %s", termtext.Escape(fmt.Sprintf(format, a...)))
	p.inLine = true
}

// countWithheld counts the gates not run for want of authorization.
func countWithheld(e *evidence.Evidence) int {
	n := 0
	for _, g := range e.Gates {
		if g.Status == evidence.StatusNotRun && strings.HasPrefix(g.Reason, "not authorized") {
			n++
		}
	}
	return n
}
