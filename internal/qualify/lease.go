package qualify

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Lease says that a campaign stopped production and has not restored it
// yet. It is written before production is stopped and removed only after
// production is restored and verified, so a hiro killed in between
// (SIGKILL, power loss) leaves it behind for the next hiro to act on.
type Lease struct {
	// Campaign is the evidence id; EvidenceDir where its evidence is.
	Campaign    string `json:"campaign"`
	EvidenceDir string `json:"evidence_dir"`
	// Config is the absolute path of the configuration holding the
	// production profile; Production its name.
	Config     string `json:"config"`
	Production string `json:"production"`
	// Candidate is the profile under test: a killed campaign may have
	// left it running, and it must stop before production comes back.
	Candidate string `json:"candidate"`
	// PID and PIDStart identify the hiro that holds the lease (start time
	// in clock ticks since boot, /proc/PID/stat field 22), so a reused pid
	// is not mistaken for the owner.
	PID      int       `json:"pid"`
	PIDStart uint64    `json:"pid_start"`
	Created  time.Time `json:"created"`
	// Path is where the lease file is (not stored).
	Path string `json:"-"`
}

// LeaseDir returns the directory of leases: $HIRO_LEASE_DIR, else
// $XDG_STATE_HOME/hiro/leases, else ~/.local/state/hiro/leases. It is per
// user, not per configuration, so that any later hiro command finds a
// lease whatever configuration it was given.
func LeaseDir() string {
	if d := os.Getenv("HIRO_LEASE_DIR"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "hiro", "leases")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(os.TempDir(), "hiro-leases-"+strconv.Itoa(os.Getuid()))
	}
	return filepath.Join(home, ".local", "state", "hiro", "leases")
}

// leaseFile is the lease's file name: one per configuration and
// production profile, so two campaigns cannot both hold production.
func leaseFile(dir, cfgPath, production string) string {
	key := strings.NewReplacer("/", "_", ".", "_").Replace(strings.TrimPrefix(cfgPath, "/"))
	return filepath.Join(dir, key+"--"+production+".json")
}

// writeLease writes l atomically; it fails when a live campaign already
// holds production.
func writeLease(dir string, l *Lease) error {
	l.Path = leaseFile(dir, l.Config, l.Production)
	if old, err := readLease(l.Path); err == nil && old.OwnerAlive() && old.PID != os.Getpid() {
		return fmt.Errorf("production %s is held by campaign %s (hiro pid %d, lease %s); wait for it or stop that hiro", l.Production, old.Campaign, old.PID, l.Path)
	}
	return atomicfile.WriteJSON(l.Path, l)
}

func readLease(path string) (*Lease, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var l Lease
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("lease %s is not valid JSON: %w; remove it once production is known to be running", path, err)
	}
	l.Path = path
	return &l, nil
}

// Leases lists the leases in dir.
func Leases(dir string) ([]*Lease, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	var out []*Lease
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		l, err := readLease(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// OwnerAlive reports whether the hiro that wrote the lease still runs.
func (l *Lease) OwnerAlive() bool {
	st, ok := supervisor.StartTicks(l.PID)
	return ok && st == l.PIDStart
}

// selfLease fills the owner fields for this process.
func selfLease(l *Lease) {
	l.PID = os.Getpid()
	l.PIDStart, _ = supervisor.StartTicks(l.PID)
	l.Created = time.Now().UTC()
}
