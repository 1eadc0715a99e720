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
	// dir is the absolute, cleaned directory as the user named it (for the
	// Hugging Face layout, the snapshot directory); it is what reports show.
	dir string
	// real is dir with every symlink resolved; it is what is walked.
	real string
	// bound is the real path every file must resolve inside: real itself,
	// or the repository cache directory (models--ORG--NAME) for the Hugging
	// Face layout.
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
	rel   string // slash-separated path relative to the tree
	abs   string // path under tree.real (the file itself may be a symlink)
	show  string // path under tree.dir, for messages
	size  int64  // from the walk; the hasher stats again
	mtime time.Time
	// blobSHA is the SHA-256 a Hugging Face blob's file name claims, or "".
	blobSHA string
}

// hfRepoPrefix starts a Hugging Face cache directory of a model repository.
const hfRepoPrefix = "models--"

// resolveTree finds what dir is: a plain directory, a Hugging Face snapshot
// directory (models--ORG--NAME/snapshots/REV), or a Hugging Face repository
// cache directory (models--ORG--NAME, resolved to snapshots/revision). The
// layout is read from the path with symlinks resolved, so a symlink to a
// snapshot, or a cache under a symlinked directory, is recognised too.
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
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrDir, abs, err)
	}
	t := &tree{dir: abs, real: real, bound: real, layout: LayoutPlain}
	var repoDir string // real path of models--ORG--NAME
	parent := filepath.Dir(real)
	switch {
	case filepath.Base(parent) == "snapshots" && strings.HasPrefix(filepath.Base(filepath.Dir(parent)), hfRepoPrefix):
		repoDir = filepath.Dir(parent)
	case strings.HasPrefix(filepath.Base(real), hfRepoPrefix) && isDir(filepath.Join(real, "snapshots")):
		repoDir = real
		if ValidateRevision(revision) != nil {
			return nil, fmt.Errorf("%w: %s is a Hugging Face cache directory: a valid 40-hex revision is needed to choose its snapshot", ErrRevision, abs)
		}
		t.dir = filepath.Join(abs, "snapshots", revision)
		if !isDir(t.dir) {
			return nil, fmt.Errorf("%w: %s has no snapshot %s (present: %s); download that revision or pass the snapshot directory", ErrDir, abs, revision, listSnapshots(abs))
		}
		if t.real, err = filepath.EvalSymlinks(t.dir); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrDir, t.dir, err)
		}
	}
	if repoDir != "" {
		t.layout = LayoutHFCache
		t.hfRevision = filepath.Base(t.real)
		t.hfRepo = strings.ReplaceAll(strings.TrimPrefix(filepath.Base(repoDir), hfRepoPrefix), "--", "/")
		t.bound = repoDir
		t.blobs = filepath.Join(repoDir, "blobs")
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

// list walks t.real and returns every file sorted by rel. Paths in exclude
// (absolute, cleaned, symlinks resolved: see absSet) are skipped. Symlinks
// are followed when they resolve
// to a regular file inside t.bound; a loop, a broken link, an escape, a link
// to a directory, or any non-regular entry is an error naming the path.
func (t *tree) list(exclude map[string]bool) ([]*entry, error) {
	var out []*entry
	err := filepath.WalkDir(t.real, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == t.real {
				return fmt.Errorf("%w: %s: %v", ErrDir, t.dir, err)
			}
			return fmt.Errorf("%w: %s: %v; check its permissions", ErrUnreadable, t.show(p), err)
		}
		if p == t.real || d.IsDir() {
			return nil
		}
		if exclude[p] {
			return nil
		}
		rel, err := filepath.Rel(t.real, p)
		if err != nil {
			return err
		}
		e := &entry{rel: filepath.ToSlash(rel), abs: p, show: filepath.Join(t.dir, rel)}
		var fi fs.FileInfo
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if fi, err = t.followSymlink(e); err != nil {
				return err
			}
		case d.Type().IsRegular():
			if fi, err = d.Info(); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrUnreadable, e.show, err)
			}
		default:
			return fmt.Errorf("%w: %s is a %v; an artifact directory holds only files, directories and symlinks to files", ErrNotRegular, e.show, d.Type())
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

// followSymlink checks the symlink e and returns the FileInfo of its target.
func (t *tree) followSymlink(e *entry) (fs.FileInfo, error) {
	p, show := e.abs, e.show
	fi, err := os.Stat(p)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ELOOP):
			return nil, fmt.Errorf("%w: %s: the symlink chain leads back to itself; fix or remove the link", ErrSymlinkLoop, show)
		case errors.Is(err, fs.ErrNotExist):
			target, _ := os.Readlink(p)
			return nil, fmt.Errorf("%w: %s -> %s points at nothing; the download may be incomplete", ErrBrokenSymlink, show, target)
		default:
			return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, show, err)
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnreadable, show, err)
	}
	if !within(t.bound, real) {
		where := "the artifact directory " + t.bound
		if t.layout == LayoutHFCache {
			where = "the repository cache directory " + t.bound
		}
		return nil, fmt.Errorf("%w: %s resolves to %s, outside %s; copy the file in or pin the directory it lives in", ErrSymlinkEscape, show, real, where)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%w: %s is a symlink to the directory %s; symlinked directories are not followed", ErrNotRegular, show, real)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s resolves to %s, a %v", ErrNotRegular, show, real, fi.Mode().Type())
	}
	if t.layout == LayoutHFCache && filepath.Dir(real) == t.blobs {
		if name := filepath.Base(real); sha256RE.MatchString(name) {
			e.blobSHA = name
		}
	}
	return fi, nil
}

// show maps a walked path (under t.real) to the path the user named.
func (t *tree) show(p string) string {
	if rel, err := filepath.Rel(t.real, p); err == nil {
		return filepath.Join(t.dir, rel)
	}
	return p
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
