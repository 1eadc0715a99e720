package supervisor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/procfs"
)

const (
	// stopPoll is how often stop looks at the process group and the port.
	stopPoll = 5 * time.Millisecond
	// killSettle bounds the wait for the group to vanish after SIGKILL
	// (the kernel needs a moment to tear processes down).
	killSettle = 3 * time.Second
	// portSettle bounds the wait for the port to become free after the
	// group is gone.
	portSettle = time.Second
)

// StopResult says how a stop went.
type StopResult struct {
	// Graceful: every process of the group ended within the grace period
	// after SIGTERM. Killed: SIGKILL was sent to the group.
	Graceful bool `json:"graceful"`
	Killed   bool `json:"killed"`
	// AlreadyExited: the engine had exited before the stop began.
	AlreadyExited bool `json:"already_exited,omitempty"`
	// Exit is how the leader ended, when hiro could see it (its child).
	Exit string `json:"exit,omitempty"`
	// DurationMS is the time the stop took, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// PortFree is true when the port could be bound again after the stop.
	PortFree bool `json:"port_free"`
	// Leak is a shutdown_leak failure: processes of the group still alive
	// or the port still held (Detail: "pids", "port", "port_holders").
	Leak *failure.Failure `json:"leak,omitempty"`
	// Leftovers counts the processes of a stale record's group that
	// outlived its dead leader, proven hiro's (see Leftovers), which this
	// stop signalled (AlreadyExited is then true: the leader was gone).
	Leftovers int `json:"leftovers,omitempty"`
	// Err is a harness error (e.g. permission denied signalling).
	Err string `json:"error,omitempty"`
}

// Stop stops the engine: SIGTERM to its process group, up to the
// profile's StopGrace for every process of the group to end, then SIGKILL
// to the group; then it confirms the port is free and no process of the
// group is left, else StopResult.Leak is a shutdown_leak failure with the
// pids and the port. Stop is idempotent: later calls return the first
// result. ctx cancellation skips the rest of the grace period (straight to
// SIGKILL); the checks after it always run.
func (p *Process) Stop(ctx context.Context) StopResult {
	p.stopOnce.Do(func() {
		p.stopRes = stopGroup(ctx, p.cmd.Process.Pid, p.port, p.profile.StopGrace.Duration, p.startedAt, p.exited)
		select {
		case <-p.exited:
			p.stopRes.Exit = p.exitInfo.String()
		default:
		}
		p.fl.drain()
		p.fl.close()
		removeRecordIfOurs(p.stateDir, p.profile.Name, p.cmd.Process.Pid)
	})
	return p.stopRes
}

// stopGroup stops process group pgid (led by pid pgid). exited, when not
// nil, is closed when the leader was reaped by this hiro; otherwise the
// leader is watched through /proc.
func stopGroup(ctx context.Context, pgid, port int, grace time.Duration, startedAt time.Time, exited <-chan struct{}) StopResult {
	start := time.Now()
	var r StopResult
	leaderGone := func() bool {
		if exited != nil {
			select {
			case <-exited:
				return true
			default:
				return false
			}
		}
		s, err := procfs.ReadStat(pgid)
		return err != nil || !s.Alive() || s.PGID != pgid
	}
	if leaderGone() && len(procfs.GroupMembers(pgid)) == 0 {
		r.AlreadyExited = true
	} else {
		if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil && err != syscall.ESRCH {
			r.Err = fmt.Sprintf("SIGTERM to process group %d: %v", pgid, err)
		}
		deadline := time.NewTimer(grace)
		tick := time.NewTicker(stopPoll)
	wait:
		for {
			if leaderGone() && len(procfs.GroupMembers(pgid)) == 0 {
				r.Graceful = true
				break
			}
			select {
			case <-deadline.C:
				break wait
			case <-ctx.Done():
				break wait
			case <-exited: // nil channel when not our child: never ready
			case <-tick.C:
			}
		}
		deadline.Stop()
		if !r.Graceful {
			r.Killed = true
			if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
				r.Err = fmt.Sprintf("SIGKILL to process group %d: %v", pgid, err)
			}
			settle := time.Now().Add(killSettle)
			for time.Now().Before(settle) && !(leaderGone() && len(procfs.GroupMembers(pgid)) == 0) {
				<-tick.C
			}
		}
		tick.Stop()
	}

	proveStopped(&r, pgid, port, procfs.GroupMembers(pgid), startedAt)
	r.DurationMS = time.Since(start).Milliseconds()
	return r
}

// proveStopped checks what a stop must leave: no process of the group
// (left: those still alive) and the port free (within portSettle), else
// r.Leak is the shutdown_leak failure.
func proveStopped(r *StopResult, pgid, port int, left []procfs.Stat, startedAt time.Time) {
	var holders []procfs.Stat
	if port > 0 {
		settle := time.Now().Add(portSettle)
		for {
			busy, _ := portBusy(":" + strconv.Itoa(port))
			if !busy {
				r.PortFree = true
				break
			}
			if time.Now().After(settle) {
				holders = procfs.PortHolders(port)
				break
			}
			time.Sleep(stopPoll)
		}
	} else {
		r.PortFree = true
	}
	if len(left) > 0 || !r.PortFree {
		r.Leak = leakFailure(pgid, port, left, holders, r.PortFree, time.Since(startedAt))
	}
}

// leakFailure builds the shutdown_leak failure: the pids left in the
// group and the processes still holding the port.
func leakFailure(pgid, port int, left, holders []procfs.Stat, portFree bool, sinceStart time.Duration) *failure.Failure {
	var parts []string
	pids := []int{}
	for _, s := range left {
		pids = append(pids, s.PID)
	}
	holderPIDs := []int{}
	for _, s := range holders {
		holderPIDs = append(holderPIDs, s.PID)
	}
	if len(left) > 0 {
		parts = append(parts, fmt.Sprintf("process group %d still has %s after SIGKILL", pgid, procfs.Describe(left)))
	}
	if !portFree {
		if len(holders) > 0 {
			parts = append(parts, fmt.Sprintf("port %d is still held by %s (outside the process group: it escaped with setsid or was started by another parent)", port, procfs.Describe(holders)))
		} else {
			parts = append(parts, fmt.Sprintf("port %d is still taken, by a process hiro cannot see", port))
		}
	}
	f := &failure.Failure{
		Class:             failure.ClassShutdownLeak,
		Phase:             failure.PhaseShutdown,
		RootCause:         strings.Join(parts, "; "),
		SecondsSinceStart: sinceStart.Seconds(),
		Detail: map[string]any{
			"pgid":         pgid,
			"pids":         pids,
			"port":         port,
			"port_holders": holderPIDs,
		},
		NextStep: engine.NextStep(failure.ClassShutdownLeak),
	}
	if f.NextStep == "" {
		f.NextStep = "end the listed processes (kill PID) and check the engine's launcher for children started in a new session"
	}
	return f
}
