package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/qualify"
)

func init() {
	registerCommand(newRecoverCmd)
	beforeCommand = append(beforeCommand, recoverBeforeCommand)
}

func newRecoverCmd(g *Globals) *cobra.Command {
	return &cobra.Command{
		Annotations: map[string]string{annotationFinishing: "restoring production"},
		Use:         "recover",
		Short:       "Restore a production left stopped by a killed campaign",
		Long: `A campaign that stops production writes a lease first and removes it only once
production is restored and verified. If hiro was killed in between (SIGKILL,
power loss), the lease remains: every hiro command restores production from
it before doing anything else, and 'hiro recover' does so on request. Leases
of campaigns still running are left alone.

Leases live in $HIRO_LEASE_DIR, else $HIRO_STATE_HOME/leases, else
$XDG_STATE_HOME/hiro/leases, else ~/.local/state/hiro/leases (created 0700;
refused when another user owns it or others may write it; never a shared
/tmp folder). A
lease that cannot be read is moved to set-aside/ there and reported; the
others are recovered. A finished campaign's evidence is never rewritten: a
restore after it is written as an event file beside its evidence.

Exit status: 0 nothing to do or production restored; 4 production could not
be restored.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, args []string) error {
			return runRecover(c.Context(), g, true)
		},
	}
}

// recoverBeforeCommand restores production before any other command when
// a dead campaign's lease is found.
func recoverBeforeCommand(g *Globals, c *cobra.Command) error {
	if c.Name() == "recover" || c.Name() == "help" || c.Name() == "completion" {
		return nil
	}
	return runRecover(c.Context(), g, false)
}

func runRecover(ctx context.Context, g *Globals, verbose bool) error {
	dir, err := qualify.LeaseDir()
	if err != nil {
		if !verbose {
			// Before another command: say it, do not block a command that
			// never touches production (campaigns and backend commands
			// refuse on their own without a lease folder).
			fmt.Fprintf(g.Stderr, "hiro: warning: leases not checked: %v\n", err)
			return nil
		}
		return UsageError(fmt.Errorf("leases: %w", err))
	}
	if !hasLeaseFiles(dir) {
		if verbose {
			fmt.Fprintln(g.Stdout, "no lease: no campaign left production stopped")
		}
		return nil
	}
	// Restoring production must not be cut short by a Ctrl-C.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Minute)
	defer cancel()
	results := qualify.Recover(rctx, dir, func(s string) { fmt.Fprintf(g.Stderr, "hiro: %s\n", s) })
	var failed []error
	if verbose && len(results) == 0 {
		// Lease files that were not campaigns' leases (set aside or gone
		// by now): say so rather than print nothing.
		fmt.Fprintln(g.Stdout, "nothing to recover: no campaign left production stopped")
	}
	for _, r := range results {
		switch {
		case r.Warning != nil:
			fmt.Fprintf(g.Stderr, "hiro: warning: %v\n", r.Warning)
		case errors.Is(r.Err, qualify.ErrLeaseHeld):
			if verbose {
				fmt.Fprintln(g.Stdout, heldLine(r.Lease, g.ConfigPath))
			}
		case r.Err != nil:
			failed = append(failed, r.Err)
		case r.Restored != nil:
			what := "campaign " + r.Lease.Campaign + " marked aborted"
			if r.Event != "" {
				what = "recorded as an event of finished campaign " + r.Lease.Campaign + " (" + r.Event + ")"
			}
			fmt.Fprintf(g.Stderr, "hiro: production %s restored and verified (model %s, reply %q); %s\n",
				r.Lease.Production, r.Restored.Model, r.Restored.Reply, what)
		default:
			fmt.Fprintf(g.Stderr, "hiro: lease of campaign %s (production was not stopped) settled\n", r.Lease.Campaign)
		}
	}
	if len(failed) > 0 {
		return CriticalError(fmt.Errorf("%w; fix what keeps production from starting, then run 'hiro recover' (every hiro command retries first; the lease stays in %s until production is verified)", errors.Join(failed...), dir))
	}
	return nil
}

// hasLeaseFiles is a cheap first look: most commands find no lease.
func hasLeaseFiles(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".lease") {
			return true
		}
	}
	return false
}

// heldLine says, for 'hiro recover', what a live campaign holds: its
// configuration, and production only when it holds it (a campaign beside
// production holds only its candidate); a campaign of another
// configuration than cfgPath is said to be so, with nothing to recover
// for this one (issue 26: it read as if it held this production).
func heldLine(l *qualify.Lease, cfgPath string) string {
	s := fmt.Sprintf("campaign %s (hiro pid %d, configuration %s) is still running", l.Campaign, l.PID, l.Config)
	if l.Production != "" {
		s += " and holds its production " + l.Production
	} else {
		s += " beside its production; it holds only its candidate " + l.Candidate
	}
	if abs, err := filepath.Abs(cfgPath); err == nil && l.Config != "" && abs != l.Config {
		s += fmt.Sprintf("; it is another configuration's: nothing to recover for %s", cfgPath)
	}
	return s
}
