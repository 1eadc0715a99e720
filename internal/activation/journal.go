package activation

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/journal"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/ramp"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// Headline is the one sentence a switch's record tells: "Production
// switched from A to B on the evidence of campaign X", "Production
// switched from B back to A (rollback of activation 2)", or the failure
// with what was put back. The journal entry and the terminal both use it.
func Headline(r *production.Record) string {
	from, to := label(r.From), label(r.To)
	why := ""
	switch r.Kind {
	case production.KindActivate:
		why = " on the evidence of campaign " + r.Campaign
	case production.KindRollback:
		why = fmt.Sprintf(" (rollback of activation %d)", r.Undid)
	}
	switch r.Outcome {
	case production.OutcomeSwitched:
		if r.Kind == production.KindRollback {
			return fmt.Sprintf("Production switched from %s back to %s%s", from, to, why)
		}
		return fmt.Sprintf("Production switched from %s to %s%s", from, to, why)
	case production.OutcomeRecovered:
		return fmt.Sprintf("A switch from %s to %s%s was cut short and settled by a later hiro", from, to, why)
	case production.OutcomeFailed:
		if r.Ramp != nil && r.Ramp.State != evidence.RampCompleted {
			return fmt.Sprintf("Production stays %s: the progressive activation of %s%s was %s and %s serves every request", from, to, why, r.Ramp.State, from)
		}
		return fmt.Sprintf("Production stays %s: the switch to %s%s failed and %s is back and verified", from, to, why, from)
	default:
		return fmt.Sprintf("PRODUCTION DOWN: the switch from %s to %s%s failed and %s could not be put back", from, to, why, from)
	}
}

// Summary is what a switch's journal entry says under its Headline: what
// was decided and on what proof (the new production's readiness, the old
// one's return, the ramp's end, the error), in one or two sentences that
// do not repeat the headline.
func Summary(r *production.Record) string {
	took := r.FinishedAt.Sub(r.StartedAt).Round(time.Millisecond)
	var b strings.Builder
	switch r.Outcome {
	case production.OutcomeSwitched:
		fmt.Fprintf(&b, "%s was started and verified ready (%s); the %s took %s.", label(r.To), verifiedText(r.Verified), termtext.Plural(len(r.Steps), "step", "steps"), took)
		if r.Ramp != nil {
			fmt.Fprintf(&b, " The router moved the traffic step by step (%s), and the live comparison let each step advance.", shares(r.Ramp))
		}
		if r.RollbackTo != nil {
			fmt.Fprintf(&b, " 'hiro rollback' returns to %s.", label(r.RollbackTo))
		}
	case production.OutcomeFailed:
		fmt.Fprintf(&b, "The switch stopped after %s: %s.", lastStep(r), strings.TrimSuffix(r.Error, "."))
		if r.Ramp != nil && r.Ramp.Reason != "" {
			fmt.Fprintf(&b, " The ramp was %s at %s: %s.", r.Ramp.State, ramp.Percent(r.Ramp.Share), strings.TrimSuffix(r.Ramp.Reason, "."))
		}
		fmt.Fprintf(&b, " %s serves (%s).", label(r.From), verifiedText(r.Restored))
	case production.OutcomeRecovered:
		fmt.Fprintf(&b, "The hiro that began this switch ended before it finished; a later one found its record and settled it in %s.", took)
	default:
		fmt.Fprintf(&b, "The switch failed (%s) and putting %s back failed too (%s): no production serves.", strings.TrimSuffix(r.Error, "."), label(r.From), verifiedText(r.Restored))
	}
	return b.String()
}

// lastStep names the switch's failed step, else its last one.
func lastStep(r *production.Record) string {
	for _, st := range r.Steps {
		if !st.OK {
			return "step " + st.Name
		}
	}
	if n := len(r.Steps); n > 0 {
		return "step " + r.Steps[n-1].Name
	}
	return "no step"
}

func label(s *production.Snapshot) string {
	if s == nil {
		return "(none)"
	}
	if s.Variant != "" && s.Variant != "base" {
		return s.Name + " (variant " + s.Variant + ")"
	}
	return s.Name
}

// journal writes the switch's journal entry into opts.JournalDir (created
// when missing) and returns its path, or "" (with a progress line) when
// it could not.
func (s *switcher) journal() string {
	if s.opts.JournalDir == "" {
		return ""
	}
	r := s.rec
	if err := os.MkdirAll(s.opts.JournalDir, 0o755); err != nil {
		s.opts.Progress("journal: " + err.Error())
		return ""
	}
	j, err := journal.Load(s.opts.JournalDir)
	if err != nil {
		s.opts.Progress("journal: " + err.Error())
		return ""
	}
	title := Headline(r)
	e := &journal.Entry{Timestamp: r.FinishedAt.Truncate(time.Second), Title: title, Summary: Summary(r)}
	e.Slug = uniqueSlug(j, journal.Slugify(fmt.Sprintf("production %s %d %s", r.Kind, r.Seq, r.Outcome)))
	items := make([]string, 0, len(r.Steps))
	for _, st := range r.Steps {
		mark := "done"
		if !st.OK {
			mark = "failed"
		}
		line := fmt.Sprintf("%s: %s (%s)", st.Name, mark, time.Duration(st.DurationMS)*time.Millisecond)
		if st.Detail != "" {
			line += ": " + st.Detail
		}
		items = append(items, line)
	}
	status := "Completed"
	if r.Outcome != production.OutcomeSwitched {
		status = "Failed"
	}
	e.Sections = []journal.Section{{Title: "Switch", Status: status, Items: items}}
	if r.Ramp != nil {
		e.Ramp = r.Ramp
		sec, row := rampJournal(r.Ramp)
		e.Sections = append(e.Sections, sec)
		e.Validation = append(e.Validation, row)
	}
	if r.Kind == production.KindActivate {
		row := journal.ValidationRow{Check: "Evidence of campaign " + r.Campaign, Status: journal.StatusPassed,
			Result: "qualified, recent enough; candidate profile, plan, prompts, schema, corpus and artifact fingerprints match; compared against the active production"}
		if len(r.Accepted) > 0 {
			row.Status = journal.StatusInconclusive
			row.Result = strings.Join(r.Accepted, "; ") + "; recent enough; fingerprints match; compared against the active production"
			e.Summary += " The user accepted evidence that could not decide: " + strings.Join(r.Accepted, "; ") + "."
		}
		e.Validation = append(e.Validation, row)
	}
	e.Validation = append(e.Validation, journal.ValidationRow{Check: "New production " + label(r.To) + " ready", Status: passFail(r.Verified != nil && r.Verified.OK), Result: verifiedText(r.Verified)})
	if r.Restored != nil {
		e.Validation = append(e.Validation, journal.ValidationRow{Check: "Old production " + label(r.From) + " put back", Status: passFail(r.Restored.OK), Result: verifiedText(r.Restored)})
	}
	switch r.Outcome {
	case production.OutcomeSwitched:
		e.CurrentState = fmt.Sprintf("%s is production (configuration hash %s). 'hiro rollback' returns to %s.", label(r.To), r.To.ConfigHash[:12], label(r.RollbackTo))
	case production.OutcomeFailed:
		e.CurrentState = fmt.Sprintf("%s is still production, verified ready. Reason the switch failed: %s", label(r.From), r.Error)
	default:
		e.CurrentState = fmt.Sprintf("Production is down: %s. Restore it by hand with 'hiro backend start %s'.", r.Error, shellquote.Quote(r.From.Name))
	}
	e.CurrentState += " " + recordWhere(r)
	for i := 0; i < 3; i++ {
		rel, err := j.Create(e)
		if err == nil {
			return rel
		}
		// Two entries may not share a second: take the next one.
		e.Timestamp = e.Timestamp.Add(time.Second)
		if i == 2 {
			s.opts.Progress(fmt.Sprintf("journal: NO ENTRY WRITTEN for this switch: %v; the switch itself stands, recorded in %s", err, r.Path))
		}
	}
	return ""
}

// recordWhere is the sentence that says where the switch's record lives,
// by file name and the variables that place its folder (the path itself
// is private: the journal is public).
func recordWhere(r *production.Record) string {
	if r.Path == "" {
		return ""
	}
	return fmt.Sprintf("The switch's record is %s, in hiro's production record folder for this configuration file (%s, else production/ under the private state home: %s, else ~/.local/state/hiro); 'hiro rollback' and 'hiro serve' read it.",
		filepath.Base(r.Path), private.Production.Env, private.StateHomeEnv)
}

func passFail(ok bool) string {
	if ok {
		return journal.StatusPassed
	}
	return journal.StatusFailed
}

// uniqueSlug is slug, or slug-2, slug-3... when an entry of j already has
// it: switch numbers (Record.Seq) count per configuration file while two
// files naming one production share a state_dir and so one journal.
func uniqueSlug(j *journal.Journal, slug string) string {
	if j.Find(slug) == nil {
		return slug
	}
	for n := 2; ; n++ {
		if s := fmt.Sprintf("%s-%d", slug, n); j.Find(s) == nil {
			return s
		}
	}
}
