package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/redact"
)

// FromEvidence maps a campaign's public evidence to a journal entry:
//
//   - timestamp: when the campaign finished (started, if it has no finish);
//   - slug and title: from the plan's title; subtitle: the verdict and the
//     termination reason;
//   - summary, sections, decisions, current state, next steps: from the
//     Report that qualify fills, with plain fallbacks made from the gates
//     and the production guard when a part is empty;
//   - validation table: one row per gate in plan order (a launch gate's row
//     lists every attempt with its failure class, phase and root cause),
//     then production restoration, then the Report's own rows whose checks
//     are not already there;
//   - evidence: ref, the public evidence's path relative to the journal.
//
// It fails for evidence of a campaign still running.
func FromEvidence(ev *evidence.Evidence, ref string) (*Entry, error) {
	if ev.Verdict == evidence.VerdictRunning || ev.Verdict == "" {
		return nil, fmt.Errorf("campaign %s has no verdict yet (%q): add it to the journal once it has finished", ev.ID, ev.Verdict)
	}
	e := &Entry{Timestamp: ev.StartedAt, Evidence: ref}
	if ev.FinishedAt != nil && !ev.FinishedAt.IsZero() {
		e.Timestamp = *ev.FinishedAt
	}
	e.Timestamp = e.Timestamp.Truncate(time.Second)
	e.Title = strings.TrimSpace(ev.Title)
	if e.Title == "" {
		e.Title = "Qualification of " + ev.Candidate
	}
	e.Slug = Slugify(e.Title)
	if e.Slug == "" {
		e.Slug = Slugify("campaign " + ev.ID)
	}
	e.Subtitle = verdictText(ev.Verdict)
	if r := strings.TrimSpace(ev.TerminationReason); r != "" {
		e.Subtitle += ": " + r
	}

	rep := ev.Report
	e.Summary = strings.TrimSpace(rep.Summary)
	if e.Summary == "" {
		e.Summary = fmt.Sprintf("Campaign %s qualified candidate %s. Verdict: %s.", ev.ID, ev.Candidate, verdictText(ev.Verdict))
		if ev.TerminationReason != "" {
			e.Summary += " " + sentence(ev.TerminationReason)
		}
	}
	for _, s := range rep.Sections {
		e.Sections = append(e.Sections, Section{Title: s.Title, Status: s.Status, Items: s.Items})
	}
	if len(e.Sections) == 0 {
		e.Sections = gateSections(ev)
	}
	for _, d := range rep.Decisions {
		if strings.TrimSpace(d) != "" {
			e.Decisions = append(e.Decisions, Decision{Decision: d})
		}
	}
	e.Validation = validationRows(ev)
	e.CurrentState = strings.TrimSpace(rep.CurrentState)
	if e.CurrentState == "" {
		e.CurrentState = productionState(ev)
	}
	e.NextSteps = append(e.NextSteps, rep.NextSteps...)
	if len(e.NextSteps) == 0 {
		seen := map[string]bool{}
		for _, g := range ev.Gates {
			for _, a := range g.Attempts {
				if a.Failure != nil && a.Failure.NextStep != "" && !seen[a.Failure.NextStep] {
					seen[a.Failure.NextStep] = true
					e.NextSteps = append(e.NextSteps, a.Failure.NextStep)
				}
			}
		}
	}
	if probs := e.Validate(); len(probs) > 0 {
		return nil, fmt.Errorf("evidence %s makes an invalid entry: %s", ev.ID, strings.Join(probs, "; "))
	}
	return e, nil
}

func verdictText(v string) string {
	switch v {
	case evidence.VerdictQualified:
		return "Qualified"
	case evidence.VerdictNotQualified:
		return "Not qualified"
	case evidence.VerdictAborted:
		return "Aborted"
	}
	return v
}

// sentence ends s with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

func gateName(g evidence.Gate) string {
	if g.Title != "" {
		return g.Title
	}
	return g.ID + " (" + g.Kind + ")"
}

// gateStatus maps a gate status to a validation status; a gate still
// running when the evidence was written did not finish, so it did not run.
func gateStatus(s string) string {
	switch s {
	case evidence.StatusPassed:
		return StatusPassed
	case evidence.StatusFailed:
		return StatusFailed
	}
	return StatusNotRun
}

// gateResult is a gate's validation-table text, one line per part: the
// reason, each attempt of a launch gate, the request counts of request
// gates.
func gateResult(g evidence.Gate) string {
	var parts []string
	if g.Reason != "" {
		parts = append(parts, sentence(g.Reason))
	}
	for _, a := range g.Attempts {
		parts = append(parts, attemptText(a))
	}
	if r := g.Requests; r != nil {
		s := fmt.Sprintf("%d requests, %d errors", r.Count, r.Errors)
		if r.Latency != nil {
			s += fmt.Sprintf("; latency p50 %.0f ms, p95 %.0f ms", r.Latency.P50, r.Latency.P95)
		}
		parts = append(parts, s+".")
	}
	if g.Failure != nil && len(g.Attempts) == 0 {
		parts = append(parts, failureText(g.Failure.Class, g.Failure.Phase, g.Failure.RootCause))
	}
	if len(parts) == 0 && g.Status == evidence.StatusPassed {
		parts = append(parts, "Passed.")
	}
	return strings.Join(parts, "\n")
}

func attemptText(a evidence.Attempt) string {
	switch {
	case a.ReachedReady:
		return fmt.Sprintf("Attempt %s: ready after %.1f s.", a.Name, float64(a.ReadyAfterMS)/1000)
	case a.Failure != nil:
		return "Attempt " + a.Name + ": " + failureText(a.Failure.Class, a.Failure.Phase, a.Failure.RootCause)
	}
	return "Attempt " + a.Name + ": not ready."
}

func failureText[C, P ~string](class C, phase P, root string) string {
	s := string(class)
	if phase != "" {
		s += " during " + string(phase)
	}
	if root = strings.TrimSpace(root); root != "" {
		s += " — " + root
	}
	return sentence(s)
}

// gateSections is the fallback "work completed" when the Report has none:
// one section per gate that ran.
func gateSections(ev *evidence.Evidence) []Section {
	var out []Section
	for _, g := range ev.Gates {
		if g.Status == evidence.StatusNotRun {
			continue
		}
		s := Section{Title: gateName(g), Status: strings.ReplaceAll(g.Status, "_", " ")}
		if g.Reason != "" {
			s.Items = append(s.Items, sentence(g.Reason))
		}
		for _, a := range g.Attempts {
			s.Items = append(s.Items, attemptText(a))
		}
		for _, c := range g.Checks {
			item := c.Name + ": " + c.Status
			if c.Detail != "" {
				item += " (" + c.Detail + ")"
			}
			s.Items = append(s.Items, item)
		}
		out = append(out, s)
	}
	if p := productionState(ev); p != "" && ev.Production.Stopped {
		out = append(out, Section{Title: "Production restoration", Status: restoredStatus(ev), Items: []string{p}})
	}
	return out
}

func restoredStatus(ev *evidence.Evidence) string {
	if r := ev.Production.Restored; r != nil && r.OK {
		return StatusPassed
	}
	return StatusFailed
}

// productionState says what the production guard did, in one paragraph.
func productionState(ev *evidence.Evidence) string {
	p := ev.Production
	if !p.Stopped {
		if p.Backend == "" {
			return ""
		}
		return fmt.Sprintf("Production (%s) was not stopped by this campaign.", p.Backend)
	}
	r := p.Restored
	if r == nil {
		return fmt.Sprintf("Production (%s) was stopped and has no restore record.", p.Backend)
	}
	if !r.OK {
		return sentence(fmt.Sprintf("Production (%s) was stopped and could not be restored: %s", p.Backend, r.Error))
	}
	s := fmt.Sprintf("Production (%s) was stopped for the campaign and restored", p.Backend)
	if r.Health != "" {
		s += ": health " + r.Health
	}
	if r.Model != "" {
		s += ", model " + r.Model
	}
	if r.Reply != "" {
		s += ", reply " + r.Reply
	}
	s = sentence(s)
	if p.ConfigHashBefore != "" {
		if p.ConfigUnchanged {
			s += " Its configuration was unchanged."
		} else {
			s += " Its configuration changed during the campaign."
		}
	}
	return s
}

func validationRows(ev *evidence.Evidence) []ValidationRow {
	var rows []ValidationRow
	seen := map[string]bool{}
	add := func(r ValidationRow) {
		key := strings.ToLower(strings.TrimSpace(r.Check))
		if key == "" || seen[key] {
			return
		}
		seen[key] = true
		rows = append(rows, r)
	}
	for _, g := range ev.Gates {
		add(ValidationRow{Check: gateName(g), Status: gateStatus(g.Status), Result: gateResult(g)})
	}
	if ev.Production.Stopped {
		add(ValidationRow{Check: "Production restoration", Status: restoredStatus(ev), Result: productionState(ev)})
	}
	for _, v := range ev.Report.Validation {
		st := v.Status
		switch st {
		case StatusPassed, StatusFailed, StatusNotRun:
		default:
			switch Tone(st) {
			case "ok":
				st = StatusPassed
			case "bad", "warn":
				st = StatusFailed
			default:
				st = StatusNotRun
			}
		}
		add(ValidationRow{Check: v.Check, Status: st, Result: v.Result})
	}
	return rows
}

// ErrPrivateEvidence is wrapped by AddFromEvidence when given the private
// copy of an evidence document.
var ErrPrivateEvidence = errors.New("private evidence may not be published")

// AddFromEvidence reads the public evidence at path, validates it against
// the evidence schema, copies it to evidence/<stamp>_<slug>.json in the
// journal and creates the entry FromEvidence makes. When the title's slug is
// taken, the campaign's date (then date and time) is appended. It returns
// the entry's path relative to j.Dir.
func (j *Journal) AddFromEvidence(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if err := evidence.Validate(data); err != nil {
		return "", fmt.Errorf("%s does not validate against the evidence schema: %s", path, oneLine(err.Error()))
	}
	ev, err := evidence.Load(path)
	if err != nil {
		return "", err
	}
	// The public copy is the one Public() leaves unchanged.
	a, _ := json.Marshal(ev)
	b, _ := json.Marshal(ev.Public())
	if !bytes.Equal(a, b) {
		return "", fmt.Errorf("%s: %w: it holds local paths, environment values or per-file hashes; pass the public %s beside it", path, ErrPrivateEvidence, evidence.PublicFile)
	}
	data = publicEvidence(ev, data)
	e, err := FromEvidence(ev, "")
	if err != nil {
		return "", err
	}
	for _, o := range j.Entries {
		if o.Timestamp.Equal(e.Timestamp) {
			return "", fmt.Errorf("campaign %s (finished %s): %w as %s", ev.ID, e.Timestamp.Format(time.RFC3339), ErrExists, o.Path)
		}
	}
	base := e.Slug
	for _, s := range []string{base, base + "-" + e.Timestamp.UTC().Format("20060102"), base + "-" + e.Timestamp.UTC().Format("20060102-1504")} {
		if len(s) <= MaxSlugLen && j.Find(s) == nil {
			e.Slug = s
			break
		}
	}
	e.Evidence = EvidenceDir + "/" + strings.TrimSuffix(e.FileName(), ".json") + ".json"
	dst := filepath.Join(j.Dir, filepath.FromSlash(e.Evidence))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("journal evidence folder: %w", err)
	}
	if err := writeFileAtomic(dst, data); err != nil {
		return "", err
	}
	rel, err := j.Create(e)
	if err != nil {
		os.Remove(dst)
		return "", err
	}
	return rel, nil
}

// publicEvidence returns the bytes of evidence ev (read as data) as the
// journal may publish them: ev is redacted in place (package redact) and,
// when that changed anything, re-encoded; otherwise data is kept as it is.
func publicEvidence(ev *evidence.Evidence, data []byte) []byte {
	before, _ := json.Marshal(ev)
	redact.Value(ev)
	after, _ := json.Marshal(ev)
	if bytes.Equal(before, after) {
		return data
	}
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return redact.Text(data)
	}
	return append(b, '\n')
}
