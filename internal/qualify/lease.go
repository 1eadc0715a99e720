package qualify

import (
	"context"
	"errors"
	"strings"

	"github.com/hiro-dev/hiro/internal/doctor"
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

// NoAcceleratorNote says plainly, on a host where no accelerator is
// visible (doctor.Accelerators: nvidia-smi absent or listing none), that
// there is none and what hiro's accelerator lease and an exclusive
// campaign mean there; "" when an accelerator is visible.
func NoAcceleratorNote(ctx context.Context) string {
	gpus, why := doctor.Accelerators(ctx, doctor.Options{})
	if len(gpus) > 0 {
		return ""
	}
	if why == "" {
		why = "nvidia-smi lists no GPU"
	}
	return "this host has no accelerator (" + why + "): here \"the accelerator\" hiro leases is the machine itself, its CPU and memory; " +
		"an exclusive candidate (a plan's exclusive = true, a profile's exclusive_accelerator) runs on it alone with production stopped, " +
		"and waits while another campaign or command holds it; with exclusive = false a candidate runs beside production"
}

// AcceleratorHeldNote explains a refusal for the accelerator's lease (a
// *lease.HeldError on lease.AcceleratorKey): NoAcceleratorNote, and when
// the holder uses it beside others (a campaign with exclusive = false),
// why that holds it and that the two cannot run at once; "" for any
// other error.
func AcceleratorHeldNote(ctx context.Context, err error) string {
	var he *lease.HeldError
	if !errors.As(err, &he) || he.Key != lease.AcceleratorKey {
		return ""
	}
	var notes []string
	if n := NoAcceleratorNote(ctx); n != "" {
		notes = append(notes, n)
	}
	if he.Holder != nil && he.Holder.SharesAccelerator {
		notes = append(notes, "the holder's candidate runs beside production (exclusive = false) and shares the accelerator, "+
			"so a candidate that needs it alone waits until that one ends: the two cannot run at the same time")
	}
	return strings.Join(notes, "; ")
}
