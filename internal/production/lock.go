package production

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/private"
)

// intentFile is the name of a switch in progress inside a configuration's
// record folder.
const intentFile = "switch.json"

// lockFile is the exclusive lock of a configuration's production.
const lockFile = ".lock"

// Lock is the exclusive right to switch one configuration's production.
// It is an flock(2) on <record folder>/.lock: the kernel releases it when
// the holder dies, so a SIGKILLed hiro never leaves it held.
type Lock struct {
	f   *os.File
	cfg string
}

// BusyError is returned by TryLock when another hiro holds the lock.
type BusyError struct {
	// PID is the holder's process id as it wrote it (0 when unknown).
	PID int
	// What is what the holder said it is doing.
	What string
}

func (e *BusyError) Error() string {
	who := "another hiro"
	if e.PID > 0 {
		who = fmt.Sprintf("hiro pid %d", e.PID)
	}
	if e.What != "" {
		who += " (" + e.What + ")"
	}
	return "production is held by " + who + "; wait for it to finish and try again"
}

// TryLock takes the lock of cfgPath's production without waiting; what
// says what this hiro is doing (shown to a refused one). Errors:
// *BusyError when held, or the folder cannot be created.
func TryLock(cfgPath, what string) (*Lock, error) {
	dir, err := configDir(cfgPath, true)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the production lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b := make([]byte, 512)
		n, _ := f.ReadAt(b, 0)
		// The holder writes who it is just after it took the lock: a
		// refusal in between would name "another hiro".
		for try := 0; n == 0 && try < 20 && errors.Is(err, unix.EWOULDBLOCK); try++ {
			time.Sleep(5 * time.Millisecond)
			n, _ = f.ReadAt(b, 0)
		}
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			be := &BusyError{}
			line := strings.TrimSpace(string(b[:n]))
			pid, rest, _ := strings.Cut(line, " ")
			be.PID, _ = strconv.Atoi(pid)
			be.What = rest
			return nil, be
		}
		return nil, fmt.Errorf("taking the production lock: %w", err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+what+"\n"), 0)
	return &Lock{f: f, cfg: cfgPath}, nil
}

// Unlock releases the lock. It is safe to call twice.
func (l *Lock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// Intent is a switch in progress, written before anything is started or
// stopped and removed once the switch is settled (record written, old or
// new production verified). A hiro killed in between leaves it for the
// next hiro, which puts production back in a verified state (package
// activation, Recover).
type Intent struct {
	// Config is the configuration file; Kind activate or rollback.
	Config string `json:"config"`
	Kind   string `json:"kind"`
	// From is the production before the switch; To the one switched to.
	From *Snapshot `json:"from"`
	To   *Snapshot `json:"to"`
	// Committed says the switched record was written: To is production.
	Committed bool `json:"committed"`
	// Router says a running router was asked to switch; Handover is the
	// name production was handed over under (an exclusive switch), which
	// the recovery asks the router to take back.
	Router   bool   `json:"router,omitempty"`
	Handover string `json:"handover,omitempty"`
	// PID is the hiro doing the switch; StartedAt when it began.
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	// Path is the file (not stored).
	Path string `json:"-"`
}

// WriteIntent writes in atomically (0600) into its configuration's
// record folder. Call it while holding the Lock.
func WriteIntent(in *Intent) error {
	dir, err := configDir(in.Config, true)
	if err != nil {
		return err
	}
	in.Path = filepath.Join(dir, intentFile)
	return writePrivateJSON(in.Path, in)
}

// RemoveIntent removes the switch in progress of cfgPath, if any.
func RemoveIntent(cfgPath string) error {
	dir, err := configDir(cfgPath, false)
	if err == nil {
		err = os.Remove(filepath.Join(dir, intentFile))
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Intents lists the switches in progress under Dir, of every
// configuration. An unreadable intent is an error naming its file.
func Intents() ([]*Intent, error) {
	base, err := private.Production.Check()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil, err
	}
	var out []*Intent
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		path := filepath.Join(dir, intentFile)
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := private.CheckDir(dir, private.Production.What); err != nil {
			return nil, err
		}
		b, err := readPrivate(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var in Intent
		if err := json.Unmarshal(b, &in); err != nil {
			return nil, fmt.Errorf("switch intent %s is not valid JSON: %w; move it away once production is known to be serving", path, err)
		}
		in.Path = path
		out = append(out, &in)
	}
	return out, nil
}
