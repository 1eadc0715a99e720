package artifact

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// ReportSchemaID is the value of Report.Schema (the --json output of
// hiro artifact verify).
const ReportSchemaID = "hiro.artifact-report/v1"

// Reasons a file is reported as changed (Change.Reason).
const (
	// ReasonSize: the size differs from the manifest (no hash needed).
	ReasonSize = "size"
	// ReasonSHA256: same size, different SHA-256.
	ReasonSHA256 = "sha256"
	// ReasonBlobName: Hugging Face layout only: the file is a symlink to a
	// blob named by a SHA-256 that its content does not have (corrupt
	// cache), whatever the manifest says.
	ReasonBlobName = "blob_name"
)

// VerifyOptions tune Verify. The zero value hashes every file with
// runtime.NumCPU() workers and shows no progress.
type VerifyOptions struct {
	// Fast trusts a file whose size and modification time both equal the
	// manifest's, without reading it. Files whose mtime differs (or that the
	// manifest has no mtime for) are still hashed, so touching a file is not
	// drift but editing it is. Off by default: only a full hash proves the
	// content.
	Fast bool
	// Workers bounds how many files are hashed at once; 0 means
	// runtime.NumCPU().
	Workers int
	// Progress, when not nil, receives hashing progress.
	Progress Progress

	// beforeHash is the hasher's test hook (see hasher.beforeHash).
	beforeHash func(rel string)
}

// Report is the outcome of Verify. OK is true exactly when Missing, Changed,
// Extra and Mismatch are all empty. List fields are never nil (they encode
// as [] in JSON) and are sorted by path.
type Report struct {
	// Schema is ReportSchemaID.
	Schema string `json:"schema"`
	// OK: the directory matches the manifest exactly.
	OK bool `json:"ok"`
	// Manifest is the manifest file verified against, as given.
	Manifest string `json:"manifest"`
	// Dir is the absolute directory checked (for the Hugging Face layout,
	// the snapshot directory).
	Dir string `json:"dir"`
	// Layout is the layout of Dir now (it may differ from the manifest's).
	Layout Layout `json:"layout"`
	// Repo, Revision and Digest come from the manifest; Digest is what the
	// qualification evidence records.
	Repo     string `json:"repo"`
	Revision string `json:"revision"`
	Digest   string `json:"digest"`
	// Fast is true when VerifyOptions.Fast was set.
	Fast bool `json:"fast"`
	// Files and Bytes count the manifest's files and their total size.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Hashed and HashedBytes count the files read and hashed in this run;
	// Trusted counts files accepted on size and mtime (fast mode only).
	Hashed      int   `json:"hashed"`
	HashedBytes int64 `json:"hashed_bytes"`
	Trusted     int   `json:"trusted"`
	// Missing lists manifest paths absent from the directory.
	Missing []string `json:"missing"`
	// Changed lists files present in both whose size or content differs.
	Changed []Change `json:"changed"`
	// Extra lists paths in the directory that the manifest does not have.
	Extra []string `json:"extra"`
	// Mismatch lists identity contradictions in the Hugging Face layout:
	// the snapshot directory is of another revision, or the cache directory
	// is of another repository, than the manifest pins.
	Mismatch []string `json:"mismatch"`
	// DurationMS is how long Verify took, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
}

// Change is one changed file.
type Change struct {
	// Path is relative to the artifact directory, with forward slashes.
	Path string `json:"path"`
	// Reason is ReasonSize, ReasonSHA256 or ReasonBlobName.
	Reason string `json:"reason"`
	// WantBytes / GotBytes: size in the manifest / on disk.
	WantBytes int64 `json:"want_bytes"`
	GotBytes  int64 `json:"got_bytes"`
	// WantSHA256 / GotSHA256: hashes in the manifest / of the content on
	// disk (or, for ReasonBlobName, of the blob's name); empty when the file
	// was not hashed (a size change is enough).
	WantSHA256 string `json:"want_sha256,omitempty"`
	GotSHA256  string `json:"got_sha256,omitempty"`
}

// Verify checks dir against the manifest at manifestPath and reports missing,
// changed and extra files. dir may be "" for the manifest's (DirFor); like in
// Pin it may be a plain directory, a Hugging Face snapshot directory or a
// Hugging Face repository cache directory (then snapshots/<manifest
// revision> is checked). The manifest file itself is ignored if it lies in
// the directory, and so is a byte-identical copy of it there (a user who
// keeps manifest.json beside the weights): it holds no model content. A
// file of that name with other bytes is extra.
//
// Drift is not an error: it returns a Report with OK false and a nil error.
// It returns an error (and no report) when the check cannot be made: an
// invalid manifest (ErrManifest, ErrRevision, ErrRepo), a missing directory
// (ErrDir), an unreadable file, a symlink loop, escape or dangling link, a
// non-regular file, a file that changed while it was hashed (see Pin for the
// sentinels), or ctx cancelled.
func Verify(ctx context.Context, manifestPath, dir string, opts VerifyOptions) (*Report, error) {
	start := time.Now()
	m, err := Load(manifestPath)
	if err != nil {
		return nil, err
	}
	if dir == "" {
		if dir = m.DirFor(manifestPath); dir == "" {
			return nil, fmt.Errorf("%w: the manifest %s records no directory; pass the directory to verify", ErrDir, manifestPath)
		}
	}
	t, err := resolveTree(dir, m.Revision)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Schema: ReportSchemaID, Manifest: manifestPath, Dir: t.dir, Layout: t.layout,
		Repo: m.Repo, Revision: m.Revision, Digest: m.Digest, Fast: opts.Fast,
		Files: len(m.Files), Bytes: m.TotalBytes,
		Missing: []string{}, Changed: []Change{}, Extra: []string{}, Mismatch: []string{},
	}
	if t.layout == LayoutHFCache {
		if t.hfRevision != m.Revision {
			r.Mismatch = append(r.Mismatch, fmt.Sprintf("snapshot %s is revision %q, the manifest pins %s", t.dir, t.hfRevision, m.Revision))
		}
		if t.hfRepo != m.Repo {
			r.Mismatch = append(r.Mismatch, fmt.Sprintf("cache directory is of repository %q, the manifest pins %q", t.hfRepo, m.Repo))
		}
	}
	exclude, err := absSet([]string{manifestPath})
	if err != nil {
		return nil, err
	}
	entries, err := t.list(exclude)
	if err != nil {
		return nil, err
	}
	onDisk := make(map[string]*entry, len(entries))
	for _, e := range entries {
		onDisk[e.rel] = e
	}
	var toHash []*entry
	want := make(map[string]File, len(m.Files))
	for _, f := range m.Files {
		want[f.Path] = f
		e, ok := onDisk[f.Path]
		switch {
		case !ok:
			r.Missing = append(r.Missing, f.Path)
		case e.size != f.Bytes:
			r.Changed = append(r.Changed, Change{Path: f.Path, Reason: ReasonSize, WantBytes: f.Bytes, GotBytes: e.size})
		case opts.Fast && !f.MTime.IsZero() && e.mtime.Equal(f.MTime):
			r.Trusted++
		default:
			toHash = append(toHash, e)
		}
	}
	var manifestBytes []byte
	for _, e := range entries {
		if _, ok := want[e.rel]; !ok {
			if manifestBytes == nil {
				if manifestBytes, err = os.ReadFile(manifestPath); err != nil {
					return nil, err
				}
			}
			if sameBytes(e, manifestBytes) {
				continue
			}
			r.Extra = append(r.Extra, e.rel)
		}
	}
	h := &hasher{workers: opts.Workers, progress: opts.Progress, beforeHash: opts.beforeHash}
	sums, err := h.hashAll(ctx, toHash)
	if err != nil {
		return nil, err
	}
	for i, e := range toHash {
		s, f := sums[i], want[e.rel]
		r.Hashed++
		r.HashedBytes += s.size
		switch {
		case s.size != f.Bytes:
			r.Changed = append(r.Changed, Change{Path: f.Path, Reason: ReasonSize, WantBytes: f.Bytes, GotBytes: s.size})
		case s.sha != f.SHA256:
			r.Changed = append(r.Changed, Change{Path: f.Path, Reason: ReasonSHA256, WantBytes: f.Bytes, GotBytes: s.size, WantSHA256: f.SHA256, GotSHA256: s.sha})
		case e.blobSHA != "" && e.blobSHA != s.sha:
			r.Changed = append(r.Changed, Change{Path: f.Path, Reason: ReasonBlobName, WantBytes: f.Bytes, GotBytes: s.size, WantSHA256: s.sha, GotSHA256: e.blobSHA})
		}
	}
	sort.Slice(r.Changed, func(i, j int) bool { return r.Changed[i].Path < r.Changed[j].Path })
	r.OK = len(r.Missing) == 0 && len(r.Changed) == 0 && len(r.Extra) == 0 && len(r.Mismatch) == 0
	r.DurationMS = time.Since(start).Milliseconds()
	return r, nil
}

// sameBytes reports whether the file of e holds exactly b (read only when
// its size is b's).
func sameBytes(e *entry, b []byte) bool {
	if e.size != int64(len(b)) {
		return false
	}
	got, err := os.ReadFile(e.abs)
	return err == nil && bytes.Equal(got, b)
}

// Summary returns one line describing the report, e.g.
// "artifact ok in /models/x: 4 files, 15.0 GiB, org/name@49ec31e…, sha256:…" or
// "artifact drift in /models/x: 1 missing, 2 changed, 0 extra" (the
// directory quoted as a shell word when it needs quotes).
func (r *Report) Summary() string {
	if r.OK {
		return fmt.Sprintf("artifact ok in %s: %s, %s, %s@%s, %s", shellquote.Quote(filepath.Clean(r.Dir)), termtext.Plural(r.Files, "file", "files"), HumanBytes(r.Bytes), r.Repo, r.Revision, r.Digest)
	}
	return fmt.Sprintf("artifact drift in %s: %s", shellquote.Quote(filepath.Clean(r.Dir)), r.DriftCounts())
}

// DriftCounts returns how many files are missing, changed and extra (and
// identity mismatches, when any): "1 missing, 2 changed, 0 extra".
func (r *Report) DriftCounts() string {
	s := fmt.Sprintf("%d missing, %d changed, %d extra", len(r.Missing), len(r.Changed), len(r.Extra))
	if len(r.Mismatch) > 0 {
		s += fmt.Sprintf(", %d identity mismatch", len(r.Mismatch))
	}
	return s
}

// HumanBytes formats n bytes with IEC units (KiB, MiB, GiB, TiB), one
// decimal place.
func HumanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 3; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}

// DirFor returns the directory Verify checks when it is given none: a
// manifest kept beside the files it describes (committed in a repository,
// copied with its model) moves with them, so its own directory
// (manifestPath's) when that holds the manifest's first file; otherwise the
// directory recorded at pin time (Dir), which is "" when none was.
func (m *Manifest) DirFor(manifestPath string) string {
	if own := filepath.Dir(manifestPath); len(m.Files) > 0 && exists(filepath.Join(own, filepath.FromSlash(m.Files[0].Path))) {
		return own
	}
	return m.Dir
}

// exists reports whether path exists (following symlinks).
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
