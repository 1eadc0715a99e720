package account

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/stats"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// gateSection is the work-completed section of a gate that ran.
func gateSection(e *evidence.Evidence, g *evidence.Gate) Section {
	s := Section{Title: gateTitle(g), Status: "Passed"}
	if g.Status == evidence.StatusInconclusive {
		s.Status = "Inconclusive"
	}
	if g.Status == evidence.StatusFailed {
		s.Status = "Failed"
		if g.Kind == "launch" {
			s.Status = "Failed before inference"
		}
	}
	for _, c := range g.Checks {
		// A check's name may hold a local path ("disk /srv/models"); the
		// account is public text, so it leaves the path out.
		item := fmt.Sprintf("%s: %s", evidence.RedactPaths(c.Name), c.Status)
		if c.Detail != "" {
			item += " (" + c.Detail + ")"
		}
		s.Items = append(s.Items, sentence(item))
	}
	if ar := g.Artifact; ar != nil {
		s.Items = append(s.Items, artifactItems(ar)...)
	}
	for i, at := range g.Attempts {
		s.Items = append(s.Items, attemptItem(i, at))
	}
	if rq := g.Requests; rq != nil {
		s.Items = append(s.Items, servingItems(e, rq, firstRequestGate(e) == g)...)
		if pc := rq.Comparison; pc != nil {
			s.Items = append(s.Items, PerformanceItems(pc)...)
			s.Markdown = PerformanceMarkdown(pc)
		}
	}
	if g.Failure != nil && len(g.Attempts) == 0 {
		s.Items = append(s.Items, "The server failed: "+FailureSentence(g.Failure))
	}
	if sr := g.Semantic; sr != nil {
		s.Items = append(s.Items, semanticItems(sr)...)
		s.Markdown = SemanticMarkdown(sr)
	}
	if g.Status == evidence.StatusFailed && len(g.Attempts) == 0 && g.Semantic == nil && g.Failure == nil && g.Reason != "" {
		s.Items = append(s.Items, "It failed: "+sentence(g.Reason))
	}
	s.Items = append(s.Items, productionLossItems(e.ProductionBackend, g.ProductionLosses)...)
	return s
}

// productionLossItems are the sentences of a gate's losses of
// production it came back from (evidence.Gate.ProductionLosses with
// BackAt): when and why production stopped answering, the router that
// restarted it, how long production was away, what was run again. A
// loss it did not come back from leaves the gate without a result (not
// run: its reason says so).
func productionLossItems(prod string, losses []evidence.ProductionLoss) []string {
	var items []string
	for _, l := range losses {
		if l.BackAt == nil {
			continue
		}
		items = append(items, sentence(fmt.Sprintf("Production %s stopped answering at %s (%s) while this gate asked it; %s restarted it and it served again at %s (away %s, waited %s of at most %s), and %s was run again",
			prod, clock(l.At), l.Error, l.Router, clock(*l.BackAt), secondsText(l.AwayMS), secondsText(l.WaitedMS), secondsText(l.BoundMS), l.Rerun)))
	}
	return items
}

// lossSuffix is what a gate's validation row adds for a loss of
// production it came back from ("; production away 4.2 s mid-gate,
// restarted by hiro serve pid 42: re-run"); "" otherwise.
func lossSuffix(g *evidence.Gate) string {
	if len(g.ProductionLosses) != 1 || g.ProductionLosses[0].BackAt == nil {
		return ""
	}
	l := g.ProductionLosses[0]
	return fmt.Sprintf("; production away %s mid-gate, restarted by %s: re-run", secondsText(l.AwayMS), l.Router)
}

// secondsText is a duration in milliseconds as seconds ("4.2 s").
func secondsText(msec int64) string { return fmt.Sprintf("%.1f s", ms(msec)) }

func artifactItems(ar *evidence.ArtifactResult) []string {
	out := []string{fmt.Sprintf("The manifest pins %s at revision %s: %s, %s (manifest digest %s).",
		ar.Repo, ar.Revision, Plural(ar.Files, "file", "files"), gib(ar.Bytes), short(ar.ManifestDigest))}
	if len(ar.Missing) == 0 && ar.Changed == 0 && len(ar.Extra) == 0 {
		out = append(out, fmt.Sprintf("Every file matched its recorded size and SHA-256 (%s hashed in this run).", Plural(ar.Hashed, "file", "files")))
		return out
	}
	if len(ar.Missing) > 0 {
		out = append(out, "Missing: "+strings.Join(ar.Missing, ", ")+".")
	}
	if ar.Changed > 0 {
		out = append(out, fmt.Sprintf("%s changed since it was pinned.", Plural(ar.Changed, "file", "files")))
	}
	if len(ar.Extra) > 0 {
		out = append(out, "Not in the manifest: "+strings.Join(ar.Extra, ", ")+".")
	}
	return out
}

// attemptItem is one rung of the ladder: what it changed and how it ended.
func attemptItem(i int, at evidence.Attempt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Attempt %d, %s", i+1, at.Name)
	if at.Reason != "" && at.Name != "base" {
		fmt.Fprintf(&b, " (%s)", strings.TrimSuffix(at.Reason, "."))
	}
	if len(at.Changes) > 0 {
		fmt.Fprintf(&b, ", changing %s", strings.Join(at.Changes, ", "))
	}
	switch {
	case at.Outcome == evidence.OutcomePredictedFailure && at.Prediction != nil:
		fmt.Fprintf(&b, ": not launched, predicted to fail as %s (rule %s): %s", at.Prediction.Class, at.Prediction.Rule, sentence(at.Prediction.Reason))
	case at.ReachedReady:
		fmt.Fprintf(&b, ": ready in %.1f s.", ms(at.ReadyAfterMS))
		if at.Device != nil && at.Device.Kind != "" {
			fmt.Fprintf(&b, " Serving on %s.", at.Device.String())
		}
		if fs := FactsText(at.Facts); fs != "" {
			b.WriteString(" Facts: " + fs + ".")
		}
	case at.Failure != nil:
		b.WriteString(": " + FailureSentence(at.Failure))
	default:
		b.WriteString(": did not reach ready.")
	}
	return b.String()
}

// Failure is the one rendering of an engine failure, as labelled lines:
//
//	quant_kernel_failed in phase kernel_setup, 2.1 s after start (exit code 1)
//	root cause: RuntimeError: ... gptq_marlin_repack
//	facts: shards_loaded=4 shards_total=4 weights_load_seconds=93.66
//	next step: ...
//
// The root cause, quoted from an engine's log, has its control bytes and
// invalid UTF-8 escaped (package termtext). Terminal printers print the
// lines as they are; FailureSentence joins
// them into prose for the report and the journal.
func Failure(f *failure.Failure) []string {
	if f == nil {
		return nil
	}
	head := fmt.Sprintf("%s in phase %s", f.Class, f.Phase)
	if f.SecondsSinceStart > 0 {
		head += fmt.Sprintf(", %.1f s after start", f.SecondsSinceStart)
	}
	switch {
	case f.Signal != "":
		head += fmt.Sprintf(" (killed by signal %s)", f.Signal)
	case f.ExitCode != nil:
		head += fmt.Sprintf(" (exit code %d)", *f.ExitCode)
	}
	lines := []string{head}
	if rc := strings.TrimSpace(f.RootCause); rc != "" {
		lines = append(lines, "root cause: "+termtext.Escape(rc))
	}
	if c := confidenceText(f); c != "" {
		lines = append(lines, "confidence: "+c)
	}
	if fs := FactsText(f.Facts); fs != "" {
		lines = append(lines, "facts: "+fs)
	}
	if step := nextStepOf(f.NextStep, f.Class); step != "" {
		lines = append(lines, "next step: "+step)
	}
	return lines
}

// confidenceText says in words a verdict that is not strong: "weak: only
// a generic rule (rule) explains this log; other lines point at X" or
// "none: no rule explains this log; best guess: engine_died". Empty for a
// strong verdict, or a failure that does not say (older evidence).
func confidenceText(f *failure.Failure) string {
	switch f.Confidence {
	case failure.ConfidenceWeak:
		s := "weak: only a generic rule (" + f.Rule + ") explains this log"
		if len(f.Classes) > 0 {
			names := make([]string, len(f.Classes))
			for i, c := range f.Classes {
				names[i] = string(c)
			}
			s = "weak: the rule " + f.Rule + " explains this log, but other lines point at " + strings.Join(names, ", ")
		}
		return s + "; take " + string(f.Class) + " as a likely reading, not a certainty"
	case failure.ConfidenceNone:
		return "none: no rule explains this log; best guess: " + string(f.Class)
	}
	return ""
}

// FailureSentence is Failure as prose: "gpu_oom in phase load (exit 1).
// Root cause: .... Facts: .... Next step: ...."
func FailureSentence(f *failure.Failure) string {
	lines := Failure(f)
	for i := range lines {
		if i > 0 { // "root cause: ..." → "Root cause: ..."; never a class name
			lines[i] = upperFirst(lines[i])
		}
		lines[i] = sentence(lines[i])
	}
	return strings.Join(lines, " ")
}

// FactsText is "name=value name=value" in name order.
func FactsText(f map[string]float64) string {
	parts := make([]string, 0, len(f))
	for _, k := range sortedKeys(f) {
		parts = append(parts, fmt.Sprintf("%s=%g", k, f[k]))
	}
	return strings.Join(parts, " ")
}

// servingItems are a request gate's figures, each with how it was
// measured.
// The engine's version is said once, in the first request gate.
func servingItems(e *evidence.Evidence, r *evidence.RequestStats, first bool) []string {
	var out []string
	s := fmt.Sprintf("%s, %s", Plural(r.Count, "request", "requests"), Plural(r.Errors, "error", "errors"))
	if r.Concurrency > 1 {
		s += fmt.Sprintf(", %d in flight at once", r.Concurrency)
	} else if r.Count > 1 {
		s += ", one after another"
	}
	if r.SchemaAccepted != nil && r.SchemaValid != nil {
		s += fmt.Sprintf("; the server accepted the JSON Schema for %d, and %s parsed and validated against it client-side", *r.SchemaAccepted, Plural(*r.SchemaValid, "reply", "replies"))
	}
	out = append(out, s+".")
	if r.Latency != nil {
		out = append(out, fmt.Sprintf("End-to-end latency (client clock, request sent to last token received) p50 %s, p95 %s, max %s.", msText(r.Latency.P50), msText(r.Latency.P95), msText(r.Latency.Max)))
	}
	if r.TTFT != nil {
		out = append(out, fmt.Sprintf("Time to first token (first streamed token) p50 %s, p95 %s.", msText(r.TTFT.P50), msText(r.TTFT.P95)))
	}
	if r.OutputTokensPerSecond > 0 {
		t := fmt.Sprintf("%.1f output tokens/s per request (completion tokens from the server's usage over the summed end-to-end time)", r.OutputTokensPerSecond)
		if r.TPOTMS > 0 {
			t += fmt.Sprintf("; %.1f ms per output token after the first", r.TPOTMS)
		}
		out = append(out, t+".")
	}
	if r.RequestsPerSecond > 0 && r.Concurrency > 1 {
		out = append(out, fmt.Sprintf("Throughput over the wall time: %.2f requests/s, %.1f output tokens/s.", r.RequestsPerSecond, r.OutputTokensPerSecondWall))
	}
	if v := engineVersion(e); v != "" && first {
		out = append(out, "Engine: "+v+".")
	}
	if len(r.ErrorMessages) > 0 {
		out = append(out, "Errors seen: "+strings.Join(r.ErrorMessages, "; ")+".")
	}
	if len(r.Samples) > 0 {
		out = append(out, "First reply: "+truncate(r.Samples[0], 160))
	}
	return out
}

// firstRequestGate is the first gate that ran with request figures.
func firstRequestGate(e *evidence.Evidence) *evidence.Gate {
	for i := range e.Gates {
		if e.Gates[i].Requests != nil {
			return &e.Gates[i]
		}
	}
	return nil
}

func msText(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// engineVersion is the candidate engine's version from the host facts
// ("ollama v0.6.5 (as the host facts report it)"). With the candidate's
// kind known it names that kind only, never another kind's version: a
// kind the host facts did not find on PATH is "llamacpp, version
// unknown (...)", a kind they do not look for (openai) is "". With the
// kind unknown (evidence from before candidate_engine) it lists every
// found engine.
func engineVersion(e *evidence.Evidence) string {
	engines, _ := e.Host["engines"].([]any)
	var found []string
	for _, x := range engines {
		m, _ := x.(map[string]any)
		if m == nil {
			continue
		}
		kind, _ := m["kind"].(string)
		if e.CandidateEngine != "" && kind != e.CandidateEngine {
			continue
		}
		if m["found"] != true {
			if e.CandidateEngine != "" {
				return kind + ", version unknown (the host facts found no " + kind + " on PATH)"
			}
			continue
		}
		v, _ := m["version"].(string)
		if v == "" {
			v = "version unknown"
		}
		if e.CandidateEngine != "" {
			return kind + " " + v + " (as the host facts report it)"
		}
		found = append(found, kind+" "+v)
	}
	if len(found) == 0 {
		return ""
	}
	return strings.Join(found, ", ") + " (as the host facts report it)"
}

func truncate(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// semanticItems are the semantic gate's facts in prose.
func semanticItems(sr *evidence.SemanticResult) []string {
	out := []string{}
	src := "extracted now"
	if sr.ProductionCached {
		src = "reused from the cached baseline (same corpus, prompt, schema and production configuration)"
	}
	out = append(out, fmt.Sprintf("Corpus %s (%s, digest %s), extracted through the candidate and through production; production's result was %s.",
		sr.CorpusName, Plural(len(sr.Differences), "document", "documents"), short(sr.CorpusDigest), src))
	if n := sr.ProductionStats.TimeoutRetries; n > 0 {
		out = append(out, fmt.Sprintf("%s of production ran past the gate's request_timeout and %s sent once more with a fresh bound, then answered: production's side is complete.",
			Plural(n, "request", "requests"), map[bool]string{true: "was", false: "were"}[n == 1]))
	}
	if n := sr.CandidateStats.DocumentsFailed; n > 0 {
		out = append(out, fmt.Sprintf("The candidate failed %s (requests that got no reply).", Plural(n, "document", "documents")))
	}
	for _, c := range sr.Comparisons {
		out = append(out, ComparisonSentence(c, sr.Method))
	}
	if c := firstComparison(sr, "f1"); c != nil && c.SampleSize != "" {
		out = append(out, "On F1, "+lowerFirst(c.SampleSize))
	}
	switch {
	case sr.Outcome == evidence.StatusInconclusive:
		out = append(out, "No check failed, but not every comparison could decide: "+joinSemi(semanticReasons(sr))+".")
	case len(sr.Reasons) > 0:
		out = append(out, semanticVerdictLine(sr))
	case len(sr.Comparisons) > 0:
		out = append(out, "Every check passed: the candidate is above each floor and, at the stated confidence, no worse than production by more than the tolerance.")
	default:
		out = append(out, "Every check passed: the candidate is above each floor and no worse than production by more than the tolerance.")
	}
	return out
}

// ComparisonSentence is one comparison in words: candidate, production,
// the difference with its bounds, the margin and the decision.
func ComparisonSentence(c evidence.Comparison, m *evidence.StatMethod) string {
	return fmt.Sprintf("%s: candidate %.3f, production %.3f, difference %s (%s bounds %s to %s), margin %.2f: %s.",
		upperFirst(MeasureName(c.Measure)), c.Candidate, c.Production, stats.Signed(c.Difference, 3), boundsText(m), stats.Signed(c.Lower, 3), stats.Signed(c.Upper, 3), c.Margin, c.Decision)
}

// boundsText is the method's one-sided confidence, "95 % one-sided".
func boundsText(m *evidence.StatMethod) string {
	if m == nil {
		return "one-sided"
	}
	return fmt.Sprintf("%.0f %% one-sided", 100*m.Confidence)
}

func firstComparison(sr *evidence.SemanticResult, measure string) *evidence.Comparison {
	for i := range sr.Comparisons {
		if sr.Comparisons[i].Measure == measure {
			return &sr.Comparisons[i]
		}
	}
	return nil
}

// semanticReasons are the gate's failed checks in words, then its
// undecided comparisons; a gate with none of either gives its recorded
// reasons.
func semanticReasons(sr *evidence.SemanticResult) []string {
	failed, undecided := semanticFindings(sr)
	out := append(failed, undecided...)
	if len(out) == 0 {
		out = append(out, sr.Reasons...)
	}
	return out
}

// semanticVerdictLine is the sentence that closes the semantic gate's
// prose: what failed and, apart from it, what could not be decided, so a
// reader sees which findings made the verdict a failure (exit 1) and
// which alone would have left it inconclusive (exit 5).
func semanticVerdictLine(sr *evidence.SemanticResult) string {
	failed, undecided := semanticFindings(sr)
	switch {
	case len(failed) > 0 && len(undecided) > 0:
		return "Failed checks: " + joinSemi(failed) + ". Not decided: " + joinSemi(undecided) + "."
	case len(failed) > 0:
		return "Failed checks: " + joinSemi(failed) + "."
	case len(undecided) > 0:
		return "Not decided: " + joinSemi(undecided) + "."
	}
	return "Failed checks: " + joinSemi(sr.Reasons) + "."
}

// semanticFindings splits the gate's findings into failed checks (a floor,
// a fixed tolerance, a comparison shown worse) and comparisons that could
// not decide.
func semanticFindings(sr *evidence.SemanticResult) (failed, undecided []string) {
	for _, c := range sr.Checks {
		if c.Passed {
			continue
		}
		m, kind, _ := strings.Cut(c.Name, " ")
		name := measureName[m]
		if name == "" {
			name = m
		}
		switch kind {
		case "floor":
			failed = append(failed, fmt.Sprintf("%s %.3f is below the floor %.3f", name, c.Value, c.Limit))
		case "vs production":
			failed = append(failed, fmt.Sprintf("%s %.3f is below production's less the tolerance, %.3f", name, c.Value, c.Limit))
		default:
			failed = append(failed, fmt.Sprintf("%s: %.3f, needs %.3f", c.Name, c.Value, c.Limit))
		}
	}
	for _, c := range sr.Comparisons {
		switch c.Outcome {
		case evidence.StatusFailed:
			failed = append(failed, fmt.Sprintf("%s is worse than production's by more than %.2f (difference %s, upper bound %s)", MeasureName(c.Measure), c.Margin, stats.Signed(c.Difference, 3), stats.Signed(c.Upper, 3)))
		case evidence.StatusInconclusive:
			undecided = append(undecided, fmt.Sprintf("%s could not be told from production's within %.2f (difference %s, bounds %s to %s)", MeasureName(c.Measure), c.Margin, stats.Signed(c.Difference, 3), stats.Signed(c.Lower, 3), stats.Signed(c.Upper, 3)))
		}
	}
	return failed, undecided
}

var measureName = map[string]string{"f1": "F1", "grounding_rate": "grounding", "schema_valid_rate": "schema-valid rate"}

// MeasureName is a measure's name in prose ("F1", "grounding",
// "schema-valid rate"); an unknown key is returned as it is.
func MeasureName(key string) string {
	if n := measureName[key]; n != "" {
		return n
	}
	return key
}

// SemanticMarkdown is the semantic gate's tables: every measure for
// candidate, production and the limit with how it was derived; the
// largest per-document differences; the top reject reasons.
func SemanticMarkdown(sr *evidence.SemanticResult) string {
	var b strings.Builder
	c, p := sr.CandidateScores, sr.ProductionScores
	if len(sr.Comparisons) > 0 {
		comparisonsMarkdown(&b, sr)
	} else {
		limitsMarkdown(&b, sr)
	}
	fmt.Fprintf(&b, "\nClaims: candidate %d (%d matched of %d gold), production %d (%d matched).\n", c.Predicted, c.Matched, c.Gold, p.Predicted, p.Matched)
	documentsMarkdown(&b, sr)
	return b.String()
}

// comparisonsMarkdown is the v3 table: each gated measure's comparison
// with its bounds, margin and decision, the floors, and the measures
// recorded but not gated.
func comparisonsMarkdown(b *strings.Builder, sr *evidence.SemanticResult) {
	fmt.Fprintf(b, "| Measure | Candidate | Production | Difference | Bounds (%s) | Margin | Floor | Decision | Documents needed |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n", boundsText(sr.Method))
	for _, cm := range sr.Comparisons {
		floor, res := "—", cm.Outcome
		if f := check(sr, cm.Measure+" floor"); f != nil {
			floor = f3(f.Limit)
			if !f.Passed {
				res = "failed (floor)"
			}
		}
		if res != evidence.StatusPassed {
			res = "**" + res + "**"
		}
		need := "—"
		if cm.DocumentsNeeded > 0 {
			need = fmt.Sprintf("%d", cm.DocumentsNeeded)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s to %s | %s | %s | %s | %s |\n", upperFirst(MeasureName(cm.Measure)), f3(cm.Candidate), f3(cm.Production),
			stats.Signed(cm.Difference, 3), stats.Signed(cm.Lower, 3), stats.Signed(cm.Upper, 3), f2(cm.Margin), floor, res, need)
	}
	c, p := sr.CandidateScores, sr.ProductionScores
	fmt.Fprintf(b, "\nRecorded, not gated: precision %s vs %s, coverage %s vs %s, duplicates %s vs %s (candidate vs production).\n",
		f3(c.Precision), f3(p.Precision), f3(c.Coverage), f3(p.Coverage), f3(c.DuplicateRate), f3(p.DuplicateRate))
	if m := sr.Method; m != nil {
		fmt.Fprintf(b, "\nMethod: %s; %d resamples; %s; sample sizes at %.0f %% power.\n", m.Test, m.Resamples, m.Seeding, 100*m.Power)
	}
}

// limitsMarkdown is the v2 table: each measure against its limit.
func limitsMarkdown(b *strings.Builder, sr *evidence.SemanticResult) {
	c, p := sr.CandidateScores, sr.ProductionScores
	b.WriteString("| Measure | Candidate | Production | Limit | How the limit is derived | Result |\n| --- | --- | --- | --- | --- | --- |\n")
	row := func(name, key string, cv, pv float64) {
		lim, how, res := "—", "recorded, not gated", "—"
		floor, vsProd := check(sr, key+" floor"), check(sr, key+" vs production")
		switch {
		case floor != nil && vsProd != nil:
			l := math.Max(floor.Limit, vsProd.Limit)
			lim = f3(l)
			if vsProd.Limit >= floor.Limit {
				how = fmt.Sprintf("production %s - tolerance %s (above the floor %s)", f3(pv), f2(sr.Tolerance), f3(floor.Limit))
			} else {
				how = fmt.Sprintf("absolute floor %s (production - tolerance is %s)", f3(floor.Limit), f3(vsProd.Limit))
			}
			res = passText(floor.Passed && vsProd.Passed)
		case floor != nil:
			lim, how, res = f3(floor.Limit), "absolute floor", passText(floor.Passed)
		case vsProd != nil:
			lim, how, res = f3(vsProd.Limit), fmt.Sprintf("production %s - tolerance %s", f3(pv), f2(sr.Tolerance)), passText(vsProd.Passed)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", name, f3(cv), f3(pv), lim, how, res)
	}
	row("Precision", "precision", c.Precision, p.Precision)
	row("Coverage", "coverage", c.Coverage, p.Coverage)
	row("F1", "f1", c.F1, p.F1)
	row("Grounding", "grounding_rate", c.GroundingRate, p.GroundingRate)
	row("Schema-valid replies", "schema_valid_rate", sr.CandidateStats.SchemaValidRate, sr.ProductionStats.SchemaValidRate)
	row("Duplicates", "duplicate_rate", c.DuplicateRate, p.DuplicateRate)
}

// documentsMarkdown is the largest per-document differences and each
// side's top reject reasons.
func documentsMarkdown(b *strings.Builder, sr *evidence.SemanticResult) {
	diffs := append([]evidence.DocDiff{}, sr.Differences...)
	sort.SliceStable(diffs, func(i, j int) bool { return math.Abs(diffs[i].DeltaF1) > math.Abs(diffs[j].DeltaF1) })
	var big []evidence.DocDiff
	for _, d := range diffs {
		if d.DeltaF1 != 0 && len(big) < 5 {
			big = append(big, d)
		}
	}
	if len(big) > 0 {
		b.WriteString("\nLargest per-document differences:\n\n| Document | Candidate F1 | Production F1 | Difference | Claims (candidate / production) |\n| --- | --- | --- | --- | --- |\n")
		for _, d := range big {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %d / %d |\n", cellText(d.DocID), f3(d.CandidateF1), f3(d.ProductionF1), stats.Signed(d.DeltaF1, 3), d.CandidateClaims, d.ProductionClaims)
		}
	} else if len(diffs) > 0 {
		b.WriteString("\nNo document's F1 differs between candidate and production.\n")
	}
	for _, side := range []struct {
		name string
		rs   []evidence.RejectReason
	}{{"the candidate", sr.CandidateRejects}, {"production", sr.ProductionRejects}} {
		if len(side.rs) == 0 {
			continue
		}
		fmt.Fprintf(b, "\nTop reject reasons of %s:\n\n| Reason | Count | Example |\n| --- | --- | --- |\n", side.name)
		for _, r := range side.rs {
			fmt.Fprintf(b, "| %s | %d | %s |\n", cellText(r.Code), r.Count, cellText(truncate(r.Example, 140)))
		}
	}
}

func check(sr *evidence.SemanticResult, name string) *evidence.SemanticCheck {
	for i := range sr.Checks {
		if sr.Checks[i].Name == name {
			return &sr.Checks[i]
		}
	}
	return nil
}

func passText(ok bool) string {
	if ok {
		return "passed"
	}
	return "**failed**"
}

func f3(v float64) string { return fmt.Sprintf("%.3f", v) }
func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// cellText keeps text from breaking a Markdown table or becoming markup.
func cellText(s string) string {
	return md(strings.NewReplacer("|", "\\|", "\n", " ").Replace(s))
}

// PerformanceItems are a request gate's comparison with production in
// prose: how the requests alternated, each measure's figures, bounds,
// limit and decision, and the outcome.
func PerformanceItems(pc *evidence.PerformanceComparison) []string {
	if pc.Skipped != "" {
		return []string{"No comparison with production: " + sentence(pc.Skipped)}
	}
	out := []string{fmt.Sprintf("Compared with production (%s) on the same requests, %s; production answered %s with %s.",
		pc.Production, pc.Interleaving, Plural(pc.Requests, "request", "requests"), Plural(pc.Errors, "error", "errors"))}
	conf := fmt.Sprintf("%.0f %% one-sided", 100*pc.Confidence)
	for _, m := range pc.Measures {
		out = append(out, upperFirst(perfMeasureSentence(m, conf))+".")
	}
	switch pc.Outcome {
	case evidence.StatusPassed:
		out = append(out, "At the stated confidence the candidate is no slower than production by more than the margins.")
	case evidence.StatusFailed:
		out = append(out, "Failed against production: "+joinSemi(pc.Reasons)+".")
	case evidence.StatusInconclusive:
		out = append(out, "No measure failed, but not every comparison could decide: "+joinSemi(pc.Reasons)+".")
	}
	return out
}

// perfMeasureSentence is one performance measure in words.
func perfMeasureSentence(m evidence.PerformanceMeasure, conf string) string {
	if m.Test == "ratio-bootstrap" {
		return fmt.Sprintf("%s: candidate %.1f, production %.1f (means), ratio %.3f (%s bounds %.3f to %.3f), limit %.2f: %s",
			perfMeasureTitle(m.Measure), m.Candidate, m.Production, m.Estimate, conf, m.Lower, m.Upper, m.Limit, m.Decision)
	}
	return fmt.Sprintf("%s: candidate %s, production %s (medians), shift %s ms (Hodges-Lehmann; %s bounds %s to %s ms, Mann-Whitney p = %.3g), margin %s: %s",
		perfMeasureTitle(m.Measure), msText(m.Candidate), msText(m.Production), stats.Signed(m.Estimate, 1), conf, stats.Signed(m.Lower, 1), stats.Signed(m.Upper, 1), m.P, msText(m.Limit), m.Decision)
}

var perfMeasureTitles = map[string]string{"latency_ms": "end-to-end latency", "ttft_ms": "time to first token", "output_tokens_per_second": "output tokens/s per request"}

// perfMeasureTitle is a performance measure's name in prose.
func perfMeasureTitle(key string) string {
	if n := perfMeasureTitles[key]; n != "" {
		return n
	}
	return key
}

// PerformanceMarkdown is the comparison's table: one row per measure
// with both sides, the estimate with its bounds, the limit, the test and
// the decision.
func PerformanceMarkdown(pc *evidence.PerformanceComparison) string {
	if pc.Skipped != "" || len(pc.Measures) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| Measure | Candidate | Production | Difference | Bounds (%.0f %% one-sided) | Limit | Test | Decision |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n", 100*pc.Confidence)
	for _, m := range pc.Measures {
		res := m.Outcome
		if res != evidence.StatusPassed {
			res = "**" + res + "**"
		}
		if m.Test == "ratio-bootstrap" {
			fmt.Fprintf(&b, "| %s | %.1f | %.1f | ratio %.3f | %.3f to %.3f | ≥ %.2f | ratio of means, bootstrap | %s |\n", upperFirst(perfMeasureTitle(m.Measure)), m.Candidate, m.Production, m.Estimate, m.Lower, m.Upper, m.Limit, res)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s ms | %s to %s ms | ≤ %s ms | Mann-Whitney, Hodges-Lehmann shift | %s |\n", upperFirst(perfMeasureTitle(m.Measure)), msText(m.Candidate), msText(m.Production), stats.Signed(m.Estimate, 1), stats.Signed(m.Lower, 1), stats.Signed(m.Upper, 1), stats.Signed(m.Limit, 1), res)
	}
	return b.String()
}
