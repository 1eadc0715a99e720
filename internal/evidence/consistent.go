package evidence

import (
	"fmt"

	"github.com/hiro-dev/hiro/internal/exitcode"
)

// ReasonSkipped is the reason of a gate the plan skips (status not_run);
// later gates still run and the campaign may still qualify.
const ReasonSkipped = "skipped by plan"

// verdictExit is the exit status each finished verdict is written with
// (package qualify's finish; docs/design.md "Contracts other tools read").
var verdictExit = map[string]int{
	VerdictQualified:    exitcode.OK,
	VerdictNotQualified: exitcode.Failed,
	VerdictAborted:      exitcode.Aborted,
	VerdictInconclusive: exitcode.Inconclusive,
}

// InconsistentError says that one of an evidence document's own facts
// contradicts another (a file edited by hand). Field is the evidence field
// whose value is contradicted ("exit_code", "gates[semantic].status",
// "gates[ready].failure", "verdict"); Msg says what it contradicts.
type InconsistentError struct {
	Field string
	Msg   string
}

func (e *InconsistentError) Error() string { return e.Field + ": " + e.Msg }

// Consistent returns an *InconsistentError when the evidence's own facts
// contradict each other, the way package qualify never writes them:
//
//   - exit_code is the verdict's (qualified 0, not_qualified 1, aborted 3,
//     inconclusive 5), or 4 when the campaign stopped production and did
//     not restore it (production.restored.ok);
//   - a passed gate carries no failure (gates[ID].failure);
//   - a qualified campaign's gates all passed or were skipped by the plan;
//     an inconclusive one's passed, were skipped or were inconclusive, at
//     least one inconclusive (gates[ID].status);
//   - a not_qualified campaign has a failed gate or a candidate stop that
//     left processes behind (verdict).
//
// Evidence of a campaign still running (verdict running or empty) has no
// verdict to contradict yet: nil. Every command that publishes or acts on
// evidence calls it (journal add, journal check, evidence verify,
// activate).
func (e *Evidence) Consistent() error {
	if e.Verdict == VerdictRunning || e.Verdict == "" {
		return nil
	}
	bad := func(field, format string, a ...any) error {
		return &InconsistentError{Field: field, Msg: fmt.Sprintf(format, a...) + " (edited by hand?); publish or act only on the evidence hiro wrote, or run the campaign again"}
	}
	want, ok := verdictExit[e.Verdict]
	if !ok {
		return bad("verdict", "%q is no verdict hiro writes (qualified, not_qualified, aborted, inconclusive)", e.Verdict)
	}
	p := e.Production
	unrestored := p.Stopped && (p.Restored == nil || !p.Restored.OK)
	switch {
	case unrestored && e.ExitCode != exitcode.Critical:
		return bad("exit_code", "%d contradicts production.restored.ok false: a campaign that stopped production and did not restore it exits %d", e.ExitCode, exitcode.Critical)
	case !unrestored && e.ExitCode != want:
		return bad("exit_code", "%d contradicts verdict %q, which exits %d", e.ExitCode, e.Verdict, want)
	}
	failed, inconclusive, leaked := false, false, false
	for _, g := range e.Gates {
		f := "gates[" + g.ID + "]"
		switch g.Status {
		case StatusFailed:
			failed = true
		case StatusInconclusive:
			inconclusive = true
		}
		for _, a := range g.Attempts {
			if a.Stop != nil && a.Stop.Leak != nil {
				leaked = true
			}
		}
		if g.Status == StatusPassed && g.Failure != nil {
			return bad(f+".failure", "gate %s is passed but carries a failure (%s)", g.ID, g.Failure.Error())
		}
		if e.Verdict != VerdictQualified && e.Verdict != VerdictInconclusive {
			continue
		}
		switch {
		case g.Status == StatusPassed:
		case g.Status == StatusNotRun && g.Reason == ReasonSkipped:
		case g.Status == StatusInconclusive && e.Verdict == VerdictInconclusive:
		default:
			return bad(f+".status", "gate %s is %q (%s), which contradicts verdict %q", g.ID, g.Status, g.Reason, e.Verdict)
		}
	}
	switch {
	case e.Verdict == VerdictInconclusive && !inconclusive:
		return bad("verdict", "%q contradicts the gates: none is inconclusive", e.Verdict)
	case e.Verdict == VerdictNotQualified && !failed && !leaked:
		return bad("verdict", "%q contradicts the gates: none failed and no candidate stop left processes behind", e.Verdict)
	}
	return nil
}
