package procfs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Stat is what hiro reads from /proc/PID/stat.
type Stat struct {
	PID   int
	Comm  string
	State byte // R, S, D, Z, T, ...
	PGID  int
	SID   int
	// StartTicks is the process start time in clock ticks since boot
	// (field 22); with the pid it identifies one process across reuse.
	StartTicks uint64
}

// ReadStat parses /proc/PID/stat. Errors wrap os.ErrNotExist when
// the process is gone.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// ParseStat parses the contents of a /proc/PID/stat file; the comm
// field is in parentheses and may itself hold spaces and parentheses.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	closeIdx := bytes.LastIndexByte(b, ')')
	if open < 0 || closeIdx < open {
		return Stat{}, fmt.Errorf("malformed /proc stat line %q", b)
	}
	var s Stat
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("malformed /proc stat pid: %w", err)
	}
	s.PID = pid
	s.Comm = string(b[open+1 : closeIdx])
	f := strings.Fields(string(b[closeIdx+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 {
		return Stat{}, fmt.Errorf("malformed /proc stat line for pid %d: %d fields", pid, len(f))
	}
	s.State = f[0][0]
	s.PGID, _ = strconv.Atoi(f[2])
	s.SID, _ = strconv.Atoi(f[3])
	s.StartTicks, _ = strconv.ParseUint(f[19], 10, 64)
	return s, nil
}

// Alive reports whether the process exists and is not a zombie.
func (s Stat) Alive() bool { return s.State != 'Z' && s.State != 'X' }

// PIDs returns every pid in /proc.
func PIDs() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// GroupMembers returns the live (non-zombie) processes whose process
// group is pgid, sorted by pid.
func GroupMembers(pgid int) []Stat {
	var out []Stat
	for _, pid := range PIDs() {
		s, err := ReadStat(pid)
		if err != nil || s.PGID != pgid || !s.Alive() {
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// PortHolders returns the live processes that hold a TCP socket bound to
// port on any address (listening or not), found through the socket's
// inode in /proc/net/tcp{,6} and the fd links in /proc/PID/fd. Processes
// hiro may not inspect are skipped.
func PortHolders(port int) []Stat {
	hs, _ := owners(inodesOf(port, false))
	return hs
}

// Describe names processes for a message: "pid 5057 (python3), pid 5060
// (ollama)".
func Describe(ps []Stat) string {
	parts := make([]string, len(ps))
	for i, s := range ps {
		parts[i] = fmt.Sprintf("pid %d (%s)", s.PID, s.Comm)
	}
	return strings.Join(parts, ", ")
}

// Listeners returns the live processes that hold a TCP socket listening
// on port (state LISTEN, any address), found as PortHolders finds them,
// and how many such sockets have no owner hiro can see (a process of
// another user's, whose /proc/PID/fd hiro may not read).
func Listeners(port int) (holders []Stat, unseen int) {
	return owners(inodesOf(port, true))
}

// inodesOf returns the inodes of the sockets bound to port (listenOnly:
// listening) in /proc/net/tcp and tcp6.
func inodesOf(port int, listenOnly bool) map[string]bool {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, ino := range parseSocketInodes(b, port, listenOnly) {
			inodes[ino] = true
		}
	}
	return inodes
}

// owners returns the live processes holding one of inodes, and how many
// inodes no visible process holds.
func owners(inodes map[string]bool) (out []Stat, unseen int) {
	if len(inodes) == 0 {
		return nil, 0
	}
	seen := map[string]bool{}
	for _, pid := range PIDs() {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		holds := false
		for _, e := range ents {
			l, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if ino := strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"); inodes[ino] {
				seen[ino], holds = true, true
			}
		}
		if holds {
			if s, err := ReadStat(pid); err == nil && s.Alive() {
				out = append(out, s)
			}
		}
	}
	return out, len(inodes) - len(seen)
}

// ParseSocketInodes returns the inodes of the sockets in b, the
// contents of a /proc/net/tcp-style file, whose local port is port and
// that are listening (state 0A) or otherwise bound (any state but
// TIME_WAIT, which has no owner).
func ParseSocketInodes(b []byte, port int) []string { return parseSocketInodes(b, port, false) }

func parseSocketInodes(b []byte, port int, listenOnly bool) []string {
	var out []string
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(bytes.NewReader(b))
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Fields(sc.Text())
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) < 10 || !strings.HasSuffix(f[1], want) {
			continue
		}
		if f[3] == "06" || f[9] == "0" { // TIME_WAIT, or no owner
			continue
		}
		if listenOnly && f[3] != "0A" {
			continue
		}
		out = append(out, f[9])
	}
	return out
}

// StartTicks returns the start time of process pid in clock ticks since
// boot (/proc/PID/stat field 22) and whether the process is alive (not a
// zombie). Together with the pid it identifies a process across pid reuse;
// qualify's leases use it for the hiro that holds them.
func StartTicks(pid int) (uint64, bool) {
	if pid <= 0 {
		return 0, false
	}
	s, err := ReadStat(pid)
	if err != nil || !s.Alive() {
		return 0, false
	}
	return s.StartTicks, true
}

// ProcessState describes the state of process pid as /proc reports it,
// for a person reading why an engine that is alive does not answer:
// "T (stopped)", "D (uninterruptible sleep: waiting in the kernel, often
// a GPU driver or a disk)", "S (sleeping)", "R (running)". alive is false
// when the process is gone or a zombie (state is then "" or "Z (zombie)").
func ProcessState(pid int) (state string, alive bool) {
	if pid <= 0 {
		return "", false
	}
	s, err := ReadStat(pid)
	if err != nil {
		return "", false
	}
	return stateWords(s.State), s.Alive()
}

// stateWords names a /proc state letter (proc(5)).
func stateWords(c byte) string {
	switch c {
	case 'R':
		return "R (running)"
	case 'S':
		return "S (sleeping)"
	case 'D':
		return "D (uninterruptible sleep: waiting in the kernel, often a GPU driver or a disk)"
	case 'T':
		return "T (stopped)"
	case 't':
		return "t (stopped by a debugger)"
	case 'Z':
		return "Z (zombie)"
	case 'X':
		return "X (dead)"
	}
	return string(c)
}

// Environ returns process pid's environment as it was when it started
// (/proc/<pid>/environ; readable for this user's own processes) as a
// lookup: the value of a variable, "" when it is unset. The error is
// /proc's (fs.ErrNotExist for a process gone, fs.ErrPermission for
// another user's).
func Environ(pid int) (func(string) string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, seen := env[k]; !seen {
				env[k] = v
			}
		}
	}
	return func(k string) string { return env[k] }, nil
}

// UnseenHolder names, for a message, the holder of a port that is in use
// but that no process /proc shows holds: when hiro runs as root it can
// read every process's descriptors, so the holder is not another user's
// but a socket in passing (a listener that closed between the bind check
// and the look in /proc, or one of another network namespace); otherwise
// it may be another user's process, whose /proc/PID/fd hiro may not read.
func UnseenHolder() string {
	if os.Geteuid() == 0 {
		return "no process hiro can find now (hiro runs as root and sees every process: a listener that has just closed, or one in another network namespace; rerun to check again)"
	}
	return "a process hiro cannot inspect (another user's?)"
}
