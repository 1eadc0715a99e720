package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/preflight"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

func init() { registerCommand(newQualifyCmd) }

type qualifyOpts struct {
	Check       bool
	Out         string
	NoPreflight bool
	HostFacts   string
}

// qualifySummary is what 'hiro qualify --json' prints on stdout.
type qualifySummary struct {
	Verdict           string `json:"verdict"`
	ExitCode          int    `json:"exit_code"`
	TerminationReason string `json:"termination_reason"`
	// NotJudged are the kinds the activation policy needs that the plan
	// has no gate of (evidence.Evidence.NotJudged).
	NotJudged       []string `json:"not_judged,omitempty"`
	Evidence        string   `json:"evidence"`
	PrivateEvidence string   `json:"private_evidence"`
	Report          string   `json:"report"`
}

func newQualifyCmd(g *Globals) *cobra.Command {
	o := &qualifyOpts{}
	cmd := &cobra.Command{
		Annotations: map[string]string{annotationFinishing: "stopping the candidate and restoring production where needed"},
		Use:         "qualify PLAN [--check] [--out DIR] [--json] [--no-preflight] [--host-facts FILE]",
		Short:       "Run a bounded qualification campaign for a candidate backend",
		Long: `Run the campaign in PLAN (TOML): its gates in order (prereq, artifact, launch
with its attempt ladder, ready_control, structured_control, sequential,
concurrency, semantic, shadow), each only if every gate before it passed. When the candidate needs
the accelerator exclusively, production is stopped under a lease just before
the first launch attempt (the prereq and artifact gates run while it serves),
and restored and verified at the end whatever happens (gate failure, harness
error, Ctrl-C, SIGTERM, SIGHUP; after a SIGKILL the next hiro command restores it).
Evidence (evidence.json public, evidence.private.json private) and report.md
are written under the plan's evidence directory after every gate.

Before production is stopped, every attempt of the ladder is predicted (memory
fit from the artifact, host capability rules; see 'hiro fit'): an attempt
predicted to fail is recorded with outcome predicted_failure and not launched,
and production is not stopped when no attempt can run. --no-preflight
launches every attempt anyway (recorded in the evidence); --host-facts
predicts against another host's recorded facts (a replay).

Every key of a plan, each gate kind's keys with their types, defaults and
meaning, and the attempt ladder's variant keys: docs/plan.md (generated from
the plan's types).

--check validates the plan and every profile it names, touching nothing: every
number finite and in range, every referenced corpus, schema and manifest
present and well-formed, the candidate's and production's commands found;
it prints the preflight's prediction for every attempt.

Exit status: 0 qualified; 1 not qualified (a gate failed); 2 bad usage,
configuration or plan (nothing started or stopped); 3 aborted (harness error
or interrupt) with production restored; 4 production could not be restored;
5 inconclusive (no gate failed, a comparison could not decide); 6 busy:
another hiro holds production or the accelerator (named; nothing started,
no evidence written): run it again when it is done. --check exits 6 too
when a campaign could not start now for that reason.`,
		Args: needArgs(1, 1, "the path of one campaign plan, a TOML file", "hiro qualify examples/demo/plan.toml --check"),
		RunE: func(c *cobra.Command, args []string) error {
			return runQualify(c, g, o, args[0])
		},
	}
	cmd.Flags().BoolVar(&o.Check, "check", false, "validate the plan and its profiles; start and stop nothing")
	cmd.Flags().StringVar(&o.Out, "out", "", "evidence directory (default: the plan's evidence_dir)")
	cmd.Flags().BoolVar(&o.NoPreflight, "no-preflight", false, "launch every attempt without predicting its memory fit and host capabilities first (recorded in the evidence)")
	cmd.Flags().StringVar(&o.HostFacts, "host-facts", "", "predict launches against recorded host facts (JSON, as 'hiro fit --json' reads them) instead of this host: a replay")
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print a JSON summary on stdout")
	return cmd
}

func runQualify(c *cobra.Command, g *Globals, o *qualifyOpts, planPath string) error {
	plan, cfg, err := qualify.LoadPlan(planPath, g.ConfigPath)
	if err != nil {
		if _, serr := os.Stat(planPath); errors.Is(serr, os.ErrNotExist) {
			return UsageError(fmt.Errorf("%w; give the path of a campaign plan (TOML), e.g. hiro qualify examples/demo/plan.toml --check", err))
		}
		return UsageError(err)
	}
	if note := planConfigWins(c, g, plan, cfg); note != "" {
		fmt.Fprintf(g.Stderr, "hiro: qualify: note: %s\n", note)
	}
	// What the run would trip on that this machine decides now (a key
	// variable unset, the candidate's port held): refused before
	// anything is started or stopped, by --check and the run alike.
	if es := plan.CheckRun(cfg); len(es) > 0 {
		return UsageError(es)
	}
	// The candidate launched and watched by a live hiro whose lease is
	// elsewhere (another HOME): busy, as when its lease is seen.
	if err := plan.CheckBusy(cfg); err != nil {
		return busyError(c.Context(), err)
	}
	// A lease another live hiro holds, probed without a lock: the run
	// and --check alike exit 6 before anything is started, so a script
	// asks --check before it starts production of its own (issue 26 P5).
	if dir, err := qualify.LeaseDir(); err == nil {
		if err := plan.CheckLeases(cfg, dir); err != nil {
			what := "campaign not started"
			if o.Check {
				what = "qualify --check: the campaign cannot start now"
			}
			return busyError(c.Context(), fmt.Errorf("%s: %w", what, err))
		}
	}
	if o.Out != "" {
		// The evidence folder is made after production may have been
		// stopped: a path that cannot be one is refused now (exit 2).
		if st, err := os.Stat(o.Out); err == nil && !st.IsDir() {
			return UsageErrorf("qualify: --out %s is a file, not a folder: give a folder for the campaign's evidence (it is made if missing), or leave --out out for the plan's evidence_dir", o.Out)
		}
	}
	var facts *preflight.Host
	if o.HostFacts != "" {
		if facts, err = preflight.LoadHost(o.HostFacts); err != nil {
			return UsageError(fmt.Errorf("qualify: %w", err))
		}
	}
	if o.Check {
		var preds []attemptPrediction
		if !o.NoPreflight {
			preds = predictLadder(c.Context(), plan, cfg, facts)
		}
		never := plan.NeverActivates(cfg.Activation.Require)
		small := plan.CorpusWarnings()
		down := plan.ProductionNotServing(c.Context(), cfg)
		stores := plan.ModelStoreWarnings(cfg)
		if g.JSON {
			return writeJSON(g, map[string]any{"ok": true, "plan": plan.Path, "config": cfg.Path, "candidate": plan.Candidate, "production": plan.Production, "gates": len(plan.Gates), "predictions": preds,
				"never_activates": never, "corpus_warnings": small, "production_not_serving": down, "model_store_warnings": stores})
		}
		for _, p := range preds {
			fmt.Fprintf(g.Stdout, "preflight %s: ", p.Attempt)
			for _, l := range preflight.Describe(p.Prediction) {
				fmt.Fprintln(g.Stdout, l)
			}
		}
		fmt.Fprintf(g.Stdout, "plan %s is valid: candidate %s, production %s, %s, exclusive %v (config %s)\n",
			plan.Path, plan.Candidate, orNone(plan.Production), account.Plural(len(plan.Gates), "gate", "gates"), *plan.Exclusive, cfg.Path)
		if len(never) > 0 {
			fmt.Fprintf(g.Stdout, "warning: this plan can never activate its candidate: %s ([activation] require = [%s] in %s)\n", strings.Join(never, "; "), strings.Join(cfg.Activation.Require, ", "), cfg.Path)
		}
		for _, w := range append(small, stores...) {
			fmt.Fprintf(g.Stdout, "warning: %s\n", w)
		}
		if down != "" {
			fmt.Fprintf(g.Stdout, "warning: %s\n", down)
		}
		return nil
	}
	if _, err := qualify.LeaseDir(); err != nil && *plan.Exclusive {
		// Without a private lease folder no campaign may own production:
		// nothing is started or stopped.
		return UsageError(fmt.Errorf("qualify: %w", err))
	}
	terminal := false
	if f, ok := g.Stderr.(interface{ Fd() uintptr }); ok {
		terminal = term.IsTerminal(int(f.Fd()))
	}
	out, err := qualify.Run(c.Context(), plan, cfg, qualify.Options{Progress: g.Stderr, Terminal: terminal, EvidenceDir: o.Out, NoPreflight: o.NoPreflight, HostFacts: facts, Host: hostFingerprint(c.Context(), append([]string{cfg.StateDir}, cfg.DiskPaths...))})
	if errors.Is(err, lease.ErrHeld) {
		// Another campaign or command owns production: nothing was
		// started or stopped. Its own exit status, not "not qualified".
		return busyError(c.Context(), err)
	}
	if err != nil {
		return AbortedError(err)
	}
	e := out.Evidence
	sum := qualifySummary{Verdict: e.Verdict, ExitCode: out.ExitCode, TerminationReason: e.TerminationReason, NotJudged: e.NotJudged,
		Evidence: filepath.Join(out.Dir, evidence.PublicFile), PrivateEvidence: filepath.Join(out.Dir, evidence.PrivateFile),
		Report: filepath.Join(out.Dir, evidence.ReportFile)}
	if g.JSON {
		if err := writeJSON(g, sum); err != nil {
			return err
		}
	} else {
		// The campaign's account, as report.md and the journal tell it.
		verdict := sum.Verdict + account.NotJudgedTail(e)
		fmt.Fprintf(g.Stdout, "verdict: %s (exit %d)\n%s\nevidence: %s\nreport:   %s\n", verdict, sum.ExitCode, account.Terminal(e.Public()), sum.Evidence, sum.Report)
		if out.ExitCode == qualify.ExitCritical {
			fmt.Fprintf(g.Stdout, "PRODUCTION IS DOWN. Fix what keeps it from starting, then run: hiro --config %s recover (any hiro command, e.g. hiro backend start %s, restores it first from the campaign's lease); check it with hiro backend status %s\n", shellquote.Quote(cfg.Path), shellquote.Quote(plan.Production), shellquote.Quote(plan.Production))
		}
	}
	return Silent(out.ExitCode)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// writeJSON prints v as indented JSON on stdout.
func writeJSON(g *Globals, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(g.Stdout, string(b))
	return err
}

// attemptPrediction is one attempt's prediction in 'qualify --check --json'.
type attemptPrediction struct {
	Attempt string `json:"attempt"`
	*evidence.Prediction
}

// predictLadder predicts every attempt of the plan's launch gate
// (qualify --check), starting and stopping nothing.
func predictLadder(ctx context.Context, plan *qualify.Plan, cfg *config.Config, facts *preflight.Host) []attemptPrediction {
	cand, err := cfg.Backend(plan.Candidate)
	if err != nil {
		return nil
	}
	var out []attemptPrediction
	for _, gt := range plan.Gates {
		lg, ok := gt.Gate.(*qualify.LaunchGate)
		if !ok || gt.Skip {
			continue
		}
		h := facts
		if h == nil {
			h = preflight.ForProduction(ctx, cfg.StateDir, plan.Production)
		}
		for _, r := range lg.Ladder(cand) {
			out = append(out, attemptPrediction{r.Name, preflight.Predict(r.Profile, h, *plan.Exclusive)})
		}
	}
	return out
}

// planConfigWins says, for one note on stderr, that the configuration
// the user named (--config, or $HIRO_CONFIG) is not the one qualify
// reads: the plan names its own config, which wins (docs/plan.md). It is
// "" when the user named none, the plan names none, or both are one file.
// Trial 11 R11: the flag was dropped without a word.
func planConfigWins(c *cobra.Command, g *Globals, plan *qualify.Plan, cfg *config.Config) string {
	if plan.Config == "" || cfg == nil {
		return ""
	}
	how := "--config"
	if f := c.Flag("config"); f == nil || !f.Changed {
		if os.Getenv("HIRO_CONFIG") == "" {
			return ""
		}
		how = "$HIRO_CONFIG"
	}
	given, err := filepath.Abs(g.ConfigPath)
	if err != nil {
		given = g.ConfigPath
	}
	if sameFile(given, cfg.Path) {
		return ""
	}
	return fmt.Sprintf("%s %s is not read: the plan names its own config %q (%s), and the plan's config wins; remove the plan's config key to use %s", how, given, plan.Config, cfg.Path, how)
}

// sameFile reports whether paths a and b name one file (the same path, or
// one file reached by links).
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}
