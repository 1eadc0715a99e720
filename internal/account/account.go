package account

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// Account is a campaign's story, in the shape of the seed's journal entry.
// Every text is plain prose (no markup) except Section.Markdown, which holds
// tables in Markdown.
type Account struct {
	// Title is the plan's title; Subtitle the verdict and why the
	// campaign ended, e.g. "Not qualified: gate launch failed".
	Title    string
	Subtitle string
	// Verdict is the evidence's verdict (qualified, not_qualified, aborted).
	Verdict string
	// Summary is the executive summary, one paragraph.
	Summary string
	// Sections are the work completed: one per gate that ran, then the
	// production guard's (not a gate).
	Sections []Section
	// Decisions are the plan's decisions and the campaign's rules.
	Decisions []string
	// Validation is one row per gate in plan order, then production
	// restoration when production was stopped (it is checked, but it is
	// not a gate: it is never "not run").
	Validation []Row
	// NotTested lists what the campaign did not test, and why.
	NotTested []string
	// CurrentState says where things stand now.
	CurrentState string
	// NextSteps follow from the verdict.
	NextSteps []string
}

// Section is one piece of work completed.
type Section struct {
	Title string
	// Status is a short outcome: "Passed", "Failed", "Failed before
	// inference", "Restored", "Not stopped".
	Status string
	// Items are facts, one sentence or two each.
	Items []string
	// Markdown holds tables (semantic metrics, per-document differences,
	// reject reasons); empty when the section has none.
	Markdown string
}

// Row is one row of the validation table. Status is passed, failed or
// not_run (evidence statuses).
type Row struct {
	Check  string
	Status string
	Result string
}

// Build is the one function that turns evidence into the account. It
// reads only e (v1 evidence upgraded by evidence.Load works too).
func Build(e *evidence.Evidence) *Account {
	a := &Account{Title: strings.TrimSpace(e.Title), Verdict: e.Verdict}
	if a.Title == "" {
		a.Title = "Qualification of " + e.Candidate
	}
	a.Subtitle = VerdictText(e.Verdict)
	if r := strings.TrimSpace(e.TerminationReason); r != "" {
		// "Aborted: interrupted by SIGINT", not "Aborted: aborted: ...".
		if len(r) > len(a.Subtitle)+1 && strings.EqualFold(r[:len(a.Subtitle)+1], a.Subtitle+":") {
			r = strings.TrimSpace(r[len(a.Subtitle)+1:])
		}
		a.Subtitle += ": " + r
	}
	a.Subtitle += NotJudgedTail(e)
	failed := firstFailed(e)
	a.Summary = summary(e, failed)
	for i := range e.Gates {
		g := &e.Gates[i]
		a.Validation = append(a.Validation, Row{Check: gateTitle(g), Status: rowStatus(g.Status), Result: gateHeadline(e, g) + lossSuffix(g)})
		if Ran(g.Status) {
			a.Sections = append(a.Sections, gateSection(e, g))
		}
	}
	if ps, row := productionSection(e); ps != nil {
		a.Sections = append(a.Sections, *ps)
		if row != nil {
			a.Validation = append(a.Validation, *row)
		}
	}
	a.Decisions = decisions(e)
	a.NotTested = notTested(e)
	a.CurrentState = currentState(e)
	a.NextSteps = nextSteps(e, failed)
	return a
}

// Report is the account as the evidence stores it (evidence.Report), for
// tools that read the JSON.
func (a *Account) Report() evidence.Report {
	r := evidence.Report{Summary: a.Summary, Sections: []evidence.Section{}, Validation: []evidence.Validation{},
		Decisions: a.Decisions, CurrentState: a.CurrentState, NextSteps: a.NextSteps}
	for _, s := range a.Sections {
		items := append([]string{}, s.Items...)
		r.Sections = append(r.Sections, evidence.Section{Title: s.Title, Status: s.Status, Items: items})
	}
	for _, v := range a.Validation {
		r.Validation = append(r.Validation, evidence.Validation{Check: v.Check, Status: v.Status, Result: v.Result})
	}
	return r
}

// Ran reports whether a gate with this status ran to a result: passed,
// failed or inconclusive.
func Ran(status string) bool {
	switch status {
	case evidence.StatusPassed, evidence.StatusFailed, evidence.StatusInconclusive:
		return true
	}
	return false
}

// VerdictText is the verdict in words: "Qualified", "Not qualified",
// "Inconclusive", "Aborted".
func VerdictText(v string) string {
	switch v {
	case evidence.VerdictQualified:
		return "Qualified"
	case evidence.VerdictInconclusive:
		return "Inconclusive"
	case evidence.VerdictNotQualified:
		return "Not qualified"
	case evidence.VerdictAborted:
		return "Aborted"
	case evidence.VerdictRunning:
		return "Running"
	}
	return v
}

func firstFailed(e *evidence.Evidence) *evidence.Gate {
	for i := range e.Gates {
		if e.Gates[i].Status == evidence.StatusFailed {
			return &e.Gates[i]
		}
	}
	return nil
}

func gateTitle(g *evidence.Gate) string {
	if t := strings.TrimSpace(g.Title); t != "" {
		return t
	}
	return g.ID + " (" + g.Kind + ")"
}

func rowStatus(s string) string {
	if Ran(s) {
		return s
	}
	return evidence.StatusNotRun
}

func summary(e *evidence.Evidence, failed *evidence.Gate) string {
	var s []string
	if e.Intent != nil && strings.TrimSpace(e.Intent.Summary) != "" {
		s = append(s, sentence(e.Intent.Summary))
	} else {
		s = append(s, fmt.Sprintf("A bounded qualification tested whether backend %s can take over from production%s.", e.Candidate, prodName(e)))
	}
	switch e.Verdict {
	case evidence.VerdictQualified:
		s = append(s, fmt.Sprintf("Every gate passed: backend %s is qualified in this configuration.", e.Candidate))
		if nj := notJudged(e); nj != "" {
			s = append(s, nj)
		}
	case evidence.VerdictNotQualified:
		if failed != nil {
			s = append(s, fmt.Sprintf("It is not qualified: the gate %q failed.", gateTitle(failed)))
			s = append(s, failedWhy(failed)...)
		} else {
			s = append(s, "It is not qualified.")
		}
	case evidence.VerdictInconclusive:
		s = append(s, "No gate failed, but it is not qualified either: "+joinSemi(inconclusiveWhy(e))+".")
	case evidence.VerdictAborted:
		s = append(s, "The campaign was aborted before a verdict: "+sentence(strings.TrimPrefix(e.TerminationReason, "aborted: ")))
	}
	if nr := notAuthorized(e); len(nr) > 0 {
		s = append(s, fmt.Sprintf("Because of that, %s did not run.", joinAnd(nr)))
	}
	s = append(s, productionSentence(e))
	return strings.Join(s, " ")
}

// inconclusiveWhy says, per inconclusive gate, which comparisons could
// not decide and how many documents would.
func inconclusiveWhy(e *evidence.Evidence) []string {
	var out []string
	for i := range e.Gates {
		g := &e.Gates[i]
		if g.Status != evidence.StatusInconclusive {
			continue
		}
		var ms []string
		if g.Semantic != nil {
			for _, c := range g.Semantic.Comparisons {
				if c.Outcome == evidence.StatusInconclusive {
					ms = append(ms, MeasureName(c.Measure))
				}
			}
		}
		w := fmt.Sprintf("the gate %q could not tell the candidate from production within the margin", gateTitle(g))
		if len(ms) > 0 {
			w += " on " + joinAnd(ms)
		}
		if n := DocumentsNeeded(g); n > 0 {
			w += fmt.Sprintf(" (about %s would decide)", Plural(n, "document", "documents"))
		}
		out = append(out, w)
	}
	return out
}

// DocumentsNeeded is the most documents any undecided comparison of g
// says it needs (0 when none says).
func DocumentsNeeded(g *evidence.Gate) int {
	n := 0
	if g.Semantic == nil {
		return 0
	}
	for _, c := range g.Semantic.Comparisons {
		if c.Outcome == evidence.StatusInconclusive && c.DocumentsNeeded > n {
			n = c.DocumentsNeeded
		}
	}
	return n
}

// failedWhy says, in prose, why the failed gate failed.
func failedWhy(g *evidence.Gate) []string {
	switch {
	case g.Kind == "launch" && len(g.Attempts) > 0:
		var parts []string
		for i, at := range g.Attempts {
			p := fmt.Sprintf("attempt %d (%s)", i+1, at.Name)
			if f := at.Failure; f != nil && at.Outcome == evidence.OutcomePredictedFailure {
				p += fmt.Sprintf(" was predicted to fail as %s and not launched", f.Class)
			} else if f != nil {
				p += fmt.Sprintf(" failed in %s as %s", f.Phase, f.Class)
			} else if at.ReachedReady {
				p += " reached ready"
			}
			parts = append(parts, p)
		}
		return []string{"No inference request executed, because no attempt reached ready: " + joinSemi(parts) + "."}
	case g.Semantic != nil && len(g.Semantic.Reasons) > 0:
		return []string{"On the frozen corpus the candidate did not hold production's level. " + semanticVerdictLine(g.Semantic)}
	case g.Failure != nil:
		return []string{fmt.Sprintf("The server failed as %s in %s: %s.", g.Failure.Class, g.Failure.Phase, strings.TrimRight(g.Failure.RootCause, ". "))}
	case g.Reason != "":
		return []string{sentence(upperFirst(g.Reason))}
	}
	return nil
}

// notAuthorized lists the titles of gates withheld because an earlier one
// failed, in lower case for prose.
func notAuthorized(e *evidence.Evidence) []string {
	var out []string
	for i := range e.Gates {
		g := &e.Gates[i]
		if g.Status == evidence.StatusNotRun && strings.HasPrefix(g.Reason, "not authorized") {
			out = append(out, lowerFirst(gateTitle(g)))
		}
	}
	return out
}

func prodName(e *evidence.Evidence) string {
	if e.ProductionBackend == "" {
		return ""
	}
	return " " + e.ProductionBackend
}

// productionDown reports whether the campaign stopped production and did
// not bring it back.
func productionDown(e *evidence.Evidence) bool {
	return e.ProductionBackend != "" && e.Production.Stopped && (e.Production.Restored == nil || !e.Production.Restored.OK)
}

// productionChecked reports whether the guard looked at production before
// the campaign (it records the profile's name first): only then does
// Production.WasRunning say anything.
func productionChecked(e *evidence.Evidence) bool { return e.Production.Backend != "" }

// productionNotServing reports whether the guard found production not
// answering ready before the campaign.
func productionNotServing(e *evidence.Evidence) bool {
	return productionChecked(e) && !e.Production.WasRunning
}

// productionGone reports whether production, which the campaign did not
// stop, did not serve when the campaign ended (the end's check).
func productionGone(e *evidence.Evidence) bool {
	return e.ProductionBackend != "" && !e.Production.Stopped && e.Production.AtEnd != nil && !e.Production.AtEnd.OK
}

// productionUnverified reports whether production served before the
// campaign, was not stopped by it, and no check at the end found it
// serving (not serving, or not checked).
func productionUnverified(e *evidence.Evidence) bool {
	p := e.Production
	return productionChecked(e) && p.WasRunning && !p.Stopped && (p.AtEnd == nil || !p.AtEnd.OK)
}

// clock is a check's time of day, as progress lines give it.
func clock(t time.Time) string { return t.UTC().Format("15:04:05 UTC") }

// notStoppedSentence is productionSentence for a production that served
// before the campaign and that the campaign did not stop: what the
// watch while the gates ran (Production.Lost) and the check at the end
// (Production.AtEnd) found. "Kept serving throughout" only when both
// say so.
func notStoppedSentence(e *evidence.Evidence) string {
	name, p := e.ProductionBackend, e.Production
	lost := ""
	if p.Lost != nil {
		lost = fmt.Sprintf(", but it stopped answering at %s (%s)", clock(p.Lost.At), p.Lost.Error)
	}
	end := p.AtEnd
	switch {
	case end == nil && lost != "":
		return fmt.Sprintf("Production %s was not stopped by the campaign%s.", name, lost)
	case end == nil:
		return fmt.Sprintf("Production %s was not stopped by the campaign; whether it still served at the end was not checked.", name)
	case !end.OK && lost != "":
		return fmt.Sprintf("Production %s was not stopped by the campaign%s and did not serve at the end either (%s, checked at %s); start it with hiro backend start %s.", name, lost, end.Error, clock(end.At), name)
	case !end.OK:
		return fmt.Sprintf("Production %s was not stopped by the campaign, but it did not serve at the end (%s, checked at %s): something else stopped it; start it with hiro backend start %s.", name, end.Error, clock(end.At), name)
	case lost != "":
		return fmt.Sprintf("Production %s was not stopped by the campaign%s; it served again at the end (health and model %s checked at %s).", name, lost, end.Model, clock(end.At))
	case !e.Exclusive:
		return fmt.Sprintf("Production %s was never stopped: it kept serving throughout (watched while the gates ran; health and model %s checked at the end, %s).", name, end.Model, clock(end.At))
	}
	return fmt.Sprintf("Production %s was never stopped: it served before the campaign and at its end (health and model %s checked at %s).", name, end.Model, clock(end.At))
}

// productionSentence is what the guard did, in one sentence; the same
// words everywhere. Every clause comes from the evidence's production
// facts: serving before or not, stopped or not, restored or not.
func productionSentence(e *evidence.Evidence) string {
	name := e.ProductionBackend
	switch {
	case name == "":
		return "No production profile was configured."
	case e.Production.LeftStopped:
		return fmt.Sprintf("Production %s was not serving before the campaign (it was not running); the campaign left it stopped, as it found it, and did not start it.", name)
	case !e.Production.Stopped && productionNotServing(e):
		return fmt.Sprintf("Production %s was not serving before the campaign (it did not answer ready); the campaign neither stopped nor started it.", name)
	case !e.Production.Stopped && !productionChecked(e):
		return fmt.Sprintf("Production %s was never stopped: the campaign ended before the guard checked it.", name)
	case !e.Production.Stopped:
		return notStoppedSentence(e)
	case productionDown(e) && productionNotServing(e):
		return fmt.Sprintf("PRODUCTION %s WAS NOT RESTORED: it was not serving before the campaign and could not be started after it.", strings.ToUpper(name))
	case productionDown(e):
		return fmt.Sprintf("PRODUCTION %s WAS NOT RESTORED.", strings.ToUpper(name))
	case productionNotServing(e):
		return fmt.Sprintf("Production %s was not serving before the campaign (it did not answer ready); the guard kept it down for the candidate, then started it and verified it healthy with a real bounded response.", name)
	}
	return fmt.Sprintf("Production %s was stopped for the campaign, then restored and verified healthy with a real bounded response.", name)
}

// productionSection is the guard's section and, when production was
// stopped, its validation row. Production restoration is not a gate.
func productionSection(e *evidence.Evidence) (*Section, *Row) {
	if e.ProductionBackend == "" {
		return nil, nil
	}
	p := e.Production
	s := &Section{Title: "Production " + e.ProductionBackend}
	switch {
	case p.LeftStopped:
		s.Status = "Left stopped"
		s.Items = append(s.Items, fmt.Sprintf("Production %s was not serving before the campaign: it was not running (stopped on purpose, or never started). The guard puts production back as it found it, so it left it stopped and did not start it at the end; start it with hiro backend start %s when you want it.", e.ProductionBackend, e.ProductionBackend))
	case !p.Stopped && productionNotServing(e):
		s.Status = "Not serving"
		s.Items = append(s.Items, fmt.Sprintf("Production %s was not serving before the campaign (it did not answer ready); the campaign neither stopped nor started it, so there was nothing to restore.", e.ProductionBackend))
	case !p.Stopped:
		s.Status = "Not stopped"
		why := "the candidate did not need the accelerator exclusively"
		if e.Exclusive {
			why = "the campaign ended before it had to"
		}
		s.Items = append(s.Items, fmt.Sprintf("The campaign did not stop production %s (%s), so there was nothing to restore.", e.ProductionBackend, why))
		switch {
		case p.Lost == nil && p.AtEnd != nil && p.AtEnd.OK:
			s.Items = append(s.Items, fmt.Sprintf("It served at the end: health and model %s checked at %s.", p.AtEnd.Model, clock(p.AtEnd.At)))
		case p.Lost != nil || p.AtEnd != nil:
			s.Items = append(s.Items, notStoppedSentence(e))
		}
		if productionGone(e) {
			s.Status = "Not serving at the end"
		}
	case productionNotServing(e):
		s.Items = append(s.Items, fmt.Sprintf("Production %s was not serving before the campaign (it did not answer ready); the candidate needed the accelerator exclusively, so the guard kept it down and was to start it at the end, without changing its routing or configuration.", e.ProductionBackend))
	default:
		s.Items = append(s.Items, fmt.Sprintf("The candidate needed the accelerator exclusively, so production %s was stopped first, without changing its routing or configuration.", e.ProductionBackend))
	}
	var row *Row
	if p.Stopped {
		row = &Row{Check: "Production restoration"}
		if rr := p.Restored; rr != nil && rr.OK {
			s.Status, row.Status = "Restored", evidence.StatusPassed
			how := "restored"
			if productionNotServing(e) {
				how = "started"
			}
			if rr.Adopted {
				how = "found restarting and adopted"
			}
			s.Items = append(s.Items, fmt.Sprintf("It was %s with its exact configuration and verified: health %s, model %s, and a real bounded completion answered %q.", how, rr.Health, rr.Model, rr.Reply))
			row.Result = fmt.Sprintf("health %s, model %s, reply %q", rr.Health, rr.Model, rr.Reply)
		} else {
			s.Status, row.Status = "Not restored", evidence.StatusFailed
			why := "no restore was attempted"
			if rr != nil && rr.Error != "" {
				why = rr.Error
			}
			s.Items = append(s.Items, "It could not be restored: "+sentence(why)+" Fix what keeps it from starting, then run hiro recover.")
			row.Result = "not restored: " + why
		}
	}
	if p.ConfigHashBefore != "" {
		switch {
		case p.ConfigUnchanged:
			s.Items = append(s.Items, "Its configuration (profile and configuration files) hashed the same before and after: "+short(p.ConfigHashBefore)+".")
		case p.ConfigHashAfter != "":
			s.Items = append(s.Items, fmt.Sprintf("Its configuration CHANGED during the campaign: %s before, %s after.", short(p.ConfigHashBefore), short(p.ConfigHashAfter)))
			if row != nil {
				row.Status = evidence.StatusFailed
				row.Result += "; configuration changed"
			}
		}
	}
	return s, row
}

func decisions(e *evidence.Evidence) []string {
	var out []string
	if e.Intent != nil {
		out = append(out, e.Intent.Decisions...)
	} else {
		out = append(out, e.Report.Decisions...)
	}
	rule := "A gate runs only if every gate before it passed; withheld gates are recorded as not run with the reason."
	for _, d := range out {
		if d == rule {
			return out
		}
	}
	return append(out, rule)
}

// notTested says what the campaign did not test: every gate that did not
// run, and what a campaign never tests (activation).
func notTested(e *evidence.Evidence) []string {
	var out []string
	for i := range e.Gates {
		g := &e.Gates[i]
		if Ran(g.Status) {
			continue
		}
		why := g.Reason
		if why == "" {
			why = "it did not finish"
		}
		what := gateTitle(g)
		if w := kindTests[g.Kind]; w != "" {
			what += " (" + w + ")"
		}
		out = append(out, fmt.Sprintf("%s: %s.", what, strings.TrimSuffix(why, ".")))
	}
	has := map[string]bool{}
	for _, g := range e.Gates {
		has[g.Kind] = true
	}
	for _, k := range []string{"ready_control", "structured_control", "sequential", "concurrency", "semantic"} {
		if !has[k] {
			out = append(out, fmt.Sprintf("%s: the plan has no %s gate.", upperFirst(kindTests[k]), k))
		}
	}
	if e.Verdict == evidence.VerdictQualified {
		out = append(out, "Serving production traffic: the candidate is qualified, not activated; 'hiro activate' is a separate, deliberate step.")
	}
	return out
}

// kindTests says what each gate kind would have told.
var kindTests = map[string]string{
	"prereq":             "host facts",
	"artifact":           "the pinned model's files",
	"launch":             "startup to ready",
	"ready_control":      "one real bounded completion",
	"structured_control": "replies constrained by the JSON Schema",
	"sequential":         "request reliability and latency",
	"concurrency":        "requests in parallel",
	"semantic":           "extraction quality against production on a frozen corpus",
}

func currentState(e *evidence.Evidence) string {
	switch e.Verdict {
	case evidence.VerdictQualified:
		if productionDown(e) || productionUnverified(e) {
			return fmt.Sprintf("Backend %s is qualified. %s", e.Candidate, productionSentence(e))
		}
		return fmt.Sprintf("Backend %s is qualified; production is as it was. Activation is a separate, deliberate step.", e.Candidate)
	case evidence.VerdictAborted:
		return fmt.Sprintf("Backend %s is neither qualified nor disqualified. %s", e.Candidate, productionSentence(e))
	case evidence.VerdictInconclusive:
		return fmt.Sprintf("Backend %s is neither qualified nor disqualified: a comparison with production could not decide. %s", e.Candidate, productionSentence(e))
	}
	return fmt.Sprintf("Backend %s is not qualified in this configuration. %s", e.Candidate, productionSentence(e))
}

// NotJudgedTail is what a verdict line adds to say what the verdict did
// not judge ("; not judged: semantic": "Qualified: all gates passed; not
// judged: semantic"), "" when the plan covered the activation policy,
// for a campaign still running, and for an aborted one, which judged
// nothing: the policy's missing kinds alone would read as if its
// interrupted gates had been judged (trial 12, S2). The account's
// subtitle and hiro qualify's verdict line both use it.
func NotJudgedTail(e *evidence.Evidence) string {
	if len(e.NotJudged) == 0 || e.Verdict == evidence.VerdictRunning || e.Verdict == evidence.VerdictAborted {
		return ""
	}
	return "; not judged: " + strings.Join(e.NotJudged, ", ")
}

// notJudged is the sentence that names what the verdict did not judge
// (evidence.Evidence.NotJudged): kinds the activation policy needs that
// the plan has no gate of, so that "qualified" is not read as more than
// it is. Empty when the plan covered the policy.
func notJudged(e *evidence.Evidence) string {
	if len(e.NotJudged) == 0 {
		return ""
	}
	var what []string
	for _, k := range e.NotJudged {
		if w := kindTests[k]; w != "" {
			what = append(what, w+" ("+k+")")
		} else {
			what = append(what, k)
		}
	}
	return fmt.Sprintf("It was not judged on %s: the plan has no such gate (or skips it), and the activation policy ([activation] require) needs one, so hiro activate refuses this evidence.", joinAnd(what))
}

func nextSteps(e *evidence.Evidence, failed *evidence.Gate) []string {
	var out []string
	if productionDown(e) {
		out = append(out, "Fix what keeps production "+e.ProductionBackend+" from starting, then run hiro recover; check it with hiro backend status "+e.ProductionBackend+".")
	}
	if productionGone(e) {
		out = append(out, "Production "+e.ProductionBackend+" does not serve and the campaign did not stop it: see why with hiro backend status "+e.ProductionBackend+" and hiro backend logs "+e.ProductionBackend+", then start it with hiro backend start "+e.ProductionBackend+".")
	}
	if failed != nil {
		switch {
		case failed.Kind == "launch" && len(failed.Attempts) > 0:
			last := failed.Attempts[len(failed.Attempts)-1]
			if f := last.Failure; f != nil && nextStepOf(f.NextStep, f.Class) != "" {
				// The step itself, not a pointer to it: the terminal's
				// summary does not print the attempt's account.
				out = append(out, fmt.Sprintf("Follow the next step of the last attempt (%s, %s): %s", last.Name, f.Class, nextStepOf(f.NextStep, f.Class)))
			}
			tried := "The one declared attempt was tried"
			if n := len(failed.Attempts); n != 1 {
				tried = fmt.Sprintf("All %d declared attempts of the ladder were tried", n)
			}
			out = append(out, fmt.Sprintf("%s; the next try needs a new documented fallback in the plan (with its written reason), a fix of the engine issue behind %s, or another engine or model.",
				tried, lastClass(failed)))
		case failed.Semantic != nil:
			out = append(out, "Look at the largest per-document differences and the top reject reasons of the semantic gate: they show where the candidate loses claims.")
			out = append(out, "Keep production; qualify the candidate again after changing its model, quantization or prompt budget (max_tokens, repairs).")
		case failed.Failure != nil:
			if step := nextStepOf(failed.Failure.NextStep, failed.Failure.Class); step != "" {
				out = append(out, step)
			}
		}
	}
	switch e.Verdict {
	case evidence.VerdictQualified:
		if len(e.NotJudged) > 0 {
			out = append(out, fmt.Sprintf("Before activating, add a gate of each kind not judged (%s; docs/plan.md) and run the campaign again.", strings.Join(e.NotJudged, ", ")))
		} else if !productionDown(e) {
			out = append(out, "Review this evidence; to switch production, run hiro activate with the campaign's evidence.json (it refuses if anything it fingerprints changed).")
		}
	case evidence.VerdictAborted:
		out = append(out, "Run the campaign again with hiro qualify and the same plan; this campaign's evidence is kept.")
	case evidence.VerdictInconclusive:
		n := 0
		for i := range e.Gates {
			n = max(n, DocumentsNeeded(&e.Gates[i]))
		}
		more := "a larger frozen corpus"
		if n > 0 {
			more = fmt.Sprintf("a frozen corpus of about %s", Plural(n, "document", "documents"))
		}
		out = append(out, "Qualify again on "+more+" (hiro corpus import), so that the comparison can decide.")
		if len(e.NotJudged) > 0 {
			// --accept-inconclusive does not pass the activation
			// policy: offering it would send the user to a refusal
			// (trial 12, S1).
			out = append(out, fmt.Sprintf("hiro activate refuses this evidence, --accept-inconclusive too: the activation policy needs a gate of each kind not judged (%s); add them to the plan (docs/plan.md) and run the campaign again.", strings.Join(e.NotJudged, ", ")))
		} else {
			out = append(out, "Or accept this evidence deliberately: hiro activate --accept-inconclusive records that production changed on a comparison that could not decide.")
		}
	}
	return out
}

// nextStepOf is the failure's own next step, else the engine vocabulary's
// for its class.
func nextStepOf(given string, class failure.Class) string {
	if given != "" {
		return given
	}
	return engine.NextStep(class)
}

func lastClass(g *evidence.Gate) string {
	for i := len(g.Attempts) - 1; i >= 0; i-- {
		if f := g.Attempts[i].Failure; f != nil {
			return string(f.Class)
		}
	}
	return "the failure"
}

// gateHeadline is a gate's one-line result for the validation table.
func gateHeadline(e *evidence.Evidence, g *evidence.Gate) string {
	if !Ran(g.Status) {
		if g.Reason == "" {
			return "not run"
		}
		return g.Reason
	}
	switch {
	case len(g.Attempts) > 0:
		var parts []string
		for _, at := range g.Attempts {
			if at.ReachedReady {
				parts = append(parts, fmt.Sprintf("%s ready in %.1f s", at.Name, ms(at.ReadyAfterMS)))
			} else if at.Failure != nil {
				parts = append(parts, fmt.Sprintf("%s: %s in %s", at.Name, at.Failure.Class, at.Failure.Phase))
			}
		}
		return joinSemi(parts)
	case g.Semantic != nil && len(g.Semantic.Comparisons) > 0:
		var parts []string
		for _, c := range g.Semantic.Comparisons {
			parts = append(parts, fmt.Sprintf("%s %.3f vs %.3f (%s)", MeasureName(c.Measure), c.Candidate, c.Production, c.Outcome))
		}
		return joinSemi(parts)
	case g.Semantic != nil:
		sr := g.Semantic
		return fmt.Sprintf("F1 %.3f vs production %.3f; grounding %.3f vs %.3f; schema-valid %.3f vs %.3f",
			sr.CandidateScores.F1, sr.ProductionScores.F1, sr.CandidateScores.GroundingRate, sr.ProductionScores.GroundingRate,
			sr.CandidateStats.SchemaValidRate, sr.ProductionStats.SchemaValidRate)
	case g.Requests != nil:
		if g.Status == evidence.StatusFailed && g.Reason != "" {
			// "2 of 2 requests succeeded" beside "failed" says nothing
			// of why: the reason comes first, its detail left to the
			// gate's section.
			why, _, _ := strings.Cut(g.Reason, ": ")
			return why + "; " + requestsHeadline(g.Requests)
		}
		return requestsHeadline(g.Requests)
	case len(g.Checks) > 0:
		ok := 0
		for _, c := range g.Checks {
			if c.Status == evidence.StatusPassed {
				ok++
			}
		}
		return fmt.Sprintf("%d of %s passed", ok, Plural(len(g.Checks), "check", "checks"))
	case g.Artifact != nil:
		ar := g.Artifact
		if g.Status == evidence.StatusPassed {
			return fmt.Sprintf("%s verified (%s)", Plural(ar.Files, "file", "files"), gib(ar.Bytes))
		}
	}
	if g.Reason != "" {
		return g.Reason
	}
	return g.Status
}

func requestsHeadline(r *evidence.RequestStats) string {
	s := fmt.Sprintf("%d of %s succeeded", r.Count-r.Errors, Plural(r.Count, "request", "requests"))
	if r.Latency != nil {
		s += "; end-to-end p95 " + msText(r.Latency.P95)
	}
	return s
}

// Helpers shared by the renderers.

func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func lowerFirst(s string) string {
	if len(s) > 1 && strings.ToUpper(s[:2]) == s[:2] { // an acronym: READY control
		return s
	}
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func joinAnd(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

func joinSemi(xs []string) string { return strings.Join(xs, "; ") }

// Plural is termtext.Plural: "1 request" or "3 requests".
func Plural(n int, one, many string) string { return termtext.Plural(n, one, many) }

func short(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func ms(v int64) float64 { return float64(v) / 1000 }

func gib(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
