package supervisor

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/procfs"
)

// Leftovers returns the live processes of r's process group that outlived
// its leader and that hiro can prove belong to the group it started,
// sorted by pid; nil when there are none or nothing can be proven.
//
// The proof (docs/reliability.md, "Leftovers of a dead leader"): hiro
// started the leader with Setpgid, so the group's id is the leader's pid
// r.PID and the group began at the leader's start r.StartTicks. Linux
// keeps a pid number allocated while any process still uses it as its
// pid, process group or session, so group r.PGID can be a new group only
// after every member of hiro's group was gone and pid r.PID was handed to
// a new process. Hence a process is taken as hiro's only when
//   - pid r.PID is not held by a live process other than the recorded
//     leader (a reused pid means the old group had vanished: nothing is
//     proven), and
//   - its process group is r.PGID and its start time is not earlier than
//     the leader's (every process forked into the group started after the
//     leader; one started earlier joined later, or is someone else's), and
//   - when the record has the leader's session r.SID, its session is the
//     same (members inherit it; a group of another session is another's).
//
// What this cannot rule out: pid r.PID reused in the same session by a
// process that made its own group and died leaving members behind.
func Leftovers(r Record) []procfs.Stat {
	if r.PID <= 0 || r.PGID != r.PID || r.StartTicks == 0 {
		return nil
	}
	if s, err := procfs.ReadStat(r.PID); err == nil && s.StartTicks != r.StartTicks {
		return nil // the pid is another process's now (alive or a zombie)
	}
	var out []procfs.Stat
	for _, m := range procfs.GroupMembers(r.PGID) {
		if m.StartTicks < r.StartTicks || (r.SID > 0 && m.SID != r.SID) {
			continue
		}
		if m.PID == r.PID {
			continue // the leader itself: running, not a leftover
		}
		out = append(out, m)
	}
	return out
}

// provenProc is a leftover hiro holds a pidfd of: signals reach that very
// process even if its pid is reused meanwhile. fd is -1 where the kernel
// has no pidfds (before Linux 5.3); kill(2) is used then.
type provenProc struct {
	procfs.Stat
	fd int
}

// holdProven opens a pidfd of each of ms and keeps those that are, once
// the pidfd is open, still the process Leftovers proved (same pid,
// process group and start time).
func holdProven(ms []procfs.Stat) []provenProc {
	var out []provenProc
	for _, m := range ms {
		fd, err := unix.PidfdOpen(m.PID, 0)
		if err != nil && !errors.Is(err, unix.ENOSYS) {
			continue // gone already
		}
		if err != nil {
			fd = -1
		}
		if !stillProven(m) {
			if fd >= 0 {
				unix.Close(fd)
			}
			continue
		}
		out = append(out, provenProc{Stat: m, fd: fd})
	}
	return out
}

// stillProven reports whether m's pid is still the live process m
// describes.
func stillProven(m procfs.Stat) bool {
	s, err := procfs.ReadStat(m.PID)
	return err == nil && s.Alive() && s.PGID == m.PGID && s.StartTicks == m.StartTicks
}

func (p provenProc) signal(sig syscall.Signal) error {
	var err error
	if p.fd >= 0 {
		err = unix.PidfdSendSignal(p.fd, sig, nil, 0)
	} else if stillProven(p.Stat) {
		err = syscall.Kill(p.PID, sig)
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// stopLeftovers ends the leftovers of r's dead leader (Leftovers): SIGTERM
// to each, up to grace for all to end, then SIGKILL to those left; then
// the same proof as a stop (none left, the port free). No process that
// Leftovers does not prove is signalled, and each one individually,
// never the group. The zero StopResult when there were none.
func stopLeftovers(ctx context.Context, r Record, grace time.Duration) StopResult {
	start := time.Now()
	ps := holdProven(Leftovers(r))
	if len(ps) == 0 {
		return StopResult{}
	}
	defer func() {
		for _, p := range ps {
			if p.fd >= 0 {
				unix.Close(p.fd)
			}
		}
	}()
	res := StopResult{AlreadyExited: true, Leftovers: len(ps)}
	alive := func() []procfs.Stat {
		var out []procfs.Stat
		for _, p := range ps {
			if stillProven(p.Stat) {
				out = append(out, p.Stat)
			}
		}
		return out
	}
	send := func(sig syscall.Signal) {
		for _, p := range ps {
			if err := p.signal(sig); err != nil && res.Err == "" {
				res.Err = fmt.Sprintf("%v to leftover pid %d of process group %d: %v", sig, p.PID, r.PGID, err)
			}
		}
	}
	send(syscall.SIGTERM)
	if waitGone(ctx, grace, alive) {
		res.Graceful = true
	} else {
		res.Killed = true
		send(syscall.SIGKILL)
		waitGone(context.Background(), killSettle, alive)
	}
	proveStopped(&res, r.PGID, r.Port, alive(), r.StartedAt)
	res.DurationMS = time.Since(start).Milliseconds()
	return res
}

// waitGone polls alive until it is empty (true) or d or ctx ends (false).
func waitGone(ctx context.Context, d time.Duration, alive func() []procfs.Stat) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := time.NewTicker(stopPoll)
	defer tick.Stop()
	for len(alive()) > 0 {
		select {
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}

// ProcessCount says n processes in words: "1 process", "2 processes".
func ProcessCount(n int) string {
	if n == 1 {
		return "1 process"
	}
	return fmt.Sprintf("%d processes", n)
}
