// Package private checks and creates the files and folders hiro trusts:
// records, leases, configurations and private evidence must belong to the
// user running hiro and be writable by no one else, and the folders that
// hold secrets are 0700. It stands on leaves only: it imports no other hiro
// package than shellquote (itself a leaf), and touches nothing it is
// not asked to.
package private

import (
	"fmt"
	"os"
	"syscall"

	"github.com/hiro-dev/hiro/internal/shellquote"
)

// DirMode is the mode of a private folder; FileMode of a private file.
const (
	DirMode  = 0o700
	FileMode = 0o600
)

// Check returns an error, saying what to do, when the file or folder fi
// (at path) is not owned by the current user, or when its group or others
// may write it (a folder writable by others is accepted only with the
// sticky bit, like /tmp).
func Check(path string, fi os.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s is owned by uid %d, not by you (uid %d): hiro does not act on another user's files; remove it or use your own", path, st.Uid, uid)
	}
	perm := fi.Mode().Perm()
	switch {
	case fi.IsDir() && perm&0o002 != 0 && fi.Mode()&os.ModeSticky == 0:
		return fmt.Errorf("%s may be written by anyone (mode %v): hiro does not act on it; chmod o-w %s", path, perm, shellquote.Quote(path))
	case !fi.IsDir() && perm&0o022 != 0:
		return fmt.Errorf("%s may be written by others (mode %v): hiro does not act on it; chmod go-w %s", path, perm, shellquote.Quote(path))
	}
	return nil
}

// CheckPath is Check for a path (following symbolic links).
func CheckPath(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return Check(path, fi)
}

// EnsureDir creates dir (DirMode) when missing and checks that it is a
// folder (not a symbolic link) owned by the current user; a folder of the
// user's with a wider mode is narrowed to DirMode. what names the folder
// in errors ("lease folder").
func EnsureDir(dir, what string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is not a folder (%v); remove it", what, dir, fi.Mode().Type())
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s %s is owned by uid %d, not by you (uid %d): hiro keeps it private; use a folder of your own", what, dir, st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		if err := os.Chmod(dir, DirMode); err != nil {
			return fmt.Errorf("%s %s has mode %v and cannot be made private: %w", what, dir, fi.Mode().Perm(), err)
		}
	}
	return nil
}
