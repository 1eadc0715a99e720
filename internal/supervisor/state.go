package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

// RecordSchema names the format of a state record.
const RecordSchema = "hiro.backend-record/v1"

// Record is the state directory's account of one running backend, written
// by Detach to <state>/backends/<name>.json (atomically) so that a later
// hiro can report on it and stop it.
type Record struct {
	Schema string `json:"schema"`
	// Name is the profile name; Engine its kind; Model the expected id.
	Name   string `json:"name"`
	Engine string `json:"engine"`
	Model  string `json:"model"`
	// PID leads process group PGID (equal: the engine was started with
	// Setpgid).
	PID  int `json:"pid"`
	PGID int `json:"pgid"`
	// StartTicks is the process start time from /proc/PID/stat (clock
	// ticks since boot): a pid reused by another process has another.
	StartTicks uint64 `json:"start_ticks"`
	// SID is the leader's session id at start (0 in older records): the
	// group's surviving members share it (see Leftovers).
	SID int `json:"sid,omitempty"`
	// Port and BaseURL the engine serves on.
	Port    int    `json:"port"`
	BaseURL string `json:"base_url"`
	// LogPath is the attempt's log file.
	LogPath string `json:"log_path"`
	// ProfileHash is config.Profile.Hash at start: a changed profile is
	// noticed.
	ProfileHash string `json:"profile_hash"`
	// StopGraceMS is the profile's stop grace at start, in milliseconds.
	StopGraceMS int64 `json:"stop_grace_ms"`
	// StartedAt is when the process was started; ReadyAt when it was
	// declared ready.
	StartedAt time.Time `json:"started_at"`
	ReadyAt   time.Time `json:"ready_at"`
	// Owner is the hiro that launched the engine and watches it, from
	// Start until Detach (nil after: the engine runs on its own, as after
	// 'hiro backend start'; nil in older records). While it lives
	// (OwnerAlive) the engine is that hiro's, not a leftover: another
	// hiro sharing the state_dir (under another HOME, whose lease folder
	// it does not see) is told who runs it instead of to stop it.
	Owner *Owner `json:"owner,omitempty"`
}

// Owner identifies a hiro process beyond its pid (the start time, in
// clock ticks since boot, must match too) and says what it is doing for
// a person: "campaign <id>", or its command line.
type Owner struct {
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
	What       string `json:"what"`
}

// OwnerAlive reports whether r's Owner is a live process, the one
// recorded (its start time matches), other than this one.
func (r Record) OwnerAlive() bool {
	o := r.Owner
	if o == nil || o.PID <= 0 || o.StartTicks == 0 || o.PID == os.Getpid() {
		return false
	}
	s, err := procfs.ReadStat(o.PID)
	return err == nil && s.Alive() && s.StartTicks == o.StartTicks
}

// Status values of a RecordStatus.
const (
	// StatusRunning: the recorded process is alive and is the one recorded.
	StatusRunning = "running"
	// StatusStale: the record's process is gone, or its pid now belongs to
	// another process. The record is never trusted.
	StatusStale = "stale"
)

// RecordStatus is a record checked against /proc.
type RecordStatus struct {
	Record
	// Status is StatusRunning or StatusStale; Reason says why stale.
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	// ProcessesInGroup counts live processes of the recorded group.
	ProcessesInGroup int `json:"processes_in_group"`
	// RecordPath is the record's file.
	RecordPath string `json:"record_path"`
}

// ErrNoRecord is returned (wrapped) when no backend of that name is
// recorded in the state directory.
var ErrNoRecord = errors.New("no record of a running backend")

func recordDir(stateDir string) string { return filepath.Join(stateDir, "backends") }

// recordFolder names the record folder in messages; the fix (state_dir)
// follows.
const recordFolder = "state record folder (state_dir)"

func recordPath(stateDir, name string) string {
	return filepath.Join(recordDir(stateDir), name+".json")
}

// Record returns the state record of the running process, ready to write.
func (p *Process) Record() Record {
	r := Record{
		Schema: RecordSchema, Name: p.profile.Name, Engine: p.profile.Engine, Model: p.profile.Model,
		PID: p.PID(), PGID: p.PID(), Port: p.port, BaseURL: p.profile.BaseURL, LogPath: p.logPath,
		ProfileHash: p.profile.Hash(), StopGraceMS: p.profile.StopGrace.Milliseconds(), StartedAt: p.startedAt, ReadyAt: time.Now(),
	}
	if s, err := procfs.ReadStat(r.PID); err == nil {
		r.StartTicks, r.SID = s.StartTicks, s.SID
	}
	r.Owner = ThisHiro(p.owner)
	return r
}

// Detach writes the process's state record and leaves it running: hiro
// may exit, the engine keeps serving, and a later hiro finds it with
// Status and stops it with StopRecorded. The log file is no longer
// followed. Errors: writing the record (the process is left running).
func (p *Process) Detach() (Record, error) {
	r := p.Record()
	r.Owner = nil // no hiro watches it any more
	p.fl.close()
	return r, WriteRecord(p.stateDir, r)
}

// WriteRecord writes r to <stateDir>/backends/<r.Name>.json atomically:
// a temporary file in the same directory, fsync, rename.
func WriteRecord(stateDir string, r Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := private.EnsureDir(recordDir(stateDir), recordFolder); err != nil {
		return fmt.Errorf("writing the state record: %w", err)
	}
	if err := atomicfile.WriteFile(recordPath(stateDir, r.Name), append(b, '\n'), private.FileMode); err != nil {
		return fmt.Errorf("writing the state record: %w; check state_dir", err)
	}
	return nil
}

// ReadRecord reads the record of name. Errors wrap ErrNoRecord when there
// is none.
func ReadRecord(stateDir, name string) (Record, error) {
	var r Record
	if err := private.CheckDir(recordDir(stateDir), recordFolder); err != nil && !errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("state record refused: %w", err)
	}
	b, err := os.ReadFile(recordPath(stateDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return r, fmt.Errorf("backend %s: %w in %s (start it with 'hiro backend start %s')", name, ErrNoRecord, recordDir(stateDir), shellquote.Quote(name))
	}
	if err != nil {
		return r, err
	}
	if err := private.CheckPath(recordPath(stateDir, name)); err != nil {
		return r, fmt.Errorf("state record refused: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("state record %s is not valid JSON: %w; remove it", recordPath(stateDir, name), err)
	}
	return r, nil
}

// Status checks the record of name against /proc: running when the pid
// is alive, leads the recorded group and has the recorded start time;
// stale otherwise, with the reason.
func Status(stateDir, name string) (RecordStatus, error) {
	r, err := ReadRecord(stateDir, name)
	if err != nil {
		return RecordStatus{}, err
	}
	return checkRecord(stateDir, r), nil
}

// StatusAll checks every record in the state directory, sorted by name.
func StatusAll(stateDir string) ([]RecordStatus, error) {
	err := private.CheckDir(recordDir(stateDir), recordFolder)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state records refused: %w", err)
	}
	ents, err := os.ReadDir(recordDir(stateDir))
	if err != nil {
		return nil, err
	}
	var out []RecordStatus
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".json") {
			continue
		}
		st, err := Status(stateDir, strings.TrimSuffix(n, ".json"))
		if err != nil {
			return out, err
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func checkRecord(stateDir string, r Record) RecordStatus {
	st := RecordStatus{Record: r, RecordPath: recordPath(stateDir, r.Name)}
	s, err := procfs.ReadStat(r.PID)
	switch {
	case err != nil || !s.Alive():
		st.Status, st.Reason = StatusStale, fmt.Sprintf("process %d is gone", r.PID)
	case r.StartTicks == 0 || r.PGID <= 0:
		st.Status, st.Reason = StatusStale, fmt.Sprintf("the record of pid %d has no start time or process group: hiro cannot prove the process is the one it started, so it is not acted on", r.PID)
	case s.StartTicks != r.StartTicks:
		st.Status, st.Reason = StatusStale, fmt.Sprintf("pid %d now belongs to another process (%s, started at tick %d, not %d)", r.PID, s.Comm, s.StartTicks, r.StartTicks)
	case s.PGID != r.PGID:
		st.Status, st.Reason = StatusStale, fmt.Sprintf("pid %d is no longer in process group %d", r.PID, r.PGID)
	default:
		st.Status = StatusRunning
	}
	if st.Status == StatusRunning {
		st.ProcessesInGroup = len(procfs.GroupMembers(r.PGID))
	} else if n := len(Leftovers(r)); n > 0 {
		st.ProcessesInGroup = n
		st.Reason += fmt.Sprintf("; %s of its process group %d outlived it", ProcessCount(n), r.PGID)
	}
	return st
}

// RemoveRecord deletes the record of name; no record is not an error.
func RemoveRecord(stateDir, name string) error {
	err := os.Remove(recordPath(stateDir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// StopRecord stops the process r describes, as StopRecorded does, when
// it is still that process (checked against /proc as Status does: pid,
// start time, process group); the record file is removed only when it
// still names r's pid, so a record another hiro wrote since (sharing
// stateDir) is neither acted on nor removed. A process that is gone is
// not signalled: the returned status says stale, and the members of its
// group that outlived it and are provably hiro's (Leftovers) are stopped
// (StopResult.Leftovers counts them). grace <= 0 uses the recorded stop
// grace.
func StopRecord(ctx context.Context, stateDir string, r Record, grace time.Duration) (RecordStatus, StopResult) {
	st := checkRecord(stateDir, r)
	if grace <= 0 {
		grace = time.Duration(r.StopGraceMS) * time.Millisecond
	}
	if st.Status != StatusRunning {
		res := stopLeftovers(ctx, r, grace)
		removeRecordIfOurs(stateDir, r.Name, r.PID)
		return st, res
	}
	noteStop(stateDir, r)
	res := stopGroup(ctx, r.PGID, r.Port, grace, r.StartedAt, nil)
	removeRecordIfOurs(stateDir, r.Name, r.PID)
	return st, res
}

// removeRecordIfOurs deletes the record of name when it describes pid.
func removeRecordIfOurs(stateDir, name string, pid int) {
	if r, err := ReadRecord(stateDir, name); err == nil && r.PID == pid {
		_ = RemoveRecord(stateDir, name)
	}
}

// StopRecorded stops a backend an earlier hiro started and recorded:
// the same SIGTERM, grace, SIGKILL sequence and the same proof as
// (*Process).Stop, watching the process through /proc (it is not this
// hiro's child). grace <= 0 uses the recorded stop grace. A stale
// record's process is not signalled: the record is removed, the returned
// status says stale, and only the members of its group that outlived the
// leader and are provably hiro's (Leftovers) are stopped, each by itself
// (StopResult.Leftovers counts them). The record is removed after a stop
// when it still names the stopped process. A process another live hiro
// watches (Record.Owner) gets a StopNote first, naming this hiro.
func StopRecorded(ctx context.Context, stateDir, name string, grace time.Duration) (RecordStatus, StopResult, error) {
	st, err := Status(stateDir, name)
	if err != nil {
		return st, StopResult{}, err
	}
	if grace <= 0 {
		grace = time.Duration(st.StopGraceMS) * time.Millisecond
	}
	if st.Status != StatusRunning {
		res := stopLeftovers(ctx, st.Record, grace)
		return st, res, RemoveRecord(stateDir, name)
	}
	noteStop(stateDir, st.Record)
	res := stopGroup(ctx, st.PGID, st.Port, grace, st.StartedAt, nil)
	// Only the stopped process's record: a router that saw it gone may
	// have started production again meanwhile and recorded that one.
	removeRecordIfOurs(stateDir, name, st.PID)
	return st, res, nil
}
