package account

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
)

// Every printer shows a failure through Failure: class, phase, how it
// ended, root cause, facts, next step, in that order.
func TestFailureRendering(t *testing.T) {
	code := 1
	f := &failure.Failure{Class: failure.ClassQuantKernelFailed, Phase: failure.PhaseKernelSetup, ExitCode: &code, SecondsSinceStart: 2.14,
		RootCause: "RuntimeError: ... gptq_marlin_repack", Facts: map[string]float64{"weights_load_seconds": 93.66, "shards_loaded": 4}, NextStep: "Try the Triton kernel."}
	got := strings.Join(Failure(f), "\n")
	want := "quant_kernel_failed in phase kernel_setup, 2.1 s after start (exit code 1)\nroot cause: RuntimeError: ... gptq_marlin_repack\nfacts: shards_loaded=4 weights_load_seconds=93.66\nnext step: Try the Triton kernel."
	if got != want {
		t.Errorf("Failure:\n%s\nwant\n%s", got, want)
	}
	if s := FailureSentence(f); !strings.HasPrefix(s, "quant_kernel_failed in phase kernel_setup") || !strings.Contains(s, ". Root cause: RuntimeError") || !strings.HasSuffix(s, "Next step: Try the Triton kernel.") {
		t.Errorf("FailureSentence: %q", s)
	}
	f.NextStep = "" // the engine vocabulary's step for the class fills in
	if l := Failure(f); !strings.HasPrefix(l[len(l)-1], "next step: ") {
		t.Errorf("no next step from the vocabulary: %v", l)
	}
}

// Production restoration is not a gate: never stopped, it is said in
// words and has no validation row; stopped and restored, it has one.
func TestProductionIsNotAGate(t *testing.T) {
	e := &evidence.Evidence{Candidate: "c", ProductionBackend: "prod", Verdict: evidence.VerdictQualified,
		Gates: []evidence.Gate{{ID: "ready", Kind: "ready_control", Title: "READY control", Status: evidence.StatusPassed,
			Requests: &evidence.RequestStats{Count: 1}}}}
	a := Build(e)
	for _, r := range a.Validation {
		if strings.Contains(r.Check, "Production") {
			t.Errorf("a production never stopped has a row: %+v", r)
		}
	}
	if !strings.Contains(a.Summary, "Production prod was never stopped") || !strings.Contains(strings.Join(a.Sections[0].Items, " "), "1 request, 0 errors.") {
		t.Errorf("summary %q, items %v", a.Summary, a.Sections[0].Items)
	}
	e.Production = evidence.Production{Stopped: true, Restored: &evidence.Restored{OK: true, Health: "200", Model: "m", Reply: "READY"}}
	a = Build(e)
	last := a.Validation[len(a.Validation)-1]
	if last.Check != "Production restoration" || last.Status != evidence.StatusPassed {
		t.Errorf("restored production: last row %+v", last)
	}
	if len(a.NextSteps) == 0 || !strings.Contains(a.NextSteps[0], "hiro activate") {
		t.Errorf("qualified: next steps %v", a.NextSteps)
	}
}

// Check names with a local path do not carry it into the account.
func TestCheckNamesLeavePathsOut(t *testing.T) {
	e := &evidence.Evidence{Candidate: "c", Verdict: evidence.VerdictNotQualified,
		Gates: []evidence.Gate{{ID: "p", Kind: "prereq", Title: "Host", Status: evidence.StatusPassed,
			Checks: []evidence.Check{{Name: "disk /srv/hiro/state", Status: "passed", Detail: "12 GiB free"}}}}}
	md := Markdown(e)
	if strings.Contains(md, "/srv/hiro") || !strings.Contains(md, "disk `<path>`: passed (12 GiB free).") {
		t.Errorf("report:\n%s", md)
	}
}

// An aborted campaign's subtitle says "Aborted" once.
func TestAbortedSubtitleSaysItOnce(t *testing.T) {
	a := Build(&evidence.Evidence{Verdict: evidence.VerdictAborted, TerminationReason: "aborted: interrupted by SIGINT"})
	if a.Subtitle != "Aborted: interrupted by SIGINT" {
		t.Fatalf("subtitle %q", a.Subtitle)
	}
	a = Build(&evidence.Evidence{Verdict: evidence.VerdictNotQualified, TerminationReason: "gate launch failed"})
	if a.Subtitle != "Not qualified: gate launch failed" {
		t.Fatalf("subtitle %q", a.Subtitle)
	}
}

// A qualified verdict of a plan that lacks a kind the activation policy
// needs (no semantic gate: extraction was not judged) says so in the
// subtitle (the terminal's verdict line), the summary and the next steps,
// instead of "qualified" and nothing more.
func TestQualifiedSaysWhatWasNotJudged(t *testing.T) {
	e := &evidence.Evidence{Candidate: "cand", Verdict: evidence.VerdictQualified, TerminationReason: "all gates passed",
		NotJudged: []string{"semantic"}, Gates: []evidence.Gate{{ID: "launch", Kind: "launch", Status: evidence.StatusPassed}}}
	a := Build(e)
	if a.Subtitle != "Qualified: all gates passed; not judged: semantic" {
		t.Errorf("subtitle %q", a.Subtitle)
	}
	if !strings.Contains(a.Summary, "It was not judged on extraction quality against production on a frozen corpus (semantic)") || !strings.Contains(a.Summary, "hiro activate refuses this evidence") {
		t.Errorf("summary %q", a.Summary)
	}
	if steps := strings.Join(a.NextSteps, " "); !strings.Contains(steps, "add a gate of each kind not judged (semantic") || strings.Contains(steps, "to switch production, run hiro activate") {
		t.Errorf("next steps %q", steps)
	}
	if term := Terminal(e); !strings.Contains(term, "not judged: semantic") {
		t.Errorf("terminal:\n%s", term)
	}
	e.NotJudged = nil
	if a := Build(e); strings.Contains(a.Subtitle+a.Summary, "not judged") {
		t.Errorf("a plan that covers the policy: %q %q", a.Subtitle, a.Summary)
	}
}

// TestNotJudgedOnAbortedAndInconclusive (trial 12, S1 and S2): an
// aborted campaign's verdict line said "not judged: artifact,
// structured_control", naming only the policy's kinds the plan lacks, as
// if its interrupted semantic gate had been judged: an aborted verdict
// has no such tail. An inconclusive verdict of such a plan offered
// 'hiro activate --accept-inconclusive', which refuses it on the policy:
// its next step says the refusal and what to add instead.
func TestNotJudgedOnAbortedAndInconclusive(t *testing.T) {
	e := &evidence.Evidence{Candidate: "cand", Verdict: evidence.VerdictAborted, TerminationReason: "interrupted by SIGINT",
		NotJudged: []string{"artifact", "structured_control"}, Gates: []evidence.Gate{{ID: "launch", Kind: "launch", Status: evidence.StatusPassed}, {ID: "semantic", Kind: "semantic", Status: evidence.StatusNotRun}}}
	if a := Build(e); a.Subtitle != "Aborted: interrupted by SIGINT" || NotJudgedTail(e) != "" {
		t.Errorf("aborted subtitle %q, want no not-judged tail", a.Subtitle)
	}
	e.Verdict, e.TerminationReason = evidence.VerdictInconclusive, "gate semantic inconclusive"
	e.Gates[1].Status = evidence.StatusInconclusive
	a := Build(e)
	steps := strings.Join(a.NextSteps, " ")
	if strings.Contains(steps, "Or accept this evidence deliberately") ||
		!strings.Contains(steps, "hiro activate refuses this evidence, --accept-inconclusive too: the activation policy needs a gate of each kind not judged (artifact, structured_control)") {
		t.Errorf("inconclusive next steps of a plan the policy refuses: %q", steps)
	}
	e.NotJudged = nil
	if steps := strings.Join(Build(e).NextSteps, " "); !strings.Contains(steps, "hiro activate --accept-inconclusive records") {
		t.Errorf("inconclusive next steps of a plan that covers the policy: %q", steps)
	}
}

// TestRateChartTicksStopAtOne: a rate chart leaves room above 1 for its
// legend, but no tick reads more than 1; its text is sans-serif.
func TestRateChartTicksStopAtOne(t *testing.T) {
	sr := &evidence.SemanticResult{CorpusName: "mini"}
	sr.CandidateScores.F1, sr.ProductionScores.F1 = 0.7, 0.9
	e := &evidence.Evidence{Gates: []evidence.Gate{{ID: "semantic", Kind: "semantic", Status: evidence.StatusFailed, Semantic: sr}}}
	charts, err := Charts(e)
	if err != nil || len(charts) == 0 {
		t.Fatalf("charts %d, err %v", len(charts), err)
	}
	svg := string(charts[0].SVG)
	if !strings.Contains(svg, ">1.0<") || !strings.Contains(svg, ">0.4<") || strings.Contains(svg, ">1.2<") {
		t.Errorf("rate chart ticks: want labels 0.4 and 1.0, none 1.2")
	}
	// The pages are sans-serif; so is the chart's text.
	if !strings.Contains(svg, "font-family:Liberation Sans") || strings.Contains(svg, "Liberation Serif") {
		t.Errorf("chart text is not in Liberation Sans")
	}
}

// Placeholders of package redact read well in a terminal and in rendered
// Markdown: a code span, never HTML entities; other angle brackets (model
// or log text) are still entities outside code spans, and literal inside
// them; an unmatched backtick opens no code span.
func TestMarkdownPlaceholdersAsCodeSpans(t *testing.T) {
	for in, want := range map[string]string{
		"disk <project>: passed":                 "disk `<project>`: passed",
		"key <redacted>, file <home>/models/x":   "key `<redacted>`, file `<home>`/models/x",
		"<state>/logs and <path>":                "`<state>`/logs and `<path>`",
		"reply <script>alert(1)</script> a > b":  "reply &lt;script&gt;alert(1)&lt;/script&gt; a &gt; b",
		"run `ls <project>` then <b>":            "run `ls <project>` then &lt;b&gt;",
		"odd ` tick <script> and <project>":      "odd ` tick &lt;script&gt; and `<project>`",
		"no angle brackets, `code` and **bold**": "no angle brackets, `code` and **bold**",
	} {
		if got := md(in); got != want {
			t.Errorf("md(%q) = %q, want %q", in, got, want)
		}
	}
	if got := cellText("a | <project>\nb"); got != "a \\| `<project>` b" {
		t.Errorf("cellText: %q", got)
	}
}

// The semantic tables name each side in plain English: "of the
// candidate", "of production" (production is a proper role, no article).
func TestSemanticRejectHeadings(t *testing.T) {
	sr := &evidence.SemanticResult{
		CandidateRejects:  []evidence.RejectReason{{Code: "schema_invalid", Count: 2, Example: "x"}},
		ProductionRejects: []evidence.RejectReason{{Code: "ungrounded", Count: 1, Example: "y"}},
	}
	out := SemanticMarkdown(sr)
	if !strings.Contains(out, "Top reject reasons of the candidate:") || !strings.Contains(out, "Top reject reasons of production:") || strings.Contains(out, "of the production") {
		t.Errorf("reject headings:\n%s", out)
	}
}

// TestForestPlotOfComparisons: a semantic gate with comparisons gets a
// forest plot first (one row per measure, the margin drawn, each bound
// in the caption), and an inconclusive gate is a section of its own with
// its comparison in words.
func TestForestPlotOfComparisons(t *testing.T) {
	sr := &evidence.SemanticResult{CorpusName: "c", Tolerance: 0.05, Outcome: evidence.StatusInconclusive,
		Method: &evidence.StatMethod{Confidence: 0.95, Resamples: 10000, Power: 0.8},
		Comparisons: []evidence.Comparison{
			{Measure: "f1", Candidate: 0.754, Production: 0.769, Difference: -0.016, Lower: -0.079, Upper: 0.032, Margin: 0.05, Outcome: evidence.StatusInconclusive, Decision: "cannot tell", DocumentsNeeded: 16, SampleSize: "With 5 documents a drop smaller than 0.087 cannot be told from noise; about 16 documents would show 0.05."},
			{Measure: "grounding_rate", Candidate: 1, Production: 1, Margin: 0.05, Outcome: evidence.StatusPassed, Decision: "no worse"},
		},
		Differences: []evidence.DocDiff{{DocID: "a"}, {DocID: "b"}}}
	e := &evidence.Evidence{Verdict: evidence.VerdictInconclusive, Candidate: "cand",
		Gates: []evidence.Gate{{ID: "semantic", Kind: "semantic", Status: evidence.StatusInconclusive, Semantic: sr}}}
	cs, err := Charts(e)
	if err != nil || len(cs) != 3 {
		t.Fatalf("%d charts, %v", len(cs), err)
	}
	f := cs[0]
	for _, want := range []string{"margin -0.05", "F1 -0.016 (-0.079 to +0.032, inconclusive)", "grounding +0.000"} {
		if !strings.Contains(f.Caption+string(f.SVG), want) {
			t.Errorf("forest plot lacks %q: %s", want, f.Caption)
		}
	}
	if !strings.Contains(string(f.SVG), "stroke-dasharray") {
		t.Error("the margin is not drawn dashed")
	}
	a := Build(e)
	if a.Subtitle != "Inconclusive" || len(a.Sections) != 1 || a.Sections[0].Status != "Inconclusive" || a.Validation[0].Status != evidence.StatusInconclusive {
		t.Fatalf("account %+v", a)
	}
	text := strings.Join(a.Sections[0].Items, "\n") + a.Summary + strings.Join(a.NextSteps, "\n")
	for _, want := range []string{"F1: candidate 0.754, production 0.769, difference -0.016 (95 % one-sided bounds -0.079 to +0.032), margin 0.05: cannot tell.",
		"On F1, with 5 documents a drop smaller than 0.087", "about 16 documents would decide", "a frozen corpus of about 16 documents", "--accept-inconclusive"} {
		if !strings.Contains(text, want) {
			t.Errorf("account lacks %q:\n%s", want, text)
		}
	}
}

// TestFailureSaysConfidence: a verdict that is not strong says so in
// words in the one rendering (terminal lines, and the report's and
// journal's sentence); a strong one, or older evidence without a
// confidence, says nothing of it.
func TestFailureSaysConfidence(t *testing.T) {
	none := &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseLoad, RootCause: "ERROR x",
		Rule: "fallback/engine-died", Confidence: failure.ConfidenceNone}
	weak := &failure.Failure{Class: failure.ClassGPUOOM, Phase: failure.PhaseLoad, RootCause: "ERROR y",
		Rule: "cuda/out-of-memory", Confidence: failure.ConfidenceWeak, Classes: []failure.Class{failure.ClassPortInUse}}
	strong := &failure.Failure{Class: failure.ClassGPUOOM, Phase: failure.PhaseLoad, RootCause: "ERROR z",
		Rule: "cuda/out-of-memory", Confidence: failure.ConfidenceStrong}
	if got := strings.Join(Failure(none), "\n"); !strings.Contains(got, "confidence: none: no rule explains this log; best guess: engine_died") {
		t.Errorf("none:\n%s", got)
	}
	if got := FailureSentence(weak); !strings.Contains(got, "the rule cuda/out-of-memory explains this log, but other lines point at port_in_use") {
		t.Errorf("weak: %s", got)
	}
	for _, f := range []*failure.Failure{strong, {Class: failure.ClassGPUOOM, Phase: failure.PhaseLoad, RootCause: "old"}} {
		if got := strings.Join(Failure(f), "\n"); strings.Contains(got, "confidence") {
			t.Errorf("%s says its confidence:\n%s", f.Confidence, got)
		}
	}
}

// A failed gate with request counts says why in its table row (issue 26
// G7: "failed  2 of 2 requests succeeded; end-to-end p95 7 ms"), the
// reason's detail left to the gate's section.
func TestFailedRequestsGateSaysWhy(t *testing.T) {
	g := &evidence.Gate{ID: "structured", Kind: "structured_control", Status: evidence.StatusFailed,
		Reason:   "the server accepted the schema but 2 of 2 replies do not validate (fail-open): jsonschema: missing property 'claims'",
		Requests: &evidence.RequestStats{Count: 2}}
	got := gateHeadline(&evidence.Evidence{}, g)
	if want := "the server accepted the schema but 2 of 2 replies do not validate (fail-open); 2 of 2 requests succeeded"; got != want {
		t.Errorf("headline %q, want %q", got, want)
	}
	g.Status, g.Reason = evidence.StatusPassed, ""
	if got := gateHeadline(&evidence.Evidence{}, g); got != "2 of 2 requests succeeded" {
		t.Errorf("passed gate headline %q", got)
	}
}

// TestFailedChecksKeepUndecidedApart: a semantic gate that failed on one
// comparison and could not decide another lists the second apart ("Not
// decided"), not among its failed checks, in the gate's prose and in the
// campaign's reasons (trial 9, P3).
func TestFailedChecksKeepUndecidedApart(t *testing.T) {
	sr := &evidence.SemanticResult{CorpusName: "c", Tolerance: 0.05, Outcome: evidence.StatusFailed,
		Method:  &evidence.StatMethod{Confidence: 0.95, Resamples: 10000, Power: 0.8},
		Reasons: []string{"f1 worse", "schema-valid rate inconclusive"},
		Comparisons: []evidence.Comparison{
			{Measure: "f1", Candidate: 0.60, Production: 0.77, Difference: -0.17, Lower: -0.25, Upper: -0.09, Margin: 0.05, Outcome: evidence.StatusFailed, Decision: "worse"},
			{Measure: "schema_valid_rate", Candidate: 0.95, Production: 0.99, Difference: -0.044, Lower: -0.068, Upper: -0.022, Margin: 0.05, Outcome: evidence.StatusInconclusive, Decision: "cannot tell"},
		},
		Differences: []evidence.DocDiff{{DocID: "a"}}}
	e := &evidence.Evidence{Verdict: evidence.VerdictNotQualified, Candidate: "cand",
		Gates: []evidence.Gate{{ID: "semantic", Kind: "semantic", Status: evidence.StatusFailed, Semantic: sr}}}
	a := Build(e)
	text := strings.Join(a.Sections[0].Items, "\n") + "\n" + a.Summary + "\n" + strings.Join(failedWhy(&e.Gates[0]), "\n")
	var line string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "Failed checks: ") {
			line = l
		}
	}
	failed, undecided, ok := strings.Cut(line[strings.Index(line, "Failed checks: ")+len("Failed checks: "):], "Not decided: ")
	if line == "" || !ok {
		t.Fatalf("no line with both failed checks and undecided ones:\n%s", text)
	}
	if !strings.Contains(failed, "F1 is worse than production's") || strings.Contains(failed, "schema-valid") {
		t.Errorf("failed checks %q: want F1 only", failed)
	}
	if !strings.Contains(undecided, "schema-valid rate could not be told from production's") {
		t.Errorf("not decided %q: want the schema-valid rate", undecided)
	}
}

// TestEngineVersionIsTheCandidatesKind: the report's "Engine:" line names
// the candidate's own engine kind, never a found engine of another kind
// (trial 10, Q9: a llama.cpp candidate's report said "ollama v0.6.5"
// because an ollama was on PATH).
func TestEngineVersionIsTheCandidatesKind(t *testing.T) {
	host := map[string]any{"engines": []any{
		map[string]any{"kind": "ollama", "found": true, "version": "v0.6.5"},
		map[string]any{"kind": "llamacpp", "found": false},
		map[string]any{"kind": "vllm", "found": true, "version": "0.8.1"},
	}}
	for _, c := range []struct{ kind, want string }{
		{"llamacpp", "llamacpp, version unknown (the host facts found no llamacpp on PATH)"},
		{"vllm", "vllm 0.8.1 (as the host facts report it)"},
		{"ollama", "ollama v0.6.5 (as the host facts report it)"},
		{"openai", ""},
		{"", "ollama v0.6.5, vllm 0.8.1 (as the host facts report it)"},
	} {
		if got := engineVersion(&evidence.Evidence{CandidateEngine: c.kind, Host: host}); got != c.want {
			t.Errorf("candidate engine %q: %q, want %q", c.kind, got, c.want)
		}
	}
	r := &evidence.RequestStats{Count: 1}
	items := strings.Join(servingItems(&evidence.Evidence{CandidateEngine: "llamacpp", Host: host}, r, true), "\n")
	if strings.Contains(items, "ollama") || !strings.Contains(items, "Engine: llamacpp, version unknown") {
		t.Errorf("serving items of a llamacpp candidate:\n%s", items)
	}
}

// TestTerminalTableAligns (trial 12's S8): the terminal's gate table
// keeps its result column in one place whatever the status words'
// lengths ("passed", "not run", "inconclusive").
func TestTerminalTableAligns(t *testing.T) {
	sr := &evidence.SemanticResult{CorpusName: "c", Tolerance: 0.05, Outcome: evidence.StatusInconclusive}
	e := &evidence.Evidence{Verdict: evidence.VerdictInconclusive, Candidate: "cand",
		Gates: []evidence.Gate{{ID: "launch", Kind: "launch", Status: evidence.StatusPassed},
			{ID: "semantic", Kind: "semantic", Status: evidence.StatusInconclusive, Semantic: sr}}}
	a := Build(e)
	col := -1
	for _, line := range strings.Split(Terminal(e), "\n") {
		for _, v := range a.Validation {
			if !strings.HasPrefix(line, "  "+v.Check) || v.Result == "" {
				continue
			}
			at := strings.LastIndex(line, v.Result)
			if col >= 0 && at != col {
				t.Errorf("result column at %d, then %d:\n%s", col, at, Terminal(e))
			}
			col = at
		}
	}
	if col < 0 {
		t.Fatalf("no gate line found:\n%s", Terminal(e))
	}
}

// TestSchemaRepliesAgree: one schema-valid reply reads "1 reply parsed",
// not "1 replies parsed" (a new user's trial, T2).
func TestSchemaRepliesAgree(t *testing.T) {
	one := 1
	r := &evidence.RequestStats{Count: 1, SchemaAccepted: &one, SchemaValid: &one}
	items := strings.Join(servingItems(&evidence.Evidence{}, r, false), "\n")
	if !strings.Contains(items, "for 1, and 1 reply parsed") {
		t.Errorf("serving items:\n%s", items)
	}
}
