package exitcode

// Exit statuses.
const (
	// OK: success (qualify: qualified; backend start: ready).
	OK = 0
	// Failed: the thing checked failed (qualify: a gate failed, not
	// qualified; backend start: the engine failed; artifact verify: drift).
	Failed = 1
	// Usage: bad usage, configuration or plan. Nothing was started or stopped.
	Usage = 2
	// Aborted: harness error or interrupt, with production restored.
	Aborted = 3
	// Critical: production could not be restored.
	Critical = 4
	// Inconclusive (qualify): no gate failed, but at least one gate's
	// comparison with production could not decide (the corpus cannot tell
	// the candidate from production within the margin); activation refuses
	// it unless told --accept-inconclusive.
	Inconclusive = 5
	// Busy: refused because another hiro holds what the command needs
	// (a lease on production's endpoint, the candidate's or the
	// accelerator; the switch lock). Nothing was started or stopped;
	// the message names the holder: run the command again once it is
	// done.
	Busy = 6
)
