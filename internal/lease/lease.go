package lease

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/procfs"
)

const syscallNoFollow = syscall.O_NOFOLLOW

// Schema names the format of a lease file's content.
const Schema = "hiro.lease/v1"

// AcceleratorKey is the key of the host's accelerator, taken by a campaign
// whose candidate needs it exclusively.
const AcceleratorKey = "accelerator"

// Kinds of holders.
const (
	// KindCampaign: a qualification campaign; when its owner dies with
	// the lease in place, production must be recovered.
	KindCampaign = "campaign"
	// KindCommand: a short command (backend start/stop); nothing to
	// recover when it dies.
	KindCommand = "command"
)

// Lease is the content of a lease file: who holds the resources and what
// a later hiro needs to put production back if that holder dies.
type Lease struct {
	Schema string `json:"schema"`
	// Kind is KindCampaign or KindCommand; Command names a command
	// ("hiro backend start prod").
	Kind    string `json:"kind"`
	Command string `json:"command,omitempty"`
	// Campaign is the evidence id; EvidenceDir where its evidence is.
	Campaign    string `json:"campaign,omitempty"`
	EvidenceDir string `json:"evidence_dir,omitempty"`
	// Config is the absolute path of the configuration naming production;
	// Production its profile name; Candidate the profile under test.
	Config     string `json:"config,omitempty"`
	Production string `json:"production,omitempty"`
	Candidate  string `json:"candidate,omitempty"`
	// Keys are the resources held (one lease file each).
	Keys []string `json:"keys"`
	// ProductionStopped says production was stopped (or not running) and
	// is this holder's to restore.
	ProductionStopped bool `json:"production_stopped,omitempty"`
	// SharesAccelerator says the holder also uses the accelerator beside
	// others (a shared hold, which has no record of its own): an exclusive
	// user refused the accelerator is told this holder's name.
	SharesAccelerator bool `json:"shares_accelerator,omitempty"`
	// UsesProduction is the base URL of the production a campaign whose
	// candidate runs beside it keeps using (its semantic baseline, its
	// shadow traffic), without holding production's key: 'hiro backend
	// stop' of that production is refused while the campaign lives.
	UsesProduction string `json:"uses_production,omitempty"`
	// Control is the control socket of a `hiro serve` holder (its
	// RouterKey lease): commands under another state home find the router
	// through it.
	Control string `json:"control,omitempty"`
	// PID, PGID and PIDStart identify the holder (start time in clock
	// ticks since boot, /proc/PID/stat field 22); UID is its user.
	PID      int       `json:"pid"`
	PGID     int       `json:"pgid"`
	PIDStart uint64    `json:"pid_start"`
	UID      int       `json:"uid"`
	Created  time.Time `json:"created"`
	// RecoveredFrom is set when a recovering hiro took the lease over
	// from a dead holder.
	RecoveredFrom *Previous `json:"recovered_from,omitempty"`
	// Restore is production's process while a restore is under way
	// (started, not yet proven ready), so that a restore cut short is
	// resumed instead of fought.
	Restore *Process `json:"restore,omitempty"`
	// Paths are the lease files (not stored).
	Paths []string `json:"-"`
}

// Self fills the owner fields (PID, PGID, PIDStart, UID, Created) for this
// process and sets Schema.
func (l *Lease) Self() {
	l.Schema = Schema
	l.PID = os.Getpid()
	l.PGID = syscall.Getpgrp()
	l.PIDStart, _ = procfs.StartTicks(l.PID)
	l.UID = os.Getuid()
	l.Created = time.Now().UTC()
}

// Process identifies a process beyond its pid: its process group and
// start time (clock ticks since boot) must match too.
type Process struct {
	PID        int    `json:"pid"`
	PGID       int    `json:"pgid"`
	StartTicks uint64 `json:"start_ticks"`
}

// Holder describes the lease's owner for a person.
func (l *Lease) Holder() string {
	who := fmt.Sprintf("hiro pid %d", l.PID)
	switch {
	case l.Kind == KindCampaign && l.Campaign != "":
		return fmt.Sprintf("campaign %s (%s, candidate %s, configuration %s)", l.Campaign, who, l.Candidate, l.Config)
	case l.Command != "":
		return fmt.Sprintf("'%s' (%s)", l.Command, who)
	}
	return who
}

// HeldError says a resource is held by another live hiro.
type HeldError struct {
	Key string
	// Holder is the holder's record; nil when the holder has not written
	// it yet (it is starting).
	Holder *Lease
}

func (e *HeldError) Error() string { return strings.Join(e.Lines(), "; ") }

// Lines is the refusal in two short lines, for a terminal: what is held,
// by whom since when; then what to do, with the command that stops that
// hiro. Error is the same joined on one line.
func (e *HeldError) Lines() []string {
	what := describeKey(e.Key)
	if e.Holder == nil {
		return []string{what + " is in use by another hiro (starting, or using it beside others)",
			"nothing was started or stopped: retry when it is done"}
	}
	stop := "stop that hiro first"
	if e.Holder.PID > 0 {
		stop = fmt.Sprintf("stop it first with kill -TERM %d", e.Holder.PID)
		if e.Holder.Kind == KindCampaign {
			stop += " (a campaign restores production before it exits)"
		}
	}
	return []string{fmt.Sprintf("%s is held by %s since %s", what, e.Holder.Holder(), e.Holder.Created.Format(time.RFC3339)),
		"nothing was started or stopped: run this again when it has finished, or " + stop}
}

// ErrHeld is matched by errors.Is for every *HeldError.
var ErrHeld = errors.New("resource held by another hiro")

// Is makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

func describeKey(key string) string {
	if key == AcceleratorKey {
		return "the accelerator"
	}
	if strings.HasPrefix(key, "production-") {
		// The key of an endpoint: production's, or a campaign's candidate's.
		hp := strings.TrimPrefix(key, "production-")
		if i := strings.LastIndexByte(hp, '-'); i > 0 {
			hp = hp[:i] + ":" + hp[i+1:]
		}
		return "the server at " + hp
	}
	return key
}

// sharedHolder returns the record of a live holder in dir that uses the
// accelerator beside others (SharesAccelerator), or nil when none is
// known (a shared user that writes no record, or one still starting).
func sharedHolder(dir string) *Lease {
	ls, err := List(dir)
	if err != nil {
		return nil
	}
	for _, l := range ls {
		if l.SharesAccelerator && l.OwnerAlive() {
			return l
		}
	}
	return nil
}

// ProductionKey is the key of the server at baseURL: its host (localhost
// and 0.0.0.0 count as 127.0.0.1) and port, whatever profile or
// configuration file names it.
func ProductionKey(baseURL string) string {
	u, err := url.Parse(baseURL)
	host, port := baseURL, ""
	if err == nil && u.Host != "" {
		host, port = u.Hostname(), u.Port()
		if port == "" {
			port = map[string]string{"https": "443"}[u.Scheme]
			if port == "" {
				port = "80"
			}
		}
	}
	host = strings.ToLower(host)
	switch host {
	case "localhost", "0.0.0.0", "::", "::1", "":
		host = "127.0.0.1"
	}
	return "production-" + sanitize(host) + "-" + sanitize(port)
}

// RouterKey is the key a `hiro serve` holds for the production it serves
// at baseURL: one router per production endpoint (two would both restart
// it, each seeing the other's engine on the port as a failure).
func RouterKey(baseURL string) string { return "router-" + ProductionKey(baseURL) }

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, strings.ToLower(s))
}

// fileName is the lease file of key in dir.
func fileName(dir, key string) string { return filepath.Join(dir, sanitize(key)+".lease") }

// Dir returns the private lease folder of the user, created 0700 when
// missing and checked (private.Leases): $HIRO_LEASE_DIR, else
// ~/.local/state/hiro/leases (private.UserStateHome: $HOME, the password
// database's home when HOME is unset) whatever the state home: a lease is
// of what the machine has once (a port, the accelerator), so runs under
// different HIRO_STATE_HOME or XDG_STATE_HOME values see one another's.
// There is no shared fallback (no /tmp): without a home it is an error
// naming HIRO_LEASE_DIR. A folder owned by
// another user, or that its group or others may write, is refused.
func Dir() (string, error) { return private.Leases.Ensure() }

// EnsurePrivateDir creates dir (0700) when missing and checks that it is
// a real folder owned by the current user that no one else may write
// (package private).
func EnsurePrivateDir(dir string) error { return private.EnsureDir(dir, private.Leases.What) }

// CheckOwned returns an error when the file described by fi (at path) is
// not owned by the current user or may be written by others (package
// private). Records, leases and configurations that hiro acts on pass it.
func CheckOwned(path string, fi os.FileInfo) error { return private.Check(path, fi) }

// CheckOwnedPath is CheckOwned for a path (following symbolic links).
func CheckOwnedPath(path string) error { return private.CheckPath(path) }

// Hold is a set of held keys. Its methods are not safe for concurrent use.
type Hold struct {
	lease *Lease
	files []*os.File
	paths []string
	// shared holds do not own the files: Release leaves them in place.
	shared bool
}

// Lease returns the held record.
func (h *Hold) Lease() *Lease { return h.lease }

// Acquire takes every key for l, all or none: each key's file is created
// when missing and locked (flock, non-blocking); then l (with Self's
// fields filled and Keys set) is written into each. It fails with a
// *HeldError when another live hiro holds a key, releasing what it took.
// A key whose file was left by a dead campaign is held too: recover it
// first (Scan, Claim).
func Acquire(dir string, l *Lease, keys ...string) (*Hold, error) {
	if err := EnsurePrivateDir(dir); err != nil {
		return nil, err
	}
	keys = uniqueSorted(keys) // one order everywhere: no lock-order surprises
	h := &Hold{lease: l}
	l.Self()
	l.Keys = keys
	for _, k := range keys {
		path := fileName(dir, k)
		f, err := lockFile(path, true)
		if err != nil {
			h.Release() // the keys taken so far hold our record: remove it
			var held *HeldError
			if errors.As(err, &held) {
				held.Key = k
				if held.Holder == nil && k == AcceleratorKey {
					// Shared users write no record on the key itself:
					// name one of them from its own record.
					held.Holder = sharedHolder(dir)
				}
			}
			return nil, err
		}
		h.files = append(h.files, f)
		h.paths = append(h.paths, path)
		if old, err := decode(f); err == nil && old != nil && old.Kind == KindCampaign {
			// Unlocked, with a record: its holder died with production in
			// its care. That is recovery's to settle, not ours to take:
			// this file stays; the ones taken before it are removed.
			f.Close()
			h.files, h.paths = h.files[:len(h.files)-1], h.paths[:len(h.paths)-1]
			h.Release()
			return nil, fmt.Errorf("%s was left by %s, which died before putting production back; run 'hiro recover' first", describeKey(k), old.Left())
		}
		// The record goes in at once: a racer refused this key names us.
		if err := writeRecord(f, path, l); err != nil {
			h.Release()
			return nil, err
		}
	}
	l.Paths = h.paths
	if err := h.write(); err != nil {
		h.Release()
		return nil, err
	}
	return h, nil
}

// lockFile opens (creating, 0600) and locks path. The lock is taken on the
// file the path names after locking: a file unlinked by its releaser in
// between is not taken.
func lockFile(path string, create bool) (*os.File, error) {
	return lockFileMode(path, create, unix.LOCK_EX)
}

// AcquireShared takes key in shared mode for a user that needs the
// resource but not alone (a non-exclusive candidate on the accelerator):
// any number of shared holders at once, none beside an exclusive holder.
// It fails with a *HeldError naming the exclusive holder; an exclusive
// Acquire fails while shared holders remain. Shared holders write no
// record; Release only unlocks.
func AcquireShared(dir, key string) (*Hold, error) {
	if err := EnsurePrivateDir(dir); err != nil {
		return nil, err
	}
	f, err := lockFileMode(fileName(dir, key), true, unix.LOCK_SH)
	if err != nil {
		var held *HeldError
		if errors.As(err, &held) {
			held.Key = key
		}
		return nil, err
	}
	return &Hold{lease: &Lease{Keys: []string{key}}, files: []*os.File{f}, paths: []string{fileName(dir, key)}, shared: true}, nil
}

func lockFileMode(path string, create bool, mode int) (*os.File, error) {
	flags := os.O_RDWR | syscallNoFollow
	if create {
		flags |= os.O_CREATE
	}
	for i := 0; i < 50; i++ {
		f, err := os.OpenFile(path, flags, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lease %s: %w", path, err)
		}
		fi, err := f.Stat()
		if err == nil {
			err = CheckOwned(path, fi)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lease: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), mode|unix.LOCK_NB); err != nil {
			holder, _ := decode(f)
			for i := 0; holder == nil && i < 20 && errors.Is(err, unix.EWOULDBLOCK); i++ {
				// The holder locked the file an instant ago and is writing
				// its record: wait for it (bounded) so the refusal names it.
				time.Sleep(5 * time.Millisecond)
				holder, _ = decode(f)
			}
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, &HeldError{Holder: holder}
			}
			return nil, fmt.Errorf("lease %s: lock: %w", path, err)
		}
		// Still the file the path names? (Release unlinks, then unlocks.)
		cur, err := os.Lstat(path)
		if err == nil && os.SameFile(cur, fi) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("lease %s: the file keeps being replaced; retry", path)
}

// decode reads a lease file's record from f; nil, nil for an empty file.
func decode(f *os.File) (*Lease, error) {
	b, err := readAllAt(f)
	if err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var l Lease
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("not a lease record: %w", err)
	}
	if l.Schema != Schema {
		return nil, fmt.Errorf("schema %q, want %q", l.Schema, Schema)
	}
	return &l, nil
}

func readAllAt(f *os.File) ([]byte, error) {
	var buf bytes.Buffer
	b := make([]byte, 4096)
	var off int64
	for {
		n, err := f.ReadAt(b, off)
		buf.Write(b[:n])
		off += int64(n)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return nil, err
			}
			break
		}
		if buf.Len() > 1<<20 {
			return nil, errors.New("lease file larger than 1 MiB")
		}
	}
	return buf.Bytes(), nil
}

// write rewrites every held file with the record, in place (the lock is
// on the inode: no rename), and syncs it.
func (h *Hold) write() error {
	b, err := json.MarshalIndent(h.lease, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	for i, f := range h.files {
		if err := writeBytes(f, h.paths[i], b); err != nil {
			return err
		}
	}
	return nil
}

// writeRecord writes l into the locked file f (at path).
func writeRecord(f *os.File, path string, l *Lease) error {
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return writeBytes(f, path, append(b, '\n'))
}

func writeBytes(f *os.File, path string, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("lease %s: %w", path, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("lease %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("lease %s: %w", path, err)
	}
	return nil
}

// Update changes the record with fn and rewrites it.
func (h *Hold) Update(fn func(*Lease)) error {
	fn(h.lease)
	return h.write()
}

// Release removes the lease files, then unlocks them: the resources are
// free. Use it once production is back (or was never touched).
func (h *Hold) Release() error {
	if h == nil {
		return nil
	}
	if h.shared {
		h.close()
		return nil
	}
	var errs []error
	for _, p := range h.paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	h.close()
	return errors.Join(errs...)
}

// Abandon unlocks the files and leaves them in place: production is down
// and a later hiro must recover it (Scan finds the record).
func (h *Hold) Abandon() {
	if h != nil {
		h.close()
	}
}

func (h *Hold) close() {
	for _, f := range h.files {
		f.Close()
	}
	h.files, h.paths = nil, nil
}

func uniqueSorted(keys []string) []string {
	m := map[string]bool{}
	var out []string
	for _, k := range keys {
		if k != "" && !m[k] {
			m[k] = true
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
