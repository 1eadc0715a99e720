package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/signing"
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
	// Milliseconds kept: two campaigns finishing in the same second are
	// two instants.
	e.Timestamp = e.Timestamp.Truncate(time.Millisecond)
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

// AddOptions tune AddFromEvidence.
type AddOptions struct {
	// Trust is the trust list the signer is looked up in; nil loads the
	// user's (signing.LoadTrust).
	Trust *signing.Trust
	// TrustUnsigned accepts evidence without a signature (an older hiro's),
	// recorded in the entry.
	TrustUnsigned bool
	// Warn receives a warning (a signer not in the trust list); nil
	// discards.
	Warn func(string)
}

// AbortedError is AddFromEvidence's refusal of an aborted campaign's
// evidence (verdict aborted: interrupted, a harness error, or production
// not restored, exit 3 or 4): it judged no candidate, and a published
// entry stays, so only a verdict (exit 0, 1 or 5) is published; the
// evidence folder keeps the account of what happened.
type AbortedError struct {
	ID       string
	ExitCode int
	// Reason is the evidence's termination_reason.
	Reason string
}

func (e *AbortedError) Error() string {
	return fmt.Sprintf("campaign %s was aborted (exit %d: %s): it reached no verdict on its candidate, and the journal publishes only campaigns that did (exit 0, 1 or 5); its evidence folder keeps what happened: fix what stopped it, run the campaign again and add that campaign's evidence",
		e.ID, e.ExitCode, strings.TrimSuffix(e.Reason, "."))
}

// ErrUnsigned is wrapped by AddFromEvidence for evidence without a
// signature added without AddOptions.TrustUnsigned.
var ErrUnsigned = errors.New("unsigned evidence")

// AddFromEvidence reads the public evidence at path, refuses it when its
// own facts contradict each other (evidence.Consistent: an
// *evidence.InconsistentError naming the field, signed or not) or when
// the campaign was aborted (an *AbortedError), verifies its
// signature (refused when it does not verify, or when it has none unless
// o.TrustUnsigned; a key not in the trust list is published with a
// warning: shipped example evidence is signed by a key of its own), records
// the signer in the entry, validates it against the evidence schema,
// copies it to evidence/<stamp>_<slug>.json in the journal and creates the
// entry FromEvidence makes. When the title's slug is taken, the campaign's
// date (then date and time) is appended. It returns the entry's path
// relative to j.Dir.
func (j *Journal) AddFromEvidence(path string, o AddOptions) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if err := evidence.Validate(data); err != nil {
		return "", fmt.Errorf("%s: %s", path, oneLine(err.Error()))
	}
	signer, untrusted, err := verifySigner(path, data, o)
	if err != nil {
		return "", err
	}
	ev, err := evidence.Load(path)
	if err != nil {
		return "", err
	}
	if err := ev.Consistent(); err != nil {
		return "", fmt.Errorf("%s: refused: %w", path, err)
	}
	if ev.Verdict == evidence.VerdictAborted {
		return "", fmt.Errorf("%s: refused: %w", path, &AbortedError{ID: ev.ID, ExitCode: ev.ExitCode, Reason: ev.TerminationReason})
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
	signed := data
	data = publicEvidence(ev, data)
	if !bytes.Equal(data, signed) && ev.Signature != nil {
		// The journal's copy was redacted further: its signature would
		// no longer verify, so the copy carries none (the entry still
		// names who signed what was added).
		ev.Signature = nil
		if b, err := json.MarshalIndent(ev, "", "  "); err == nil {
			data = append(b, '\n')
		}
	}
	e, err := FromEvidence(ev, "")
	if err != nil {
		return "", err
	}
	e.EvidenceSignature = signer
	e.Campaign = ev.ID
	// Two hiro adding at once each see the journal as it was: the entry
	// and the evidence copy are created exclusively, and a name taken
	// meanwhile makes this one look again and choose another.
	base, ts := e.Slug, e.Timestamp
	for try := 0; ; try++ {
		e.Slug, e.Timestamp = base, ts
		rel, err := j.addOnce(e, data)
		if err == nil && untrusted != "" && o.Warn != nil {
			// Said once the entry is written: a refusal after the
			// signature check (aborted, inconsistent, private) must not
			// be preceded by "published" (trial 10 Q12).
			o.Warn(untrusted)
		}
		if !errors.Is(err, errNameTaken) || try == 64 {
			return rel, err
		}
		// The other writer may be between its evidence copy and its
		// entry: let it finish before looking again.
		time.Sleep(time.Duration(1+rand.IntN(10)) * time.Millisecond)
		nj, lerr := Load(j.Dir)
		if lerr != nil {
			return "", lerr
		}
		j.Entries = nj.Entries
	}
}

// errNameTaken: a file addOnce meant to create appeared meanwhile.
var errNameTaken = errors.New("name taken meanwhile")

// addOnce creates the entry of campaign e.Campaign and its evidence copy
// (data), choosing a timestamp and slug no entry holds. The campaign
// already in the journal is ErrExists; a name another writer took
// meanwhile is errNameTaken.
func (j *Journal) addOnce(e *Entry, data []byte) (string, error) {
	base := e.Slug
	for _, o := range j.Entries {
		// The campaign's id is its identity; entries made before it was
		// recorded are matched by instant and title.
		if (o.Campaign != "" && o.Campaign == e.Campaign) || (o.Campaign == "" && o.Timestamp.Equal(e.Timestamp) && o.Title == e.Title) {
			return "", fmt.Errorf("campaign %s (finished %s): %w as %s", e.Campaign, e.Timestamp.Format(time.RFC3339), ErrExists, o.Path)
		}
	}
	// Another campaign finished in the same instant: the next free
	// millisecond (entries are identified by their timestamp).
	for taken := true; taken; {
		taken = false
		for _, o := range j.Entries {
			if o.Timestamp.Equal(e.Timestamp) {
				e.Timestamp, taken = e.Timestamp.Add(time.Millisecond), true
			}
		}
	}
	candidates := []string{base, base + "-" + e.Timestamp.UTC().Format("20060102"), base + "-" + e.Timestamp.UTC().Format("20060102-1504"), base + "-" + e.Timestamp.UTC().Format("20060102-150405")}
	for n := 2; n <= 9; n++ {
		candidates = append(candidates, fmt.Sprintf("%s-%d", base, n))
	}
	e.Slug = ""
	for _, s := range candidates {
		if len(s) <= MaxSlugLen && j.Find(s) == nil {
			e.Slug = s
			break
		}
	}
	if e.Slug == "" {
		return "", fmt.Errorf("campaign %s: %w: every slug of %q is taken; retitle the plan", e.Campaign, ErrExists, e.Title)
	}
	e.Evidence = EvidenceDir + "/" + e.FileName()
	// Every refusal of the entry comes before the evidence copy: a
	// refused add writes nothing (not even the folder).
	if _, err := j.checkNew(e); err != nil {
		return "", err
	}
	dst := filepath.Join(j.Dir, filepath.FromSlash(e.Evidence))
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", fmt.Errorf("journal evidence folder: %w", err)
	}
	if err := atomicfile.CreateExclusive(dst, data, 0o644); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", errNameTaken
		}
		return "", err
	}
	rel, err := j.Create(e)
	if err != nil {
		os.Remove(dst)
		if errors.Is(err, fs.ErrExist) {
			return "", errNameTaken
		}
		return "", err
	}
	return rel, nil
}

// verifySigner checks data's signature (package signing) and returns the
// entry's record of it and, for a key not in the trust list, the warning
// to give once the entry is published ("" for a trusted key or none).
func verifySigner(path string, data []byte, o AddOptions) (*EvidenceSignature, string, error) {
	sig, err := signing.Verify(data)
	switch {
	case errors.Is(err, signing.ErrUnsigned) && o.TrustUnsigned:
		return &EvidenceSignature{Unsigned: true}, "", nil
	case errors.Is(err, signing.ErrUnsigned):
		return nil, "", fmt.Errorf("%s: %w: written by a hiro older than signing, or its signature was removed; if you know where it came from, pass --trust-unsigned (the entry records it)", path, ErrUnsigned)
	case err != nil:
		return nil, "", fmt.Errorf("%s: %w; the evidence was changed after it was signed: publish the file hiro wrote", path, err)
	}
	t := o.Trust
	if t == nil {
		if t, err = signing.LoadTrust(); err != nil {
			return nil, "", err
		}
	}
	es := &EvidenceSignature{KeyID: sig.KeyID, PublicKey: sig.PublicKey}
	if tk := t.Trusted(sig); tk != nil {
		es.Trusted, es.TrustedAs = true, tk.Name
		return es, "", nil
	}
	return es, fmt.Sprintf("%s is signed by %s, a key you do not trust: published, the entry records the key ('hiro trust add %s' if it is yours)", path, sig.KeyID, sig.PublicKey), nil
}

// publicEvidence returns the bytes of evidence ev (read as data) as the
// journal may publish them: ev is redacted in place (package redact) and,
// when that changed anything, re-encoded; otherwise data is kept as it is.
func publicEvidence(ev *evidence.Evidence, data []byte) []byte {
	before, _ := json.Marshal(ev)
	// The signature is no secret and redaction would break it.
	sig := ev.Signature
	redact.Value(ev)
	ev.Signature = sig
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
