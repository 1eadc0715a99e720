package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/activation"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/journal"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/ramp"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

func init() {
	registerCommand(newActivateCmd)
	beforeCommand = append(beforeCommand, recoverSwitchBeforeCommand)
}

// switchOpts are the flags 'activate' and 'rollback' share.
type switchOpts struct {
	Journal string
	Check   bool
	// AcceptInconclusive is activate's --accept-inconclusive;
	// AcceptOlder its --accept-older-evidence.
	AcceptInconclusive bool
	AcceptOlder        bool
	// NoPreflight activates without predicting the new production first.
	NoPreflight bool
	// Progressive is activate's --progressive (percentages, "" for a
	// switch at once), Soak its --soak, MinRequests its --min-requests
	// (0: the ramp's default), Margin its --margin (0: the default) and
	// MaxDuration its --max-duration (0: the default bound).
	Progressive string
	Soak        time.Duration
	MinRequests int
	Margin      float64
	MaxDuration time.Duration
	// TrustUnsigned accepts evidence (or a record) without a signature.
	TrustUnsigned bool
	// journalSet is whether --journal was given; without it the entry
	// goes to the configuration's <state_dir>/journal.
	journalSet bool
}

// journalDir resolves --journal: the flag's folder when given ("" for
// none), else journal.DefaultDir inside the configuration's state_dir
// (never the current directory).
func (o *switchOpts) journalDir(cfg *config.Config) string {
	if o.journalSet {
		return o.Journal
	}
	return filepath.Join(cfg.StateDir, journal.DefaultDir)
}

// switchSummary is what --json prints.
type switchSummary struct {
	Outcome  string `json:"outcome"`
	ExitCode int    `json:"exit_code"`
	Headline string `json:"headline"`
	From     string `json:"from,omitempty"`
	To       string `json:"to,omitempty"`
	Variant  string `json:"variant,omitempty"`
	Record   string `json:"record,omitempty"`
	Journal  string `json:"journal,omitempty"`
	Error    string `json:"error,omitempty"`
	// Field names what a refusal rests on.
	Field string `json:"field,omitempty"`
}

const switchExitText = `Exit status: 0 switched (the new production verified ready); 1 refused
(nothing started or stopped; the message names the field that decided it) or
the switch failed and the old production is back and verified; 2 bad usage or
configuration; 3 interrupted, the old production back and verified; 4 the
old production could not be put back (critical); 6 busy: another hiro holds
the switch lock or a lease the switch needs (named; nothing started or
stopped).`

func newActivateCmd(g *Globals) *cobra.Command {
	o := &switchOpts{}
	cmd := &cobra.Command{
		Annotations: map[string]string{annotationFinishing: "finishing or undoing the production switch"},
		Use:         "activate EVIDENCE [--check] [--progressive 1,5,25,100 [--soak 5m] [--min-requests 456]] [--accept-inconclusive] [--trust-unsigned] [--journal DIR] [--json]",
		Short:       "Switch production to a qualified campaign's candidate",
		Long: `Switch production to the candidate of a campaign (EVIDENCE: its evidence folder
or evidence file; the private copy is read, it records what ran). Refused
unless the evidence is yours (owned by you, written by no one else), signed by
a trusted key ('hiro trust'; --trust-unsigned for evidence of an older hiro),
says qualified, finished within production.max_evidence_age,
and its fingerprints still match what would run: the candidate profile, the
plan, the prompts, the schema, the corpus and the artifact manifest (verified
again). It is stale, and refused, when the production it was compared against
is no longer the active one. An inconclusive campaign (no gate failed, but a
comparison with production could not decide; qualify exit 5) is refused unless
--accept-inconclusive is given, which the activation record keeps. The
configuration's [activation] require lists the gate kinds the evidence must
hold, each passed (default artifact, ready_control, structured_control,
semantic; a shadow gate stands in for semantic); --check names each one
missing. A semantic gate of older evidence (no intervals) counts only with
--accept-older-evidence, recorded. What runs is what qualified: if the launch gate
passed on a fallback variant, that variant's environment and arguments.

The switch starts the candidate (or, when either needs the accelerator
exclusively, stops the old production first), proves it ready (health, model
id, a bounded READY completion), then stops the old production. If the new
one fails at any step the old one is put back and verified. The activation
record in the private state folder (see 'hiro rollback --help') then names
production for every hiro command; the configuration file is never rewritten.
A journal entry says "Production switched from A to B on the evidence of
campaign X".

Before anything is stopped the new production is predicted on this host
(memory fit and host capability rules, as 'hiro fit' prints them): a predicted
failure refuses the switch; --no-preflight switches anyway.

--progressive 1,5,25,100 (needs a running 'hiro serve') moves production's
requests to the new production by degrees instead of at once: once it is
started and verified beside the old one, the router sends it that share of
the requests step by step, sticky per client (the OpenAI "user" field, else
the X-Hiro-Session header), and compares the two on each step's live
requests: error rate, latency (rank test above a floor) and the replies'
schema and validator checks. A step advances after --soak and at least
--min-requests candidate requests when every comparison is conclusive; a
regression reverses the ramp at once, the router alone sending every request
back to the old production, and the activation is recorded as failed with
the ramp and its reason. Until the last step completes, production is the old
one for every command; 'hiro status' shows the step; 'hiro rollback' stops the
ramp at any step.

--check runs every check and touches nothing.

` + switchExitText,
		Args: needArgs(1, 1, "the evidence folder or evidence.json of the campaign that qualified the new production", "hiro activate .hiro/evidence/demo/<id> --check"),
		RunE: func(c *cobra.Command, args []string) error {
			return runActivate(c.Context(), g, o, args[0])
		},
	}
	addSwitchFlags(cmd, g, o)
	cmd.Flags().BoolVar(&o.AcceptInconclusive, "accept-inconclusive", false, "activate on an inconclusive campaign (no gate failed, a comparison could not decide); the activation record says so")
	cmd.Flags().BoolVar(&o.AcceptOlder, "accept-older-evidence", false, "let a semantic gate of older evidence (no intervals) satisfy [activation] require; the activation record says so")
	cmd.Flags().BoolVar(&o.NoPreflight, "no-preflight", false, "switch without predicting the new production's memory fit and host capabilities first")
	cmd.Flags().StringVar(&o.Progressive, "progressive", "", "ramp production's requests to the new production by these increasing percentages, ending at 100, through hiro serve, e.g. 1,5,25,50,100")
	cmd.Flags().DurationVar(&o.Soak, "soak", ramp.DefaultSoak, "with --progressive: the least time each step serves")
	cmd.Flags().IntVar(&o.MinRequests, "min-requests", 0, fmt.Sprintf("with --progressive: the fewest candidate requests a step advances on; at least the count a step with no failed request needs to pass at --margin (default that count: %d at the default margin); fewer is refused", max(ramp.DefaultMinRequests, ramp.MinRequestsToDecide(ramp.DefaultMargin))))
	cmd.Flags().Float64Var(&o.Margin, "margin", ramp.DefaultMargin, "with --progressive: how much worse than production's the new backend's error and invalid rates may be (a fraction: 0.02 is two points); a wider margin decides on fewer requests")
	cmd.Flags().DurationVar(&o.MaxDuration, "max-duration", 0, fmt.Sprintf("with --progressive: the ramp's overall bound; still ramping then, it is reversed and the old backend serves every request (default %d × soak × steps, at least %s)", ramp.DefaultMaxDurationFactor, ramp.DefaultMaxDurationFloor))
	return cmd
}

func addSwitchFlags(cmd *cobra.Command, g *Globals, o *switchOpts) {
	cmd.Flags().StringVar(&o.Journal, "journal", "", "journal folder the entry is written to (default: journal/ in the configuration's state_dir; \"\" for none)")
	cmd.PreRun = func(c *cobra.Command, _ []string) { o.journalSet = c.Flags().Changed("journal") }
	cmd.Flags().BoolVar(&o.Check, "check", false, "run the checks only; start and stop nothing")
	cmd.Flags().BoolVar(&o.TrustUnsigned, "trust-unsigned", false, "accept evidence or an activation record without a signature (written by a hiro older than signing); the switch's record says so. A changed or foreign-key signature is refused whatever this says")
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print a JSON summary on stdout (errors too)")
}

// switchOptions are the switch's options; a running 'hiro serve' of the
// same configuration is switched through its control socket.
func switchOptions(ctx context.Context, g *Globals, o *switchOpts, cfg *config.Config) activation.Options {
	progress := func(s string) { fmt.Fprintf(g.Stderr, "hiro: %s\n", s) }
	r := activation.RouterFor(ctx, cfg)
	if r != nil {
		progress("hiro serve runs for this configuration: it is switched through its control socket")
	}
	o.Journal = o.journalDir(cfg)
	o.journalSet = true
	return activation.Options{JournalDir: o.Journal, Progress: progress, Router: r, NoPreflight: o.NoPreflight, Accept: activation.Accept{Unsigned: o.TrustUnsigned}}
}

func runActivate(ctx context.Context, g *Globals, o *switchOpts, arg string) error {
	cfg, err := config.Load(g.ConfigPath)
	if err != nil {
		return UsageError(fmt.Errorf("activate: %w", err))
	}
	var pol *ramp.Policy
	if o.Progressive != "" {
		steps, err := ramp.ParseSteps(o.Progressive)
		if err != nil {
			return UsageError(fmt.Errorf("activate: %w", err))
		}
		pol = &ramp.Policy{Steps: steps, Soak: config.Duration{Duration: o.Soak}, MinRequests: o.MinRequests, Margin: o.Margin,
			MaxDuration: config.Duration{Duration: o.MaxDuration}}
		if err := pol.Fill(); err != nil {
			return UsageError(fmt.Errorf("activate: %w", err))
		}
		// A floor no clean step can advance on is refused before anything
		// starts: the count status would say a step waits for would not be
		// what it waits for.
		if err := pol.CheckDecidable(); err != nil {
			return UsageError(fmt.Errorf("activate: --progressive: %w", err))
		}
	}
	path, err := activation.EvidencePath(arg)
	if err != nil {
		return UsageError(fmt.Errorf("activate: %w", err))
	}
	if o.Check {
		q, err := activation.Check(ctx, cfg, path, time.Now(), activation.Accept{Inconclusive: o.AcceptInconclusive, OlderEvidence: o.AcceptOlder, Unsigned: o.TrustUnsigned})
		if err != nil {
			return switchError(g, "activate", err)
		}
		sum := switchSummary{Outcome: "would_switch", Headline: fmt.Sprintf("campaign %s may activate %s (variant %s), replacing %s", q.Evidence.ID, q.Profile.Name, q.Variant, activeName(q.Active)),
			From: activeName(q.Active), To: q.Profile.Name, Variant: q.Variant}
		return printSwitch(g, sum)
	}
	so := switchOptions(ctx, g, o, cfg)
	so.Accept.Inconclusive = o.AcceptInconclusive
	so.Accept.OlderEvidence = o.AcceptOlder
	so.Progressive = pol
	out, err := activation.Activate(ctx, cfg, path, so)
	if err != nil {
		return switchError(g, "activate", err)
	}
	return reportSwitch(g, out, o.Journal)
}

func activeName(a *production.Active) string {
	if a == nil {
		return ""
	}
	return a.Name
}

// switchError maps a refusal to exit 1 (with the field in --json), and a
// refusal because another hiro holds the switch lock or a lease to exit 6
// (ExitBusy: nothing was started or stopped; run it again later).
func switchError(g *Globals, what string, err error) error {
	var re *activation.RefusedError
	var be *production.BusyError
	busy := errors.As(err, &be) || errors.Is(err, lease.ErrHeld)
	refused := errors.As(err, &re) || busy
	if g.JSON {
		sum := switchSummary{Outcome: "refused", ExitCode: ExitFailed, Error: what + ": " + err.Error()}
		if re != nil {
			sum.Field = re.Field
		}
		if busy {
			sum.ExitCode = ExitBusy
		}
		if !refused {
			sum.Outcome, sum.ExitCode = "error", ExitUsage
		}
		_ = writeJSON(g, sum)
		return Silent(sum.ExitCode)
	}
	if busy {
		return BusyError(fmt.Errorf("%s: %w", what, err))
	}
	if refused {
		return FailedError(fmt.Errorf("%s: %w", what, err))
	}
	if errors.Is(err, context.Canceled) {
		return AbortedError(fmt.Errorf("%s: %w", what, err))
	}
	return UsageError(fmt.Errorf("%s: %w", what, err))
}

func printSwitch(g *Globals, sum switchSummary) error {
	if g.JSON {
		return writeJSON(g, sum)
	}
	fmt.Fprintln(g.Stdout, sum.Headline)
	if sum.Record != "" {
		fmt.Fprintf(g.Stdout, "record:  %s\n", sum.Record)
	}
	if sum.Journal != "" {
		fmt.Fprintf(g.Stdout, "journal: %s\n", sum.Journal)
	}
	return nil
}

// reportSwitch prints a switch's outcome and returns its exit status.
func reportSwitch(g *Globals, out *activation.Outcome, journalDir string) error {
	r := out.Record
	sum := switchSummary{Outcome: r.Outcome, ExitCode: out.ExitCode, Headline: activation.Headline(r), Record: r.Path, Error: r.Error}
	if r.From != nil {
		sum.From = r.From.Name
	}
	if r.To != nil {
		sum.To, sum.Variant = r.To.Name, r.To.Variant
	}
	if out.Journal != "" {
		sum.Journal = filepath.Join(journalDir, out.Journal)
	}
	if err := printSwitch(g, sum); err != nil {
		return err
	}
	if out.ExitCode == activation.ExitCritical && !g.JSON {
		fmt.Fprintf(g.Stdout, "PRODUCTION IS DOWN. Restore it by hand: hiro --config %s backend start %s\n", shellquote.Quote(r.Config), shellquote.Quote(r.From.Name))
	}
	return Silent(out.ExitCode)
}

// recoverSwitchBeforeCommand settles a switch left in progress by a
// killed hiro before any other command.
func recoverSwitchBeforeCommand(g *Globals, c *cobra.Command) error {
	if c.Name() == "help" || c.Name() == "completion" {
		return nil
	}
	ins, err := production.Intents()
	if err != nil {
		return fmt.Errorf("reading switches in progress: %w", err)
	}
	if len(ins) == 0 {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(c.Context()), 30*time.Minute)
	defer cancel()
	var failed []error
	for _, r := range activation.Recover(rctx, func(s string) { fmt.Fprintf(g.Stderr, "hiro: %s\n", s) }) {
		switch {
		case errors.Is(r.Err, activation.ErrSwitchRunning):
		case r.Err != nil:
			failed = append(failed, r.Err)
		case r.Record != nil:
			fmt.Fprintf(g.Stderr, "hiro: switch settled: %s (record %s)\n", r.Record.Error, r.Record.Path)
		}
	}
	if len(failed) > 0 {
		where, derr := production.Dir()
		if derr != nil {
			where = "the production record folder"
		}
		err := CriticalError(fmt.Errorf("a switch cut short could not be settled: %w; start production by hand ('hiro backend start NAME' runs while a switch is unsettled): once it answers ready, the next hiro command settles the switch; or remove the switch.json in %s to give up on it",
			errors.Join(failed...), where))
		if restoresByHand[c.CommandPath()] {
			// The commands that put production back or look at it run
			// anyway: blocking them would leave no way out.
			fmt.Fprintf(g.Stderr, "hiro: WARNING: %v\n", err)
			return nil
		}
		return err
	}
	return nil
}

// restoresByHand are the commands that run while a switch cut short is
// unsettled (they start, stop or look at backends; nothing they do
// depends on which production is active).
var restoresByHand = map[string]bool{"hiro backend start": true, "hiro backend stop": true, "hiro backend status": true,
	"hiro backend logs": true, "hiro status": true, "hiro recover": true, "hiro doctor": true, "hiro version": true, "hiro diagnose": true}
