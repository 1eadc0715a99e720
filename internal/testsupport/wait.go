package testsupport

import "time"

// WaitPoll is how often WaitFor asks its condition again.
const WaitPoll = 10 * time.Millisecond

// WaitFor waits until cond returns true, asking it at once and then every
// WaitPoll, for at most within, and reports whether it did: a test waits
// on what it expects (a state, an event, a process gone), not for a span
// of time that is only usually long enough. The caller fails the test
// with what it saw.
func WaitFor(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	tick := time.NewTicker(WaitPoll)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		<-tick.C
	}
}
