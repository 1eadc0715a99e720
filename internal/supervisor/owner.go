package supervisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/procfs"
)

// ThisHiro is this process as a record's Owner: its pid, its start time
// (clock ticks since boot, /proc) and what (default its command line);
// nil when /proc does not give its start time.
func ThisHiro(what string) *Owner {
	t, ok := procfs.StartTicks(os.Getpid())
	if !ok {
		return nil
	}
	if what == "" {
		what = "'hiro " + strings.Join(os.Args[1:], " ") + "'"
	}
	return &Owner{PID: os.Getpid(), StartTicks: t, What: what}
}

// StopNote says which hiro stopped a recorded process that another live
// hiro watched (Record.Owner): written by StopRecorded and StopRecord
// before the first signal, in <state>/backends/stops/<name>.json, so
// that the watching hiro, which sees only an exit (code 0 after a
// SIGTERM), can say who stopped it instead of "the engine ended by
// itself" (StoppedBy).
type StopNote struct {
	// PID and StartTicks are the stopped process (its record's).
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
	// By is the hiro that stopped it; At when it began to.
	By Owner     `json:"by"`
	At time.Time `json:"at"`
}

func stopNotePath(stateDir, name string) string {
	return filepath.Join(recordDir(stateDir), "stops", name+".json")
}

// noteStop writes the StopNote of r when a live hiro other than this
// one watches it (r.OwnerAlive); best effort: a note that cannot be
// written only makes the watcher's account vaguer.
func noteStop(stateDir string, r Record) {
	if !r.OwnerAlive() {
		return
	}
	by := ThisHiro("")
	if by == nil {
		return
	}
	b, err := json.Marshal(StopNote{PID: r.PID, StartTicks: r.StartTicks, By: *by, At: time.Now().UTC()})
	if err != nil {
		return
	}
	dir := filepath.Dir(stopNotePath(stateDir, r.Name))
	if private.EnsureDir(dir, recordFolder) != nil {
		return
	}
	_ = atomicfile.WriteFile(stopNotePath(stateDir, r.Name), b, private.FileMode)
}

// StoppedBy returns the StopNote another hiro left when it stopped
// name's process pid, started at startedAt (the note is later), and
// removes it; ok is false when none names that process (it ended by
// itself, or was signalled by something that is not hiro).
func StoppedBy(stateDir, name string, pid int, startedAt time.Time) (StopNote, bool) {
	var n StopNote
	p := stopNotePath(stateDir, name)
	if pid <= 0 || private.CheckPath(p) != nil {
		return n, false
	}
	b, err := os.ReadFile(p)
	if err != nil || json.Unmarshal(b, &n) != nil || n.PID != pid || n.At.Before(startedAt.Add(-time.Second)) {
		return StopNote{}, false
	}
	_ = os.Remove(p)
	return n, true
}
