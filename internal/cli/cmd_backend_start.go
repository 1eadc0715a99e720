package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/preflight"
	"github.com/hiro-dev/hiro/internal/procmem"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func newBackendStartCmd(g *Globals) *cobra.Command {
	noPreflight := false
	cmd := &cobra.Command{
		Use:   "start NAME [--json]",
		Short: "Start a backend, wait until it is ready, and leave it running",
		Long: `Start backend profile NAME and wait until it is ready: the process is alive,
the engine's health check passes, /v1/models reports the profile's model id,
and one bounded real completion succeeds (ready_probe). The engine keeps
running after hiro exits; its pid, process group, port, log and profile hash
are recorded in the state directory for 'hiro backend stop|status|logs'.

When NAME is the active production (after 'hiro activate' or 'hiro
rollback'), it starts as it was activated: the qualified variant's
environment and arguments from the activation record.

A port that is already taken is refused before anything starts
(port_in_use). Any exit before ready, code 0 included, is a failure,
classified from the engine's log (class, phase, root cause, facts). A
server that answers but whose probe completion fails or replies wrong is
probe_failed.

The ready verdict names the device that serves, as the engine's log shows
it (GPU with the layers offloaded, GPU and CPU, or CPU). A profile with
requires_accelerator = true fails with accelerator_unavailable when the
model is served by the CPU.

With --json, one JSON object: {"state": "ready"|"failed", "failure": {...},
"pid", "pgid", "port", "base_url", "log_path", "model_ids", "probe_reply",
"ready_after_ms", "facts", "device": {"kind", "name", "gpu_layers",
"total_layers", "evidence"}, ...}.

When hiro's record says NAME already runs, nothing is started: started with
the same profile and ready now (health, model id, probe), that is success
("already running and ready", its pid); not ready is the failed verdict;
started with another profile (the configuration changed since), it is
refused: stop it first.

A profile with requires_accelerator is first checked against the host
capability rules (docs/qualify.md, Preflight): a launch they predict to fail
(no GPU on the host) is refused before anything starts; --no-preflight
launches it anyway.

Exit status: 0 ready (or already running and ready); 1 failed (or already
running and not ready); 2 bad usage or configuration, or already running
with another profile (nothing started); 3 interrupted (the engine was
stopped); 6 busy: a campaign or another command holds its lease (named;
nothing started).`,
		Args: needArgs(1, 1, "the name of one backend profile", "hiro backend start prod"),
		RunE: func(c *cobra.Command, args []string) error {
			return runBackendStart(c.Context(), g, args[0], noPreflight)
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print one JSON object (errors too)")
	cmd.Flags().BoolVar(&noPreflight, "no-preflight", false, "launch a requires_accelerator profile even when the host capability rules predict it fails")
	return cmd
}

// runBackendStart starts backend name and reports the verdict.
func runBackendStart(ctx context.Context, g *Globals, name string, noPreflight bool) error {
	cfg, err := backendLoadConfig(g, "backend start", name)
	if err != nil {
		return err
	}
	if _, err := cfg.Backend(name); err != nil {
		return UsageError(fmt.Errorf("backend start: %w", err))
	}
	// The active production runs as it was activated (the qualified
	// variant's environment and arguments), not as the file spells it.
	prof, err := production.ProfileFor(cfg, name)
	if err != nil {
		return fmt.Errorf("backend start: %w", err)
	}
	if a, _ := production.Resolve(cfg); a != nil && a.Name == name && a.Seq > 0 && !g.JSON {
		fmt.Fprintf(g.Stderr, "hiro: %s is the active production (%s): starting its recorded configuration\n", name, activeOrigin(a.Source, a.Variant))
	}
	if prof.RequiresAccelerator && !noPreflight {
		// A launch the host capability rules say fails (no GPU for a
		// profile that needs one) is refused before anything starts.
		pr := preflight.Predict(prof, preflight.ForProduction(ctx, cfg.StateDir, ""), prof.ExclusiveAccelerator)
		if f := preflight.AsFailure(pr); f != nil && pr.Rule != preflight.RuleMemoryFit {
			res := &supervisor.Result{State: supervisor.StateFailed, Name: name, Engine: prof.Engine, ExpectedModel: prof.Model, Failure: f}
			if g.JSON {
				if err := backendPrintJSON(g, res); err != nil {
					return err
				}
			} else {
				printStartResult(g, res)
				fmt.Fprintf(g.Stdout, "nothing was started (hiro backend start %s --no-preflight launches it anyway)\n", shellquote.Quote(name))
			}
			return Silent(ExitFailed)
		}
	}
	hold, err := backendHold(prof, "backend start "+name)
	if err != nil {
		return err
	}
	defer hold.Release()
	k := production.Keeper{StateDir: cfg.StateDir}
	switch found, st := k.Look(prof); found {
	case production.FoundOwn, production.FoundForeign:
		return backendAlreadyRunning(ctx, g, prof, &st)
	case production.FoundStale:
		fmt.Fprintf(g.Stderr, "hiro: %s: removing a stale record (%s)\n", name, st.Reason)
		if err := supervisor.RemoveRecord(cfg.StateDir, name); err != nil {
			return fmt.Errorf("backend start: %w", err)
		}
	}
	// Recorded from launch (the supervisor writes the record): if this
	// hiro is killed while the engine loads, a later one can prove the
	// process is its own, stop it or wait for it.
	var opts supervisor.Options
	trimmed := false
	opts.Progress = func(p supervisor.Progress) {
		if !trimmed && p.Step != "launch" {
			// The engine runs and hiro now only waits: drop what start-up
			// touched and will not use again (the 30 MB bound).
			trimmed = true
			procmem.Trim()
		}
		if !g.JSON {
			h := ""
			if p.Health != "" {
				h = ", health " + string(p.Health)
			}
			fmt.Fprintf(g.Stderr, "hiro: %s: %-8s phase %s%s, %s, %.1fs\n", name, p.Step, p.Phase, h, termtext.Plural(int(p.Lines), "log line", "log lines"), p.Elapsed.Seconds())
		}
	}
	res, err := k.StartDetached(ctx, prof, opts)
	if err != nil {
		return fmt.Errorf("backend start: %s was ready but its record could not be written, so it was stopped: %w", name, err)
	}
	if g.JSON {
		if err := backendPrintJSON(g, res); err != nil {
			return err
		}
	} else {
		printStartResult(g, res)
	}
	switch res.State {
	case supervisor.StateReady:
		return nil
	case supervisor.StateFailed:
		return Silent(ExitFailed)
	case supervisor.StateAborted:
		if g.JSON {
			return Silent(ExitAborted)
		}
		return AbortedError(fmt.Errorf("backend start: %s: %s", name, res.Error))
	default:
		return UsageError(fmt.Errorf("backend start: %w", res.Err))
	}
}

// stateLoading is the state 'backend start --json' reports for a backend
// already running that is still loading its model (health "loading"):
// not ready yet, not failed.
const stateLoading = "loading"

// backendAlreadyRunning answers 'backend start NAME' when hiro's record
// says NAME runs. Started with the same profile and ready (checked now:
// health, model id, probe), what was asked is already so: exit 0, nothing
// started. Running and still loading is state "loading", no failure
// (exit 1: not ready yet). Running but not ready is the failed verdict
// (exit 1). Started
// with another profile (the configuration changed since) is refused as a
// usage error (exit 2): nothing is started or stopped, stop it first.
func backendAlreadyRunning(ctx context.Context, g *Globals, prof *config.Profile, st *supervisor.RecordStatus) error {
	name := prof.Name
	since := st.StartedAt.Format(time.RFC3339)
	if st.ProfileHash != prof.Hash() {
		return UsageErrorf("backend start: %s is already running (pid %d, %s, started %s) with another configuration: its profile changed since it started; stop it first with 'hiro backend stop %s', then start it again",
			name, st.PID, st.BaseURL, since, shellquote.Quote(name))
	}
	rr := supervisor.CheckReady(ctx, prof, nil)
	res := &supervisor.Result{State: supervisor.StateReady, Name: name, Engine: st.Engine, PID: st.PID, PGID: st.PGID, Port: st.Port,
		BaseURL: st.BaseURL, LogPath: st.LogPath, StartedAt: st.StartedAt, ExpectedModel: prof.Model, ModelIDs: rr.ModelIDs, ProbeReply: rr.Reply}
	// Still loading (an interrupted 'backend start' left it, or another
	// one is waiting for it) is not a failure: no class, no advice about
	// crashes; it says what runs and how to wait for it or stop it.
	loading := !rr.OK && rr.Health.State == engine.HealthLoading
	switch {
	case loading:
		res.State = stateLoading
	case !rr.OK:
		res.State, res.Failure = supervisor.StateFailed, rr.Failure
	}
	if g.JSON {
		if err := backendPrintJSON(g, struct {
			*supervisor.Result
			AlreadyRunning bool   `json:"already_running"`
			Health         string `json:"health,omitempty"`
		}{res, true, rr.Health.Message}); err != nil {
			return err
		}
		if !rr.OK {
			return Silent(ExitFailed)
		}
		return nil
	}
	if loading {
		age := time.Since(st.StartedAt).Round(time.Second)
		fmt.Fprintf(g.Stdout, "%s: already running and still loading (pid %d, %s, started %s, %s ago; health: %s); nothing started\n",
			name, st.PID, st.BaseURL, since, age, rr.Health.Message)
		if prof.ReadyTimeout.Duration > 0 && age > prof.ReadyTimeout.Duration {
			fmt.Fprintf(g.Stdout, "it has loaded for longer than the profile's ready_timeout (%s): read its log for where it stopped\n", prof.ReadyTimeout.Duration)
		}
		fmt.Fprintf(g.Stdout, "this is not a crash: an earlier 'backend start' (interrupted, or still waiting) launched it; it becomes ready by itself\n")
		fmt.Fprintf(g.Stdout, "wait for it: %s backend status %s, then run this again; log: %s\nsee it with: %s backend logs %s; %s\n",
			g.self(), shellquote.Quote(name), st.LogPath, g.self(), shellquote.Quote(name), stopHint(g, prof, name))
		return Silent(ExitFailed)
	}
	if !rr.OK {
		fmt.Fprintf(g.Stdout, "%s: already running (pid %d, %s, started %s) but not ready; nothing started\n", name, st.PID, st.BaseURL, since)
		if rr.Failure != nil {
			printFailure(g, name, rr.Failure)
		}
		fmt.Fprintf(g.Stdout, "log: %s\nsee it with: %s backend logs %s; %s\n", st.LogPath, g.self(), shellquote.Quote(name), stopHint(g, prof, name))
		return Silent(ExitFailed)
	}
	fmt.Fprintf(g.Stdout, "%s: already running and ready (pid %d, %s, model %s, started %s); nothing started\n", name, st.PID, st.BaseURL, prof.Model, since)
	fmt.Fprintf(g.Stdout, "log: %s\n%s\n", st.LogPath, stopHint(g, prof, name))
	return nil
}

// stopHint says how to stop the running backend name: 'hiro backend
// stop', or, while a hiro serve router serves it (its router lease is
// held), the router, since 'backend stop' is then refused.
func stopHint(g *Globals, prof *config.Profile, name string) string {
	if dir, err := lease.Dir(); err == nil {
		if l := lease.HeldBy(dir, lease.RouterKey(prof.BaseURL)); l != nil {
			return fmt.Sprintf("hiro serve (pid %d) serves it: stop the router to stop it (SIGTERM, with [serve] on_exit = \"stop\")", l.PID)
		}
	}
	return "stop it with: " + g.self() + " backend stop " + shellquote.Quote(name)
}

// printStartResult writes the verdict for a person.
func printStartResult(g *Globals, r *supervisor.Result) {
	w := g.Stdout
	switch r.State {
	case supervisor.StateReady:
		fmt.Fprintf(w, "%s: ready in %.2fs (pid %d, %s, model %s, probe reply %q)\n", r.Name, r.ReadyAfter.Seconds(), r.PID, r.BaseURL, r.ExpectedModel, r.ProbeReply)
		if r.Device != nil {
			fmt.Fprintf(w, "serving on: %s\n", r.Device)
		} else {
			fmt.Fprintf(w, "serving on: unknown (the log does not name the device)\n")
		}
		fmt.Fprintf(w, "log: %s\nstop it with: %s backend stop %s\n", r.LogPath, g.self(), shellquote.Quote(r.Name))
	case supervisor.StateFailed:
		printFailure(g, r.Name, r.Failure)
		if r.LogPath != "" {
			fmt.Fprintf(w, "log: %s\n", r.LogPath)
		}
		if r.Stop != nil && r.Stop.Leak != nil {
			printFailure(g, r.Name, r.Stop.Leak)
		}
	}
}

// printFailure writes a failure for a person: package account's one
// rendering of a failure (class, phase, how it ended, root cause, facts,
// next step), then the last lines of the log.
func printFailure(g *Globals, name string, f *failure.Failure) {
	w := g.Stdout
	lines := account.Failure(f)
	fmt.Fprintf(w, "%s: FAILED: %s\n", name, lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if tail := f.LogTail; len(tail) > 0 {
		if len(tail) > 8 {
			tail = tail[len(tail)-8:]
		}
		fmt.Fprintln(w, "  log tail:")
		for _, l := range tail {
			fmt.Fprintf(w, "    | %s\n", termtext.Escape(l))
		}
	}
}

// activeOrigin says where the active production comes from: "rollback 2",
// "activation 1, variant fp8" (no variant named when it ran as the
// profile is written).
func activeOrigin(source, variant string) string {
	if source == "" {
		source = "the configuration's [production]"
	}
	if variant == "" {
		return source
	}
	return source + ", variant " + variant
}
