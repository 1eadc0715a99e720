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

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/redact"
)

// FromEvidence maps a campaign's public evidence to a journal entry. The
// words are package account's: the entry tells the same account as the
// campaign's report.md (summary, work completed with its tables, decisions,
// validation table, what was not tested, current state, next steps), so
// the two never drift apart. The timestamp is when the campaign finished
// (started, if it has no finish); the slug comes from the title; ref is the
// public evidence's path relative to the journal.
//
// It fails for evidence of a campaign still running.
func FromEvidence(ev *evidence.Evidence, ref string) (*Entry, error) {
	if ev.Verdict == evidence.VerdictRunning || ev.Verdict == "" {
		return nil, fmt.Errorf("campaign %s has no verdict yet (%q): add it to the journal once it has finished", ev.ID, ev.Verdict)
	}
	a := account.Build(ev)
	e := &Entry{Timestamp: ev.StartedAt, Evidence: ref, Title: a.Title, Subtitle: a.Subtitle, Summary: a.Summary,
		CurrentState: a.CurrentState, NextSteps: a.NextSteps, NotTested: a.NotTested}
	if ev.FinishedAt != nil && !ev.FinishedAt.IsZero() {
		e.Timestamp = *ev.FinishedAt
	}
	e.Timestamp = e.Timestamp.Truncate(time.Second)
	e.Slug = Slugify(e.Title)
	if e.Slug == "" {
		e.Slug = Slugify("campaign " + ev.ID)
	}
	for _, s := range a.Sections {
		e.Sections = append(e.Sections, Section{Title: s.Title, Status: s.Status, Items: s.Items, Body: s.Markdown})
	}
	for _, d := range a.Decisions {
		e.Decisions = append(e.Decisions, Decision{Decision: d})
	}
	for _, r := range a.Validation {
		e.Validation = append(e.Validation, ValidationRow{Check: r.Check, Status: r.Status, Result: r.Result})
	}
	if probs := e.Validate(); len(probs) > 0 {
		return nil, fmt.Errorf("evidence %s makes an invalid entry: %s", ev.ID, strings.Join(probs, "; "))
	}
	return e, nil
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
		return "", fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	ev, err := evidence.Load(path)
	if err != nil {
		return "", err
	}
	// Evidence written before check names passed the path step (v1, early
	// v2) names local folders in its prereq checks ("disk /srv/hiro"): that
	// is still the public copy, so those names are redacted here rather
	// than the document refused.
	renamed := false
	for _, g := range ev.Gates {
		for ci := range g.Checks {
			if n := evidence.RedactPaths(g.Checks[ci].Name); n != g.Checks[ci].Name {
				g.Checks[ci].Name, renamed = n, true
			}
		}
	}
	// The public copy is the one Public() leaves unchanged.
	a, _ := json.Marshal(ev)
	b, _ := json.Marshal(ev.Public())
	if !bytes.Equal(a, b) {
		return "", fmt.Errorf("%s: %w: it holds local paths, environment values or per-file hashes; pass the public %s beside it", path, ErrPrivateEvidence, evidence.PublicFile)
	}
	if renamed {
		if b, err := json.MarshalIndent(ev, "", "  "); err == nil {
			data = append(b, '\n')
		}
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
