package cli

import (
	"errors"
	"fmt"

	"github.com/hiro-dev/hiro/internal/exitcode"
)

// Exit statuses: package exitcode defines them (the contract of docs/design.md
// "Contracts other tools read"); errors are mapped to them in exactly one
// place: ExitCode.
const (
	ExitOK       = exitcode.OK
	ExitFailed   = exitcode.Failed
	ExitUsage    = exitcode.Usage
	ExitAborted  = exitcode.Aborted
	ExitCritical = exitcode.Critical
	// ExitInconclusive is qualify's: no gate failed, a comparison could
	// not decide.
	ExitInconclusive = exitcode.Inconclusive
	// ExitBusy: another hiro holds what the command needs; nothing was
	// started or stopped.
	ExitBusy = exitcode.Busy
)

// ExitError carries an exit status with its cause. Use the constructors
// UsageError, FailedError, AbortedError, CriticalError and BusyError.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// UsageError marks err as bad usage or configuration (exit 2).
func UsageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// UsageErrorf formats a bad-usage error (exit 2).
func UsageErrorf(format string, a ...any) error {
	return UsageError(fmt.Errorf(format, a...))
}

// FailedError marks err as a failed check (exit 1).
func FailedError(err error) error { return &ExitError{Code: ExitFailed, Err: err} }

// AbortedError marks err as a harness error or interrupt (exit 3).
func AbortedError(err error) error { return &ExitError{Code: ExitAborted, Err: err} }

// CriticalError marks err as production not restored (exit 4).
func CriticalError(err error) error { return &ExitError{Code: ExitCritical, Err: err} }

// BusyError marks err as refused because another hiro holds what the
// command needs (exit 6): a lease or the switch lock. Nothing was started
// or stopped.
func BusyError(err error) error { return &ExitError{Code: ExitBusy, Err: err} }

// Silent returns an ExitError that sets the status without printing a
// message: the command already reported its outcome (e.g. a --json object).
func Silent(code int) error { return &ExitError{Code: code} }

// ExitCode maps an error to its exit status: nil → 0, *ExitError → its code,
// anything else → ExitFailed.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitFailed
}
