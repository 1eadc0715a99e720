package atomicfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile atomically replaces path with data (mode perm), creating the
// parent directory if needed. On error the target is untouched and no
// temporary file is left.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, os.Rename)
}

// CreateExclusive writes data (mode perm) to path only when nothing is
// there yet, atomically: a whole file appears or none. When path exists
// (a file, a symbolic link, anything) the error wraps fs.ErrExist and the
// existing one is untouched: two writers of one name never overwrite each
// other (a fully written temporary file is hard-linked to path, which
// fails when path exists, like O_EXCL).
func CreateExclusive(path string, data []byte, perm os.FileMode) error {
	return write(path, data, perm, func(tmp, path string) error {
		err := os.Link(tmp, path)
		os.Remove(tmp)
		return err
	})
}

// write writes data to a temporary file beside path, syncs it and puts it
// in place with place(tmp, path).
func write(path string, data []byte, perm os.FileMode, place func(tmp, path string) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := place(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteJSON atomically writes v as indented JSON with a final newline.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return WriteFile(path, append(b, '\n'), 0o644)
}

// ErrNotDir means a path meant to be, or become, a directory (an output
// folder) is an existing file of another kind, or lies under one.
var ErrNotDir = errors.New("not a directory")

// notDirError is CheckDirPath's error: its text names the path and what
// is in the way; errors.Is(err, ErrNotDir) holds.
type notDirError struct{ msg string }

func (e *notDirError) Error() string        { return e.msg }
func (e *notDirError) Is(target error) bool { return target == ErrNotDir }

// CheckDirPath reports whether path can be used as a directory to write
// into: nil when it is one or does not exist (nor anything above it that
// is not a directory). Otherwise the error wraps ErrNotDir and reads
// "PATH is an existing KIND, not a directory" (KIND: file, symbolic link,
// named pipe, socket, device) or "PATH: a folder above it is a file";
// callers add the flag and what to give instead. Other errors of stat
// (permissions) are left to the caller's own open, which names them.
func CheckDirPath(path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && !st.IsDir():
		return &notDirError{fmt.Sprintf("%s is an existing %s, not a directory", path, FileKind(st.Mode()))}
	case err != nil && errors.Is(err, syscall.ENOTDIR):
		return &notDirError{path + ": a folder above it is a file"}
	}
	return nil
}

// FileKind names a file mode's kind for messages: "directory", "file",
// "symbolic link", "named pipe (FIFO)", "character device (a
// terminal?)", "device", "socket", else "special file".
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "character device (a terminal?)"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}
