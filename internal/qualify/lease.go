package qualify

import (
	"github.com/hiro-dev/hiro/internal/lease"
)

// Lease says which campaign owns production; see package lease. A
// campaign whose candidate needs the accelerator exclusively takes the
// production backend's key and the accelerator's for its whole run
// (Run), marks production stopped in it before stopping it (guardBefore),
// and releases it only once production is restored and verified
// (finish); a campaign killed in between leaves it for Recover.
type Lease = lease.Lease

// LeaseDir returns the user's private lease folder (lease.Dir), or "" with
// the error when there is none.
func LeaseDir() (string, error) { return lease.Dir() }

// Leases lists the leases in dir, one per holder, changing nothing
// (lease.List).
func Leases(dir string) ([]*Lease, error) { return lease.List(dir) }
