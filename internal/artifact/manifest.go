package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hiro-dev/hiro/internal/atomicfile"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// SchemaID is the value of Manifest.Schema for this version of the format.
const SchemaID = "hiro.artifact/v1"

// Layout names how the artifact directory is laid out on disk.
type Layout string

const (
	// LayoutPlain is an ordinary directory of regular files (symlinks that
	// stay inside it are followed).
	LayoutPlain Layout = "plain"
	// LayoutHFCache is a Hugging Face hub cache snapshot:
	// models--ORG--NAME/snapshots/REV/ whose files are symlinks into
	// models--ORG--NAME/blobs/.
	LayoutHFCache Layout = "hf-cache"
)

// Manifest pins one model artifact: where it comes from (Repo at the
// immutable Revision) and every file it is made of.
//
// Digest is computed from Repo, Revision and Files (see ComputeDigest); the
// other fields (Created, Dir, Layout, TotalBytes, each file's MTime) are
// informational and do not enter it, so pinning the same content twice gives
// the same digest.
type Manifest struct {
	// Schema is always SchemaID ("hiro.artifact/v1").
	Schema string `json:"schema" jsonschema:"enum=hiro.artifact/v1" jsonschema_description:"Format identifier: always hiro.artifact/v1."`
	// Repo is the upstream repository id, e.g. "mistralai/Mistral-Small-3.2-24B-Instruct-2506".
	Repo string `json:"repo" jsonschema:"minLength=1,pattern=^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$" jsonschema_description:"Upstream repository id, e.g. ORG/NAME on the Hugging Face hub."`
	// Revision is the upstream commit: exactly 40 lowercase hex digits.
	Revision string `json:"revision" jsonschema:"pattern=^[0-9a-f]{40}$" jsonschema_description:"Immutable upstream commit: 40 lowercase hex digits (never a branch or tag name)."`
	// Created is when the manifest was pinned (UTC).
	Created time.Time `json:"created" jsonschema_description:"When the manifest was pinned (RFC 3339, UTC)."`
	// Dir is the absolute local directory that was pinned (for the Hugging
	// Face layout, the snapshot directory). Verify uses it when no directory
	// is given. Private: it is a local path.
	Dir string `json:"dir,omitempty" jsonschema_description:"Absolute local directory that was pinned; verify uses it when no directory is given."`
	// Layout is how Dir was laid out when pinned.
	Layout Layout `json:"layout" jsonschema:"enum=plain,enum=hf-cache" jsonschema_description:"plain: ordinary directory; hf-cache: Hugging Face cache snapshot whose files are symlinks into blobs/."`
	// TotalBytes is the sum of Files[].Bytes.
	TotalBytes int64 `json:"total_bytes" jsonschema:"minimum=0" jsonschema_description:"Sum of files[].bytes."`
	// Files lists every file, sorted by Path.
	Files []File `json:"files" jsonschema_description:"Every file of the artifact sorted by path."`
	// Digest is "sha256:" + 64 hex digits; see ComputeDigest.
	Digest string `json:"digest" jsonschema:"pattern=^sha256:[0-9a-f]{64}$" jsonschema_description:"sha256: followed by the hex SHA-256 of the canonical JSON {schema repo revision files[{path bytes sha256}]} with files sorted by path."`
}

// File is one file of a manifest.
type File struct {
	// Path is relative to the artifact directory, with forward slashes,
	// clean (no ".", ".." or empty elements).
	Path string `json:"path" jsonschema:"minLength=1" jsonschema_description:"Path relative to the artifact directory with forward slashes; clean and never leaving the directory."`
	// Bytes is the file size in bytes.
	Bytes int64 `json:"bytes" jsonschema:"minimum=0" jsonschema_description:"File size in bytes."`
	// SHA256 is the lowercase hex SHA-256 of the content (64 digits).
	SHA256 string `json:"sha256" jsonschema:"pattern=^[0-9a-f]{64}$" jsonschema_description:"Lowercase hex SHA-256 of the file content."`
	// MTime is the modification time seen when the file was hashed (through
	// symlinks: the target's). Only verify --fast reads it.
	MTime time.Time `json:"mtime,omitzero" jsonschema_description:"Modification time when hashed (of the symlink target); used only by the opt-in fast verify mode."`
}

// Sentinel errors. Every error returned by this package that a user can cause
// wraps one of these (test with errors.Is); the message says which file and
// what to do.
var (
	// ErrRevision: the revision is not a full 40-hex commit (a branch or
	// tag such as "main" can move), or it contradicts the snapshot directory.
	ErrRevision = errors.New("bad revision")
	// ErrRepo: the repository id is empty or malformed, or contradicts the
	// Hugging Face cache directory name.
	ErrRepo = errors.New("bad repository id")
	// ErrDir: the artifact directory is missing, not a directory, or empty.
	ErrDir = errors.New("bad artifact directory")
	// ErrManifest: the manifest file cannot be read, does not decode, or is
	// inconsistent (bad field, duplicate path, digest mismatch).
	ErrManifest = errors.New("bad manifest")
	// ErrUnreadable: a file or directory could not be read.
	ErrUnreadable = errors.New("unreadable file")
	// ErrSymlinkLoop: a symlink resolves to itself, directly or not.
	ErrSymlinkLoop = errors.New("symlink loop")
	// ErrSymlinkEscape: a symlink resolves outside the artifact directory
	// (outside the repository's cache directory for the Hugging Face layout).
	ErrSymlinkEscape = errors.New("symlink leaves the artifact directory")
	// ErrBrokenSymlink: a symlink points at nothing.
	ErrBrokenSymlink = errors.New("broken symlink")
	// ErrNotRegular: an entry is neither a regular file, a directory nor a
	// symlink to a regular file (a socket, a FIFO, a device, a symlink to a
	// directory).
	ErrNotRegular = errors.New("not a regular file")
	// ErrChanged: a file's size or modification time changed while it was
	// being hashed, so its hash describes no stable content.
	ErrChanged = errors.New("file changed while it was hashed")
	// ErrBlobMismatch: a Hugging Face blob named by a SHA-256 has content
	// with another SHA-256 (corrupt cache). Pin fails with it; Verify
	// reports it as a change instead.
	ErrBlobMismatch = errors.New("blob content does not match its SHA-256 name")
)

var (
	revisionRE = regexp.MustCompile(`^[0-9a-f]{40}$`)
	hexRE      = regexp.MustCompile(`^[0-9a-fA-F]+$`)
	sha256RE   = regexp.MustCompile(`^[0-9a-f]{64}$`)
	digestRE   = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	repoRE     = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)
)

// ValidateRevision returns nil when rev is a full commit id: exactly 40
// lowercase hex digits. Anything else wraps ErrRevision, with a message that
// tells a moving name (branch, tag) from an abbreviated or upper-case hash.
func ValidateRevision(rev string) error {
	switch {
	case revisionRE.MatchString(rev):
		return nil
	case rev == "":
		return fmt.Errorf("%w: no revision given; pass the full 40-hex commit the files were downloaded at", ErrRevision)
	case hexRE.MatchString(rev) && len(rev) == 40:
		return fmt.Errorf("%w: %q has upper-case hex digits; write the commit in lower case: %s", ErrRevision, rev, strings.ToLower(rev))
	case hexRE.MatchString(rev) && len(rev) < 40:
		return fmt.Errorf("%w: %q is an abbreviated commit (%d hex digits); give all 40 digits", ErrRevision, rev, len(rev))
	default:
		return fmt.Errorf("%w: %q looks like a branch or tag name, which can move; pin the full 40-hex commit it points at now (on the Hugging Face hub: the commit list of the repository, or the snapshot directory name in the cache)", ErrRevision, rev)
	}
}

// ValidateRepo returns nil when repo looks like a repository id: NAME or
// ORG/NAME with letters, digits, '.', '_' and '-'. Otherwise it wraps ErrRepo.
func ValidateRepo(repo string) error {
	if repo == "" {
		return fmt.Errorf("%w: no repository id given; pass ORG/NAME, e.g. mistralai/Mistral-Small-3.2-24B-Instruct-2506", ErrRepo)
	}
	if !repoRE.MatchString(repo) {
		return fmt.Errorf("%w: %q is not NAME or ORG/NAME (letters, digits, '.', '_', '-')", ErrRepo, repo)
	}
	return nil
}

// canonical is what the manifest digest is computed over.
type canonical struct {
	Schema   string          `json:"schema"`
	Repo     string          `json:"repo"`
	Revision string          `json:"revision"`
	Files    []canonicalFile `json:"files"`
}

type canonicalFile struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// ComputeDigest returns the manifest digest, "sha256:" followed by 64 hex
// digits: the SHA-256 of the compact JSON (no HTML escaping, no trailing
// newline) of
//
//	{"schema":"hiro.artifact/v1","repo":R,"revision":V,"files":[{"path":P,"bytes":N,"sha256":H},...]}
//
// with files sorted by path (byte order). Created, Dir, Layout, TotalBytes
// and MTime do not enter it. It does not modify m.
func ComputeDigest(m *Manifest) string {
	c := canonical{Schema: SchemaID, Repo: m.Repo, Revision: m.Revision, Files: make([]canonicalFile, len(m.Files))}
	for i, f := range m.Files {
		c.Files[i] = canonicalFile{Path: f.Path, Bytes: f.Bytes, SHA256: f.SHA256}
	}
	sort.Slice(c.Files, func(i, j int) bool { return c.Files[i].Path < c.Files[j].Path })
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(c) // cannot fail: strings and integers only
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Validate checks m for consistency: schema id, repository id, revision,
// each file's path (relative, clean, forward slashes, unique), bytes and
// SHA-256, files sorted by path, TotalBytes equal to their sum, and Digest
// equal to ComputeDigest(m). Errors wrap ErrManifest (or ErrRevision /
// ErrRepo) and name the offending key, e.g. "files[3].sha256: ...".
func (m *Manifest) Validate() error {
	if m.Schema != SchemaID {
		return fmt.Errorf("%w: schema: %q, want %q", ErrManifest, m.Schema, SchemaID)
	}
	if err := ValidateRepo(m.Repo); err != nil {
		return fmt.Errorf("repo: %w", err)
	}
	if err := ValidateRevision(m.Revision); err != nil {
		return fmt.Errorf("revision: %w", err)
	}
	if m.Layout != LayoutPlain && m.Layout != LayoutHFCache {
		return fmt.Errorf("%w: layout: %q, want %q or %q", ErrManifest, m.Layout, LayoutPlain, LayoutHFCache)
	}
	var total int64
	for i, f := range m.Files {
		if err := checkRelPath(f.Path); err != nil {
			return fmt.Errorf("%w: files[%d].path: %v", ErrManifest, i, err)
		}
		if i > 0 && m.Files[i-1].Path >= f.Path {
			if m.Files[i-1].Path == f.Path {
				return fmt.Errorf("%w: files[%d].path: %q listed twice", ErrManifest, i, f.Path)
			}
			return fmt.Errorf("%w: files[%d].path: %q is out of order: files must be sorted by path", ErrManifest, i, f.Path)
		}
		if f.Bytes < 0 {
			return fmt.Errorf("%w: files[%d].bytes: %d is negative", ErrManifest, i, f.Bytes)
		}
		if !sha256RE.MatchString(f.SHA256) {
			return fmt.Errorf("%w: files[%d].sha256: %q is not 64 lowercase hex digits", ErrManifest, i, f.SHA256)
		}
		total += f.Bytes
	}
	if total != m.TotalBytes {
		return fmt.Errorf("%w: total_bytes: %d, but the files add up to %d", ErrManifest, m.TotalBytes, total)
	}
	if !digestRE.MatchString(m.Digest) {
		return fmt.Errorf("%w: digest: %q is not sha256:<64 hex digits>", ErrManifest, m.Digest)
	}
	if want := ComputeDigest(m); m.Digest != want {
		return fmt.Errorf("%w: digest: recorded %s but the content gives %s: the manifest was edited after it was pinned; pin the artifact again", ErrManifest, m.Digest, want)
	}
	return nil
}

// checkRelPath accepts a clean, relative, slash-separated path inside the
// directory.
func checkRelPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return fmt.Errorf("%q is absolute; paths are relative to the artifact directory", p)
	case strings.Contains(p, "\\"):
		return fmt.Errorf("%q contains a backslash; use forward slashes", p)
	case path.Clean(p) != p || p == ".":
		return fmt.Errorf("%q is not clean (no '.', '..', '//' or trailing '/')", p)
	case p == ".." || strings.HasPrefix(p, "../"):
		return fmt.Errorf("%q leaves the artifact directory", p)
	}
	return nil
}

// manifestNotFound is Load's error for a manifest path with no file: it
// is an ErrManifest (bad input) and an fs.ErrNotExist, and says so in
// those words rather than "bad manifest".
type manifestNotFound string

func (p manifestNotFound) Error() string {
	return fmt.Sprintf("manifest %s not found: give the manifest 'hiro artifact pin' wrote (its --out), or pin one", string(p))
}

func (p manifestNotFound) Is(target error) bool {
	return target == ErrManifest || target == fs.ErrNotExist
}

// Load reads and validates the manifest at path. Decoding is strict: an
// unknown key, trailing data, or any Validate failure is an error wrapping
// ErrManifest (or ErrRevision / ErrRepo), prefixed with the path.
func Load(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, manifestNotFound(path)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read manifest %s: %v", ErrManifest, path, errors.Unwrap(err))
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrManifest, path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: %s: trailing data after the manifest object", ErrManifest, path)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return &m, nil
}

// Marshal returns the manifest as indented JSON with a trailing newline,
// the form Write stores.
func Marshal(m *Manifest) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write validates m and stores it at path atomically: it writes a temporary
// file in the same directory, fsyncs it, renames it over path and fsyncs the
// directory. On any error nothing is left at path that was not there before
// (the temporary file is removed) and the error names the path.
func Write(path string, m *Manifest) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("not writing %s: %w", path, err)
	}
	data, err := Marshal(m)
	if err != nil {
		return fmt.Errorf("not writing %s: %w", path, err)
	}
	return writeAtomic(path, data)
}

func writeAtomic(path string, data []byte) error {
	// The manifest's directory must exist: a mistyped --out is reported,
	// not silently created.
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return fmt.Errorf("writing %s: directory %s does not exist (create it, or fix --out)", path, filepath.Dir(path))
	}
	return atomicfile.WriteFile(path, data, 0o644)
}
