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

// Classify returns the failure of an attempt that ended as o, from what
// the tracker saw. Precedence, most specific first:
//
//  1. port in use before launch → port_in_use, phase prereq;
//  2. identity mismatch → identity_mismatch, phase ready_wait, both ids in
//     Detail ("expected_model", "reported_models");
//  3. a completion error about the chat template → tokenizer_template,
//     phase ready_wait;
//  4. a root-cause line in the log (a failure signature, or a traceback
//     whose frames name the component) → its class; its phase is the
//     signature's pinned phase or the phase when the line was seen (or
//     where the engine stopped, when it outlived the line). An engine
//     crash while serving with a grammar backend in use is
//     structured_output_crash; a grammar failure is crash when the engine
//     died of it, rejected when requests failed after it. A worker's death
//     hint (Ollama's runner) that requests were served after does not
//     explain a later death of the process: it goes to Detail "survived";
//  5. a log whose server stayed up (exit 0) after serving requests →
//     probe_failed: the first error line no signature explains, or with
//     none, the replies themselves were wrong;
//  6. CPU serving when the profile requires an accelerator →
//     accelerator_unavailable, phase ready_wait (accelerator_busy when the
//     engine found the GPU and placed no layer on it);
//  7. a failed or wrong probe completion (the server is up) →
//     probe_failed, phase ready_wait; a health answer that will not clear
//     → engine_died;
//  8. a ready or stall timeout → ready_timeout (Detail "timeout": "ready"
//     or "stall", "timeout_seconds");
//  9. an exit the signal or code explains: SIGILL (or 132) →
//     host_capability; SIGBUS (135) → host_capability; an outside stop
//     (TERM, INT, HUP, QUIT; 143, 130) before ready → ready_timeout;
//     126/127 (command not executable / not found) → engine_died saying so;
//  10. any other exit, exit code 0 included → engine_died, with the first
//     error line of the log as root cause when there is one.
//
// Unless a rule says otherwise the phase is the tracker's phase at the
// time of classification (at least ready with o.AfterReady). The result
// always has Class, Phase, RootCause, SecondsSinceStart, LogTail, Facts
// and NextStep filled; ExitCode or Signal when o.Exit is known; Detail
// "traceback_frames" when the root cause came from a Python traceback.
// It costs microseconds (copies of the tail and facts).
func (t *Tracker) Classify(o Outcome) *failure.Failure {
	t.mu.Lock()
	if t.tb.open {
		// a traceback cut off by the end of the log: its header explains
		t.cutBlock()
	}
	f := &failure.Failure{
		Phase:             t.phase,
		SecondsSinceStart: o.Elapsed.Seconds(),
		LogTail:           t.tailLocked(),
		Facts:             t.factsLocked(),
	}
	cand, fallback, marker := t.cand, t.fallback, t.marker
	grammar, served, frames := t.grammar, t.served || t.phase.Index() >= failure.PhaseReady.Index() || o.AfterReady, t.frames
	errAfter, device, phaseNow := t.errAfter, t.device, t.phase
	okAfter := t.okAfter
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
	sig, code := exitSignal(o.Exit)
	stayedUp := o.Kind != OutcomeExited || (o.Exit.Code != nil && *o.Exit.Code == 0)
	died := o.Kind == OutcomeExited && (sig != "" || code > 0)
	if died && cand.tier == TierHint && cand.class == failure.ClassEngineDied && okAfter {
		// A worker's death the server outlived (Ollama restarts its runner
		// and serves again) does not explain the server's own death later.
		detail["survived"] = cand.line
		cand = candidate{}
	}

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

	case o.Kind == OutcomeCompletionFailed && o.Status != 0 && o.Status != 200 && templatePattern.MatchString(o.Message):
		f.Class, f.Phase = failure.ClassTokenizerTemplate, failure.PhaseReadyWait
		f.RootCause = fmt.Sprintf("chat completion answered HTTP %d: %s", o.Status, o.Message)
		detail["status_code"] = o.Status

	case cand.tier > 0 && !(cand.warn && o.Kind != OutcomeExited):
		// (a warning explains an exit, but not what hiro's own readiness
		// checks saw: a wrong probe reply, a timeout)
		f.Class, f.Phase, f.RootCause = cand.class, cand.phase, cand.line
		inServing := cand.phase.Index() >= failure.PhaseReadyWait.Index()
		switch {
		case cand.crash && grammar && inServing:
			f.Class = failure.ClassStructuredOutputCrash
		case isStructured(f.Class) && died:
			// the grammar failure took the engine down
			f.Class = failure.ClassStructuredOutputCrash
		case isStructured(f.Class) && stayedUp && errAfter:
			f.Class = failure.ClassStructuredOutputRejected
		case f.Class == failure.ClassStructuredOutputCrash && stayedUp:
			f.Class = failure.ClassStructuredOutputRejected
		}
		// The engine outlived the line and went on: the failure shows where
		// it stopped (a CPU fallback found at ready, a supervisor's stop
		// while loading on the CPU), not where the line was logged.
		if phaseNow.Index() > f.Phase.Index() && !isStructured(f.Class) &&
			(phaseNow.Index() >= failure.PhaseReadyWait.Index() || (device.CPUOnly() && isAccelClass(f.Class))) {
			f.Phase = phaseNow
		}
		if len(frames) > 0 {
			detail["traceback_frames"] = frames
		}
		switch o.Kind {
		case OutcomeCompletionFailed:
			detail["completion"] = completionText(o)
		case OutcomeReadyTimeout, OutcomeStallTimeout:
			detail["timeout"] = timeoutName(o.Kind)
			detail["timeout_seconds"] = o.Timeout.Seconds()
		case OutcomeAcceleratorUnavailable:
			detail["device"] = o.Device.String()
		}

	case o.Kind == OutcomeExited && stayedUp && t.servedLocked():
		// The server stayed up and served requests: what failed is a
		// request (an error line no signature explains) or, with no error
		// line, the reply itself (the probe's expected answer did not
		// come back).
		f.Class = failure.ClassProbeFailed
		if fallback != "" {
			f.RootCause = fallback
			if len(frames) > 0 {
				detail["traceback_frames"] = frames
			}
		} else {
			f.RootCause = "the server stayed up and answered requests, but no log line names a failure: the replies " +
				"themselves were wrong (the probe's expected reply did not come back)"
		}

	case o.Kind == OutcomeAcceleratorUnavailable:
		f.Class, f.Phase = failure.ClassAcceleratorUnavailable, failure.PhaseReadyWait
		f.RootCause = "the model is served by the CPU, but the profile requires an accelerator (requires_accelerator)"
		if d := o.Device; d.Name != "" && d.TotalLayers > 0 && d.GPULayers == 0 {
			// The engine found the GPU (its discovery named it) and still
			// placed no layer there: its free memory was too small, the
			// way memory held by other processes leaves it (Ollama on an
			// occupied GPU), not a missing device.
			f.Class = failure.ClassAcceleratorBusy
			f.RootCause = fmt.Sprintf("the engine found the GPU (%s) but placed 0 of %d layers on it: its free memory was too small "+
				"(other processes may hold it: hiro doctor lists them), so the model is served by the CPU, and the profile "+
				"requires an accelerator (requires_accelerator)", d.Name, d.TotalLayers)
			detail["gpu_found"] = d.Name
		}
		if o.Device.Evidence != "" {
			f.RootCause += ": " + o.Device.Evidence
		}
		detail["device"] = o.Device.String()

	case o.Kind == OutcomeCompletionFailed:
		f.Class, f.Phase = failure.ClassProbeFailed, failure.PhaseReadyWait
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
			f.Class, f.Phase = failure.ClassProbeFailed, failure.PhaseReadyWait
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

	case sig == "ILL":
		f.Class = failure.ClassHostCapability
		f.RootCause = fmt.Sprintf("%s during %s: illegal instruction, the CPU lacks an instruction set this engine build uses (e.g. AVX2, AVX-512)", o.Exit, f.Phase)
	case sig == "BUS":
		f.Class = failure.ClassHostCapability
		f.RootCause = fmt.Sprintf("%s during %s: bus error, typically shared memory (/dev/shm) too small in a container", o.Exit, f.Phase)
	case (sig == "TERM" || sig == "INT" || sig == "HUP" || sig == "QUIT") && !served:
		f.Class = failure.ClassReadyTimeout
		f.RootCause = fmt.Sprintf("stopped from outside (%s) while still starting, in phase %s: another supervisor's timeout or an operator ended it before ready", o.Exit, f.Phase)
		if fallback != "" {
			f.RootCause += "; first error line: " + fallback
		}
		detail["stopped_by"] = "outside"
	case code == 126 || code == 127:
		f.Class = failure.ClassEngineDied
		what := "the command was not found"
		if code == 126 {
			what = "the command could not be executed (permission or format)"
		}
		f.RootCause = fmt.Sprintf("%s: %s (shell or container convention)", o.Exit, what)
		if fallback != "" {
			f.RootCause += "; " + fallback
		}

	default: // exited, or unknown
		f.Class = failure.ClassEngineDied
		when := "before ready during " + string(f.Phase)
		switch {
		case t.servedLocked():
			when = "while serving requests (phase " + string(f.Phase) + ")"
		case served:
			when = "while serving (after ready)"
		}
		switch {
		case fallback != "":
			f.RootCause = fallback
			if len(frames) > 0 {
				detail["traceback_frames"] = frames
			}
		default:
			f.RootCause = fmt.Sprintf("%s %s; the log has no error line", o.Exit, when)
			if detail["survived"] != nil {
				f.RootCause = fmt.Sprintf("%s %s; the log has no line about it (an earlier failure, survived: see detail.survived)", o.Exit, when)
			}
			if why := exitMeaning(sig, code); why != "" {
				f.RootCause += " (" + why + ")"
			}
			if last != "" {
				f.RootCause += " (last line: " + last + ")"
			}
		}
	}
	if o.AfterReady && f.Phase.Index() < failure.PhaseReady.Index() {
		f.Phase = failure.PhaseReady
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
	if f.Class == failure.ClassEngineDied && (cand.tier > 0 || fallback != "") {
		f.NextStep = engineCrashStep
	}
	return f
}

func (t *Tracker) servedLocked() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.served
}

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
