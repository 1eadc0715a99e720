package artifact

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// tree is a resolved artifact directory.
type tree struct {
	// dir is the absolute, cleaned directory whose files are listed (for
	// the Hugging Face layout, the snapshot directory).
	dir string
	// bound is the real path (symlinks resolved) every file must resolve
	// inside: dir itself, or the repository cache directory
	// (models--ORG--NAME) for the Hugging Face layout.
	bound string
	// blobs is the real path of models--ORG--NAME/blobs (Hugging Face only).
	blobs  string
	layout Layout
	// hfRepo and hfRevision are what the cache path says: the repository id
	// decoded from models--ORG--NAME and the snapshot directory name.
	hfRepo     string
	hfRevision string
}

// entry is one file found in a tree.
type entry struct {
	rel   string // slash-separated path relative to tree.dir
	abs   string // path through tree.dir (may be a symlink)
	size  int64  // from the walk; the hasher stats again
	mtime time.Time
	// blobSHA is the SHA-256 a Hugging Face blob's file name claims, or "".
	blobSHA string
}

// hfRepoPrefix starts a Hugging Face cache directory of a model repository.
const hfRepoPrefix = "models--"

// resolveTree finds what dir is: a plain directory, a Hugging Face snapshot
// directory (models--ORG--NAME/snapshots/REV), or a Hugging Face repository
// cache directory (models--ORG--NAME, resolved to snapshots/revision).
func resolveTree(dir, revision string) (*tree, error) {
	if dir == "" {
		return nil, fmt.Errorf("%w: no directory given", ErrDir)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDir, dir, err)
	}
	if err := checkDir(abs); err != nil {
		return nil, err
	}
	t := &tree{dir: abs, layout: LayoutPlain}
	var repoDir string
	parent := filepath.Dir(abs)
	switch {
	case filepath.Base(parent) == "snapshots" && strings.HasPrefix(filepath.Base(filepath.Dir(parent)), hfRepoPrefix):
		repoDir = filepath.Dir(parent)
	case strings.HasPrefix(filepath.Base(abs), hfRepoPrefix) && isDir(filepath.Join(abs, "snapshots")):
		repoDir = abs
		if ValidateRevision(revision) != nil {
			return nil, fmt.Errorf("%w: %s is a Hugging Face cache directory: a valid 40-hex revision is needed to choose its snapshot", ErrRevision, abs)
		}
		t.dir = filepath.Join(abs, "snapshots", revision)
		if !isDir(t.dir) {
			return nil, fmt.Errorf("%w: %s has no snapshot %s (present: %s); download that revision or pass the snapshot directory", ErrDir, abs, revision, listSnapshots(abs))
		}
	}
	if repoDir != "" {
		t.layout = LayoutHFCache
		t.hfRevision = filepath.Base(t.dir)
		t.hfRepo = strings.ReplaceAll(strings.TrimPrefix(filepath.Base(repoDir), hfRepoPrefix), "--", "/")
		if t.bound, err = filepath.EvalSymlinks(repoDir); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrDir, repoDir, err)
		}
		t.blobs = filepath.Join(t.bound, "blobs")
	} else if t.bound, err = filepath.EvalSymlinks(abs); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDir, abs, err)
	}
	return t, nil
}

func checkDir(abs string) error {
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s does not exist; check the path (for the Hugging Face cache: .../hub/models--ORG--NAME/snapshots/REV)", ErrDir, abs)
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrDir, abs, err)
	case !fi.IsDir():
		return fmt.Errorf("%w: %s is not a directory; pass the directory that holds the model files", ErrDir, abs)
	}
	return nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func listSnapshots(repoDir string) string {
	ents, err := os.ReadDir(filepath.Join(repoDir, "snapshots"))
	if err != nil || len(ents) == 0 {
		return "none"
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, ", ")
}

// list walks t.dir and returns every file sorted by rel. Paths in exclude
// (absolute, cleaned) are skipped. Symlinks are followed when they resolve
// to a regular file inside t.bound; a loop, a broken link, an escape, a link
// to a directory, or any non-regular entry is an error naming the path.
func (t *tree) list(exclude map[string]bool) ([]*entry, error) {
	var out []*entry
	err := filepath.WalkDir(t.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == t.dir {
				return fmt.Errorf("%w: %s: %v", ErrDir, p, err)
			}
			return fmt.Errorf("%w: %s: %v; check its permissions", ErrUnreadable, p, err)
		}
		if p == t.dir || d.IsDir() {
			return nil
		}
		if exclude[p] {
			return nil
		}
		rel, err := filepath.Rel(t.dir, p)
		if err != nil {
			return err
		}
		e := &entry{rel: filepath.ToSlash(rel), abs: p}
		var fi fs.FileInfo
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if fi, err = t.followSymlink(p, e); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if fi, err = d.Info(); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrUnreadable, p, err)
			}
		default:
			return fmt.Errorf("%w: %s is a %v; an artifact directory holds only files, directories and symlinks to files", ErrNotRegular, p, d.Type())
		}
		e.size, e.mtime = fi.Size(), fi.ModTime()
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rel < out[j].rel })
	return out, nil
}

// followSymlink checks a symlink at p and returns the FileInfo of its target.
func (t *tree) followSymlink(p string, e *entry) (fs.FileInfo, error) {
	fi, err := os.Stat(p)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, fmt.Errorf("%w: %s: the symlink chain leads back to itself; fix or remove the link", ErrSymlinkLoop, p)
		case errors.Is(err, fs.ErrNotExist):
			target, _ := os.Readlink(p)
			return nil, fmt.Errorf("%w: %s -> %s points at nothing; the download may be incomplete", ErrBrokenSymlink, p, target)
		default:
			return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, p, err)
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, p, err)
	}
	if !within(t.bound, real) {
		where := "the artifact directory " + t.bound
		if t.layout == LayoutHFCache {
			where = "the repository cache directory " + t.bound
		}
		return nil, fmt.Errorf("%w: %s resolves to %s, outside %s; copy the file in or pin the directory it lives in", ErrSymlinkEscape, p, real, where)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is a symlink to the directory %s; symlinked directories are not followed", ErrNotRegular, p, real)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s resolves to %s, a %v", ErrNotRegular, p, real, fi.Mode().Type())
	}
	if t.layout == LayoutHFCache && filepath.Dir(real) == t.blobs {
		if name := filepath.Base(real); sha256RE.MatchString(name) {
			e.blobSHA = name
		}
	}
	return fi, nil
}

// within reports whether p is root or below it (both cleaned, absolute).
func within(root, p string) bool {
	if p == root {
		return true
	}
	if root == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, root+string(filepath.Separator))
}
