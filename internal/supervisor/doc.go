// Package supervisor owns the life of managed inference servers: launch in
// a process group of their own with only the profile's environment, one
// log file per attempt followed line by line into the engine's Tracker,
// readiness as docs/design.md "Ready" defines it (alive, health, identity, one bounded
// real completion), the stall and hard ready timeouts, stop (SIGTERM to
// the group, grace, SIGKILL to the group, then proof that the port is free
// and no process of the group is left), and the state directory that lets
// a later hiro act on a server an earlier one started.
//
// The API the CLI and the qualification code use:
//
//   - Start launches a profile and waits until it is ready or failed; the
//     caller keeps the returned *Process running or stops it.
//   - (*Process).Stop stops it; (*Process).Detach writes its state record
//     and leaves it running after hiro exits.
//   - Status, StatusAll and StopRecorded act on records written by an
//     earlier hiro; a record whose process is gone, or whose pid,
//     process group and start time do not all match the live process (a
//     record without a start time included), is reported stale and never
//     signalled. A record not owned by the user, or writable by others, is
//     refused. Records (0600) and logs (0600, engines may echo secrets)
//     live in folders of the user's alone (0700).
//   - JudgeReply is the one rule for a readiness completion's reply
//     (trimmed, then exactly ready_probe.expect; any reply when unset):
//     the probe, the restore and switch verifications and the
//     ready_control gate use it.
//   - CheckReady verifies a server that is already running (unmanaged, or
//     production after a restore) with the same readiness rules.
//
// Classification of what went wrong is not done here: every failure of an
// attempt comes from the engine package's Tracker.Classify, except
// shutdown_leak, which only the supervisor can observe.
//
// This package must not read configuration files, print to a terminal, or
// touch processes it did not start or find in its own state directory.
// It is Linux-only: it reads /proc for process groups, start times and
// socket owners.
package supervisor
