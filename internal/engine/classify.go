package engine

import (
	"bufio"
	"errors"
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
// signal KILL", "ended (exit status unknown)".
func (x ExitInfo) String() string {
	switch {
	case x.Signal != "":
		return "killed by signal " + x.Signal
	case x.Code != nil:
		return fmt.Sprintf("exited with code %d", *x.Code)
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
	// (Status 0).
	OutcomeCompletionFailed
)

var outcomeNames = map[OutcomeKind]string{
	OutcomeExited: "exited", OutcomeReadyTimeout: "ready_timeout", OutcomeStallTimeout: "stall_timeout",
	OutcomePortInUse: "port_in_use", OutcomeHealthFailed: "health_failed",
	OutcomeIdentityMismatch: "identity_mismatch", OutcomeCompletionFailed: "completion_failed",
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
}

// templatePattern recognises a completion error about the chat template.
var templatePattern = regexp.MustCompile(`(?i)chat[ _-]?template|apply_chat_template|jinja`)

// Classify returns the failure of an attempt that ended as o, from what
// the tracker saw. Precedence, most specific first:
//
//  1. port in use before launch → port_in_use, phase prereq;
//  2. identity mismatch → identity_mismatch, phase ready_wait, both ids in
//     Detail ("expected_model", "reported_models");
//  3. a completion error about the chat template → tokenizer_template,
//     phase ready_wait;
//  4. a failure signature in the log → its class; its phase is the
//     signature's pinned phase or the phase when the line was seen;
//  5. a failed completion (error status, or no answer) → engine_died,
//     phase ready_wait; a health answer that will not clear → engine_died;
//  6. a ready or stall timeout → ready_timeout (Detail "timeout": "ready"
//     or "stall", "timeout_seconds");
//  7. any other exit before ready, exit code 0 included → engine_died,
//     with the first error line of the log as root cause when there is one.
//
// Unless a rule says otherwise the phase is the tracker's phase at the
// time of classification. The result always has Class, Phase, RootCause,
// SecondsSinceStart, LogTail, Facts and NextStep filled; ExitCode or
// Signal when o.Exit is known. It costs microseconds (copies of the tail
// and facts).
func (t *Tracker) Classify(o Outcome) *failure.Failure {
	t.mu.Lock()
	f := &failure.Failure{
		Phase:             t.phase,
		SecondsSinceStart: o.Elapsed.Seconds(),
		LogTail:           t.tailLocked(),
		Facts:             t.factsLocked(),
	}
	cand, fallback, marker := t.cand, t.fallback, t.marker
	var last string
	if len(f.LogTail) > 0 {
		last = f.LogTail[len(f.LogTail)-1]
	}
	t.mu.Unlock()

	if o.Exit.Code != nil {
		c := *o.Exit.Code
		f.ExitCode = &c
	}
	f.Signal = o.Exit.Signal
	detail := map[string]any{}

	switch {
	case o.Kind == OutcomePortInUse:
		f.Class, f.Phase = failure.ClassPortInUse, failure.PhasePrereq
		f.RootCause = fmt.Sprintf("address %s is already in use before launch", o.Address)
		if o.Message != "" {
			f.RootCause += ": " + o.Message
		}
		detail["address"] = o.Address

	case o.Kind == OutcomeIdentityMismatch:
		f.Class, f.Phase = failure.ClassIdentityMismatch, failure.PhaseReadyWait
		f.RootCause = fmt.Sprintf("model identity mismatch: expected %q, the engine reports %s",
			o.ExpectedModel, quoteList(o.ReportedModels))
		detail["expected_model"] = o.ExpectedModel
		detail["reported_models"] = append([]string{}, o.ReportedModels...)

	case o.Kind == OutcomeCompletionFailed && o.Status != 0 && templatePattern.MatchString(o.Message):
		f.Class, f.Phase = failure.ClassTokenizerTemplate, failure.PhaseReadyWait
		f.RootCause = fmt.Sprintf("chat completion answered HTTP %d: %s", o.Status, o.Message)
		detail["status_code"] = o.Status

	case cand.tier > 0:
		f.Class, f.Phase, f.RootCause = cand.class, cand.phase, cand.line
		switch o.Kind {
		case OutcomeCompletionFailed:
			detail["completion"] = completionText(o)
		case OutcomeReadyTimeout, OutcomeStallTimeout:
			detail["timeout"] = timeoutName(o.Kind)
			detail["timeout_seconds"] = o.Timeout.Seconds()
		}

	case o.Kind == OutcomeCompletionFailed:
		f.Class, f.Phase = failure.ClassEngineDied, failure.PhaseReadyWait
		f.RootCause = completionText(o)
		if o.Status != 0 {
			detail["status_code"] = o.Status
		}

	case o.Kind == OutcomeHealthFailed:
		f.Class = failure.ClassEngineDied
		if f.Phase.Index() < failure.PhaseReadyWait.Index() {
			f.Phase = failure.PhaseReadyWait
		}
		switch {
		case o.Health != nil && o.Health.State != HealthReady:
			f.RootCause = "health check: " + healthText(*o.Health)
		case o.Message != "":
			f.RootCause = o.Message
		default:
			f.RootCause = "health check failed"
		}

	case o.Kind == OutcomeReadyTimeout || o.Kind == OutcomeStallTimeout:
		f.Class = failure.ClassReadyTimeout
		which, what := timeoutName(o.Kind), "not ready after"
		if o.Kind == OutcomeStallTimeout {
			what = "no log output for"
		}
		f.RootCause = fmt.Sprintf("%s %s (%s timeout) in phase %s", what, roundDur(o.Timeout), which, f.Phase)
		if o.Health != nil {
			f.RootCause += fmt.Sprintf("; last health: %s", healthText(*o.Health))
		}
		if last != "" {
			f.RootCause += "; last log line: " + last
		}
		detail["timeout"] = which
		detail["timeout_seconds"] = o.Timeout.Seconds()

	default: // exited, or unknown
		f.Class = failure.ClassEngineDied
		if fallback != "" {
			f.RootCause = fallback
		} else {
			f.RootCause = fmt.Sprintf("%s before ready during %s; the log has no error line", o.Exit, f.Phase)
			if last != "" {
				f.RootCause += " (last line: " + last + ")"
			}
		}
	}
	if o.Health != nil && o.Kind != OutcomeReadyTimeout && o.Kind != OutcomeStallTimeout {
		detail["last_health"] = healthText(*o.Health)
	}
	if marker != "" {
		detail["last_marker"] = marker
	}
	if len(detail) > 0 {
		f.Detail = detail
	}
	f.NextStep = t.e.NextStep(f.Class)
	return f
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
// reading r.
func Diagnose(r io.Reader, kind string, exit ExitInfo) (*failure.Failure, error) {
	e, err := Lookup(kind)
	if err != nil {
		return nil, err
	}
	t := e.NewTracker()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			t.Feed(line)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the log: %w", err)
		}
	}
	return t.Classify(Outcome{Kind: OutcomeExited, Exit: exit}), nil
}
