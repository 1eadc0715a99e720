// Package lease owns "who may act on production now": one owner at a
// time for each resource, across hiro processes and configuration files.
//
// A resource is named by a key: ProductionKey(baseURL) for a production
// backend's endpoint (host and port: two configuration files naming the
// same server share it; a campaign also holds its candidate's endpoint
// this way), AcceleratorKey for the accelerator an exclusive candidate
// needs. A holder's record is written into each key's file once locked, so
// a refused racer names the holder; a shared user of the accelerator is
// named through its record on another key (SharesAccelerator). Each key is
// one file in the lease folder (Dir: one per user whatever the state home,
// moved only by HIRO_LEASE_DIR). Taking
// a key is atomic: the file is opened (created when missing) and locked
// with flock(LOCK_EX|LOCK_NB) (LOCK_SH for a non-exclusive user of the
// accelerator: many at once, none beside an exclusive one); the lock is
// held while the owner runs (a campaign, one 'hiro backend start'), dropped
// by the kernel when the owner dies. The file says who holds it (a Lease:
// campaign, configuration, production, candidate, pid, start time, uid).
//
// The API other packages use:
//
//	dir, err := lease.Dir()                        // private folder, created 0700 and checked
//	h, err := lease.Acquire(dir, &lease.Lease{...}, lease.ProductionKey(prod.BaseURL), lease.AcceleratorKey)
//	// err is a *HeldError naming the holder when another live hiro holds a key
//	h.Update(func(l *lease.Lease) { l.Restore = ... }) // rewrite the record (atomically, under the lock)
//	h.Release()   // production is back: remove the files, then unlock
//	h.Abandon()   // production is down and could not be restored: unlock, keep the files
//	s, err := lease.AcquireShared(dir, lease.AcceleratorKey) // a non-exclusive user of the accelerator
//	lease.HeldBy(dir, key); lease.Probe(dir, keys, shared) // the live holder; Acquire's refusal: no lock taken
//
// A file that exists, is not locked and holds a campaign record was left
// by a hiro that died while production was its responsibility: Scan lists
// such leases (setting aside unreadable ones, reporting each), Claim takes
// one over for recovery. Another user's file, or one others may write, is
// refused.
//
// It only says who owns what: it must not start, stop or signal processes
// or read configurations, and it must not import supervisor (procfs
// names a holder).
package lease
