package qualify

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/redact"
)

// buildReport writes the human account of the campaign from the evidence,
// in the shape of the seed's journal entry: executive summary, work
// completed (a section per gate), decisions and reasoning, a validation
// table, current state, next steps. plan may be nil (recovery).
func buildReport(e *evidence.Evidence, plan *Plan) evidence.Report {
	r := evidence.Report{Sections: []evidence.Section{}, Validation: []evidence.Validation{}}
	var notRun []string
	var failedGate *evidence.Gate
	for i := range e.Gates {
		g := &e.Gates[i]
		if g.Status == evidence.StatusFailed && failedGate == nil {
			failedGate = g
		}
		if g.Status == evidence.StatusNotRun && strings.HasPrefix(g.Reason, "not authorized") {
			notRun = append(notRun, strings.ToLower(g.Title))
		}
	}

	// Executive summary.
	var sum []string
	if plan != nil && plan.Summary != "" {
		sum = append(sum, plan.Summary)
	} else {
		sum = append(sum, fmt.Sprintf("A bounded qualification tested whether backend %s can take over from production%s.", e.Candidate, prodName(e)))
	}
	switch e.Verdict {
	case evidence.VerdictQualified:
		sum = append(sum, "Every gate passed: the candidate is qualified in this configuration.")
	case evidence.VerdictNotQualified:
		if failedGate != nil {
			sum = append(sum, fmt.Sprintf("The %s gate failed: %s.", strings.ToLower(failedGate.Title), strings.TrimSuffix(failedGate.Reason, ".")))
			if failedGate.Kind == KindLaunch {
				sum = append(sum, "No inference request executed.")
				sum = append(sum, attemptsSentence(failedGate))
			}
		}
		sum = append(sum, "The candidate is therefore not qualified in this configuration.")
	case evidence.VerdictAborted:
		sum = append(sum, "The campaign was aborted before a verdict: "+strings.TrimPrefix(e.TerminationReason, "aborted: ")+".")
	}
	if len(notRun) > 0 {
		sum = append(sum, fmt.Sprintf("Not authorized, so not run: %s.", joinAnd(notRun)))
	}
	sum = append(sum, productionSentence(e))
	r.Summary = strings.Join(sum, " ")

	// Work completed: one section per gate.
	for _, g := range e.Gates {
		s := evidence.Section{Title: g.Title, Status: sectionStatus(g), Items: gateItems(g)}
		r.Sections = append(r.Sections, s)
		r.Validation = append(r.Validation, evidence.Validation{Check: g.Title, Status: g.Status, Result: gateResult(g)})
	}
	if e.ProductionBackend != "" {
		ps := evidence.Section{Title: "Production restoration", Status: "Not needed", Items: []string{}}
		st := evidence.StatusNotRun
		res := "not needed: production was not stopped"
		if e.Production.Stopped {
			ps.Items = append(ps.Items, fmt.Sprintf("The candidate needed the accelerator exclusively, so production %s was stopped first.", e.ProductionBackend))
			if rr := e.Production.Restored; rr != nil && rr.OK {
				ps.Status, st = "Passed", evidence.StatusPassed
				ps.Items = append(ps.Items, fmt.Sprintf("Restored with its exact configuration and verified: health %s, model %s, a real bounded completion answered %q.", rr.Health, rr.Model, rr.Reply))
				res = fmt.Sprintf("health %s, model %s, reply %q", rr.Health, rr.Model, rr.Reply)
			} else {
				ps.Status, st = "Failed", evidence.StatusFailed
				why := "not attempted"
				if rr != nil {
					why = rr.Error
				}
				ps.Items = append(ps.Items, "Production could NOT be restored: "+why+". Fix what keeps it from starting, then run hiro recover.")
				res = "not restored: " + why
			}
		}
		if e.Production.ConfigHashBefore != "" {
			if e.Production.ConfigUnchanged {
				ps.Items = append(ps.Items, "Production's configuration (profile and config files) hashed the same before and after ("+short(e.Production.ConfigHashBefore)+").")
			} else if e.Production.ConfigHashAfter != "" {
				ps.Items = append(ps.Items, fmt.Sprintf("Production configuration CHANGED during the campaign: %s before, %s after.", short(e.Production.ConfigHashBefore), short(e.Production.ConfigHashAfter)))
				st = evidence.StatusFailed
			}
		}
		r.Sections = append(r.Sections, ps)
		r.Validation = append(r.Validation, evidence.Validation{Check: "Production restoration", Status: st, Result: res})
	}

	// Decisions and reasoning.
	if plan != nil {
		r.Decisions = append(r.Decisions, plan.Decisions...)
		for _, g := range plan.Gates {
			if d, ok := g.Gate.(interface{ Decisions() []string }); ok {
				r.Decisions = append(r.Decisions, d.Decisions()...)
			}
		}
		if *plan.Exclusive {
			r.Decisions = append(r.Decisions, "The candidate needs the accelerator exclusively, so production was stopped under a lease and restored at the end whatever happened.")
		}
	}
	r.Decisions = append(r.Decisions, "A gate runs only if every gate before it passed; withheld gates are recorded as not run with the reason.")

	// Current state and next steps.
	switch e.Verdict {
	case evidence.VerdictQualified:
		if productionDown(e) {
			// Never "production is unchanged" beside "not restored".
			r.CurrentState = fmt.Sprintf("Backend %s is qualified. %s Activation is a separate, deliberate step.", e.Candidate, productionSentence(e))
		} else {
			r.CurrentState = fmt.Sprintf("Backend %s is qualified; production is unchanged. Activation is a separate, deliberate step.", e.Candidate)
		}
	case evidence.VerdictAborted:
		r.CurrentState = fmt.Sprintf("The campaign was aborted before a verdict: backend %s is neither qualified nor disqualified. %s", e.Candidate, productionSentence(e))
	default:
		r.CurrentState = fmt.Sprintf("Backend %s is not qualified. %s", e.Candidate, productionSentence(e))
	}
	r.NextSteps = nextSteps(e, failedGate)
	return r
}

func prodName(e *evidence.Evidence) string {
	if e.ProductionBackend == "" {
		return ""
	}
	return " " + e.ProductionBackend
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
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

// productionDown reports whether the campaign stopped production and did
// not bring it back (exit 4).
func productionDown(e *evidence.Evidence) bool {
	return e.ProductionBackend != "" && e.Production.Stopped && (e.Production.Restored == nil || !e.Production.Restored.OK)
}

func productionSentence(e *evidence.Evidence) string {
	if e.ProductionBackend == "" {
		return "No production profile was configured."
	}
	if !e.Production.Stopped {
		return fmt.Sprintf("Production %s was not stopped.", e.ProductionBackend)
	}
	if rr := e.Production.Restored; rr != nil && rr.OK {
		return fmt.Sprintf("Production %s was restored and verified healthy with a real bounded response (%q).", e.ProductionBackend, rr.Reply)
	}
	return fmt.Sprintf("PRODUCTION %s WAS NOT RESTORED.", strings.ToUpper(e.ProductionBackend))
}

func attemptsSentence(g *evidence.Gate) string {
	var parts []string
	for i, a := range g.Attempts {
		p := fmt.Sprintf("attempt %d (%s)", i+1, a.Name)
		if a.Failure != nil {
			p += fmt.Sprintf(" failed in %s as %s", a.Failure.Phase, a.Failure.Class)
		} else if a.ReachedReady {
			p += " reached ready"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return ""
	}
	s := strings.Join(parts, "; ")
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

func sectionStatus(g evidence.Gate) string {
	switch g.Status {
	case evidence.StatusPassed:
		return "Passed"
	case evidence.StatusFailed:
		if g.Kind == KindLaunch {
			return "Failed before inference"
		}
		return "Failed"
	default:
		return "Not run"
	}
}

func gateItems(g evidence.Gate) []string {
	items := []string{}
	if g.Status == evidence.StatusNotRun {
		return append(items, "Not run: "+g.Reason+".")
	}
	for _, ch := range g.Checks {
		items = append(items, fmt.Sprintf("%s: %s (%s).", ch.Name, ch.Status, ch.Detail))
	}
	items = append(items, describe(&g)...)
	for i, a := range g.Attempts {
		var b strings.Builder
		fmt.Fprintf(&b, "Attempt %d, %s", i+1, a.Name)
		if a.Reason != "" && a.Name != "base" {
			fmt.Fprintf(&b, " (%s)", a.Reason)
		}
		if len(a.Changes) > 0 {
			fmt.Fprintf(&b, " [%s]", strings.Join(a.Changes, "; "))
		}
		if a.ReachedReady {
			fmt.Fprintf(&b, ": reached ready in %.1f s.", float64(a.ReadyAfterMS)/1000)
		} else if f := a.Failure; f != nil {
			fmt.Fprintf(&b, ": %s in phase %s after %.1f s", f.Class, f.Phase, f.SecondsSinceStart)
			if f.ExitCode != nil {
				fmt.Fprintf(&b, ", exit %d", *f.ExitCode)
			}
			if f.Signal != "" {
				fmt.Fprintf(&b, ", signal %s", f.Signal)
			}
			if f.RootCause != "" {
				fmt.Fprintf(&b, ". Root cause: %s", strings.TrimRight(f.RootCause, ". "))
			}
			b.WriteString(".")
		}
		if fs := factsText(a.Facts); fs != "" {
			b.WriteString(" Facts: " + fs + ".")
		}
		items = append(items, b.String())
	}
	if rq := g.Requests; rq != nil {
		s := fmt.Sprintf("%d requests, %d errors", rq.Count, rq.Errors)
		if rq.SchemaAccepted != nil && rq.SchemaValid != nil {
			s += fmt.Sprintf("; schema accepted by the server %d, replies valid %d", *rq.SchemaAccepted, *rq.SchemaValid)
		}
		if rq.Latency != nil {
			s += fmt.Sprintf("; latency p50 %.1f ms, p95 %.1f ms, p99 %.1f ms", rq.Latency.P50, rq.Latency.P95, rq.Latency.P99)
		}
		if rq.TTFT != nil {
			s += fmt.Sprintf("; TTFT p50 %.1f ms", rq.TTFT.P50)
		}
		if rq.OutputTokensPerSecond > 0 {
			s += fmt.Sprintf("; %.1f output tokens/s", rq.OutputTokensPerSecond)
		}
		items = append(items, s+".")
		if len(rq.Samples) > 0 {
			items = append(items, "First reply: "+truncate(rq.Samples[0], 160))
		}
	}
	if g.Status == evidence.StatusFailed && len(g.Attempts) == 0 {
		items = append(items, "Failed: "+g.Reason+".")
	}
	return items
}

func factsText(f map[string]float64) string {
	if len(f) == 0 {
		return ""
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %g", k, f[k])
	}
	return strings.Join(parts, ", ")
}

func gateResult(g evidence.Gate) string {
	switch g.Status {
	case evidence.StatusNotRun:
		return g.Reason
	case evidence.StatusFailed:
		if g.Kind == KindLaunch && len(g.Attempts) > 0 {
			var cls []string
			for _, a := range g.Attempts {
				if a.Failure != nil {
					cls = append(cls, a.Name+": "+string(a.Failure.Class))
				}
			}
			return "no attempt reached ready (" + strings.Join(cls, "; ") + ")"
		}
		return g.Reason
	}
	if g.Kind == KindLaunch && len(g.Attempts) > 0 {
		a := g.Attempts[len(g.Attempts)-1]
		return fmt.Sprintf("attempt %s ready in %.1f s", a.Name, float64(a.ReadyAfterMS)/1000)
	}
	if rq := g.Requests; rq != nil {
		s := fmt.Sprintf("%d/%d requests succeeded", rq.Count-rq.Errors, rq.Count)
		if rq.Latency != nil {
			s += fmt.Sprintf(", p95 %.0f ms", rq.Latency.P95)
		}
		return s
	}
	if g.Semantic != nil && g.Semantic.Summary != "" {
		return g.Semantic.Summary
	}
	return "passed"
}

func nextSteps(e *evidence.Evidence, failed *evidence.Gate) []string {
	var out []string
	if productionDown(e) {
		out = append(out, "Fix what keeps production "+e.ProductionBackend+" from starting, then run hiro recover (any hiro command restores it first from the campaign's lease); check it with hiro backend status "+e.ProductionBackend+".")
	}
	if failed != nil {
		seen := map[string]bool{}
		for _, a := range failed.Attempts {
			if a.Failure == nil {
				continue
			}
			step := a.Failure.NextStep
			if step == "" {
				step = engine.NextStep(a.Failure.Class)
			}
			if step != "" && !seen[step] {
				seen[step] = true
				out = append(out, fmt.Sprintf("For %s (%s): %s", a.Name, a.Failure.Class, step))
			}
		}
		if failed.Failure != nil && len(failed.Attempts) == 0 {
			if step := engine.NextStep(failed.Failure.Class); step != "" {
				out = append(out, step)
			}
		}
		if failed.Kind == KindLaunch {
			out = append(out, "Only declared fallbacks were tried; add a documented variant to the plan's ladder before trying again, or qualify another engine or model.")
		}
	}
	if e.Verdict == evidence.VerdictQualified && !productionDown(e) {
		out = append(out, "Review the evidence and decide on activation; production stays as it is until then.")
	}
	if e.Verdict == evidence.VerdictAborted {
		out = append(out, "Rerun the campaign: hiro qualify "+filepath.Base(e.Plan)+" (the evidence of this one is kept).")
	}
	return out
}

// Markdown renders the report as Markdown.
func Markdown(e *evidence.Evidence) string {
	r := e.Report
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", mdEscape(e.Title))
	fmt.Fprintf(&b, "Campaign `%s` · verdict **%s** · exit %d · %s\n\n", e.ID, e.Verdict, e.ExitCode, e.StartedAt.Format("2006-01-02 15:04 MST"))
	b.WriteString("## Executive summary\n\n" + mdEscape(r.Summary) + "\n\n")
	b.WriteString("## Work completed\n\n")
	for _, s := range r.Sections {
		fmt.Fprintf(&b, "### %s\n\n*%s*\n\n", mdEscape(s.Title), s.Status)
		for _, it := range s.Items {
			b.WriteString("- " + mdEscape(it) + "\n")
		}
		b.WriteString("\n")
	}
	if len(r.Decisions) > 0 {
		b.WriteString("## Decisions and reasoning\n\n")
		for _, d := range r.Decisions {
			b.WriteString("- " + mdEscape(d) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("## Validation and evidence\n\n| Check | Status | Result |\n| --- | --- | --- |\n")
	for _, v := range r.Validation {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(v.Check), cell(v.Status), cell(v.Result))
	}
	b.WriteString("\n## Current state\n\n" + mdEscape(r.CurrentState) + "\n\n")
	if len(r.NextSteps) > 0 {
		b.WriteString("## Next steps\n\n")
		for _, s := range r.NextSteps {
			b.WriteString("- " + mdEscape(s) + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Machine-readable evidence: `%s` (schema `%s`).\n", evidence.PublicFile, evidence.SchemaID)
	return b.String()
}

// mdEscape keeps model or log text from becoming markup.
func mdEscape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(s)
}

func cell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(mdEscape(s))
}

func writeMarkdown(dir string, e *evidence.Evidence) error {
	// report.md is public: rendered from the public copy, then redacted as
	// a whole (package redact) at the point where its bytes are written.
	return atomicfile.WriteFile(filepath.Join(dir, evidence.ReportFile), redact.Markdown([]byte(Markdown(e.Public()))), 0o644)
}

var _ = os.Getpid
