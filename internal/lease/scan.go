package lease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/procfs"
)

// SetAsideDir is the folder, inside the lease folder, where Scan moves
// lease files it cannot read, so that they stop blocking every command
// while staying available to a person.
const SetAsideDir = "set-aside"

// Found is a lease file's state as Scan saw it.
type Found struct {
	// Lease is the record (nil for an empty file or an unreadable one).
	Lease *Lease
	// Path is the file.
	Path string
	// Live says a running hiro holds the lock on it.
	Live bool
	// Err says why the file was refused or set aside.
	Err error
}

// Scan reads every lease file in dir. Live ones are reported as such. An
// unlocked empty file (a holder that died before writing its record) and
// an unlocked command lease are removed. An unlocked file that cannot be
// read is moved to SetAsideDir and reported with Err, without stopping the
// others. Files not owned by the user or writable by others are reported
// with Err and left alone. Unlocked campaign leases (their holder died
// with production in its care) are returned, grouped by campaign, for
// recovery; Found.Lease.Paths lists all of a campaign's files.
func Scan(dir string) (dead []*Lease, found []Found, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := EnsurePrivateDir(dir); err != nil {
		return nil, nil, err
	}
	byCampaign := map[string]*Lease{}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".lease") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		fd := Found{Path: path}
		f, err := os.OpenFile(path, os.O_RDWR|syscallNoFollow, 0)
		if err != nil {
			fd.Err = fmt.Errorf("lease %s: %w", path, err)
			found = append(found, fd)
			continue
		}
		fi, err := f.Stat()
		if err == nil {
			err = CheckOwned(path, fi)
		}
		if err != nil {
			f.Close()
			fd.Err = fmt.Errorf("lease refused: %w", err)
			found = append(found, fd)
			continue
		}
		l, derr := decode(f)
		fd.Lease = l
		if lerr := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); lerr != nil {
			f.Close()
			fd.Live = true
			found = append(found, fd)
			continue
		}
		// Unlocked: its holder is gone.
		switch {
		case derr != nil:
			fd.Err = fmt.Errorf("lease %s cannot be read (%v): moved to %s; check production by hand", path, derr, filepath.Join(dir, SetAsideDir))
			setAside(dir, path)
		case l == nil || l.Kind != KindCampaign:
			os.Remove(path)
		default:
			l.Paths = []string{path}
			key := l.Campaign + "\x00" + fmt.Sprint(l.PID, l.PIDStart)
			if o := byCampaign[key]; o != nil {
				o.Paths = append(o.Paths, path)
			} else {
				byCampaign[key] = l
				dead = append(dead, l)
			}
		}
		f.Close()
		found = append(found, fd)
	}
	sort.Slice(dead, func(i, j int) bool { return dead[i].Created.Before(dead[j].Created) })
	return dead, found, nil
}

func setAside(dir, path string) {
	d := filepath.Join(dir, SetAsideDir)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return
	}
	dst := filepath.Join(d, filepath.Base(path)+"."+time.Now().UTC().Format("20060102T150405.000000000Z"))
	_ = os.Rename(path, dst)
}

// Claim takes over a dead campaign's lease for recovery: it locks every
// file of l (failing with *HeldError when another hiro was faster), checks
// they still hold the same campaign, and records this process as the
// holder (Recovering set). Release it once production is back, Abandon it
// when it could not be restored.
func Claim(l *Lease) (*Hold, error) {
	h := &Hold{lease: l}
	for _, p := range l.Paths {
		f, err := lockFile(p, false)
		if err != nil {
			h.close()
			return nil, err
		}
		h.files = append(h.files, f)
		h.paths = append(h.paths, p)
		cur, err := decode(f)
		if err != nil || cur == nil || cur.Campaign != l.Campaign {
			h.close()
			return nil, fmt.Errorf("lease %s changed while being claimed; retry", p)
		}
	}
	prev := *l
	l.Self()
	// The holder that died first (the campaign's hiro) stays named after
	// a recovery that failed: a second recoverer takes the lease over
	// from the first, not from the campaign.
	if l.RecoveredFrom = prev.RecoveredFrom; l.RecoveredFrom == nil {
		l.RecoveredFrom = &Previous{PID: prev.PID, PIDStart: prev.PIDStart, Created: prev.Created}
	} else {
		l.RecoveredFrom.FailedRecoveries = append(l.RecoveredFrom.FailedRecoveries, prev.PID)
	}
	l.Paths = h.paths
	if err := h.write(); err != nil {
		h.Abandon()
		return nil, err
	}
	return h, nil
}

// Previous identifies the holder a recovery took a lease over from: the
// first one that died with it (the campaign's hiro), however many
// recoveries failed since.
type Previous struct {
	PID      int       `json:"pid"`
	PIDStart uint64    `json:"pid_start"`
	Created  time.Time `json:"created"`
	// FailedRecoveries are the pids of the hiro commands whose recovery
	// of the lease failed (production could not be restored), in order.
	FailedRecoveries []int `json:"failed_recoveries,omitempty"`
}

// OriginalPID is the pid of the hiro that took the lease first (the
// campaign's), whichever hiro holds it now.
func (l *Lease) OriginalPID() int {
	if l.RecoveredFrom != nil {
		return l.RecoveredFrom.PID
	}
	return l.PID
}

// Left describes, for a person, the holder that died with the lease:
// the campaign (its id, its hiro's pid, where its evidence is) and the
// recoveries that failed since, by the pid of the hiro that tried.
func (l *Lease) Left() string {
	if l.Kind != KindCampaign || l.Campaign == "" {
		return l.Holder()
	}
	s := fmt.Sprintf("campaign %s (hiro pid %d, candidate %s, configuration %s", l.Campaign, l.OriginalPID(), l.Candidate, l.Config)
	if l.EvidenceDir != "" {
		s += "; evidence in " + l.EvidenceDir
	}
	if l.RecoveredFrom != nil {
		// The holder now is the last recoverer, whose restore failed.
		tried := append(append([]int(nil), l.RecoveredFrom.FailedRecoveries...), l.PID)
		s += fmt.Sprintf("; %s failed: %s", plural(len(tried), "a recovery", "recoveries"), pids(tried))
	}
	return s + ")"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func pids(ps []int) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = fmt.Sprintf("hiro pid %d", p)
	}
	return strings.Join(out, ", ")
}

// List returns the records of the lease files in dir, one per holder
// (a campaign holds several keys), live or not, changing nothing. Empty
// files are skipped; an unreadable one is an error.
func List(dir string) ([]*Lease, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	seen := map[string]*Lease{}
	var out []*Lease
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".lease") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			return out, err
		}
		l, err := decode(f)
		f.Close()
		if err != nil {
			return out, fmt.Errorf("lease %s: %w", path, err)
		}
		if l == nil {
			continue
		}
		key := l.Campaign + "\x00" + l.Command + "\x00" + fmt.Sprint(l.PID, l.PIDStart)
		if o := seen[key]; o != nil {
			o.Paths = append(o.Paths, path)
			continue
		}
		l.Paths = []string{path}
		seen[key] = l
		out = append(out, l)
	}
	return out, nil
}

// OwnerAlive reports whether the process that wrote the record still runs
// (its pid is alive with the recorded start time).
func (l *Lease) OwnerAlive() bool {
	st, ok := procfs.StartTicks(l.PID)
	return ok && st == l.PIDStart
}

// HeldBy returns the record of the live holder of key in dir, or nil when
// no running hiro holds it. It takes no lock (a probe must not make a
// concurrent Acquire fail): a holder writes its record only while it holds
// the lock and removes the file when it releases it, so a record whose
// writer still runs is a live hold.
func HeldBy(dir, key string) *Lease {
	f, err := os.Open(fileName(dir, key))
	if err != nil {
		return nil
	}
	defer f.Close()
	l, err := decode(f)
	if err != nil || l == nil || !l.OwnerAlive() {
		return nil
	}
	return l
}

// Probe forecasts, taking no lock, whether Acquire(dir, l, exclusive...)
// and AcquireShared(dir, k) for each k of shared would be refused now for
// a live holder: it returns the *HeldError they would (the first key in
// Acquire's order), or nil. A key's live holder is its record (HeldBy);
// the accelerator taken alone is also held by a live campaign that uses
// it beside others (its record says SharesAccelerator). A hiro that takes
// a key after the probe is still refused by Acquire itself; a key left by
// a dead campaign is Acquire's to refuse (recover first), not the probe's.
func Probe(dir string, exclusive, shared []string) error {
	for _, k := range uniqueSorted(exclusive) {
		if l := HeldBy(dir, k); l != nil {
			return &HeldError{Key: k, Holder: l}
		}
		if k == AcceleratorKey {
			if l := sharedHolder(dir); l != nil {
				return &HeldError{Key: k, Holder: l}
			}
		}
	}
	for _, k := range uniqueSorted(shared) {
		if l := HeldBy(dir, k); l != nil {
			return &HeldError{Key: k, Holder: l}
		}
	}
	return nil
}
