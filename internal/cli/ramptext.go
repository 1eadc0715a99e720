package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/ramp"
)

// printRamp writes a progressive ramp's lines of `hiro status`: the step
// and share, each step's live comparison so far, and how it ended.
// Production stays the router's production until the ramp completes and
// the activation switches; a completed ramp whose candidate is no longer
// production (a rollback since, or another switch) says so after it.
func printRamp(w io.Writer, st *control.RampStatus, production string) {
	if st == nil || st.Result == nil {
		return
	}
	r := st.Result
	fmt.Fprintf(w, "ramp        %s → %s, %s: step %d of %d, %s of production's requests to %s, since %s\n",
		r.Production, r.Candidate, r.State, r.Step+1, len(r.Steps), ramp.Percent(r.Share), r.Candidate, r.StartedAt.Local().Format(time.TimeOnly))
	for _, h := range r.History {
		fmt.Fprintf(w, "  %-7s   candidate %s; production %s: %s", ramp.Percent(h.Share), sampleText(h.Candidate), sampleText(h.Production), h.Decision)
		if h.Reason != "" {
			fmt.Fprintf(w, " (%s)", h.Reason)
		}
		fmt.Fprintln(w)
	}
	if r.Resent > 0 || r.CutMidReply > 0 {
		fmt.Fprintf(w, "            %d of the candidate's requests failed before any byte of a reply and were resent to %s; %s cut mid-way (a stream under way cannot be resent)\n", r.Resent, r.Production, account.Plural(r.CutMidReply, "reply", "replies"))
	}
	// the ramp's reason, unless its last step's line gave it already
	if n := len(r.History); r.Reason != "" && (n == 0 || r.History[n-1].Reason != r.Reason) {
		fmt.Fprintf(w, "            %s\n", r.Reason)
	}
	if r.State == evidence.RampCompleted && production != "" && production != r.Candidate {
		fmt.Fprintf(w, "            ended: production is %s now (a rollback or another switch since), so none of its requests go to %s\n", production, r.Candidate)
	}
}

// sampleText is one side's requests of a step in words.
func sampleText(s evidence.RampSample) string {
	parts := []string{account.Plural(s.Requests, "request", "requests") + fmt.Sprintf(", %d failed", s.Errors)}
	if s.Checked > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d checked invalid", s.Invalid, s.Checked))
	}
	if s.Latency != nil {
		parts = append(parts, fmt.Sprintf("p50 %.1f ms", s.Latency.P50))
	}
	return strings.Join(parts, ", ")
}
