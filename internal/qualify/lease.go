package qualify

import (
	"context"
	"errors"

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

// NoAcceleratorNote says plainly, in one line, on a host where no
// accelerator is visible (doctor.Accelerators: nvidia-smi absent or
// listing none), that there is none and what hiro's accelerator lease
// means there; "" when an accelerator is visible.
func NoAcceleratorNote(ctx context.Context) string {
	why := noAccelerator(ctx)
	if why == "" {
		return ""
	}
	return "this host has no accelerator (" + why + "), so \"the accelerator\" is the machine itself, its CPU and memory: " +
		"an exclusive candidate has it alone with production stopped; with exclusive = false a candidate runs beside production"
}

// noAccelerator is why no accelerator is visible, or "" when one is.
func noAccelerator(ctx context.Context) string {
	gpus, why := doctor.Accelerators(ctx, doctor.Options{})
	if len(gpus) > 0 {
		return ""
	}
	if why == "" {
		why = "nvidia-smi lists no GPU"
	}
	return why
}

// AcceleratorHeldNote is the one line of why for a refusal for the
// accelerator's lease (a *lease.HeldError on lease.AcceleratorKey): on a
// host without one, what "the accelerator" is there (NoAcceleratorNote);
// when the holder uses it beside others (a campaign with exclusive =
// false), that it shares it and the two cannot run at the same time; ""
// for any other error, or when neither applies.
func AcceleratorHeldNote(ctx context.Context, err error) string {
	var he *lease.HeldError
	if !errors.As(err, &he) || he.Key != lease.AcceleratorKey {
		return ""
	}
	shares := he.Holder != nil && he.Holder.SharesAccelerator
	none := noAccelerator(ctx)
	switch {
	case none != "" && shares:
		return "this host has no accelerator (" + none + "), so \"the accelerator\" is the machine itself: " +
			"that campaign shares it (exclusive = false); one that needs it alone cannot run at the same time"
	case none != "":
		return NoAcceleratorNote(ctx)
	case shares:
		return "that campaign's candidate runs beside production (exclusive = false) and shares the accelerator, " +
			"and a candidate that needs it alone cannot run at the same time"
	}
	return ""
}
