package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/activation"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/ramp"
)

func init() { registerCommand(newRollbackCmd) }

func newRollbackCmd(g *Globals) *cobra.Command {
	o := &switchOpts{}
	cmd := &cobra.Command{
		Annotations: map[string]string{annotationFinishing: "finishing or undoing the production switch"},
		Use:         "rollback [--check] [--trust-unsigned] [--journal DIR] [--json]",
		Short:       "Switch production back to the one the last activation replaced",
		Long: `Switch production back to the production the active activation replaced
(repeat it to go further back), verified ready the same way as an activation
(health, model id, a bounded READY completion); the old one is put back if the
switch fails. Refused when the previous production's recorded configuration no
longer matches what would run (the message names the changed key or file),
or when the active record is not signed by a trusted key ('hiro trust';
--trust-unsigned for a record of an older hiro).

Activation records, one JSON document per activation or rollback (0600 in an
owner-only folder, each signed), are kept in $HIRO_PRODUCTION_DIR, else
<state home>/production (the state home: $HIRO_STATE_HOME, else
$HIRO_LEASE_DIR, else $XDG_STATE_HOME/hiro, else ~/.local/state/hiro), one
folder per configuration file. The latest
switched record names production; before any, the configuration's
[production] does.

During a progressive activation ('hiro activate --progressive') rollback
stops the ramp at its step: the router sends every request back to the
production that never stopped serving, and the activation stops the new
one and records the ramp as stopped.

--check runs the checks only and touches nothing.

` + switchExitText,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error {
			return runRollback(c.Context(), g, o)
		},
	}
	addSwitchFlags(cmd, g, o)
	return cmd
}

func runRollback(ctx context.Context, g *Globals, o *switchOpts) error {
	cfg, err := config.Load(g.ConfigPath)
	if err != nil {
		return UsageError(fmt.Errorf("rollback: %w", err))
	}
	if o.Check {
		a, err := production.Resolve(cfg)
		if err != nil {
			return switchError(g, "rollback", err)
		}
		if a == nil || a.Record == nil || a.Record.RollbackTo == nil {
			return switchError(g, "rollback", &activation.RefusedError{Msg: "no activation to roll back"})
		}
		t := a.Record.RollbackTo
		if _, err := (activation.Accept{Unsigned: o.TrustUnsigned}).Verify(a.Record.Path, "production record"); err != nil {
			return switchError(g, "rollback", err)
		}
		if _, err := t.Check(cfg, "previous production "+t.Name); err != nil {
			return switchError(g, "rollback", &activation.RefusedError{Msg: err.Error()})
		}
		return printSwitch(g, switchSummary{Outcome: "would_switch", Headline: fmt.Sprintf("rollback would switch production from %s back to %s (%s)", a.Name, t.Name, t.Source), From: a.Name, To: t.Name, Variant: t.Variant})
	}
	if res, err := activation.StopRamp(ctx, cfg, "hiro rollback"); err != nil {
		return switchError(g, "rollback", err)
	} else if res != nil {
		sum := switchSummary{Outcome: "ramp_stopped", From: res.Candidate, To: res.Production,
			Headline: fmt.Sprintf("The progressive activation of %s was stopped at step %d of %d (%s): every request is production %s's again; the activation stops %s and records it",
				res.Candidate, res.Step+1, len(res.Steps), ramp.Percent(res.History[len(res.History)-1].Share), res.Production, res.Candidate)}
		return printSwitch(g, sum)
	}
	out, err := activation.Rollback(ctx, cfg, switchOptions(ctx, g, o, cfg))
	if err != nil {
		return switchError(g, "rollback", err)
	}
	return reportSwitch(g, out, o.Journal)
}
