package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/serve"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

func init() { registerCommand(newServeCmd) }

// serveOptions are the flags of `hiro serve`.
type serveOptions struct {
	listen string
}

func newServeCmd(g *Globals) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve [--listen HOST:PORT]",
		Short: "Run the OpenAI-compatible router that keeps production up",
		Long: `Proxy the OpenAI API (POST /v1/chat/completions, /v1/completions,
/v1/embeddings; GET /v1/models) to the production backend, streaming passed
through as it comes. The request's "model" routes: the [serve] alias and
production's own model id go to production, profiles listed in [serve] served
go to themselves, anything else is a 404 listing what is served.

Production is watched (health every [serve] health_interval, a bounded canary
completion every canary_interval when no request succeeded) and, when hiro
manages it, restarted after a death or a failed canary within the restart
budget (restart_budget restarts in restart_window, with backoff); past it, it
stays down and says so. While it is not ready, requests get 503 with
Retry-After (or wait up to wait_for_ready). A production a campaign holds is
left to the campaign. Prometheus metrics are at /metrics; a JSON access log
line is written per request (no prompt text); supervision events go to stderr
and <state_dir>/serve/events.jsonl.

The router is controlled through a Unix socket in your private state folder
($HIRO_STATE_HOME/serve, else $HIRO_LEASE_DIR/serve, else
$XDG_STATE_HOME/hiro/serve, else ~/.local/state/hiro/serve):
'hiro status' reads it. SIGTERM or SIGINT stops it gracefully: no new
requests, in-flight ones drain up to drain_timeout, production is left
running (or stopped with on_exit = "stop"). SIGHUP reopens the access log
(when access_log is a path) and events.jsonl, for log rotation; it never
stops the router.

Limits on a client: its request line and headers must arrive within 10 s,
its body within 2 min of its headers.

A production recorded as running with another configuration (the file
changed since it started, or another configuration shares state_dir) is not
stopped: hiro serve refuses to start, naming it and the fix ('hiro backend
stop NAME', or put back the configuration it runs with).

Exit status: 0 stopped gracefully; 1 the listener failed; 2 bad usage or
configuration, or production running with another configuration; 6 another
hiro serve already serves this state home or production (nothing was
started or stopped).`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, args []string) error {
			return runServe(c.Context(), g, o)
		},
	}
	cmd.Flags().StringVar(&o.listen, "listen", "", "HOST:PORT to listen on (default [serve] listen, else "+config.DefaultServeListen+")")
	return cmd
}

func runServe(ctx context.Context, g *Globals, o serveOptions) error {
	// SIGHUP (log rotation, systemd's reload) reopens the logs; its
	// default action would end the router without a drain.
	hup := make(chan os.Signal, 1)
	hupReopens.Store(true)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := config.Load(g.ConfigPath)
	if err != nil {
		return UsageError(fmt.Errorf("serve: %w", err))
	}
	// Production is resolved once: the line that says which production
	// this router resumes and the router itself use that one answer (a
	// switch recorded between two resolutions would make them differ).
	a, err := resolveProduction(cfg)
	if err != nil {
		return UsageError(fmt.Errorf("serve: %w", err))
	}
	prod, err := serve.ProductionOf(cfg, a)
	if err != nil {
		return UsageError(fmt.Errorf("serve: %w", err))
	}
	sayResumed(g, cfg, a)
	s, err := serve.New(serve.Options{Config: cfg, Listen: o.listen, Events: g.Stderr, Reopen: hup, OwnsProcess: true,
		RecoverCampaign: recoverCampaign, Production: prod})
	if err != nil {
		return UsageError(fmt.Errorf("serve: %w", err))
	}
	if err := s.Run(ctx); err != nil {
		if errors.Is(err, lease.ErrHeld) {
			// Another live router serves (its control socket answers, it
			// holds production's router lease, or production's record
			// names it): busy, nothing started.
			return BusyError(err)
		}
		return err
	}
	return nil
}

// resolveProduction is production.Resolve, the one resolution of the
// production 'hiro serve' resumes; a test replaces it to record a switch
// right after it (TestServeResolvesProductionOnce).
var resolveProduction = production.Resolve

// recoverCampaign is the router's settling of a campaign whose hiro died
// during a hand-over (serve.Options.RecoverCampaign): its leases in the
// user's lease folder are recovered as 'hiro recover' does.
func recoverCampaign(ctx context.Context, campaign string, progress func(string)) {
	dir, err := qualify.LeaseDir()
	if err != nil {
		progress("no lease folder: " + err.Error())
		return
	}
	for _, r := range qualify.RecoverCampaign(ctx, dir, campaign, progress) {
		if r.Err != nil {
			progress(r.Err.Error())
		}
	}
}

// sayResumed says, before the router starts, which production it resumes
// and why (the latest switch recorded for this configuration file, else
// its [production]), and warns when another configuration file switched
// that production's endpoint to another server since: switch records are
// kept per configuration file, so this router does not follow that one
// (issue 26 G11).
func sayResumed(g *Globals, cfg *config.Config, a *production.Active) {
	why := "the configuration's [production]: no switch is recorded for " + cfg.Path
	if a.Record != nil {
		why = fmt.Sprintf("%s %d of %s, %s", a.Record.Kind, a.Record.Seq, cfg.Path, a.Record.FinishedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(g.Stderr, "hiro: serve: production %s at %s (%s)\n", a.Name, a.Profile.BaseURL, why)
	if w := switchedElsewhereWarning(cfg, a); w != "" {
		fmt.Fprintf(g.Stderr, "hiro: serve: warning: %s\n", w)
	}
}

// switchedElsewhereWarning is the warning, "" when there is none, that
// another configuration file switched the production a (cfg's active
// production, the one a router of cfg serves) to another server
// (production.SwitchedElsewhere): 'hiro serve' says it as it starts,
// 'hiro status' beside the router's status (issue 26 G11).
func switchedElsewhereWarning(cfg *config.Config, a *production.Active) string {
	r := production.SwitchedElsewhere(cfg, a)
	if r == nil {
		return ""
	}
	return fmt.Sprintf("%s switched production from %s to %s at %s (record %s); switch records are kept per configuration file, so this router serves %s, not %s: to serve %s run 'hiro --config %s serve' instead, or return it with 'hiro --config %s rollback'",
		r.Config, label(r.From), label(r.To), r.FinishedAt.UTC().Format(time.RFC3339), r.Path, a.Name, label(r.To), label(r.To),
		shellquote.Quote(r.Config), shellquote.Quote(r.Config))
}

// label names a recorded production: its profile name.
func label(s *production.Snapshot) string {
	if s == nil {
		return "(none)"
	}
	return s.Name
}
