package corpus

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

// Frozen corpus layout, relative to the corpus directory.
const (
	// ManifestFile lists every other file with its SHA-256.
	ManifestFile = "manifest.json"
	// GoldFile holds the gold claims, one GoldClaim per line.
	GoldFile = "gold.jsonl"
	// DocsDir holds one file per document: docs/<id>.txt or docs/<id>.md.
	DocsDir = "docs"
	// ManifestSchema is the manifest's schema tag.
	ManifestSchema = "hiro.corpus/v1"
)

// ErrNotFrozen means a corpus directory does not match its manifest (or
// has none); the error text lists the problems.
var ErrNotFrozen = errors.New("corpus does not match its manifest")

// FileEntry is one file of a frozen corpus.
type FileEntry struct {
	// Path is relative to the corpus directory, forward slashes.
	Path string `json:"path"`
	// Bytes is the file size.
	Bytes int64 `json:"bytes"`
	// SHA256 is the hex SHA-256 of the file's content.
	SHA256 string `json:"sha256"`
}

// Source says where an imported corpus came from and how it was chosen.
type Source struct {
	// Kind is the importer ("factcheck-gpt").
	Kind string `json:"kind"`
	// File is the base name of the file imported; FileSHA256 its digest.
	File       string `json:"file"`
	FileSHA256 string `json:"file_sha256"`
	// Take is how many sources were selected, of Available.
	Take      int `json:"take"`
	Available int `json:"available"`
	// Selection states the deterministic selection rule.
	Selection string `json:"selection"`
}

// Manifest freezes a corpus: every file but the manifest itself, sorted
// by path, with a digest over them.
type Manifest struct {
	Schema string `json:"schema"`
	// Name is a label for people ("factcheck-gpt-6", "hiro-mini").
	Name   string  `json:"name"`
	Source *Source `json:"source,omitempty"`
	// Documents and GoldClaims are counts, for people.
	Documents  int `json:"documents"`
	GoldClaims int `json:"gold_claims"`
	// Files lists every file except manifest.json, sorted by Path.
	Files []FileEntry `json:"files"`
	// Digest is the hex SHA-256 of the lines "<sha256>  <path>\n" of
	// Files in order: it identifies the corpus content (the semantic
	// gate's fingerprint uses it).
	Digest string `json:"digest"`
}

// GoldClaim is one human-written claim.
type GoldClaim struct {
	// DocID is the document the claim belongs to.
	DocID string `json:"doc_id"`
	// SentenceIndex is the annotators' sentence number, from 0; it need
	// not equal the splitter's index, so scoring matches per document.
	SentenceIndex int `json:"sentence_index"`
	// Text is the claim.
	Text string `json:"text"`
}

// Corpus is a loaded, verified frozen corpus.
type Corpus struct {
	Dir      string
	Manifest *Manifest
	// Docs are sorted by ID.
	Docs []Document
	// Gold is in file order.
	Gold []GoldClaim
}

// filesDigest computes Manifest.Digest for files.
func filesDigest(files []FileEntry) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s  %s\n", f.SHA256, f.Path)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// scanFiles hashes every regular file under dir except the manifest.
// Anything that is not a regular file or directory is an error.
func scanFiles(dir string) ([]FileEntry, error) {
	var files []FileEntry
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() || rel == ManifestFile {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file (links and devices are not allowed in a frozen corpus)", rel)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		s := sha256.Sum256(b)
		files = append(files, FileEntry{Path: rel, Bytes: int64(len(b)), SHA256: hex.EncodeToString(s[:])})
		return nil
	})
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, err
}

// Seal writes dir's manifest.json from the files now there (name as given,
// source may be nil) and returns it. Counts come from docs/ and gold.jsonl.
func Seal(dir, name string, source *Source) (*Manifest, error) {
	files, err := scanFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("seal corpus %s: %w", dir, err)
	}
	m := &Manifest{Schema: ManifestSchema, Name: name, Source: source, Files: files, Digest: filesDigest(files)}
	for _, f := range files {
		if strings.HasPrefix(f.Path, DocsDir+"/") {
			m.Documents++
		}
	}
	gold, err := readGold(filepath.Join(dir, GoldFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	m.GoldClaims = len(gold)
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := WriteFileAtomic(filepath.Join(dir, ManifestFile), append(b, '\n')); err != nil {
		return nil, err
	}
	return m, nil
}

// nearFolder is "; did you mean D?" for the folder D beside dir whose
// name is nearest in spelling (at most 2 edits), "" when none is.
func nearFolder(dir string) string {
	ents, err := os.ReadDir(filepath.Dir(dir))
	if err != nil {
		return ""
	}
	base, best, bestD := filepath.Base(dir), "", 3
	for _, e := range ents {
		if d := levenshtein.ComputeDistance(base, e.Name()); e.IsDir() && d < bestD {
			best, bestD = e.Name(), d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %s?", filepath.Join(filepath.Dir(dir), best))
}

// notFound is a message that says what is missing in hiro's words and
// still matches errors.Is(err, fs.ErrNotExist), without Go's "file does
// not exist" appended.
type notFound string

func (e notFound) Error() string { return string(e) }
func (e notFound) Unwrap() error { return fs.ErrNotExist }

// ReadManifest reads dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
				// No such folder (a typo, most often): no advice to freeze
				// it, which would fail the same way.
				return nil, notFound(fmt.Sprintf("%s: no such folder%s; give the folder of a frozen corpus (one holding %s)", dir, nearFolder(dir), ManifestFile))
			}
			how := fmt.Sprintf("lay it out as %s/ (one document per file) and an optional %s, then freeze it with 'hiro corpus freeze %s' (docs/corpus.md), or import one with 'hiro corpus import'", DocsDir, GoldFile, dir)
			if st, err := os.Stat(filepath.Join(dir, DocsDir)); err == nil && st.IsDir() {
				how = fmt.Sprintf("freeze it with 'hiro corpus freeze %s'", dir)
			}
			return nil, notFound(fmt.Sprintf("%s: no %s: not a frozen corpus; %s", dir, ManifestFile, how))
		}
		return nil, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Schema != ManifestSchema {
		return nil, fmt.Errorf("%s: schema %q, want %q", filepath.Join(dir, ManifestFile), m.Schema, ManifestSchema)
	}
	return &m, nil
}

// VerifyReport lists every difference between a corpus and its manifest.
type VerifyReport struct {
	Dir string `json:"dir"`
	OK  bool   `json:"ok"`
	// Digest is the manifest's (expected) digest; ActualDigest the digest
	// of the files as they are now (Manifest.Digest's formula over them).
	Digest       string `json:"digest"`
	ActualDigest string `json:"actual_digest"`
	// Missing, Changed and Extra are paths relative to the corpus dir.
	Missing []string `json:"missing,omitempty"`
	Changed []string `json:"changed,omitempty"`
	Extra   []string `json:"extra,omitempty"`
	// DigestMismatch is set when the manifest's digest is not the digest
	// of its own file list (a hand-edited manifest).
	DigestMismatch bool `json:"digest_mismatch,omitempty"`
}

// Problems renders the report's differences as lines.
func (r *VerifyReport) Problems() []string {
	var ps []string
	for _, p := range r.Missing {
		ps = append(ps, "missing "+p)
	}
	for _, p := range r.Changed {
		ps = append(ps, "changed "+p)
	}
	for _, p := range r.Extra {
		ps = append(ps, "extra "+p)
	}
	if r.DigestMismatch {
		ps = append(ps, "manifest digest does not match its file list")
	}
	return ps
}

// Verify compares dir with its manifest: every file must be there with the
// same size and SHA-256, and no other file may exist. An error means the
// manifest could not be read; drift is reported with OK false.
func Verify(dir string) (*VerifyReport, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	files, err := scanFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("verify corpus %s: %w", dir, err)
	}
	r := &VerifyReport{Dir: dir, Digest: m.Digest, ActualDigest: filesDigest(files)}
	have := map[string]FileEntry{}
	for _, f := range files {
		have[f.Path] = f
	}
	want := map[string]bool{}
	for _, f := range m.Files {
		want[f.Path] = true
		g, ok := have[f.Path]
		switch {
		case !ok:
			r.Missing = append(r.Missing, f.Path)
		case g.SHA256 != f.SHA256 || g.Bytes != f.Bytes:
			r.Changed = append(r.Changed, f.Path)
		}
	}
	for _, f := range files {
		if !want[f.Path] {
			r.Extra = append(r.Extra, f.Path)
		}
	}
	r.DigestMismatch = filesDigest(m.Files) != m.Digest
	r.OK = len(r.Missing)+len(r.Changed)+len(r.Extra) == 0 && !r.DigestMismatch
	return r, nil
}

// Load verifies the corpus at dir and reads its documents and gold claims.
// A corpus that does not match its manifest is refused (ErrNotFrozen).
func Load(dir string) (*Corpus, error) {
	r, err := Verify(dir)
	if err != nil {
		return nil, err
	}
	if !r.OK {
		return nil, fmt.Errorf("%w: %s: %s (run: hiro corpus verify %s)", ErrNotFrozen, dir, strings.Join(r.Problems(), "; "), shellquote.Quote(dir))
	}
	m, _ := ReadManifest(dir)
	c := &Corpus{Dir: dir, Manifest: m}
	for _, f := range m.Files {
		if !strings.HasPrefix(f.Path, DocsDir+"/") {
			continue
		}
		id := DocID(strings.TrimPrefix(f.Path, DocsDir+"/"))
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		c.Docs = append(c.Docs, Document{ID: id, Path: path, Markdown: IsMarkdownPath(path), Text: b, Size: int64(len(b))})
	}
	sort.Slice(c.Docs, func(i, j int) bool { return c.Docs[i].ID < c.Docs[j].ID })
	c.Gold, err = readGold(filepath.Join(dir, GoldFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return c, nil
}

// readGold reads a gold.jsonl file; unknown fields are errors.
func readGold(path string) ([]GoldClaim, error) {
	var out []GoldClaim
	err := eachGold(path, func(n int, g GoldClaim, err error) error {
		if err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out = append(out, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachGold decodes each non-blank line of the gold claims file at path
// strictly (unknown fields are errors) and calls fn with its line number
// and the claim or the decoding error; an error fn returns stops it and
// is returned, as is a file that cannot be opened or read.
func eachGold(path string, fn func(n int, g GoldClaim, err error) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var g GoldClaim
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		derr := dec.Decode(&g)
		if err := fn(n, g, derr); err != nil {
			return err
		}
	}
	return sc.Err()
}

// checkGold checks every line of the gold claims file at path (absent:
// none) against the corpus's document ids: strict JSON, a doc_id that is
// a document, a sentence_index of 0 or more, a text. It returns one
// problem per bad line, each with its line number (gold.jsonl:N), so that
// a person fixes them all in one pass.
func checkGold(path string, ids map[string]string) []string {
	var problems []string
	err := eachGold(path, func(n int, g GoldClaim, err error) error {
		where := fmt.Sprintf("%s:%d", GoldFile, n)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: not a gold claim: %v (a line is {\"doc_id\":...,\"sentence_index\":N,\"text\":...})", where, err))
		case ids[g.DocID] == "":
			problems = append(problems, fmt.Sprintf("%s: doc_id %q is no document (ids are the paths under %s/ without their extension)", where, g.DocID, DocsDir))
		case g.SentenceIndex < 0:
			problems = append(problems, fmt.Sprintf("%s: sentence_index %d is negative", where, g.SentenceIndex))
		case strings.TrimSpace(g.Text) == "":
			problems = append(problems, fmt.Sprintf("%s: text is empty", where))
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		problems = append(problems, fmt.Sprintf("%s: %v", GoldFile, err))
	}
	return problems
}

// FreezeShown is how many problems a FreezeError's message lists; the
// rest are counted.
const FreezeShown = 20

// FreezeError is Freeze's refusal: every problem found (a line each,
// gold claims with their line numbers); nothing was written.
type FreezeError struct {
	Dir      string
	Problems []string
}

func (e *FreezeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "freeze corpus %s: %d problem", e.Dir, len(e.Problems))
	if len(e.Problems) != 1 {
		b.WriteString("s")
	}
	b.WriteString(", nothing written:")
	for i, p := range e.Problems {
		if i == FreezeShown {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Problems)-FreezeShown)
			break
		}
		b.WriteString("\n  " + p)
	}
	return b.String()
}

// docTextProblem returns the problem of the document at path (rel in
// messages) as a freeze refusal's line, or "" when it is text a run can
// extract from: not empty, not only white space, and valid UTF-8 (the
// byte offset and line of the first byte that starts no valid sequence
// are named, so a Latin-1 or UTF-16 file can be found and converted).
func docTextProblem(path, rel string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("%s: %v", rel, err)
	}
	if len(b) == 0 {
		return fmt.Sprintf("%s: empty (0 bytes): a document needs text; write it or remove the file", rel)
	}
	for off := 0; off < len(b); {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 {
			line := 1 + bytes.Count(b[:off], []byte("\n"))
			return fmt.Sprintf("%s: not UTF-8: byte 0x%02x at byte offset %d (line %d) starts no valid UTF-8 sequence; convert it to UTF-8 (from Latin-1: iconv -f LATIN1 -t UTF-8 %s, its output in the file's place) or remove it", rel, b[off], off, line, shellquote.Quote(rel))
		}
		off += n
	}
	if strings.TrimSpace(string(b)) == "" {
		return fmt.Sprintf("%s: only white space (%d bytes): a document needs text; write it or remove the file", rel, len(b))
	}
	return ""
}

// WriteFileAtomic writes data to path through a temporary file in the same
// directory, fsynced and renamed over path.
func WriteFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o644)
}

// Freeze makes dir, laid out as a frozen corpus (documents under docs/,
// optionally gold claims in gold.jsonl), a frozen corpus: it checks the
// layout, every document (UTF-8 text, not empty: docTextProblem) and
// every gold claim (strict JSON, a doc_id that is one of the
// documents, a sentence_index of 0 or more, a text), then writes
// manifest.json (Seal) and returns it with the digest of the manifest it
// replaced ("" when there was none). Nothing is written when a check
// fails; the error lists every problem.
func Freeze(dir, name string) (m *Manifest, previous string, err error) {
	st, err := os.Stat(filepath.Join(dir, DocsDir))
	if err != nil || !st.IsDir() {
		return nil, "", fmt.Errorf("%s: no %s/ folder: put one document per file in %s (%s/<id>.txt or .md)", dir, DocsDir, filepath.Join(dir, DocsDir), DocsDir)
	}
	files, err := scanFiles(dir)
	if err != nil {
		return nil, "", fmt.Errorf("freeze corpus %s: %w", dir, err)
	}
	var problems []string
	ids := map[string]string{}
	for _, f := range files {
		switch {
		case strings.HasPrefix(f.Path, DocsDir+"/"):
			rel := strings.TrimPrefix(f.Path, DocsDir+"/")
			if why := NotDocument(f.Path); why != "" {
				problems = append(problems, why)
				continue
			}
			if p := docTextProblem(filepath.Join(dir, filepath.FromSlash(f.Path)), f.Path); p != "" {
				problems = append(problems, p)
			}
			id := DocID(rel)
			if prev, ok := ids[id]; ok {
				problems = append(problems, fmt.Sprintf("%s and %s have the same id %q", prev, f.Path, id))
			}
			ids[id] = f.Path
		case f.Path == GoldFile:
		default:
			problems = append(problems, fmt.Sprintf("%s: not part of a corpus (only %s/ and %s; move it out)", f.Path, DocsDir, GoldFile))
		}
	}
	if len(ids) == 0 {
		problems = append(problems, fmt.Sprintf("%s/ holds no document", DocsDir))
	}
	problems = append(problems, checkGold(filepath.Join(dir, GoldFile), ids)...)
	if len(problems) > 0 {
		return nil, "", &FreezeError{Dir: dir, Problems: problems}
	}
	if old, err := ReadManifest(dir); err == nil {
		previous = old.Digest
		if name == "" {
			name = old.Name
		}
	}
	if name == "" {
		name = filepath.Base(filepath.Clean(dir))
	}
	m, err = Seal(dir, name, nil)
	return m, previous, err
}
