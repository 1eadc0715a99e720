package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/shadow"
	"github.com/hiro-dev/hiro/internal/stats"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func init() { registerCommand(newShadowCmd) }

func newShadowCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "shadow",
		Short: "Mirror production's live requests to a candidate, score each pair",
		Long: `Shadow traffic (docs/shadow.md): the running router (hiro serve) sends a sampled
share of production's chat and completion requests, after production answered,
to a candidate backend that is running (managed or not), with the candidate
profile's own key. Clients only ever get production's answer, with no added
wait: the mirror works from a bounded queue and drops (and counts) what does
not fit. Each pair is scored: status, latency, usage; hiro's own extraction
requests with the same validators and matching as 'hiro eval'.`,
	}
	cmd.AddCommand(newShadowStartCmd(g), newShadowStopCmd(g), newShadowStatusCmd(g))
	return cmd
}

func newShadowStartCmd(g *Globals) *cobra.Command {
	var cfg shadow.Config
	var dur time.Duration
	cmd := &cobra.Command{
		Use:   "start CANDIDATE [--share 0.1] [--for 30m] [--max-pairs N]",
		Short: "Start mirroring production's requests to the backend CANDIDATE",
		Long: `Start a shadow run to the backend profile CANDIDATE, which must be running.
A candidate that is not on this machine receives users' prompts: its profile
must say shadow_remote = true, and the start says so. A candidate that needs
the accelerator alone cannot run beside production on one machine: use the
frozen-corpus semantic gate, or a second endpoint.

The run ends at --max-pairs scored pairs, after --for, or with 'hiro shadow stop'.

Exit status: 0 the run started; 1 no router runs, the one running serves another
configuration (as in hiro status), or the router refused it
(the candidate not running or not allowed); 2 bad usage (a value out of
range), checked before the router is asked.`,
		Args: needArgs(1, 1, "the name of one backend profile", "hiro shadow start cand --share 0.1 --for 30m"),
		RunE: func(c *cobra.Command, args []string) error {
			cfg.For = config.Duration{Duration: dur}
			return runShadowStart(c.Context(), g, args[0], cfg)
		},
	}
	f := cmd.Flags()
	f.Float64Var(&cfg.Share, "share", 0.1, "fraction of production's chat and completion requests to mirror, in (0, 1]")
	f.DurationVar(&dur, "for", 0, "end the run after this long (0: only --max-pairs or a stop ends it)")
	f.IntVar(&cfg.MaxPairs, "max-pairs", shadow.DefaultMaxPairs, "end the run once this many pairs are scored")
	f.IntVar(&cfg.MinPairs, "min-pairs", 0, fmt.Sprintf("fewest pairs the outcome decides on (0: %d; at least 5)", shadow.DefaultMinPairs))
	f.Float64Var(&cfg.Margin, "margin", shadow.DefaultMargin, "non-inferiority margin of the gated rates (a fraction)")
	f.IntVar(&cfg.QueueSize, "queue", shadow.DefaultQueueSize, "requests waiting to be mirrored at most (a full queue drops, counted)")
	f.IntVar(&cfg.Workers, "workers", shadow.DefaultWorkers, "mirrored requests in flight to the candidate at most")
	f.BoolVar(&g.JSON, "json", false, "print the run's account as JSON")
	return cmd
}

func newShadowStopCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop [--json]",
		Short: "End the shadow run and print its account",
		Long:  "End the active shadow run and print its account.\n\nExit status: 0 the candidate passed; 1 it failed, the run was inconclusive, no router runs, or the one running serves another configuration (as in hiro status; its run is left alone).",
		Args:  needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, args []string) error {
			return runShadowCall(c.Context(), g, "stop", func(ctx context.Context, rc *control.Client) (*control.ShadowStatus, error) {
				return rc.ShadowStop(ctx)
			})
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print the run's account as JSON")
	return cmd
}

func newShadowStatusCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "Show the active (or last) shadow run's account",
		Long:  "Show the active (or last) shadow run's account.\n\nExit status: 0 a run is active or its candidate passed; 1 otherwise, or when the router running serves another configuration (as in hiro status).",
		Args:  needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, args []string) error {
			return runShadowCall(c.Context(), g, "status", func(ctx context.Context, rc *control.Client) (*control.ShadowStatus, error) {
				return rc.ShadowStatus(ctx)
			})
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print the run's account as JSON")
	return cmd
}

func dialRouter(what string) (*control.Client, string, error) {
	dir, err := control.Dir()
	if err != nil {
		return nil, "", FailedError(fmt.Errorf("shadow %s: %w", what, err))
	}
	rc, err := control.Dial(dir)
	if err != nil {
		return nil, "", FailedError(fmt.Errorf("shadow %s: %w", what, err))
	}
	return rc, dir, nil
}

// checkRouterServes refuses (exit 1, as 'hiro status' does) the shadow
// command what ("start", "stop", "status") on the live router rc when it
// serves another configuration than g.ConfigPath's and another
// production (trial 11 R4: the candidate was resolved among the other
// file's profiles, and that production mirrored; stop ended, and status
// showed, the other file's run as if it were this one's). A configuration
// that does not load is not checked, as in 'hiro status'.
func checkRouterServes(ctx context.Context, g *Globals, rc *control.Client, dir, what string) error {
	cfg, err := config.Load(g.ConfigPath)
	if err != nil {
		return nil
	}
	st, err := rc.Status(ctx)
	if err != nil {
		return FailedError(fmt.Errorf("shadow %s: %w", what, err))
	}
	if other := routerServesOther(st, cfg, dir); other != "" {
		done := "nothing started"
		if what != "start" {
			done = "its shadow run (if any) is untouched"
		}
		return FailedError(fmt.Errorf("shadow %s: refused, %s: %s; for that router's shadow run use 'hiro --config %s shadow %s', or stop it and start 'hiro --config %s serve'",
			what, done, other, st.Config, what, cfg.Path))
	}
	return nil
}

func runShadowStart(ctx context.Context, g *Globals, cand string, cfg shadow.Config) error {
	// The values are the user's to fix whatever the router says: checked
	// here first (Fill on a copy; the router fills its own), exit 2.
	check := cfg
	if err := check.Fill(); err != nil {
		return UsageErrorf("shadow start: %w", err)
	}
	// ... and so is the candidate's name, when the configuration loads
	// (the router resolves it in its own)
	if c, err := config.Load(g.ConfigPath); err == nil {
		if _, err := c.Backend(cand); err != nil {
			return UsageErrorf("shadow start: the candidate: %w", err)
		}
	}
	rc, dir, err := dialRouter("start")
	if err != nil {
		return err
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := checkRouterServes(ctx, g, rc, dir, "start"); err != nil {
		return err
	}
	st, err := rc.ShadowStart(ctx, control.ShadowStartRequest{Candidate: cand, Config: cfg})
	if err != nil {
		return FailedError(fmt.Errorf("shadow start: %w", err))
	}
	if g.JSON {
		return backendPrintJSON(g, st)
	}
	r := st.Result
	where := "on this machine"
	if r.Remote {
		where = "NOT on this machine: mirrored requests (users' prompts) leave it (shadow_remote = true in its profile)"
	}
	fmt.Fprintf(g.Stdout, "shadow      mirroring %s of production %s's chat and completion requests to %s (%s)\n", pct(r.Share), r.Production, r.Candidate, where)
	bounds := termtext.Plural(r.MaxPairs, "pair", "pairs")
	if r.Duration != "" {
		bounds += " or " + r.Duration
	}
	fmt.Fprintf(g.Stdout, "ends        at %s, or with hiro shadow stop; queue %d, %d in flight at most\n", bounds, r.QueueSize, r.Workers)
	return nil
}

func runShadowCall(ctx context.Context, g *Globals, what string, call func(context.Context, *control.Client) (*control.ShadowStatus, error)) error {
	rc, dir, err := dialRouter(what)
	if err != nil {
		return err
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := checkRouterServes(ctx, g, rc, dir, what); err != nil {
		return err
	}
	st, err := call(ctx, rc)
	if err != nil {
		return FailedError(fmt.Errorf("shadow %s: %w", what, err))
	}
	if g.JSON {
		if err := backendPrintJSON(g, st); err != nil {
			return err
		}
	} else if st.Result == nil {
		fmt.Fprintln(g.Stdout, "shadow      no run since this router started")
	} else {
		printShadow(g.Stdout, st)
	}
	if st.Active || (st.Result != nil && st.Result.Outcome == "passed") {
		return nil
	}
	return Silent(ExitFailed)
}

// scoredText says what became of the mirrored requests: the pairs
// scored, and those not scored (yet), which are the candidate's: in
// flight to it while the run is active, left unscored when it ended
// (trial 12, S9: "25 mirrored (22 pairs scored)" with every other state
// listed did not add up).
func scoredText(st *control.ShadowStatus) string {
	r := st.Result
	s := termtext.Plural(r.Pairs, "pair", "pairs") + " scored"
	if n := r.Mirrored - int64(r.Pairs); n > 0 {
		if st.Active {
			s += fmt.Sprintf(", %d in flight (candidate answering)", n)
		} else {
			s += fmt.Sprintf(", %d not scored (the candidate was still answering when the run ended)", n)
		}
	}
	return s
}

// printShadow renders a run's account for the terminal.
func printShadow(w io.Writer, st *control.ShadowStatus) {
	r := st.Result
	state := "ended (" + r.Ended + ")"
	if st.Active {
		state = "active"
	}
	fmt.Fprintf(w, "shadow      %s → %s, %s of requests, %s, started %s\n", r.Production, r.Candidate, pct(r.Share), state, r.StartedAt.Local().Format(time.TimeOnly))
	fmt.Fprintf(w, "requests    %d seen%s, %d sampled: %d mirrored (%s), %d dropped (queue full), %d too large, %d abandoned (client left), %d unsent (at the end), %d queued, %d pending (production answering)\n",
		r.Seen, seenUntil(st), r.Sampled, r.Mirrored, scoredText(st), r.Dropped, r.TooLarge, r.Abandoned, r.Unsent, r.Queued, r.Pending)
	fmt.Fprintf(w, "errors      candidate %d, production %d\n", r.CandidateErrors, r.ProductionErrors)
	if r.CandidateLatency != nil && r.ProductionLatency != nil {
		fmt.Fprintf(w, "latency     p50 candidate %.1f ms, production %.1f ms", r.CandidateLatency.P50, r.ProductionLatency.P50)
		if s := shadow.LatencyShiftText(r); s != "" {
			fmt.Fprintf(w, "; %s", s)
		}
		fmt.Fprintln(w)
	}
	if e := r.Extraction; e.Pairs > 0 {
		// Claims are counted in the scored pairs' replies (a reply holds
		// any number of them); schema-valid counts replies.
		fmt.Fprintf(w, "extraction  %s: their replies hold %d / %d claims (candidate / production), %d / %d grounded, %d / %d accepted; %d / %d replies schema-valid; agreement %.3f (reported, not gated)\n",
			termtext.Plural(e.Pairs, "pair", "pairs"), e.CandidateClaims, e.ProductionClaims, e.CandidateGrounded, e.ProductionGrounded, e.CandidateAccepted, e.ProductionAccepted, e.CandidateSchemaValid, e.ProductionSchemaValid, e.Agreement)
	}
	if s := r.Structured; s.Pairs > 0 {
		fmt.Fprintf(w, "structured  %s: schema-valid %d / %d\n", termtext.Plural(s.Pairs, "pair", "pairs"), s.CandidateValid, s.ProductionValid)
	}
	if t := r.Text; t.Pairs > 0 {
		fmt.Fprintf(w, "text        %s: %d equal, %d equal once normalised (reported, not gated)\n", termtext.Plural(t.Pairs, "pair", "pairs"), t.Exact, t.Normalized)
	}
	for _, c := range r.Comparisons {
		note := ""
		if c.Note != "" {
			note = " (" + c.Note + ")"
		}
		fmt.Fprintf(w, "  %-20s candidate %.3f, production %.3f, difference %s [%s, %s], margin %.3f: %s%s\n", c.Measure, c.Candidate, c.Production, stats.Signed(c.Difference, 3), stats.Signed(c.Lower, 3), stats.Signed(c.Upper, 3), c.Margin, c.Outcome, note)
	}
	fmt.Fprintf(w, "outcome     %s", r.Outcome)
	if len(r.Reasons) > 0 {
		fmt.Fprintf(w, ": %s", strings.Join(r.Reasons, "; "))
	}
	fmt.Fprintln(w)
}

// seenUntil says, for a run that ended, that its counts stopped with it:
// production's requests after the end are not seen (issue 26 N7: 25
// requests went through the router, the account said "8 seen").
func seenUntil(st *control.ShadowStatus) string {
	r := st.Result
	if st.Active || r.Ended == "" {
		return ""
	}
	why := "it ended (" + r.Ended + ")"
	switch r.Ended {
	case "max_pairs":
		why = "it ended at max_pairs, " + termtext.Plural(r.MaxPairs, "pair", "pairs") + " scored"
	case "duration":
		why = "it ended after its duration, " + r.Duration
	case "command":
		why = "hiro shadow stop ended it"
	}
	return " while the run lasted (" + why + "; production's later requests are not counted)"
}

func pct(f float64) string { return fmt.Sprintf("%g %%", f*100) }
