package artifact

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// PinOptions tune Pin. The zero value is ready to use.
type PinOptions struct {
	// Workers bounds how many files are hashed at once; 0 means
	// runtime.NumCPU(). It is also capped at the number of files.
	Workers int
	// Progress, when not nil, receives hashing progress (see
	// TerminalProgress).
	Progress Progress
	// Exclude lists paths that are not part of the artifact even if they lie
	// in the directory, typically the manifest file itself. Relative paths
	// are taken from the working directory.
	Exclude []string
	// Now returns the creation time; nil means time.Now.
	Now func() time.Time

	// beforeHash is the hasher's test hook (see hasher.beforeHash).
	beforeHash func(rel string)
}

// Pin walks dir, hashes every file, and returns the manifest of repo at
// revision. It writes nothing; store the result with Write.
//
// dir is a plain directory, a Hugging Face cache snapshot
// (.../models--ORG--NAME/snapshots/REV) or a Hugging Face repository cache
// directory (.../models--ORG--NAME, whose snapshots/REVISION is used). In the
// cache layout the snapshot name must equal revision (else ErrRevision), the
// directory name must encode repo (else ErrRepo), symlinks may point anywhere
// inside models--ORG--NAME, and a blob whose file name is a SHA-256 must hash
// to that name (else ErrBlobMismatch).
//
// Errors (each wraps one of this package's sentinel errors and names the
// file): revision not a 40-hex commit (ErrRevision), bad repo (ErrRepo),
// missing, non-directory or empty dir (ErrDir), unreadable file
// (ErrUnreadable), symlink loop (ErrSymlinkLoop), symlink leaving the
// directory (ErrSymlinkEscape), broken symlink (ErrBrokenSymlink), socket,
// FIFO, device or symlink to a directory (ErrNotRegular), a file whose size
// or modification time changed while it was hashed (ErrChanged). When ctx is
// cancelled Pin stops reading and returns ctx's error.
func Pin(ctx context.Context, dir, repo, revision string, opts PinOptions) (*Manifest, error) {
	if err := ValidateRevision(revision); err != nil {
		return nil, err
	}
	if err := ValidateRepo(repo); err != nil {
		return nil, err
	}
	t, err := resolveTree(dir, revision)
	if err != nil {
		return nil, err
	}
	if t.layout == LayoutHFCache {
		if t.hfRevision != revision {
			return nil, fmt.Errorf("%w: %s is the snapshot of revision %q but the revision given is %s; pass the matching snapshot directory or revision", ErrRevision, t.dir, t.hfRevision, revision)
		}
		if t.hfRepo != repo {
			return nil, fmt.Errorf("%w: %s is the Hugging Face cache of %q but the repository given is %q", ErrRepo, t.dir, t.hfRepo, repo)
		}
	}
	exclude, err := absSet(opts.Exclude)
	if err != nil {
		return nil, err
	}
	entries, err := t.list(exclude)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: %s holds no files; nothing to pin", ErrDir, t.dir)
	}
	h := &hasher{workers: opts.Workers, progress: opts.Progress, beforeHash: opts.beforeHash}
	sums, err := h.hashAll(ctx, entries)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	m := &Manifest{
		Schema:   SchemaID,
		Repo:     repo,
		Revision: revision,
		Created:  now().UTC().Truncate(time.Second),
		Dir:      t.dir,
		Layout:   t.layout,
		Files:    make([]File, len(entries)),
	}
	for i, e := range entries {
		s := sums[i]
		if e.blobSHA != "" && e.blobSHA != s.sha {
			return nil, fmt.Errorf("%w: %s is a symlink to blob %s but its content hashes to %s; the cache is corrupt: delete the blob and the link and download again", ErrBlobMismatch, e.show, e.blobSHA, s.sha)
		}
		m.Files[i] = File{Path: e.rel, Bytes: s.size, SHA256: s.sha, MTime: s.mtime.UTC()}
		m.TotalBytes += s.size
	}
	m.Digest = ComputeDigest(m)
	return m, nil
}

// absSet turns paths into a set of absolute, cleaned paths with the
// symlinks of their directory resolved, to compare with walked paths.
func absSet(paths []string) (map[string]bool, error) {
	set := make(map[string]bool, len(paths))
	for _, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrDir, p, err)
		}
		set[a] = true
		if d, err := filepath.EvalSymlinks(filepath.Dir(a)); err == nil {
			set[filepath.Join(d, filepath.Base(a))] = true
		}
	}
	return set, nil
}
