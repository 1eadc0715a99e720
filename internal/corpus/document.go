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

	"github.com/hiro-dev/hiro/internal/termtext"
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

// DocExtensions are the file extensions of documents: a folder's walk
// reads only those, and a file named with another is refused (NotDocument).
var DocExtensions = []string{".txt", ".md", ".markdown"}

// NotDocument is the one rule of what a document is, by extension, for
// every command that takes documents (corpus freeze, extract): for a path
// without one of DocExtensions, "PATH: not a document (.txt, .md or
// .markdown)"; "" for a document.
func NotDocument(path string) string {
	if hasDocExt(path) {
		return ""
	}
	return path + ": not a document (.txt, .md or .markdown)"
}

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
// (id: DocID of its base name), refused when it is not a document by
// NotDocument; a directory is walked (files with DocExtensions, in lexical
// order, hidden entries skipped; id: DocID of the path relative to the
// directory). Documents come back sorted by id; two documents with the
// same id (a.txt and a.md) are an error naming both paths.
func LoadPaths(paths []string) ([]Document, error) { return LoadPathsBounded(paths, -1) }

// LoadPathsBounded is LoadPaths reading at most limit bytes of each
// document (limit < 0: all): a caller that rejects documents over N bytes
// passes N+1, so that a huge file is neither read whole nor taken for a
// short one. A path that is not a regular file (a device such as
// /dev/zero, a FIFO, a socket) is an error: its reading might never end.
func LoadPathsBounded(paths []string, limit int64) ([]Document, error) {
	docs, _, err := LoadPathsLeftOut(paths, limit)
	return docs, err
}

// LoadPathsLeftOut is LoadPathsBounded that also returns the files its
// folder walks left out, in walk order: files that are not documents
// (NotDocument) and entries that are not regular files (links, devices),
// so that a caller can name them; hidden entries are not listed.
func LoadPathsLeftOut(paths []string, limit int64) (docs []Document, leftOut []string, err error) {
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
			return nil, nil, fmt.Errorf("input %s: %w", p, err)
		}
		if !st.IsDir() {
			if why := NotDocument(p); why != "" && st.Mode().IsRegular() {
				return nil, nil, fmt.Errorf("input %s; give .txt, .md or .markdown files or folders holding them", why)
			}
			if err := add(DocID(filepath.Base(p)), p); err != nil {
				return nil, nil, err
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
			if d.IsDir() {
				return nil
			}
			if !d.Type().IsRegular() || !hasDocExt(path) {
				leftOut = append(leftOut, path)
				return nil
			}
			rel, err := filepath.Rel(p, path)
			if err != nil {
				return err
			}
			return add(DocID(filepath.ToSlash(rel)), path)
		})
		if err != nil {
			return nil, nil, fmt.Errorf("walk %s: %w", p, err)
		}
	}
	if len(docs) == 0 {
		note := ""
		if len(leftOut) > 0 {
			note = "; " + LeftOutNote(leftOut)
		}
		return nil, nil, fmt.Errorf("%w in %s: give .txt or .md files or directories holding them%s", ErrNoDocuments, strings.Join(paths, ", "), note)
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].ID < docs[j].ID })
	return docs, leftOut, nil
}

// leftOutShown is how many left-out paths LeftOutNote names.
const leftOutShown = 3

// LeftOutNote says what a folder walk left out (LoadPathsLeftOut): "left
// out 1 file that is not a document (.txt, .md or .markdown): a.png", the
// first few paths and how many more; "" for none.
func LeftOutNote(leftOut []string) string {
	if len(leftOut) == 0 {
		return ""
	}
	shown := leftOut
	more := ""
	if len(shown) > leftOutShown {
		shown, more = shown[:leftOutShown], fmt.Sprintf(" and %d more", len(leftOut)-leftOutShown)
	}
	what := termtext.Plural(len(leftOut), "file that is not a document", "files that are not documents")
	return fmt.Sprintf("left out %s (.txt, .md or .markdown): %s%s", what, strings.Join(shown, ", "), more)
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
