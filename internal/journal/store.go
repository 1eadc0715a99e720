package journal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/redact"
)

// Layout of a journal directory.
const (
	// DefaultDir is the journal folder's name inside the state directory
	// (hiro journal without --journal uses <state_dir>/journal).
	DefaultDir = "journal"
	// EntriesDir holds one <stamp>_<slug>.json file per entry.
	EntriesDir = "entries"
	// EvidenceDir holds public evidence copied in by AddFromEvidence; build
	// copies it into the site unchanged.
	EvidenceDir = "evidence"
	// PublishedFile records the hash of every published entry.
	PublishedFile = "published.json"
	// PublishedSchema is the schema tag written in PublishedFile.
	PublishedSchema = "hiro.journal-published/v1"
	// IDFile holds the journal's identity: 32 hex digits (128 random
	// bits) and a newline, made by the first Build (ID). A site records
	// it in its SiteMarker, so a build of another journal into the same
	// folder is refused; a journal moved or copied keeps it.
	IDFile = "journal-id"
)

// ID returns the journal's identity from dir/IDFile, creating the file
// (atomically, only when missing) the first time. Errors: the file
// cannot be read or written, or it does not hold 32 hex digits (the
// message names it and says to remove it).
func ID(dir string) (string, error) {
	path := filepath.Join(dir, IDFile)
	for range 2 {
		b, err := os.ReadFile(path)
		if err == nil {
			id := strings.TrimSpace(string(b))
			if !journalIDPattern.MatchString(id) {
				return "", fmt.Errorf("%s does not hold a journal id (32 hex digits): remove it and build again (the next build makes a new one, and a site built under the old one is then refused without --force)", path)
			}
			return id, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("journal id: %w", err)
		}
		var r [16]byte
		if _, err := rand.Read(r[:]); err != nil {
			return "", fmt.Errorf("journal id: %w", err)
		}
		if err := atomicfile.CreateExclusive(path, []byte(hex.EncodeToString(r[:])+"\n"), 0o644); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("journal id: %w", err)
		}
		// Made here, or by a racer a moment ago: read what is there.
	}
	return "", fmt.Errorf("journal id: %s could not be read after it was made", path)
}

var journalIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// Problem is one thing wrong with a journal or its site: Where is a path
// relative to the journal (or site) directory, optionally with a field.
type Problem struct {
	Where string
	Msg   string
}

func (p Problem) String() string { return p.Where + ": " + p.Msg }

// Stored is an entry as read from the journal directory.
type Stored struct {
	Entry
	// Path is the file, relative to the journal directory
	// (entries/<stamp>_<slug>.json).
	Path string
}

// Journal is a loaded journal directory.
type Journal struct {
	// Dir is the journal directory as given.
	Dir string
	// Entries are the entries that decoded, newest first (ties by slug).
	Entries []*Stored
	// Problems are files that failed the schema, failed to decode, or failed
	// Entry.Validate; such files are not in Entries when they did not decode.
	Problems []Problem
}

// Load reads every entries/*.json file of dir. It fails only when dir (or
// its entries/ folder, when present) cannot be read; a bad entry file is a
// Problem, so check can list all of them at once. A directory without an
// entries/ folder is an empty journal.
func Load(dir string) (*Journal, error) {
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("journal directory %s does not exist: create it with 'hiro journal new' or pass --journal DIR", dir)
		}
		return nil, fmt.Errorf("journal directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("journal directory %s is not a directory", dir)
	}
	j := &Journal{Dir: dir}
	names, err := entryFiles(dir)
	if err != nil {
		return nil, err
	}
	// Read, validate and decode files in parallel; results keep file order.
	type result struct {
		e     *Entry
		probs []string
	}
	results := make([]result, len(names))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(1, len(names))) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				data, err := os.ReadFile(filepath.Join(dir, EntriesDir, names[i]))
				if err != nil {
					results[i] = result{probs: []string{err.Error()}}
					continue
				}
				e, probs := decodeEntry(data)
				results[i] = result{e, probs}
			}
		}()
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, r := range results {
		rel := EntriesDir + "/" + names[i]
		for _, p := range r.probs {
			j.Problems = append(j.Problems, Problem{rel, p})
		}
		if r.e != nil {
			j.Entries = append(j.Entries, &Stored{Entry: *r.e, Path: rel})
		}
	}
	sortNewestFirst(j.Entries)
	return j, nil
}

// Open is Load for a command that adds to the journal: a dir that does
// not exist is an empty journal (Dir set, no entries), and the folder is
// made only by the first file written (Create, AddFromEvidence), after
// every check passed, so a refused add or new leaves nothing behind.
// Errors are Load's for a dir that exists.
func Open(dir string) (*Journal, error) {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return &Journal{Dir: dir}, nil
	}
	return Load(dir)
}

// entryFiles lists the *.json names in dir/entries, sorted.
func entryFiles(dir string) ([]string, error) {
	des, err := os.ReadDir(filepath.Join(dir, EntriesDir))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("journal entries: %w", err)
	}
	var names []string
	for _, de := range des {
		if !de.IsDir() && strings.HasSuffix(de.Name(), ".json") {
			names = append(names, de.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// decodeEntry validates data against the schema, decodes it strictly and
// runs Entry.Validate. It returns the entry when it decoded (even with
// problems) and every problem found.
func decodeEntry(data []byte) (*Entry, []string) {
	serr := ValidateJSON(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var e Entry
	if err := dec.Decode(&e); err != nil {
		var probs []string
		if serr != nil && json.Valid(data) { // not JSON: the decoder says where, once
			probs = append(probs, "does not validate against the entry schema: "+oneLine(serr.Error()))
		}
		return nil, append(probs, "cannot decode: "+err.Error())
	}
	own := e.Validate()
	return &e, append(schemaProblems(serr, own), own...)
}

// schemaLeaf is one failure line of the schema validator's message:
// "- at '/slug': ..." (nested ones indented).
var schemaLeaf = regexp.MustCompile(`^\s*- at '([^']*)': (.*)$`)

// schemaMissing is a root failure naming a missing key.
var schemaMissing = regexp.MustCompile(`missing propert(?:y|ies) '([^']+)'`)

// schemaProblems is the schema's verdict err less what own (Entry.Validate's
// problems, "key: ..." or "key[i]...") already says: each problem said
// once, in hiro's words. A failure at a key own does not name stays, in
// the validator's words; nil when nothing is left.
func schemaProblems(err error, own []string) []string {
	if err == nil {
		return nil
	}
	said := map[string]bool{}
	for _, p := range own {
		if i := strings.IndexAny(p, ":[."); i > 0 {
			said[p[:i]] = true
		}
	}
	var left []string
	leaves := 0
	for _, l := range strings.Split(err.Error(), "\n") {
		m := schemaLeaf.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		leaves++
		key, _, _ := strings.Cut(strings.TrimPrefix(m[1], "/"), "/")
		if mm := schemaMissing.FindStringSubmatch(m[2]); key == "" && mm != nil {
			key = mm[1]
		}
		if !said[key] {
			left = append(left, strings.TrimSpace(l))
		}
	}
	switch {
	case leaves == 0:
		return []string{"does not validate against the entry schema: " + oneLine(err.Error())}
	case len(left) == 0:
		return nil
	}
	return []string{"does not validate against the entry schema: " + strings.Join(left, "; ")}
}

// oneLine joins a multi-line validator message with "; ".
func oneLine(s string) string {
	var parts []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}

// sortNewestFirst orders entries by timestamp, newest first, then by slug.
func sortNewestFirst(es []*Stored) {
	sort.SliceStable(es, func(a, b int) bool {
		ta, tb := es[a].Timestamp, es[b].Timestamp
		if !ta.Equal(tb) {
			return ta.After(tb)
		}
		return es[a].Slug < es[b].Slug
	})
}

// Find returns the entry whose slug or alias is name, or nil.
func (j *Journal) Find(name string) *Stored {
	for _, e := range j.Entries {
		if e.Slug == name {
			return e
		}
		for _, a := range e.Aliases {
			if a == name {
				return e
			}
		}
	}
	return nil
}

// ErrExists is wrapped by Create when the new entry's slug or timestamp is
// already taken.
var ErrExists = errors.New("already in the journal")

// Create validates e, checks that its slug, aliases and timestamp are not
// taken, and writes it atomically to entries/<stamp>_<slug>.json (creating
// the directories). It returns the path written, relative to j.Dir.
func (j *Journal) Create(e *Entry) (string, error) {
	data, err := j.checkNew(e)
	if err != nil {
		return "", err
	}
	rel := EntriesDir + "/" + e.FileName()
	path := filepath.Join(j.Dir, EntriesDir, e.FileName())
	if err := os.MkdirAll(filepath.Join(j.Dir, EntriesDir), 0o755); err != nil {
		return "", fmt.Errorf("create journal: %w", err)
	}
	// Created exclusively: an entry another hiro wrote meanwhile under
	// this name is never replaced.
	if err := atomicfile.CreateExclusive(path, data, 0o644); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("%s: %w (%w)", path, ErrExists, fs.ErrExist)
		}
		return "", err
	}
	j.Entries = append(j.Entries, &Stored{Entry: *e, Path: rel})
	sortNewestFirst(j.Entries)
	return rel, nil
}

// ErrInvalid is matched (errors.Is) by Create's refusal of an entry that
// fails Entry.Validate or the entry schema: bad input, nothing written.
var ErrInvalid = errors.New("invalid journal entry")

// invalidEntryError is such a refusal: its message lists the problems.
type invalidEntryError struct{ msg string }

func (e *invalidEntryError) Error() string        { return e.msg }
func (e *invalidEntryError) Is(target error) bool { return target == ErrInvalid }

// checkNew is every refusal of Create, made before anything is written:
// it redacts e (an entry is public: every string passes through package
// redact before it is validated and written), validates it, checks that
// its slug, aliases and timestamp are free, and returns the bytes to
// write.
func (j *Journal) checkNew(e *Entry) ([]byte, error) {
	redact.Value(e)
	if probs := e.Validate(); len(probs) > 0 {
		return nil, &invalidEntryError{"new entry: " + strings.Join(probs, "; ")}
	}
	for _, o := range j.Entries {
		if o.Timestamp.Equal(e.Timestamp) {
			return nil, fmt.Errorf("timestamp %s: %w (%s); wait a second or set another time", e.Timestamp.Format(time.RFC3339), ErrExists, o.Path)
		}
		taken := append([]string{o.Slug}, o.Aliases...)
		for _, name := range append([]string{e.Slug}, e.Aliases...) {
			if slices.Contains(taken, name) {
				return nil, fmt.Errorf("slug %q: %w (%s); choose another with --slug", name, ErrExists, o.Path)
			}
		}
	}
	data, err := MarshalEntry(e)
	if err != nil {
		return nil, err
	}
	if err := ValidateJSON(data); err != nil {
		return nil, &invalidEntryError{"new entry does not validate against the entry schema: " + oneLine(err.Error())}
	}
	return data, nil
}

// MarshalEntry is the on-disk form of an entry: indented JSON (two spaces),
// HTML characters not escaped, ending in a newline.
func MarshalEntry(e *Entry) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("encode entry %q: %w", e.Slug, err)
	}
	return buf.Bytes(), nil
}

// Published is the content of published.json: for each published entry
// (keyed by Entry.ID), what it was when last published.
type Published struct {
	Schema  string                    `json:"schema"`
	Entries map[string]PublishedEntry `json:"entries"`
}

// PublishedEntry is one published entry's record.
type PublishedEntry struct {
	// Slug is the entry's slug when recorded (for messages only).
	Slug string `json:"slug"`
	// SHA256 is Entry.Hash when recorded.
	SHA256 string `json:"sha256"`
	// Revisions is how many revision notes the entry had when recorded; a
	// later change must come with more.
	Revisions int `json:"revisions"`
}

// ReadPublished reads dir/published.json; a missing file is an empty record.
func ReadPublished(dir string) (*Published, error) {
	p := &Published{Schema: PublishedSchema, Entries: map[string]PublishedEntry{}}
	data, err := os.ReadFile(filepath.Join(dir, PublishedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", PublishedFile, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("%s: %w (restore it from version control; deleting it forgets what was published)", filepath.Join(dir, PublishedFile), err)
	}
	if p.Schema != PublishedSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", filepath.Join(dir, PublishedFile), p.Schema, PublishedSchema)
	}
	if p.Entries == nil {
		p.Entries = map[string]PublishedEntry{}
	}
	return p, nil
}

// WritePublished writes p to dir/published.json atomically.
func WritePublished(dir string, p *Published) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", PublishedFile, err)
	}
	return writeFileAtomic(filepath.Join(dir, PublishedFile), append(b, '\n'))
}

// Unrevised compares entries with the published record and returns a
// Problem for every published entry that changed without a new revision
// note, and for every published entry that is gone.
func (p *Published) Unrevised(entries []*Stored) []Problem {
	byID := map[string]*Stored{}
	for _, e := range entries {
		byID[e.ID()] = e
	}
	var probs []Problem
	for _, id := range sortedKeys(p.Entries) {
		rec := p.Entries[id]
		e := byID[id]
		if e == nil {
			probs = append(probs, Problem{PublishedFile, fmt.Sprintf("published entry %s (slug %q) is gone; published entries are never removed — restore its file", id, rec.Slug)})
			continue
		}
		if e.Hash() != rec.SHA256 && len(e.Revisions) <= rec.Revisions {
			probs = append(probs, Problem{e.Path, fmt.Sprintf("published entry changed without a revision note (sha256 %s… now %s…); add a revisions item {\"timestamp\": ..., \"note\": \"what changed and why\"}", rec.SHA256[:12], e.Hash()[:12])})
		}
	}
	return probs
}

// Record marks entries as published: new entries are added, and changed
// entries that carry a new revision note get their record updated. A
// changed entry without one keeps its old record (Unrevised reports it).
// It returns whether p changed.
func (p *Published) Record(entries []*Stored) bool {
	changed := false
	for _, e := range entries {
		h := e.Hash()
		rec, ok := p.Entries[e.ID()]
		if ok && (rec.SHA256 == h || len(e.Revisions) <= rec.Revisions) {
			continue
		}
		p.Entries[e.ID()] = PublishedEntry{Slug: e.Slug, SHA256: h, Revisions: len(e.Revisions)}
		changed = true
	}
	return changed
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeFileAtomic writes data to path atomically (package atomicfile).
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o644)
}
