package qualify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/journal"
)

// terminalState is one way a campaign can end.
type terminalState struct {
	name     string
	verdict  string
	exit     int
	stopped  bool
	restored *bool // nil: no restore record
	gate     string
	// notServing: production did not answer ready before the campaign
	// (was_running false); shared: a non-exclusive campaign.
	notServing, shared bool
	// end is what the campaign found of a production it did not stop:
	// "" serving at the end (and, shared, while the gates ran), "gone"
	// not serving at the end, "lost" lost while the gates ran and not
	// serving at the end, "unchecked" no check at the end (older
	// evidence).
	end string
}

func ptr(b bool) *bool { return &b }

// TestReportNeverContradictsEvidence renders every terminal state (verdict
// × production restored, not restored, never stopped) to report.md and to
// a journal entry, and checks that each says what the evidence says and
// nothing against it.
func TestReportNeverContradictsEvidence(t *testing.T) {
	var states []terminalState
	for _, v := range []struct {
		verdict string
		exit    int
		gate    string
	}{{evidence.VerdictQualified, 0, evidence.StatusPassed}, {evidence.VerdictNotQualified, 1, evidence.StatusFailed}, {evidence.VerdictAborted, 3, evidence.StatusNotRun}} {
		states = append(states,
			terminalState{v.verdict + "/restored", v.verdict, v.exit, true, ptr(true), v.gate, false, false, ""},
			terminalState{v.verdict + "/not-restored", v.verdict, 4, true, ptr(false), v.gate, false, false, ""},
			terminalState{v.verdict + "/not-stopped", v.verdict, v.exit, false, nil, v.gate, false, false, ""},
			terminalState{v.verdict + "/not-serving-before/restored", v.verdict, v.exit, true, ptr(true), v.gate, true, false, ""},
			terminalState{v.verdict + "/not-serving-before/not-restored", v.verdict, 4, true, ptr(false), v.gate, true, false, ""},
			terminalState{v.verdict + "/not-serving-before/not-stopped", v.verdict, v.exit, false, nil, v.gate, true, false, ""},
			terminalState{v.verdict + "/not-serving-before/shared", v.verdict, v.exit, false, nil, v.gate, true, true, ""},
			terminalState{v.verdict + "/shared", v.verdict, v.exit, false, nil, v.gate, false, true, ""},
			terminalState{v.verdict + "/shared/gone-at-end", v.verdict, v.exit, false, nil, v.gate, false, true, "gone"},
			terminalState{v.verdict + "/shared/lost", v.verdict, v.exit, false, nil, v.gate, false, true, "lost"},
			terminalState{v.verdict + "/shared/unchecked", v.verdict, v.exit, false, nil, v.gate, false, true, "unchecked"},
			terminalState{v.verdict + "/not-stopped/unchecked", v.verdict, v.exit, false, nil, v.gate, false, false, "unchecked"},
		)
	}
	for _, s := range states {
		t.Run(s.name, func(t *testing.T) {
			e := stateEvidence(s)
			e.Report = buildReport(e, nil)
			md := Markdown(e)
			entry, err := journal.FromEvidence(e.Public(), "")
			if err != nil {
				t.Fatal(err)
			}
			ej, _ := json.Marshal(entry)
			for where, text := range map[string]string{"report.md": md, "journal entry": string(ej)} {
				low := strings.ToLower(text)
				has := func(x string) bool { return strings.Contains(low, strings.ToLower(x)) }
				notRestored := s.stopped && (s.restored == nil || !*s.restored)
				switch {
				case notRestored:
					if !has("not restored") && !has("could not be restored") {
						t.Errorf("%s: production was not restored and the text does not say so:\n%s", where, text)
					}
					for _, bad := range []string{"production is unchanged", "restored and verified", "was restored", "production is back"} {
						if has(bad) {
							t.Errorf("%s says %q beside a production that was not restored:\n%s", where, bad, text)
						}
					}
				case s.stopped:
					if !has("restored") || has("not restored") || has("could not be restored") {
						t.Errorf("%s: production restored, the text does not say so or says otherwise:\n%s", where, text)
					}
				default:
					if has("was restored") || has("not restored") {
						t.Errorf("%s: production was never stopped, yet the text talks of restoring it:\n%s", where, text)
					}
				}
				// Production's state before the campaign, as the evidence
				// has it (was_running).
				switch {
				case s.notServing:
					if !has("not serving before the campaign") {
						t.Errorf("%s: production was not serving before the campaign and the text does not say so:\n%s", where, text)
					}
					for _, bad := range []string{"kept serving", "was stopped for the campaign", "was stopped first", "restored with its exact configuration"} {
						if has(bad) {
							t.Errorf("%s says %q of a production that was not serving before the campaign:\n%s", where, bad, text)
						}
					}
					if s.stopped && s.restored != nil && *s.restored && !has("started") {
						t.Errorf("%s: the guard started production at the end and the text does not say so:\n%s", where, text)
					}
				case !s.stopped && s.end == "":
					if !has("kept serving throughout") && !has("served before the campaign and at its end") || !has("checked at") {
						t.Errorf("%s: production served at the start and at the end and the text does not say so:\n%s", where, text)
					}
				case !s.stopped:
					if has("kept serving") || has("production is as it was") {
						t.Errorf("%s says production kept serving, which the check at the end (%s) does not say:\n%s", where, s.end, text)
					}
					want := map[string]string{"gone": "did not serve at the end", "lost": "stopped answering at 10:00:30 utc (connection refused)", "unchecked": "was not checked"}[s.end]
					if !has(want) {
						t.Errorf("%s: production %s, the text does not say %q:\n%s", where, s.end, want, text)
					}
				default:
					if !has("was stopped") || has("not serving before") {
						t.Errorf("%s: production was serving and was stopped; the text does not say so:\n%s", where, text)
					}
				}
				switch s.verdict {
				case evidence.VerdictQualified:
					if has("not qualified") || has("aborted") {
						t.Errorf("%s: qualified, yet says not qualified or aborted:\n%s", where, text)
					}
				case evidence.VerdictNotQualified:
					if !has("not qualified") || has("is qualified") {
						t.Errorf("%s: not qualified, the text disagrees:\n%s", where, text)
					}
				case evidence.VerdictAborted:
					if !has("aborted") || has("is qualified") {
						t.Errorf("%s: aborted, the text disagrees:\n%s", where, text)
					}
				}
			}
			if !strings.Contains(md, "exit "+itoa(s.exit)) {
				t.Errorf("report.md does not state exit %d", s.exit)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func stateEvidence(s terminalState) *evidence.Evidence {
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	fin := start.Add(time.Minute)
	e := &evidence.Evidence{Schema: evidence.SchemaID, ID: "20261130T100000Z-cand", Title: "State " + s.name, Candidate: "cand",
		ProductionBackend: "prod", Exclusive: !s.shared, Verdict: s.verdict, ExitCode: s.exit, StartedAt: start, FinishedAt: &fin}
	g := evidence.Gate{ID: "launch", Kind: KindLaunch, Title: "Launch", Status: s.gate}
	switch s.gate {
	case evidence.StatusFailed:
		g.Reason = "every attempt failed before ready"
		g.Attempts = []evidence.Attempt{{Name: "base", Failure: &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseLoad, RootCause: "died"}}}
		e.TerminationReason = "gate launch failed"
	case evidence.StatusNotRun:
		g.Reason = "interrupted by SIGTERM after 2s: no result"
		e.TerminationReason = "aborted: interrupted by SIGTERM"
	default:
		g.Attempts = []evidence.Attempt{{Name: "base", ReachedReady: true}}
		e.TerminationReason = "every gate passed"
	}
	e.Gates = []evidence.Gate{g}
	p := &e.Production
	p.Backend, p.Model, p.WasRunning = "prod", "prod-model", !s.notServing
	p.ConfigHashBefore, p.ConfigHashAfter, p.ConfigUnchanged = "abc123", "abc123", true
	if !s.stopped && !s.notServing {
		end := start.Add(time.Minute)
		switch s.end {
		case "":
			p.AtEnd = &evidence.ServingCheck{OK: true, At: end, Model: "prod-model"}
		case "lost":
			p.Lost = &evidence.ServingCheck{At: start.Add(30 * time.Second), Error: "connection refused"}
			fallthrough
		case "gone":
			p.AtEnd = &evidence.ServingCheck{At: end, Error: "connection refused"}
		}
	}
	if s.stopped {
		p.Stopped = true
		p.StoppedAt = &start
		if s.restored != nil {
			p.Restored = &evidence.Restored{OK: *s.restored, Attempts: 2}
			if *s.restored {
				p.Restored.Health, p.Restored.Model, p.Restored.Reply = "/health 200 (ok)", "prod-model", "READY"
			} else {
				p.Restored.Error = "attempt 2: launcher: GPU busy"
				e.TerminationReason += "; PRODUCTION COULD NOT BE RESTORED"
			}
		}
	}
	return e
}
