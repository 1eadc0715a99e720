package cli

import (
	"context"
	"encoding/json"
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
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

func init() { registerCommand(newStatusCmd) }

func newStatusCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show what hiro serve serves: production, last canary, restarts",
		Long: `Ask the running router (hiro serve) through its control socket in your private
state folder ($HIRO_STATE_HOME/serve, else $HIRO_LEASE_DIR/serve, else
$XDG_STATE_HOME/hiro/serve, else ~/.local/state/hiro/serve) for production's state, since when, its last health
check and canary, its restarts within the budget and its last failure with its
next step (for a server that refuses hiro's key or whose certificate is not
trusted: the profile setting to fix, api_key_env/api_key_file or ca_file).
When another configuration file switched this production's endpoint to
another server since (switch records are kept per file), a warning on stderr
names that file, its record and the --config that serves or rolls it back,
as 'hiro serve' says when it starts.

Exit status: 0 production is ready; 1 it is not, or no router is running.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, args []string) error {
			return runStatus(c.Context(), g)
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print the router's status as JSON (schema hiro.serve.status/v1)")
	return cmd
}

func runStatus(ctx context.Context, g *Globals) error {
	dir, err := control.Dir()
	if err != nil {
		return FailedError(fmt.Errorf("status: %w", err))
	}
	c, err := control.Dial(dir)
	if err != nil {
		if errors.Is(err, control.ErrNoRouter) {
			if elsewhere := recordedRouter(g, dir); elsewhere != "" {
				return FailedError(fmt.Errorf("status: no hiro serve answers under state home %s (control socket %s); %s", filepath.Dir(dir), control.SocketPath(dir), elsewhere))
			}
		}
		return FailedError(fmt.Errorf("status: %w; %s", err, otherStateHomes(dir)))
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := c.Status(ctx)
	if err != nil {
		return FailedError(fmt.Errorf("status: %w", err))
	}
	warning := ""
	if cfg, err := config.Load(g.ConfigPath); err == nil {
		if other := routerServesOther(st, cfg, dir); other != "" {
			// Its status is not this configuration's.
			return FailedError(fmt.Errorf("status: %s", other))
		}
		if a, err := production.Resolve(cfg); err == nil && a != nil && a.Profile != nil &&
			lease.ProductionKey(a.Profile.BaseURL) == lease.ProductionKey(st.Production.BaseURL) {
			// The warning 'hiro serve' gave as it started (issue 26 G11).
			warning = switchedElsewhereWarning(cfg, a)
		}
	}
	if g.JSON {
		if err := backendPrintJSON(g, st); err != nil {
			return err
		}
	} else {
		printServeStatus(g, st)
	}
	switch {
	case warning != "" && g.JSON:
		b, _ := json.Marshal(map[string]string{"warning": warning})
		fmt.Fprintln(g.Stderr, string(b))
	case warning != "":
		fmt.Fprintf(g.Stderr, "hiro: status: warning: %s\n", warning)
	}
	if st.Production.State != control.StateReady || st.Draining {
		return Silent(ExitFailed)
	}
	return nil
}

// routerServesOther says, as "no hiro serve runs for CFG: the running one
// (pid, address) serves OTHER, production NAME at URL; ...", why the live
// router st (its control folder dir) is not cfg's: it serves another
// configuration file and another production. It is "" when st serves cfg
// (the same file, or another file naming the same production endpoint).
// 'hiro status' and 'hiro shadow start' refuse with it (exit 1).
func routerServesOther(st *control.Status, cfg *config.Config, dir string) string {
	if st.Config == cfg.Path || servesProductionOf(st, cfg) {
		return ""
	}
	return fmt.Sprintf("no hiro serve runs for %s: the running one (pid %d, %s) serves %s, production %s at %s; one router runs per user at a time (its control socket is %s)",
		cfg.Path, st.PID, st.Listen, st.Config, st.Production.Name, st.Production.BaseURL, control.SocketPath(dir))
}

// servesProductionOf reports whether the router st serves cfg's active
// production's endpoint (another file naming the same server).
func servesProductionOf(st *control.Status, cfg *config.Config) bool {
	a, err := production.Resolve(cfg)
	if err != nil || a == nil || a.Profile == nil {
		return false
	}
	return lease.ProductionKey(a.Profile.BaseURL) == lease.ProductionKey(st.Production.BaseURL)
}

func printServeStatus(g *Globals, st *control.Status) {
	w := g.Stdout
	p := st.Production
	fmt.Fprintf(w, "router      %s (pid %d, up %s), config %s\n", st.Listen, st.PID, time.Since(st.StartedAt).Round(time.Second), st.Config)
	fmt.Fprintf(w, "models      %s\n", strings.Join(st.Models, ", "))
	kind := "managed"
	if !p.Managed {
		kind = "unmanaged"
	}
	fmt.Fprintf(w, "production  %s (%s, %s, %s) %s\n", p.Name, p.Engine, kind, p.BaseURL, pidText(p.PID))
	fmt.Fprintf(w, "state       %s since %s (%s ago)\n", p.State, p.Since.Local().Format(time.TimeOnly), time.Since(p.Since).Round(time.Second))
	if p.Message != "" {
		fmt.Fprintf(w, "            %s\n", p.Message)
	}
	if st.Draining {
		fmt.Fprintf(w, "draining    new requests get 503; %d in flight\n", st.InFlight)
	}
	if st.Handover != nil {
		fmt.Fprintf(w, "handed over campaign %s (hiro pid %d) since %s\n", st.Handover.Campaign, st.Handover.OwnerPID, st.Handover.Since.Local().Format(time.TimeOnly))
	}
	printRamp(w, st.Ramp, p.Name)
	fmt.Fprintf(w, "health      %s\n", checkText(p.LastHealth))
	fmt.Fprintf(w, "canary      %s\n", checkText(p.LastCanary))
	fmt.Fprintf(w, "restarts    %d (%d in the last %s, budget %d)\n", p.Restarts, p.RestartsInWindow, p.RestartWindow, p.RestartBudget)
	if p.LastFailure != nil {
		fmt.Fprintf(w, "last failure %s at %s\n", p.LastFailure.Error(), p.LastFailureAt.Local().Format(time.TimeOnly))
		if p.LastFailure.NextStep != "" {
			// e.g. which setting to fix when production refuses the
			// key or its certificate is not trusted (llm.Advice)
			fmt.Fprintf(w, "next step   %s\n", redact.Secrets(p.LastFailure.NextStep))
		}
	}
	// Each served profile with its state and, as --json has them, why
	// (Message: the health error and what to fix) and its last health check.
	for _, b := range st.Served {
		fmt.Fprintf(w, "served      %s (%s, %s) model %s\n", b.Name, b.Engine, b.BaseURL, b.Model)
		if b.Since.IsZero() {
			fmt.Fprintf(w, "            state %s\n", b.State)
		} else {
			fmt.Fprintf(w, "            state %s since %s (%s ago)\n", b.State, b.Since.Local().Format(time.TimeOnly), time.Since(b.Since).Round(time.Second))
		}
		if b.Message != "" {
			fmt.Fprintf(w, "            %s\n", redact.Secrets(b.Message))
		}
		if b.LastHealth != nil {
			fmt.Fprintf(w, "            health %s\n", redact.Secrets(checkText(b.LastHealth)))
		}
	}
}

func pidText(pid int) string {
	if pid == 0 {
		return ""
	}
	return fmt.Sprintf("pid %d", pid)
}

func checkText(c *control.Check) string {
	if c != nil && c.Stale {
		cc := *c
		cc.Stale = false
		return checkText(&cc) + " (stale: from before production went down)"
	}
	switch {
	case c == nil:
		return "none yet"
	case c.Skipped != "":
		return fmt.Sprintf("skipped %s ago: %s", time.Since(c.At).Round(time.Second), c.Skipped)
	case c.OK:
		s := fmt.Sprintf("ok %s ago (%.1f ms)", time.Since(c.At).Round(time.Second), c.DurationMS)
		if c.Reply != "" {
			s += fmt.Sprintf(", reply %q", c.Reply)
		}
		return s
	}
	return fmt.Sprintf("FAILED %s ago: %s", time.Since(c.At).Round(time.Second), c.Error)
}

// otherStateHomes says which state home a command looked in (ctlDir is
// its control socket folder) and names the live routers that run under
// another one (their leases name their control sockets), with the
// HIRO_STATE_HOME that reaches each.
func otherStateHomes(ctlDir string) string {
	msg := fmt.Sprintf("looked in state home %s (set HIRO_STATE_HOME to look in another)", filepath.Dir(ctlDir))
	dir, err := lease.Dir()
	if err != nil {
		return msg
	}
	ls, _ := lease.List(dir)
	var others []string
	for _, l := range ls {
		if l.Control == "" || filepath.Dir(l.Control) == ctlDir || !l.OwnerAlive() {
			continue
		}
		others = append(others, fmt.Sprintf("hiro serve pid %d (configuration %s) runs under state home %s: HIRO_STATE_HOME=%s hiro status",
			l.PID, l.Config, filepath.Dir(filepath.Dir(l.Control)), shellquote.Quote(filepath.Dir(filepath.Dir(l.Control)))))
	}
	if len(others) == 0 {
		return msg
	}
	return msg + "; " + strings.Join(others, "; ")
}

// recordedRouter names the live hiro serve that production's state
// record names as its owner when no router answers under this state home
// (one under another HOME or HIRO_LEASE_DIR: its lease is not in this
// user's lease folder, so otherStateHomes does not see it; trial 10 Q7),
// with the 'HIRO_STATE_HOME=DIR hiro status' that reaches it when its
// environment (procfs.Environ) gives a state home whose socket that
// router answers on. "" when the record names no live router.
func recordedRouter(g *Globals, ctlDir string) string {
	cfg, err := config.Load(g.ConfigPath)
	if err != nil {
		return ""
	}
	a, err := production.Resolve(cfg)
	if err != nil || a == nil || a.Profile == nil || a.Profile.Unmanaged {
		return ""
	}
	r := routerWatching(cfg.StateDir, a.Profile.Name)
	if r == nil {
		return ""
	}
	what := fmt.Sprintf("production %s is served by hiro serve pid %d (its state record in %s names it as owner)", a.Profile.Name, r.PID, cfg.StateDir)
	if home := routerStateHome(r.PID); home != "" && filepath.Join(home, private.Control.Sub) != ctlDir {
		return fmt.Sprintf("%s under state home %s: HIRO_STATE_HOME=%s hiro status reaches it (do not start another: a second hiro serve is refused)", what, home, shellquote.Quote(home))
	}
	return what + " under another HOME or HIRO_LEASE_DIR: run hiro status with that router's HOME or HIRO_STATE_HOME (do not start another: a second hiro serve is refused)"
}

// routerStateHome is the state home of the router pid (from its
// environment) when that router answers on its control socket there,
// "" otherwise.
func routerStateHome(pid int) string {
	env, err := procfs.Environ(pid)
	if err != nil {
		return ""
	}
	home, err := private.StateHomeOf(env)
	if err != nil {
		return ""
	}
	c, err := control.Dial(filepath.Join(home, private.Control.Sub))
	if err != nil {
		return ""
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if st, err := c.Status(ctx); err != nil || st.PID != pid {
		return ""
	}
	return home
}
