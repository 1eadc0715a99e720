package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/qualify"
)

// backendHold takes, for the length of one 'hiro backend start|stop'
// command, the lease keys of the server prof names (its endpoint, and the
// accelerator when it needs it exclusively), so that no campaign stops or
// restores production meanwhile and no command starts production beside a
// campaign's exclusive candidate. A key held by a live campaign refuses
// the command (exit 6, ExitBusy) naming the campaign.
func backendHold(prof *config.Profile, command string) (*lease.Hold, error) {
	if prof.Unmanaged {
		return nil, nil
	}
	dir, err := lease.Dir()
	if err != nil {
		return nil, UsageError(fmt.Errorf("%s: %w", command, err))
	}
	keys := production.LeaseKeys(prof.ExclusiveAccelerator, prof)
	h, err := lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "hiro " + command}, keys...)
	if err != nil {
		if errors.Is(err, lease.ErrHeld) {
			return nil, busyError(context.Background(), fmt.Errorf("%s refused: %w", command, err))
		}
		return nil, FailedError(fmt.Errorf("%s: %w", command, err))
	}
	if prof.RequiresAccelerator && !prof.ExclusiveAccelerator {
		// It needs the accelerator, not alone: not beside a campaign's
		// exclusive candidate.
		sh, err := lease.AcquireShared(dir, lease.AcceleratorKey)
		if err != nil {
			h.Release()
			if errors.Is(err, lease.ErrHeld) {
				return nil, busyError(context.Background(), fmt.Errorf("%s refused: %w", command, err))
			}
			return nil, FailedError(fmt.Errorf("%s refused: %w", command, err))
		}
		sh.Release() // the check is the point: the engine outlives this command
	}
	return h, nil
}

// busyError is BusyError for a held lease; a refusal for the accelerator
// on a host that has none also says so, and what the lease means there
// (qualify.AcceleratorHeldNote).
func busyError(ctx context.Context, err error) error {
	if note := qualify.AcceleratorHeldNote(ctx, err); note != "" {
		err = fmt.Errorf("%w; %s", err, note)
	}
	return BusyError(err)
}
