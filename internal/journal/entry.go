package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// Validation statuses: the values a ValidationRow's Status may take. They are
// the gate results of docs/design.md "Gate", so an entry made from evidence copies them.
const (
	StatusPassed = "passed"
	StatusFailed = "failed"
	StatusNotRun = "not_run"
	// StatusInconclusive: the gate's comparison could not decide.
	StatusInconclusive = "inconclusive"
)

// MaxSlugLen is the longest slug (and alias) accepted, in bytes.
const MaxSlugLen = 80

// slugPattern is the shape of a slug or alias: lower-case ASCII words joined
// by single hyphens. The same pattern is in the JSON Schema (struct tags).
var slugPattern = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// Entry is one journal entry, stored as entries/<stamp>_<slug>.json in the
// journal directory and published beside its page as entries/<slug>.json.
// Its JSON Schema (Schema) is generated from this type and committed at
// schemas/journal-entry.schema.json.
type Entry struct {
	// Timestamp is when the entry was written, RFC 3339 with a zone
	// (e.g. 2025-06-12T14:30:00+02:00). Unique within a journal: two entries
	// may not name the same instant. It is the entry's stable identity.
	Timestamp time.Time `json:"timestamp" jsonschema_description:"When the entry was written: RFC 3339 with a zone offset or Z. Unique within the journal."`
	// Slug names the entry's page (entries/<slug>.html); see slugPattern.
	Slug string `json:"slug" jsonschema:"minLength=1,maxLength=80,pattern=^[a-z0-9]+(-[a-z0-9]+)*$" jsonschema_description:"Page name: lower-case ASCII words joined by hyphens. Unique within the journal."`
	// Title is the headline, plain text.
	Title string `json:"title" jsonschema:"minLength=1" jsonschema_description:"Headline, plain text."`
	// Subtitle is one line under the title, plain text.
	Subtitle string `json:"subtitle,omitempty" jsonschema_description:"One line under the title, plain text."`
	// Summary is the executive summary: plain text, paragraphs separated by a
	// blank line.
	Summary string `json:"summary,omitempty" jsonschema_description:"Executive summary, plain text; paragraphs separated by a blank line."`
	// Body is hand-written Markdown (CommonMark, raw HTML not rendered).
	// Relative links in it resolve from the entry's page in entries/.
	Body string `json:"body,omitempty" jsonschema_description:"Hand-written Markdown; raw HTML is not rendered. Relative links resolve from entries/."`
	// Sections is the work completed, one section per piece of work.
	Sections []Section `json:"sections,omitempty" jsonschema_description:"Work completed, each with its own status."`
	// Decisions records what was decided and why.
	Decisions []Decision `json:"decisions,omitempty" jsonschema_description:"Decisions and the reasoning behind each."`
	// Validation is the validation table: one row per check.
	Validation []ValidationRow `json:"validation,omitempty" jsonschema_description:"Validation table: one row per check."`
	// NotTested lists what the work did not test, and why, plain text.
	NotTested []string `json:"not_tested,omitempty" jsonschema_description:"What was not tested and why, one item each, plain text."`
	// CurrentState says where things stand now; paragraphs as in Summary.
	CurrentState string `json:"current_state,omitempty" jsonschema_description:"Where things stand now, plain text; paragraphs separated by a blank line."`
	// NextSteps lists what comes next, one step per item, plain text.
	NextSteps []string `json:"next_steps,omitempty" jsonschema_description:"What comes next, one step per item, plain text."`
	// Aliases are old slugs of this entry; each gets a page that sends the
	// reader to the entry.
	Aliases []string `json:"aliases,omitempty" jsonschema:"uniqueItems=true,pattern=^[a-z0-9]+(-[a-z0-9]+)*$" jsonschema_description:"Old slugs of this entry; each gets a page that redirects to it."`
	// Evidence links to the public evidence: an absolute http(s) URL, or a
	// path relative to the journal root (e.g. evidence/<file>.json, which
	// build copies into the site).
	Evidence string `json:"evidence,omitempty" jsonschema_description:"Public evidence: an http(s) URL or a path relative to the journal root (e.g. evidence/x.json)."`
	// Campaign is the id of the campaign the entry was made from (journal
	// add): the identity "already in the journal" is decided by.
	Campaign string `json:"campaign,omitempty" jsonschema_description:"Id of the campaign whose evidence the entry was made from."`
	// EvidenceSignature says who signed the evidence the entry was made
	// from, as verified when it was added (journal add).
	EvidenceSignature *EvidenceSignature `json:"evidence_signature,omitempty" jsonschema_description:"Who signed the evidence, as verified when the entry was added."`
	// Ramp is the progressive activation the entry tells (hiro activate
	// --progressive writes it): its page draws the ramp over time.
	Ramp *evidence.RampResult `json:"ramp,omitempty" jsonschema_description:"A progressive activation's account (hiro activate --progressive); the page draws its share and error rate over time."`
	// Revisions notes every change made after the entry was published.
	Revisions []Revision `json:"revisions,omitempty" jsonschema_description:"Changes made after publication, oldest first."`
}

// EvidenceSignature is the signer of an entry's evidence (package signing).
type EvidenceSignature struct {
	// KeyID is the signer's key fingerprint (SHA256:...); PublicKey the
	// key itself (ed25519:BASE64). Both empty when Unsigned.
	KeyID     string `json:"key_id,omitempty"`
	PublicKey string `json:"public_key,omitempty"`
	// Trusted says the key was in the trust list of the hiro that added
	// the entry; TrustedAs is that list's name for it.
	Trusted   bool   `json:"trusted"`
	TrustedAs string `json:"trusted_as,omitempty"`
	// Unsigned: the evidence had no signature and was added with
	// --trust-unsigned (written by a hiro older than signing).
	Unsigned bool `json:"unsigned,omitempty"`
}

// Section is one piece of work completed, with its own status.
type Section struct {
	// Title names the work, plain text.
	Title string `json:"title" jsonschema:"minLength=1"`
	// Status is a short free-text outcome (e.g. "Completed", "Failed before
	// inference"); the site colours it by the words it holds.
	Status string `json:"status" jsonschema:"minLength=1" jsonschema_description:"Short outcome, e.g. Completed, Failed before inference."`
	// Items are the facts of the work, one per bullet, plain text.
	Items []string `json:"items,omitempty" jsonschema_description:"Facts of the work, one bullet each, plain text."`
	// Body is optional Markdown shown after the items.
	Body string `json:"body,omitempty" jsonschema_description:"Optional Markdown after the items; raw HTML is not rendered."`
}

// Decision is one decision with its reasoning, both plain text.
type Decision struct {
	Decision  string `json:"decision" jsonschema:"minLength=1"`
	Reasoning string `json:"reasoning,omitempty"`
}

// ValidationRow is one row of the validation table.
type ValidationRow struct {
	// Check names what was checked.
	Check string `json:"check" jsonschema:"minLength=1"`
	// Status is StatusPassed, StatusFailed, StatusInconclusive or
	// StatusNotRun.
	Status string `json:"status" jsonschema:"enum=passed,enum=failed,enum=inconclusive,enum=not_run"`
	// Result says what was found, plain text; each line is shown on its own.
	Result string `json:"result,omitempty" jsonschema_description:"What was found, plain text; each line is shown on its own."`
}

// Revision notes one change made to an entry after it was published.
type Revision struct {
	// Timestamp is when the change was made, RFC 3339 with a zone.
	Timestamp time.Time `json:"timestamp"`
	// Note says what changed and why.
	Note string `json:"note" jsonschema:"minLength=1"`
}

// ID is the entry's stable identity: its timestamp in UTC, RFC 3339. Two
// timestamps naming the same instant in different zones give the same ID.
func (e *Entry) ID() string {
	return e.Timestamp.UTC().Format(time.RFC3339Nano)
}

// FileName is the name of the entry's file under entries/:
// <UTC stamp>_<slug>.json, e.g. 20250612T123000Z_vllm-trial.json. The stamp
// has no colons so the name is portable.
func (e *Entry) FileName() string {
	return e.Timestamp.UTC().Format("20060102T150405Z") + "_" + e.Slug + ".json"
}

// Hash is the SHA-256 (hex) of the entry's canonical JSON with its revisions
// left out: what published.json records. Formatting changes to the file do
// not change it; any change to what the entry says does.
func (e *Entry) Hash() string {
	c := *e
	c.Revisions = nil
	b, err := json.Marshal(&c)
	if err != nil {
		// An Entry holds only strings, slices and a time: Marshal cannot
		// fail except for a year outside [0,9999], which Validate rejects.
		panic(fmt.Sprintf("journal: marshal entry %q: %v", e.Slug, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Validate reports what the JSON Schema cannot: it returns every problem
// found, each prefixed with the offending field, or nil.
func (e *Entry) Validate() []string {
	var probs []string
	if e.Timestamp.IsZero() {
		probs = append(probs, "timestamp: missing; write RFC 3339 with a zone, e.g. 2025-06-12T14:30:00+02:00")
	} else if y := e.Timestamp.Year(); y < 1 || y > 9999 {
		probs = append(probs, fmt.Sprintf("timestamp: year %d is out of range", y))
	}
	if !ValidSlug(e.Slug) {
		probs = append(probs, fmt.Sprintf("slug: %q is not a slug (lower-case a-z, 0-9 and single hyphens, at most %d bytes)", e.Slug, MaxSlugLen))
	}
	if strings.TrimSpace(e.Title) == "" {
		probs = append(probs, "title: empty")
	}
	seen := map[string]bool{}
	for i, a := range e.Aliases {
		if !ValidSlug(a) {
			probs = append(probs, fmt.Sprintf("aliases[%d]: %q is not a slug", i, a))
		}
		if a == e.Slug {
			probs = append(probs, fmt.Sprintf("aliases[%d]: %q is the entry's own slug", i, a))
		}
		if seen[a] {
			probs = append(probs, fmt.Sprintf("aliases[%d]: %q listed twice", i, a))
		}
		seen[a] = true
	}
	for i, s := range e.Sections {
		if strings.TrimSpace(s.Title) == "" {
			probs = append(probs, fmt.Sprintf("sections[%d].title: empty", i))
		}
		if strings.TrimSpace(s.Status) == "" {
			probs = append(probs, fmt.Sprintf("sections[%d].status: empty", i))
		}
	}
	for i, r := range e.Validation {
		if strings.TrimSpace(r.Check) == "" {
			probs = append(probs, fmt.Sprintf("validation[%d].check: empty", i))
		}
		switch r.Status {
		case StatusPassed, StatusFailed, StatusInconclusive, StatusNotRun:
		default:
			probs = append(probs, fmt.Sprintf("validation[%d].status: %q is not one of passed, failed, inconclusive, not_run", i, r.Status))
		}
	}
	if e.Evidence != "" && !validEvidenceRef(e.Evidence) {
		probs = append(probs, fmt.Sprintf("evidence: %q is neither an http(s) URL nor a relative path inside the journal", e.Evidence))
	}
	for i, r := range e.Revisions {
		if r.Timestamp.IsZero() {
			probs = append(probs, fmt.Sprintf("revisions[%d].timestamp: missing", i))
		}
		if strings.TrimSpace(r.Note) == "" {
			probs = append(probs, fmt.Sprintf("revisions[%d].note: empty; say what changed and why", i))
		}
	}
	return probs
}

// validEvidenceRef accepts an absolute http(s) URL or a clean relative path
// that stays inside the journal (no "..", no leading "/").
func validEvidenceRef(s string) bool {
	if strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") {
		return !strings.ContainsAny(s, " \t\n\"<>")
	}
	if strings.HasPrefix(s, "/") || strings.Contains(s, "\\") || strings.Contains(s, ":") {
		return false
	}
	for _, part := range strings.Split(s, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// ValidSlug reports whether s is a slug: lower-case ASCII letters and digits
// in words joined by single hyphens, 1 to MaxSlugLen bytes.
func ValidSlug(s string) bool {
	return len(s) <= MaxSlugLen && slugPattern.MatchString(s)
}

// Slugify makes a slug from a title: accents dropped, lower-cased, runs of
// anything else turned into one hyphen, cut at a word boundary to at most
// MaxSlugLen bytes. It returns "" when the title holds no letter or digit.
func Slugify(title string) string {
	var b strings.Builder
	hyphen := false
	for _, r := range norm.NFKD.String(title) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue // combining accent left by NFKD
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			hyphen = false
			b.WriteRune(unicode.ToLower(r))
		default:
			hyphen = true
		}
	}
	s := b.String()
	for len(s) > MaxSlugLen {
		i := strings.LastIndexByte(s[:MaxSlugLen+1], '-')
		if i <= 0 {
			s = s[:MaxSlugLen]
			break
		}
		s = s[:i]
	}
	return strings.Trim(s, "-")
}
