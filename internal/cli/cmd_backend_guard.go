package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

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

// busyError is BusyError for a held lease, in short lines (issue 26 P5:
// it was one line of some 1,200 characters): what is held, by whom and
// how to stop that hiro; what to do; and, for the accelerator, one line
// of why (qualify.AcceleratorHeldNote: what it is on a host that has
// none, or that the holder shares it), each further line indented.
func busyError(ctx context.Context, err error) error {
	var he *lease.HeldError
	if !errors.As(err, &he) {
		return BusyError(err)
	}
	lines := he.Lines()
	msg := err.Error()
	if one := he.Error(); strings.HasSuffix(msg, one) {
		// The wrapping ("campaign not started: ") stays on the first line.
		lines[0] = strings.TrimSuffix(msg, one) + lines[0]
	} else {
		lines = []string{msg}
	}
	if note := qualify.AcceleratorHeldNote(ctx, err); note != "" {
		lines = append(lines, note)
	}
	return BusyError(&linesError{msg: strings.Join(lines, "\n  "), err: err})
}

// linesError is err told in the lines msg holds; errors.Is and As still
// see err.
type linesError struct {
	msg string
	err error
}

func (e *linesError) Error() string { return e.msg }
func (e *linesError) Unwrap() error { return e.err }
