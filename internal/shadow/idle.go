package shadow

import (
	"context"
	"sync/atomic"
	"time"
)

// DefaultIdleWait (Config.IdleWait's default) bounds how long a mirror's
// worker waits for the router to be idle before it sends a request or
// scores a pair anyway (idleGate).
// Under a load that never leaves the router idle the mirror then works
// as without the gate (the gate opens until the router is next idle), so
// that it keeps pace with production instead of dropping what it cannot
// hold; 1 ms is about seven client requests of one closed-loop client
// (BenchmarkShadowOverhead, p50 about 140 µs).
const DefaultIdleWait = time.Millisecond

// IdleWaitEnv names the environment variable that turns the idle gate
// off when set to "0" (the router reads it at a run's start): the mirror
// then works as soon as its dispatcher hands it a request, for a paired
// comparison of the gate (bench/serve-proxy.sh, HIRO_BENCH_BASE_ENV).
const IdleWaitEnv = "HIRO_SHADOW_IDLE_WAIT"

// idleGate holds a mirror's CPU work (a request's send, a pair's
// scoring) for the moments the router has no client request in flight.
// With one client the router runs on one processor ([serve] procs) and
// a worker that runs while a client request is in flight delays it (Go's
// scheduler runs a goroutine until it blocks; the client's goroutine,
// readied by the network, waits behind it): mirroring every request
// added about 16 µs to the client's p50 on the GPU host (docs/shadow.md).
// The router calls Idle when its last request finished (its reply is
// written; the client's next request is not there yet): that wakes one
// waiting worker, which runs in the gap while the client reads its
// answer and sends the next request, and hands the wake-up on to the
// next waiting worker while the router is still idle.
//
// A wait is bounded by max: when it runs out, the router is under load
// (no idle moment in max), and the gate stays open (loaded) until the
// router is next idle.
type idleGate struct {
	busy func() int64 // the router's client requests in flight
	// backlog reports a queue at least half full: the mirror then works
	// without waiting, so that a router seldom idle (several clients)
	// does not make it drop what it could have sent.
	backlog func() bool
	max     time.Duration
	wake    chan struct{} // one wake-up, buffered
	waiting atomic.Int32  // workers in await
	loaded  atomic.Bool
}

func newIdleGate(busy func() int64, backlog func() bool, max time.Duration) *idleGate {
	return &idleGate{busy: busy, backlog: backlog, max: max, wake: make(chan struct{}, 1)}
}

// kick wakes a waiting worker when the queue is backlogged (the
// dispatcher's tick: not on the clients' path).
func (g *idleGate) kick() {
	if g != nil && g.waiting.Load() > 0 && g.backlog() {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// Idle tells the mirror that the router has no client request in flight
// now: a worker waiting for that may run. It never blocks (an atomic load
// and, when a worker waits, a non-blocking channel send); without a gate
// it does nothing.
func (m *Mirror) Idle() {
	g := m.gate
	if g == nil {
		return
	}
	if g.loaded.Load() {
		g.loaded.Store(false)
	}
	if g.waiting.Load() > 0 {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}

// await returns once the router is idle (busy() is 0), at once when it
// is already, the gate is open (loaded) or the queue is backlogged,
// after g.max when no idle moment came (the gate opens), or when ctx
// ends. t is the caller's
// stopped timer (reused: no allocation per wait). A nil gate returns at
// once.
func (g *idleGate) await(ctx context.Context, t *time.Timer) {
	if g == nil || g.loaded.Load() || g.busy() == 0 || g.backlog() {
		return
	}
	// Counted before busy is looked at again: an Idle after the count
	// wakes this worker, one before it left busy at 0 (the atomics are
	// sequentially consistent), so no wake-up is lost.
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	t.Reset(g.max)
	defer t.Stop()
	for g.busy() > 0 && !g.backlog() {
		select {
		case <-g.wake:
		case <-t.C:
			g.loaded.Store(true)
			return
		case <-ctx.Done():
			return
		}
	}
	// Still idle: the next waiting worker may run after this one.
	if g.waiting.Load() > 1 {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
}
