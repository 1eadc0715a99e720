package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// backendStopOpts are the flags of 'hiro backend stop'.
type backendStopOpts struct {
	Grace time.Duration
	// Force stops a production a live campaign still uses.
	Force bool
}

func newBackendStopCmd(g *Globals) *cobra.Command {
	o := &backendStopOpts{}
	cmd := &cobra.Command{
		Use:   "stop NAME [--grace DUR] [--json]",
		Short: "Stop a backend started by 'hiro backend start'",
		Long: `Stop the recorded backend NAME: SIGTERM to its process group, the grace period
(the profile's stop_grace, or --grace), SIGKILL to the group; then check that
its port is free and no process of the group is left, else report
shutdown_leak with the pids. A stale record (the process is gone, or its pid
now belongs to another process) is reported and removed; no signal is sent.

A backend that a running 'hiro serve' serves as production (its router found
through the control socket of this state home, or of another one named in
the router's lease) is not stopped (exit 6, naming the router): switch
production away with 'hiro rollback' or 'hiro activate', or stop the router.
The active production that no router serves (after 'hiro activate' without
'hiro serve', or the configuration's [production]) is stopped, with a line
saying that it is production and that nothing will start it again.
With --force it is stopped anyway; the router sees the stop as this
command's hand-over (not as engine_died) and starts it again. A
production that a running campaign uses beside its candidate is not
stopped either (exit 6, naming the campaign) unless --force. A campaign's
candidate is never stopped (exit 6, naming the campaign and its hiro pid),
--force or not: its lease refuses it, or, for a campaign started under
another HOME or HIRO_LEASE_DIR, its state record's live owner.

Exit status: 0 stopped; 1 not running (no record, or a stale one), or a
shutdown leak; 2 bad usage or configuration; 6 busy: a router serves it, or a
campaign or another command holds its lease (named; nothing stopped).`,
		Args: needArgs(1, 1, "the name of one backend profile", "hiro backend stop prod"),
		RunE: func(c *cobra.Command, args []string) error {
			return runBackendStop(c.Context(), g, o, args[0])
		},
	}
	cmd.Flags().DurationVar(&o.Grace, "grace", 0, "time between SIGTERM and SIGKILL (default: the recorded stop_grace)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "stop it even while a router serves it or a running campaign uses it beside its candidate (the campaign then fails; the router starts it again)")
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print one JSON object (errors too)")
	return cmd
}

// campaignUsing is the live campaign that keeps using the production at
// baseURL beside its candidate (lease.Lease.UsesProduction), nil when none.
func campaignUsing(dir, baseURL string) *lease.Lease {
	ls, err := lease.List(dir)
	if err != nil {
		return nil
	}
	for _, l := range ls {
		if l.Kind == lease.KindCampaign && l.UsesProduction != "" && l.OwnerAlive() &&
			lease.ProductionKey(l.UsesProduction) == lease.ProductionKey(baseURL) {
			return l
		}
	}
	return nil
}

// campaignUsingElsewhere is campaignUsing for a campaign run under
// another HOME or HIRO_LEASE_DIR (trial 12, S17: its lease is not in
// dir, and 'backend stop' stopped the production it extracted through).
// Such a campaign is found through the state_dir it shares: a running
// record whose live Owner is a campaign (its candidate), whose process's
// environment (procfs.Environ) names another lease folder, where that
// campaign's lease says it uses the production at baseURL. nil when none.
func campaignUsingElsewhere(stateDir, dir, baseURL string) *lease.Lease {
	sts, err := supervisor.StatusAll(stateDir)
	if err != nil {
		return nil
	}
	seen := map[string]bool{dir: true}
	for _, st := range sts {
		if st.Status != supervisor.StatusRunning || !st.OwnerAlive() || !strings.HasPrefix(st.Record.Owner.What, "campaign ") {
			continue
		}
		other := leaseDirOf(st.Record.Owner.PID)
		if other == "" || seen[other] {
			continue
		}
		seen[other] = true
		if l := campaignUsing(other, baseURL); l != nil {
			return l
		}
	}
	return nil
}

// leaseDirOf is the lease folder of the process pid, from its
// environment: $HIRO_LEASE_DIR, else <home>/.local/state/hiro/leases
// (private.Leases is a machine folder: no state home moves it); "" when
// its environment cannot be read.
func leaseDirOf(pid int) string {
	env, err := procfs.Environ(pid)
	if err != nil {
		return ""
	}
	if d := env(private.Leases.Env); d != "" {
		if a, err := filepath.Abs(d); err == nil {
			return a
		}
		return ""
	}
	if h := env("HOME"); filepath.IsAbs(h) && h != "/" {
		return filepath.Join(h, ".local", "state", "hiro", private.Leases.Sub)
	}
	return ""
}

// campaignLaunched returns a *qualify.CandidateInUseError when name's
// state record says a live campaign launched it and still watches it
// (supervisor.Record.Owner, "campaign <id>"): its candidate. Called once
// this command holds name's lease keys: a campaign in this lease folder
// holds them itself (backendHold refuses, naming it), so this is one
// started under another HOME or HIRO_LEASE_DIR, sharing the state_dir and
// not the leases. --force does not pass it, as it does not pass a lease.
func campaignLaunched(stateDir, name string) error {
	st, err := supervisor.Status(stateDir, name)
	if err != nil || st.Status != supervisor.StatusRunning || !st.OwnerAlive() || !strings.HasPrefix(st.Record.Owner.What, "campaign ") {
		return nil
	}
	return &qualify.CandidateInUseError{Candidate: name, Record: st.Record}
}

// routerWatching returns the live router that production's state record
// names as its owner (serve.RouterOwner: it started or adopted the
// process and restarts it) when its lease is not in this user's lease
// folder (a router under another HOME or HIRO_LEASE_DIR sharing the
// state_dir); nil when none.
//
// What is known of it is said: its configuration and control socket when
// its environment gives a state home whose socket it answers on
// (routerStateHome), with the HIRO_STATE_HOME that reaches it; else that
// its state record in stateDir names it as production's owner and that
// it runs under another HOME or HIRO_LEASE_DIR (trial 11: "configuration
// unknown" named nothing a user could act on).
func routerWatching(stateDir, name string) *control.ServingRouter {
	st, ok := production.RouterWatching(stateDir, name)
	if !ok {
		return nil
	}
	pid := st.Record.Owner.PID
	r := &control.ServingRouter{PID: pid, Production: name,
		Config: fmt.Sprintf("not known here: its state record in %s names it as %s's owner, and it runs under another HOME or HIRO_LEASE_DIR, whose lease folder this hiro does not see; run hiro with that router's HOME or HIRO_STATE_HOME (its environment: cat /proc/%d/environ | tr '\\0' '\\n')", stateDir, name, pid)}
	if home := routerStateHome(pid); home != "" {
		ctl := filepath.Join(home, private.Control.Sub)
		if c, err := control.Dial(ctl); err == nil {
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if s, err := c.Status(ctx); err == nil && s.PID == pid {
				r.Config = fmt.Sprintf("%s, state home %s: run hiro with HIRO_STATE_HOME=%s to reach it", s.Config, home, shellquote.Quote(home))
				r.Socket = control.SocketPath(ctl)
			}
		}
	}
	return r
}

// backendStopReport is the JSON of 'hiro backend stop --json'.
type backendStopReport struct {
	Name   string                   `json:"name"`
	Record *supervisor.RecordStatus `json:"record,omitempty"`
	Stop   *supervisor.StopResult   `json:"stop,omitempty"`
	Stale  bool                     `json:"stale,omitempty"`
	// ActiveProduction is set when NAME was the active production and
	// no router serves it, so nothing starts it again: what made it
	// production ("activation 5", "the configuration's [production]").
	ActiveProduction string `json:"active_production,omitempty"`
}

func runBackendStop(ctx context.Context, g *Globals, o *backendStopOpts, name string) error {
	cfg, err := backendLoadConfig(g, "backend stop", name)
	if err != nil {
		return err
	}
	var router *control.ServingRouter
	prof, err := cfg.Backend(name)
	if err != nil {
		// A record may outlive its profile; still stop what is recorded.
		if _, rerr := supervisor.ReadRecord(cfg.StateDir, name); rerr != nil {
			return UsageError(fmt.Errorf("backend stop: %w", err))
		}
	} else {
		if dir, err := lease.Dir(); err == nil {
			l := campaignUsing(dir, prof.BaseURL)
			if l == nil {
				l = campaignUsingElsewhere(cfg.StateDir, dir, prof.BaseURL)
			}
			if l != nil && !o.Force {
				return BusyError(fmt.Errorf("backend stop refused: %s is in use by %s since %s, whose candidate runs beside it and which extracts through it: stopping it would cut the campaign short; wait for it to finish, stop the campaign with kill -TERM %d (it exits cleanly), or pass --force",
					name, l.Holder(), l.Created.Format(time.RFC3339), l.PID))
			}
		}
		router = control.RouterServing(ctx, prof.BaseURL)
		if router == nil {
			router = routerWatching(cfg.StateDir, name)
		}
		if router != nil && !o.Force {
			return BusyError(fmt.Errorf("backend stop refused: %s is the production %s serves to clients: stopping it would fail their requests, and the router would start it again at once; switch production away first ('hiro rollback' or 'hiro activate'), stop the router (kill -TERM %d; with [serve] on_exit = \"stop\" it stops %s too), or pass --force to stop it anyway (the router sees an operator's stop and starts it again)",
				name, router, router.PID, name))
		}
		hold, err := backendHold(prof, "backend stop "+name)
		if err != nil {
			return err
		}
		defer hold.Release()
		if err := campaignLaunched(cfg.StateDir, name); err != nil {
			return BusyError(fmt.Errorf("backend stop refused: %w", err))
		}
		if router != nil {
			// Held until the router has seen the stop as this command's
			// hand-over (its watch discards a death under a live lease
			// holder), not as engine_died.
			defer waitRouterSaw(ctx, router)
		}
	}
	if o.Grace < 0 {
		return UsageErrorf("backend stop: --grace %s: must be positive", o.Grace)
	}
	// A stop must finish even when interrupted: the group is killed then.
	st, sr, err := production.Keeper{StateDir: cfg.StateDir}.StopRecorded(ctx, name, o.Grace)
	if errors.Is(err, supervisor.ErrNoRecord) {
		// Nothing to stop (exit 1, as documented): no advice to start it.
		return FailedError(fmt.Errorf("backend stop: %s is not running (%w in %s); nothing to stop", name, supervisor.ErrNoRecord, filepath.Join(cfg.StateDir, "backends")))
	}
	if err != nil {
		return fmt.Errorf("backend stop: %w", err)
	}
	rep := backendStopReport{Name: name, Record: &st}
	if router == nil {
		if a, err := production.Resolve(cfg); err == nil && a != nil && a.Name == name {
			rep.ActiveProduction = "the configuration's [production]"
			if a.Seq > 0 {
				rep.ActiveProduction = activeOrigin(a.Source, a.Variant)
			}
		}
	}
	if st.Status == supervisor.StatusStale {
		rep.Stale = true
	}
	if !rep.Stale || sr.Leftovers > 0 {
		rep.Stop = &sr
	}
	if g.JSON {
		if err := backendPrintJSON(g, rep); err != nil {
			return err
		}
	}
	switch {
	case rep.Stale && sr.Leftovers > 0:
		if !g.JSON {
			fmt.Fprintf(g.Stdout, "%s: not running: stale record removed (%s); stopped %s of group %d %s\n",
				name, st.Reason, leftoverWords(sr.Leftovers), st.PGID, stopHow(sr))
			if sr.Leak != nil {
				printFailure(g, name, sr.Leak)
			}
		}
		if sr.Leak != nil {
			return Silent(ExitFailed)
		}
		return nil
	case rep.Stale:
		if !g.JSON {
			fmt.Fprintf(g.Stdout, "%s: not running: stale record removed (%s); nothing was signalled\n", name, st.Reason)
		}
		return Silent(ExitFailed)
	case sr.Leak != nil:
		if !g.JSON {
			printFailure(g, name, sr.Leak)
		}
		return Silent(ExitFailed)
	}
	if !g.JSON {
		how := stopHow(sr)
		fmt.Fprintf(g.Stdout, "%s: stopped %s in %d ms (pid %d); port %d free, no process of group %d left\n", name, how, sr.DurationMS, st.PID, st.Port, st.PGID)
		if router != nil {
			fmt.Fprintf(g.Stdout, "%s: %s serves it as production and starts it again once this stop releases it\n", name, router)
		}
		if rep.ActiveProduction != "" {
			fmt.Fprintf(g.Stdout, "%s: it is the active production (%s) and no router serves it: nothing will start it again, and requests to %s fail until 'hiro backend start %s' (or 'hiro serve', which keeps production serving)\n",
				name, rep.ActiveProduction, st.BaseURL, name)
		}
	}
	return nil
}

// leftoverWords says n leftover processes: "1 leftover process".
func leftoverWords(n int) string {
	if n == 1 {
		return "1 leftover process"
	}
	return fmt.Sprintf("%d leftover processes", n)
}

// stopHow says how a stop ended its processes.
func stopHow(sr supervisor.StopResult) string {
	if sr.Killed {
		return "with SIGKILL after the grace period"
	}
	return "gracefully (SIGTERM)"
}

// waitRouterSaw waits, up to three of its health intervals' worth (15 s),
// until the router r no longer says its production ready with no
// hand-over: it has seen the stop while this command holds production's
// lease. A router whose socket is unknown is given one default interval.
func waitRouterSaw(ctx context.Context, r *control.ServingRouter) {
	deadline := time.Now().Add(3 * config.DefaultServeHealthInterval)
	if r.Socket == "" {
		deadline = time.Now().Add(config.DefaultServeHealthInterval + time.Second)
	}
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if r.Socket != "" {
			if c, err := control.Dial(filepath.Dir(r.Socket)); err == nil {
				sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				st, err := c.Status(sctx)
				cancel()
				c.Close()
				if err != nil || st.Handover != nil || st.Production.State != control.StateReady {
					return
				}
			} else {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
