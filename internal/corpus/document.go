package corpus

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Document is one input document.
type Document struct {
	// ID is stable across runs: the corpus document id (its path under
	// docs/ without the extension), or for files given on the command line
	// the path relative to the input root (the directory argument, or the
	// file's own directory for a file argument), with forward slashes.
	ID string `json:"id"`
	// Path is where the document was read from.
	Path string `json:"path"`
	// Markdown is true for .md and .markdown files.
	Markdown bool `json:"markdown"`
	// Text is the raw content; it may be invalid UTF-8 or empty (package
	// extract rejects those with a reason). LoadPathsBounded cuts it at its
	// limit.
	Text []byte `json:"-"`
	// Size is the file's size in bytes when it was read, also when Text
	// was cut short of it; 0 for a document not read from a file.
	Size int64 `json:"-"`
}

// DocExtensions are the file extensions read as documents when walking a
// directory; a file named explicitly is read whatever its extension.
var DocExtensions = []string{".txt", ".md", ".markdown"}

// IsMarkdownPath reports whether path names a Markdown file by extension.
func IsMarkdownPath(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	return ext == ".md" || ext == ".markdown"
}

// ErrNoDocuments means the paths held no document to read.
var ErrNoDocuments = errors.New("no documents")

// DocID is a document's id from its path relative to the input root
// (forward slashes): the path without its extension, the rule of a
// frozen corpus's docs/ (docs/library.md is "library"), so files given to
// 'hiro extract PATHS' get the ids a corpus of the same files gives.
func DocID(rel string) string {
	return strings.TrimSuffix(rel, filepath.Ext(rel))
}

// LoadPaths reads the documents named by paths: a file is one document
// (id: DocID of its base name); a directory is walked (files with
// DocExtensions, in lexical order, hidden entries skipped; id: DocID of
// the path relative to the directory). Documents come back sorted by id;
// two documents with the same id (a.txt and a.md) are an error naming
// both paths.
func LoadPaths(paths []string) ([]Document, error) { return LoadPathsBounded(paths, -1) }

// LoadPathsBounded is LoadPaths reading at most limit bytes of each
// document (limit < 0: all): a caller that rejects documents over N bytes
// passes N+1, so that a huge file is neither read whole nor taken for a
// short one. A path that is not a regular file (a device such as
// /dev/zero, a FIFO, a socket) is an error: its reading might never end.
func LoadPathsBounded(paths []string, limit int64) ([]Document, error) {
	var docs []Document
	seen := map[string]string{}
	add := func(id, path string) error {
		if prev, ok := seen[id]; ok {
			return fmt.Errorf("document id %q is given twice (%s and %s): ids are paths without their extension; pass each document once, or rename one", id, prev, path)
		}
		seen[id] = path
		b, size, err := readRegular(path, limit)
		if err != nil {
			return err
		}
		docs = append(docs, Document{ID: id, Path: path, Markdown: IsMarkdownPath(path), Text: b, Size: size})
		return nil
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("input %s: %w", p, err)
		}
		if !st.IsDir() {
			if err := add(DocID(filepath.Base(p)), p); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if path != p && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() || !d.Type().IsRegular() || !hasDocExt(path) {
				return nil
			}
			rel, err := filepath.Rel(p, path)
			if err != nil {
				return err
			}
			return add(DocID(filepath.ToSlash(rel)), path)
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", p, err)
		}
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("%w in %s: give .txt or .md files or directories holding them", ErrNoDocuments, strings.Join(paths, ", "))
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	return docs, nil
}

func hasDocExt(path string) bool {
	ext := strings.ToLower(filepath.Ext(path))
	for _, e := range DocExtensions {
		if ext == e {
			return true
		}
	}
	return false
}

// readRegular reads at most limit bytes (limit < 0: all) of the regular
// file at path and returns them with the file's size; anything else is an
// error saying what it is.
func readRegular(path string, limit int64) ([]byte, int64, error) {
	// O_NONBLOCK: opening a FIFO would otherwise wait for a writer (it
	// changes nothing for a regular file).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("read document %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("read document %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("read document %s: not a regular file (%s); give documents as files", path, st.Mode().Type())
	}
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, 0, fmt.Errorf("read document %s: %w", path, err)
	}
	size := st.Size()
	if int64(len(b)) > size { // the file grew while it was read
		size = int64(len(b))
	}
	return b, size, nil
}
