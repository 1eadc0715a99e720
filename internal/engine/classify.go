package engine

import (
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/hiro-dev/hiro/internal/failure"
	"golang.org/x/sys/unix"
)

// ExitInfo says how a process ended: an exit code, a signal, or neither
// (unknown, or still running).
type ExitInfo struct {
	// Code is the exit status when the process exited by itself.
	Code *int
	// Signal is the name of the signal that ended it, without "SIG"
	// ("KILL", "SEGV").
	Signal string
	// Unknown says why neither is known, when a reason is: a process
	// another hiro started is not this one's child, so its exit status
	// cannot be read (the router watching a production that 'hiro
	// activate' or 'hiro rollback' started).
	Unknown string
}

// Exited is ExitInfo for a process that exited with code.
func Exited(code int) ExitInfo { return ExitInfo{Code: &code} }

// Signaled is ExitInfo for a process ended by the signal name ("KILL" or
// "SIGKILL"; stored without "SIG").
func Signaled(name string) ExitInfo {
	return ExitInfo{Signal: strings.TrimPrefix(strings.ToUpper(name), "SIG")}
}

// ExitInfoFrom reads an ended process's state (from exec.Cmd.Wait). A nil
// state gives the zero ExitInfo.
func ExitInfoFrom(ps *os.ProcessState) ExitInfo {
	if ps == nil {
		return ExitInfo{}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Signaled(unix.SignalName(ws.Signal()))
	}
	if ps.Exited() {
		return Exited(ps.ExitCode())
	}
	return ExitInfo{}
}

// Known reports whether the exit code or signal is known.
func (x ExitInfo) Known() bool { return x.Code != nil || x.Signal != "" }

// String says how the process ended: "exited with code 1", "killed by
// signal KILL", "ended (exit status unknown)", or with the reason it is
// unknown: "ended (exit status unknown: ...)".
func (x ExitInfo) String() string {
	switch {
	case x.Signal != "":
		return "killed by signal " + x.Signal
	case x.Code != nil:
		return fmt.Sprintf("exited with code %d", *x.Code)
	}
	if x.Unknown != "" {
		return "ended (exit status unknown: " + x.Unknown + ")"
	}
	return "ended (exit status unknown)"
}

// OutcomeKind is how an attempt ended without reaching ready.
type OutcomeKind int

const (
	// OutcomeExited: the process exited before ready (any exit code,
	// 0 included) or was killed by a signal.
	OutcomeExited OutcomeKind = iota + 1
	// OutcomeReadyTimeout: the hard ready timeout expired.
	OutcomeReadyTimeout
	// OutcomeStallTimeout: the engine logged nothing for the stall timeout.
	OutcomeStallTimeout
	// OutcomePortInUse: the port was already taken before launch; nothing
	// was started.
	OutcomePortInUse
	// OutcomeHealthFailed: the health check answered a state that does not
	// clear by waiting (vLLM 503: the engine core is dead), or a step after
	// it failed (Message; e.g. the model list could not be read). The root
	// cause is Health when it is not ready, else Message.
	OutcomeHealthFailed
	// OutcomeIdentityMismatch: the model ids the engine reports do not
	// include the expected one.
	OutcomeIdentityMismatch
	// OutcomeCompletionFailed: the bounded real completion of the
	// readiness check failed: an HTTP error status, or no answer in time
	// (Status 0), or a reply other than the expected one (Status 200).
	OutcomeCompletionFailed
	// OutcomeAcceleratorUnavailable: readiness passed, but the profile
	// requires an accelerator and the log shows the model served by the
	// CPU (Device).
	OutcomeAcceleratorUnavailable
)

var outcomeNames = map[OutcomeKind]string{
	OutcomeExited: "exited", OutcomeReadyTimeout: "ready_timeout", OutcomeStallTimeout: "stall_timeout",
	OutcomePortInUse: "port_in_use", OutcomeHealthFailed: "health_failed",
	OutcomeIdentityMismatch: "identity_mismatch", OutcomeCompletionFailed: "completion_failed",
	OutcomeAcceleratorUnavailable: "accelerator_unavailable",
}

func (k OutcomeKind) String() string {
	if s, ok := outcomeNames[k]; ok {
		return s
	}
	return fmt.Sprintf("OutcomeKind(%d)", int(k))
}

// Outcome is how one attempt ended, as the supervisor saw it. Only the
// fields of its Kind matter; Exit and Elapsed apply to every kind.
type Outcome struct {
	Kind OutcomeKind
	// Exit is how the process ended, when it did (OutcomeExited; also for
	// other kinds when the process was stopped afterwards).
	Exit ExitInfo
	// Elapsed is the time from the start of the attempt to the failure.
	Elapsed time.Duration
	// Timeout is the bound that expired (ready or stall timeout).
	Timeout time.Duration
	// Health is the last health answer, when one was made.
	Health *HealthResult
	// ExpectedModel and ReportedModels: OutcomeIdentityMismatch.
	ExpectedModel  string
	ReportedModels []string
	// Status and Message: the HTTP status and error message of a failed
	// completion or health answer (Status 0: no answer in time).
	Status  int
	Message string
	// Address is host:port, for OutcomePortInUse.
	Address string
	// Device is the serving device the log showed, for
	// OutcomeAcceleratorUnavailable.
	Device ServingDevice
	// AfterReady: the attempt had been ready (a production server that
	// died later); the phase is then at least ready and no message says
	// "before ready".
	AfterReady bool
}

// templatePattern recognises a completion error about the chat template.
var templatePattern = regexp.MustCompile(`(?i)chat[ _-]?template|apply_chat_template|jinja`)

// isStructured reports the structured-output failure classes.
func isStructured(c failure.Class) bool {
	return c == failure.ClassStructuredOutputRejected || c == failure.ClassStructuredOutputFailOpen ||
		c == failure.ClassStructuredOutputCrash
}

// isAccelClass reports classes an engine may outlive by serving on the CPU.
func isAccelClass(c failure.Class) bool {
	return c == failure.ClassAcceleratorUnavailable || c == failure.ClassDriverMismatch ||
		c == failure.ClassGPUArchUnsupported || c == failure.ClassAcceleratorBusy
}

// exitSignal returns the signal that ended the process (from the signal,
// or a shell's 128+N exit code) and the exit code (-1 when none).
func exitSignal(x ExitInfo) (sig string, code int) {
	code = -1
	if x.Code != nil {
		code = *x.Code
	}
	if x.Signal != "" {
		return x.Signal, code
	}
	switch code {
	case 130:
		return "INT", code
	case 132:
		return "ILL", code
	case 134:
		return "ABRT", code
	case 135:
		return "BUS", code
	case 137:
		return "KILL", code
	case 139:
		return "SEGV", code
	case 143:
		return "TERM", code
	}
	return "", code
}

// exitMeaning says what a signal or exit code usually means when the log
// names no cause.
func exitMeaning(sig string, code int) string {
	switch sig {
	case "KILL":
		return "a KILL with no message in the log is often the kernel's OOM killer: check dmesg or journalctl -k for \"Out of memory: Killed process\""
	case "SEGV":
		return "segmentation fault: a crash in native code"
	case "ABRT":
		return "abort: a native assertion or an uncaught C++ exception"
	case "TERM", "INT", "HUP", "QUIT":
		return "stopped from outside"
	}
	switch code {
	case 125:
		return "exit 125: the container runtime failed before the engine started (docker run's own error)"
	case 0:
		return "exit 0: the engine ended by itself without saying why"
	}
	return ""
}

func timeoutName(k OutcomeKind) string {
	if k == OutcomeStallTimeout {
		return "stall"
	}
	return "ready"
}

func completionText(o Outcome) string {
	if o.Status == 0 {
		msg := "chat completion got no answer"
		if o.Timeout > 0 {
			msg += " within " + roundDur(o.Timeout)
		}
		if o.Message != "" {
			msg += ": " + o.Message
		}
		return msg
	}
	return fmt.Sprintf("chat completion answered HTTP %d: %s", o.Status, o.Message)
}

func healthText(h HealthResult) string {
	// A message that names its request and status itself ("GET /health
	// answered HTTP 401: ...", every engine's words for a refused health
	// check) is said once, not after the same request and status (issue
	// 26: "down GET /health HTTP 401: GET /health answered HTTP 401").
	if h.StatusCode != 0 && strings.HasPrefix(h.Message, fmt.Sprintf("GET %s answered HTTP %d", h.Path, h.StatusCode)) {
		return fmt.Sprintf("%s: %s", h.State, h.Message)
	}
	s := fmt.Sprintf("%s GET %s", h.State, h.Path)
	if h.StatusCode != 0 {
		s += fmt.Sprintf(" HTTP %d", h.StatusCode)
	}
	if h.Message != "" {
		s += ": " + h.Message
	}
	return s
}

func roundDur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.String()
}

func quoteList(ids []string) string {
	if len(ids) == 0 {
		return "no model"
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

// Diagnose classifies a log read after the fact (a pasted engine log): it
// feeds every line of r to a Tracker of kind and classifies the end as an
// exit before ready with exit (the zero ExitInfo when unknown). The
// failure has no SecondsSinceStart (0): a log alone does not say when the
// engine started. Errors: an unknown kind (wrapping ErrUnknownKind), or
// reading r. DiagnoseLog says more (the serving device, a profile that
// requires an accelerator).
func Diagnose(r io.Reader, kind string, exit ExitInfo) (*failure.Failure, error) {
	d, err := DiagnoseLog(r, kind, DiagnoseOptions{Exit: exit})
	if err != nil {
		return nil, err
	}
	return d.Failure, nil
}
