package serve

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// procsPolicy sets how many processors (GOMAXPROCS) the router runs on
// ([serve] procs). Adapting (procs = 0) serves two regimes a fixed
// setting cannot both serve on a small machine (bench/serve-proxy.sh,
// 2 cores): with one processor a request that comes alone is read,
// proxied and answered on one thread, with no wake-up of a second
// thread at each network event, which cuts the router's added latency
// by about a fifth; when requests overlap, one processor holds the
// router to one core and costs throughput. So the router runs on one
// processor while the average number of requests in flight stays under
// procsLow, and on all of its processors once it reaches procsHigh.
//
// The load is measured, not guessed: every proxied request adds its
// duration to busy, and each procsTick the policy divides what was
// added by the tick (Little's law: the average number in flight), or
// takes the number in flight now when it is larger (streams that have
// not ended yet). A change stops the world for some microseconds; the
// policy goes up at once and down at most once per procsDwell.
type procsPolicy struct {
	max      int // the processors Go gave the process at start
	busy     atomic.Int64
	cur      int
	lastMove time.Time
	lowSince time.Time
	set      func(n int) // runtime.GOMAXPROCS; replaced in tests
	onChange func(n int)
}

// Thresholds of the adaptive policy: average requests in flight over a
// tick.
const (
	procsHigh  = 1.5
	procsLow   = 1.1
	procsTick  = 50 * time.Millisecond
	procsDwell = 250 * time.Millisecond
	// procsCalm is how long the load must stay under procsLow before the
	// router goes back to one processor.
	procsCalm = 100 * time.Millisecond
)

// newProcsPolicy returns the policy for [serve] procs = fixed, or nil
// when nothing is to adapt (a fixed number, GOMAXPROCS set in the
// environment, or a single processor anyway). A fixed number is applied
// here, clamped to runtime.NumCPU: more processors than CPUs only add
// threads (configuration validation refuses more than 1024, Go's cap).
func newProcsPolicy(fixed int, onChange func(n int)) *procsPolicy {
	if os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	if fixed > 0 {
		runtime.GOMAXPROCS(clampProcs(fixed, runtime.NumCPU()))
		return nil
	}
	max := runtime.GOMAXPROCS(0)
	if max <= 1 {
		return nil
	}
	return &procsPolicy{max: max, cur: max, set: func(n int) { runtime.GOMAXPROCS(n) }, onChange: onChange}
}

// clampProcs is a fixed [serve] procs limited to cpus (runtime.NumCPU).
func clampProcs(fixed, cpus int) int {
	if fixed > cpus {
		return cpus
	}
	return fixed
}

// done records a finished request of duration d.
func (p *procsPolicy) done(d time.Duration) {
	if p != nil {
		p.busy.Add(int64(d))
	}
}

// step looks at the load of the last interval (busy nanoseconds
// recorded, inFlight now) and changes the processors when due.
func (p *procsPolicy) step(now time.Time, interval time.Duration, inFlight int64) {
	load := float64(p.busy.Swap(0)) / float64(interval)
	if f := float64(inFlight); f > load {
		load = f
	}
	want := p.cur
	switch {
	case load >= procsHigh:
		want, p.lowSince = p.max, time.Time{}
	case load < procsLow:
		if p.lowSince.IsZero() {
			p.lowSince = now
		}
		if now.Sub(p.lowSince) >= procsCalm {
			want = 1
		}
	default:
		p.lowSince = time.Time{}
	}
	// Up at once (throughput is lost while overlapping requests share one
	// processor); down only procsDwell after the last change, so that a
	// flapping load changes it at most twice per procsDwell.
	if want == p.cur || (want < p.cur && now.Sub(p.lastMove) < procsDwell) {
		return
	}
	p.set(want)
	p.cur, p.lastMove = want, now
	if p.onChange != nil {
		p.onChange(want)
	}
}

// run adapts until ctx ends, then gives the process all its processors
// back.
func (p *procsPolicy) run(ctx context.Context, inFlight func() int64) {
	if p == nil {
		return
	}
	t := time.NewTicker(procsTick)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			if p.cur != p.max {
				p.set(p.max)
			}
			return
		case now := <-t.C:
			p.step(now, now.Sub(last), inFlight())
			last = now
		}
	}
}
