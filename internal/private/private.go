// Package private checks and creates the files and folders hiro trusts:
// records, leases, configurations and private evidence must belong to the
// user running hiro and be writable by no one else, and the folders that
// hold state are 0700. It stands on leaves only: it imports no other hiro
// package than shellquote (itself a leaf), and touches nothing it is
// not asked to.
package private

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
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
		return fmt.Errorf("%s is owned by %s, not by you (uid %d): hiro does not act on another user's files; remove it or use your own", path, owner(st.Uid), uid)
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

// ReadFile reads the file at path after check (Check when nil) has
// accepted what the open file is, so a file swapped between the check
// and the read is never the one read. Errors: the open's, check's, the
// read's.
func ReadFile(path string, check func(path string, fi os.FileInfo) error) ([]byte, error) {
	if check == nil {
		check = Check
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(path, fi); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// CheckPath is Check for a path (following symbolic links).
func CheckPath(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return Check(path, fi)
}

// owner names uid for a message: "uid 65534 (nobody)".
func owner(uid uint32) string {
	s := "uid " + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}

// EnsureDir creates dir (DirMode, parents too) when missing and checks it
// (CheckDir). what names the folder in errors ("log folder").
func EnsureDir(dir, what string) error { return ensureDir(dir, what, "") }

// CheckDir checks that dir is a real folder (not a symbolic link) owned by
// the current user that neither its group nor others may write; one of the
// user's own that others may only read or enter is narrowed to DirMode.
// what names the folder in errors. A missing folder is an error wrapping
// fs.ErrNotExist: readers treat it as empty.
func CheckDir(dir, what string) error { return checkDir(dir, what, "", true) }

// CheckFolder is CheckDir that changes nothing: a folder others may read
// is accepted as it is. For the folder of a file hiro acts on but does not
// own the layout of (evidence passed to activate).
func CheckFolder(dir, what string) error { return checkDir(dir, what, "", false) }

func ensureDir(dir, what, fix string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("%s %s cannot be created: %w%s", what, dir, err, fix)
	}
	return checkDir(dir, what, fix, true)
}

// checkDir is CheckDir; fix ends the refusals with how to use another
// folder ("; or set HIRO_LEASE_DIR to ..."); narrow says to make a folder
// others may read 0700.
func checkDir(dir, what, fix string, narrow bool) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	q := shellquote.Quote(dir)
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("%s %s is a symbolic link: hiro keeps its state only in a real folder, so no one can point it elsewhere; name the folder it points to instead%s", what, dir, fix)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s %s is not a folder (%v); remove it%s", what, dir, fi.Mode().Type(), fix)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s %s is owned by %s, not by you (uid %d): hiro keeps its state only in a folder of your own and acts on nothing in this one; remove it%s", what, dir, owner(st.Uid), os.Getuid(), fix)
	}
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 {
		return fmt.Errorf("%s %s may be written by its group or others (mode %v): anything in it could have been planted, so hiro does not act on it; check what it holds, then chmod 700 %s%s", what, dir, perm, q, fix)
	}
	if narrow && perm&0o077 != 0 {
		if err := os.Chmod(dir, DirMode); err != nil {
			return fmt.Errorf("%s %s has mode %v and cannot be made private: %w%s", what, dir, perm, err, fix)
		}
	}
	return nil
}

// Folder is one of the folders hiro keeps state in, under the user's
// private state home (StateHome) unless its own variable names it.
type Folder struct {
	// What names it in messages ("lease folder").
	What string
	// Env is the variable that names the folder itself ("" for none).
	Env string
	// Sub is its name under the state home.
	Sub string
	// Machine marks a folder of what the machine has once (the lease of a
	// TCP port, of the accelerator): only Env moves it, never the state
	// home (HIRO_STATE_HOME, XDG_STATE_HOME), so runs under different
	// state homes find one another's leases (issue 26 F6). Its place is
	// <home>/.local/state/hiro/<Sub> (UserStateHome).
	Machine bool
}

// The folders hiro keeps state in. Each is created 0700 and checked by
// Ensure; readers check with Check before trusting what is inside.
var (
	// Leases holds the lease files (package lease).
	// It is the user's, whatever state home a run uses (Machine).
	Leases = Folder{What: "lease folder", Env: "HIRO_LEASE_DIR", Sub: "leases", Machine: true}
	// Production holds the production records, lock and switch intents
	// (package production).
	Production = Folder{What: "production record folder", Env: "HIRO_PRODUCTION_DIR", Sub: "production"}
	// Control holds the router's control socket (package serve).
	Control = Folder{What: "control socket folder", Sub: "serve"}
	// Keys holds the signing key (package signing).
	Keys = Folder{What: "signing key folder", Env: "HIRO_KEY_DIR", Sub: "keys"}
)

// StateHomeEnv is the variable that names the private state home.
const StateHomeEnv = "HIRO_STATE_HOME"

// ErrNoStateHome is returned (wrapped) when no private state home can be
// found: there is no shared fallback such as the temporary folder.
var ErrNoStateHome = errors.New("no private state folder")

// StateHome returns the user's private state home: $HIRO_STATE_HOME, else
// $HIRO_LEASE_DIR (a private state for tests and trials: the folders other
// than the leases go beside them), else $XDG_STATE_HOME/hiro (an absolute
// one, as the XDG specification requires), else <home>/.local/state/hiro
// where <home> is $HOME or, when HOME is unset (a service unit), the
// user's home in the password database. Without any of them it is an
// error wrapping ErrNoStateHome that names the variable to set: hiro never
// falls back to a shared folder. It creates nothing.
func StateHome() (string, error) { return StateHomeOf(os.Getenv) }

// StateHomeOf is StateHome under the environment getenv reads (another
// process's, procfs.Environ: the state home a running router of this
// user chose). A relative folder is made absolute against this
// process's working folder.
func StateHomeOf(getenv func(string) string) (string, error) {
	for _, v := range []string{StateHomeEnv, Leases.Env} {
		if d := getenv(v); d != "" {
			return filepath.Abs(d)
		}
	}
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "hiro"), nil
	}
	return userStateHomeOf(StateHomeEnv, getenv)
}

// UserStateHome is the state home no state variable moves:
// <home>/.local/state/hiro, where <home> is $HOME or, when HOME is unset
// (a service unit), the user's home in the password database. The folders
// of what the machine has once (Folder.Machine: the leases) live under it.
// Without a home it is an error wrapping ErrNoStateHome. It creates
// nothing.
func UserStateHome() (string, error) { return userStateHome(StateHomeEnv) }

// userStateHome is UserStateHome; its error names v as the variable to set.
func userStateHome(v string) (string, error) { return userStateHomeOf(v, os.Getenv) }

// userStateHomeOf is userStateHome under the environment getenv reads.
func userStateHomeOf(v string, getenv func(string) string) (string, error) {
	home := getenv("HOME")
	if home == "" {
		if u, err := user.Current(); err == nil {
			home = u.HomeDir
		}
	}
	if home == "" || home == "/" || !filepath.IsAbs(home) {
		return "", fmt.Errorf("%w: HOME is unset and uid %d has no home folder in the password database; set %s to a folder only you can write (it is created 0700)", ErrNoStateHome, os.Getuid(), v)
	}
	return filepath.Join(home, ".local", "state", "hiro"), nil
}

// Path returns the folder without creating or checking it: $<Env> when
// set, else <StateHome>/<Sub> (<UserStateHome>/<Sub> for a Machine folder).
func (f Folder) Path() (string, error) {
	if f.Env != "" {
		if d := os.Getenv(f.Env); d != "" {
			return filepath.Abs(d)
		}
	}
	if f.Machine {
		home, err := userStateHome(f.Env)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.What, err)
		}
		return filepath.Join(home, f.Sub), nil
	}
	home, err := StateHome()
	if err != nil {
		if f.Env != "" {
			return "", fmt.Errorf("%s: %w (or set %s to the folder itself)", f.What, err, f.Env)
		}
		return "", fmt.Errorf("%s: %w", f.What, err)
	}
	return filepath.Join(home, f.Sub), nil
}

// Ensure returns the folder (Path), created 0700 when missing and checked:
// a symbolic link, a folder owned by another user or one its group or
// others may write is refused, the message naming the folder and the
// variable that names another; one others may only read is narrowed to
// 0700.
func (f Folder) Ensure() (string, error) {
	d, err := f.Path()
	if err != nil {
		return "", err
	}
	return d, ensureDir(d, f.What, f.fix())
}

// Check checks the folder (CheckDir) without creating it; a missing one is
// an error wrapping fs.ErrNotExist. It returns the path.
func (f Folder) Check() (string, error) {
	d, err := f.Path()
	if err != nil {
		return "", err
	}
	return d, checkDir(d, f.What, f.fix(), true)
}

// fix says how to use another folder.
func (f Folder) fix() string {
	v := StateHomeEnv
	switch {
	case f.Machine:
		v = f.Env
	case f.Env != "":
		v = f.Env + " (or " + StateHomeEnv + ")"
	}
	return "; or set " + v + " to a folder only you can write"
}

// CheckSocket checks that the Unix socket at path was made by the current
// user, in a folder that passes CheckDir: a client trusts what a socket
// says only when its own user's hiro could have made it. A missing socket
// is an error wrapping fs.ErrNotExist.
func CheckSocket(path, what string) error {
	if err := checkDir(filepath.Dir(path), what+" folder", "", false); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s %s is not a socket (%v); remove it", what, path, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("%s %s is owned by %s, not by you (uid %d): it was not made by your hiro, so nothing it says is trusted; remove it", what, path, owner(st.Uid), os.Getuid())
	}
	return nil
}
