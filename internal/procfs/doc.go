// Package procfs reads the process facts hiro needs from /proc: a
// process's state, group and start time (which, with the pid, names one
// process across pid reuse), the members of a process group, and which
// processes hold a TCP port.
//
// It is a leaf package: it imports no other hiro package, writes nothing
// and signals no process. The supervisor (stopping a group, judging a
// record), lease (a lease holder's identity) and the router (a hand-over
// owner's liveness) stand on it.
//
// API: ReadStat / ParseStat (Stat), PIDs, GroupMembers, PortHolders, Describe,
// ParseSocketInodes, StartTicks, ProcessState.
package procfs
