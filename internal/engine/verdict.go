package engine

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/hiro-dev/hiro/internal/failure"
)

// verdict is one classification in progress: the outcome, what the
// tracker saw (a snapshot taken under its lock), and the failure being
// filled. The outcome rules read it and fill f and detail.
type verdict struct {
	e         *Engine
	o         Outcome
	f         *failure.Failure
	detail    map[string]any
	cand      candidate
	fallback  string // the first error line no rule explains
	frames    []string
	marker    string
	grammar   bool // a grammar backend / structured output in use
	schemaReq bool // a request carried a schema or grammar
	requests  bool // the log shows a completion request served (2xx)
	served    bool // requests served, or the attempt reached ready
	errAfter  bool // a request failed after the root-cause line
	okAfter   bool // a request succeeded after the root-cause line
	device    ServingDevice
	devPhase  failure.Phase // the phase in progress when the device's evidence line was seen
	phaseNow  failure.Phase
	last      string // the last log line
	sig       string // the signal that ended the process (or its 128+N code)
	code      int    // the exit code, -1 when none
	stayedUp  bool   // the server did not die (a timeout, a probe, exit 0)
	died      bool   // exited by a signal or a non-zero code
	classes   []failure.Class
	childDied bool   // a line reported a process's death (the engine child's, under a wrapper that outlived it)
	upAt      int64  // the line in which the server said it was up (Tracker.upAt)
	rule      string // the name of the rule that decided
	step      string // the deciding rule's own next step, if any
	strength  failure.Confidence
}

// outcomeRule is one entry of outcomeRules: when When holds, Give fills
// the verdict; Name is recorded as the deciding rule unless Give names a
// more precise one (a log-line rule, an exit rule); Strength is the
// verdict's confidence unless Give sets it.
type outcomeRule struct {
	Name     string
	Strength failure.Confidence
	When     func(v *verdict) bool
	Give     func(v *verdict)
}

// outcomeRules is the classifier's ordered table, most specific first;
// Classify gives the verdict of the first whose When holds. The last
// rule always holds.
var outcomeRules = []outcomeRule{
	{"outcome/port-in-use", failure.ConfidenceStrong, isKind(OutcomePortInUse), givePortInUse},
	{"outcome/identity-mismatch", failure.ConfidenceStrong, isKind(OutcomeIdentityMismatch), giveIdentityMismatch},
	{"outcome/completion-chat-template", failure.ConfidenceStrong, completionTemplateError, giveCompletionTemplate},
	{"line", failure.ConfidenceStrong, lineExplains, giveLine},
	{"outcome/served-on-cpu", failure.ConfidenceWeak, servedOnCPU, giveServedOnCPU},
	{"outcome/schema-not-honoured", failure.ConfidenceWeak, schemaNotHonoured, giveSchemaNotHonoured},
	{RuleNoFailureShown, failure.ConfidenceNone, noFailureShown, giveNoFailureShown},
	{"outcome/served-then-failed", failure.ConfidenceWeak, servedThenFailed, giveServedThenFailed},
	{"outcome/cpu-serving", failure.ConfidenceStrong, isKind(OutcomeAcceleratorUnavailable), giveCPUServing},
	{"outcome/completion-failed", failure.ConfidenceStrong, isKind(OutcomeCompletionFailed), giveCompletionFailed},
	{"outcome/health-refused-key", failure.ConfidenceStrong, healthRefusedKey, giveHealthRefusedKey},
	{"outcome/health-failed", failure.ConfidenceStrong, isKind(OutcomeHealthFailed), giveHealthFailed},
	{"outcome/timeout", failure.ConfidenceStrong, isTimeout, giveTimeout},
	{"exit", failure.ConfidenceStrong, exitExplains, giveExit},
	{"outcome/listening-never-reached", failure.ConfidenceWeak, listeningNeverReached, giveListeningNeverReached},
	{"fallback/engine-died", failure.ConfidenceNone, func(*verdict) bool { return true }, giveEngineDied},
}

// RuleNoFailureShown is the rule of a log read after the fact that shows
// no failure at all: no line a rule explains, no error line, no process's
// death, and no exit status given (hiro diagnose without --exit or
// --signal). Its class is engine_died, the best guess if the engine did
// end, with confidence none; 'hiro diagnose' says "no failure in this
// log" for it rather than "failed".
const RuleNoFailureShown = "outcome/no-failure-in-log"

// noFailureShown: the attempt "exited" only because the log was read
// after the fact (no exit code, signal or reason for not knowing them),
// and nothing in the log says anything failed.
func noFailureShown(v *verdict) bool {
	x := v.o.Exit
	untold := x.Code == nil && x.Signal == "" && x.Unknown == ""
	return v.o.Kind == OutcomeExited && (untold || servedCleanly(v)) &&
		v.cand.tier == 0 && v.fallback == "" && !v.childDied && v.detail["survived"] == nil
}

// servedCleanly: the engine served (a request line, or phase inference)
// and ended with code 0, or stayed up (a case's exit 0): with no line
// showing a failure, nothing says a reply was wrong either (a graceful
// stop after serving, such as 'hiro backend stop', ends so).
func servedCleanly(v *verdict) bool {
	x := v.o.Exit
	return x.Code != nil && *x.Code == 0 && x.Signal == "" && (v.requests || v.phaseNow == failure.PhaseInference)
}

// listeningNeverReached: the server said it listens and went on (exit
// 0, or its process stayed up), it was never ready and no request
// reached it, and no line says anything failed: what answered on the
// port was another process (a second instance of a server that binds
// with SO_REUSEADDR, KoboldCpp before 1.63; Windows handing the port to
// the first of two llama.cpp servers).
func listeningNeverReached(v *verdict) bool {
	x := v.o.Exit
	return v.o.Kind == OutcomeExited && x.Code != nil && *x.Code == 0 && v.f.Phase == failure.PhaseReadyWait &&
		v.upAt > 0 && !v.served && !v.requests && v.cand.tier == 0 && v.fallback == "" && !v.childDied
}

// giveListeningNeverReached: port_in_use, weakly (another address bound
// than the profile's reads the same), with both in the next step.
func giveListeningNeverReached(v *verdict) {
	f := v.f
	f.Class = failure.ClassPortInUse
	f.RootCause = fmt.Sprintf("the server said it listens and went on, but was never ready and no request reached it; "+
		"no line shows a failure: another process on the port answers in its place (last line: %s)", v.last)
	v.step = "Another process answers on this port although the engine says it listens (a second instance: some servers " +
		"bind with SO_REUSEADDR, and Windows hands the port to the first): stop the other one (ss -ltnp, netstat -ano shows " +
		"who), or give the profile another port; check also that the engine binds the address the profile probes."
}

// giveNoFailureShown says that the log shows no failure, and what it
// does show: the phase it reached and its last line.
func giveNoFailureShown(v *verdict) {
	f := v.f
	f.Class = failure.ClassEngineDied
	if servedCleanly(v) {
		f.Class = failure.ClassProbeFailed
		f.RootCause = fmt.Sprintf("no line of the log shows a failure: the server served requests and ended with code 0 "+
			"or stayed up; the log reaches phase %s (last line: %s)", f.Phase, v.last)
		v.step = "The log shows no failure. If a client saw wrong replies, the log cannot show them: compare the " +
			"replies with what was expected (hiro eval, or the probe's expect); if the engine was stopped on purpose " +
			"(hiro backend stop, the end of a campaign), there is nothing to fix."
		return
	}
	f.RootCause = fmt.Sprintf("no line of the log shows a failure (no error line, no process's death), and how the "+
		"engine ended is not given; the log reaches phase %s (last line: %s)", f.Phase, v.last)
	v.step = "The log shows no failure. If the engine did stop, say how it ended (--exit CODE or --signal NAME) and give " +
		"the whole log, from its start; then check the kernel log (dmesg: OOM killer, Xid errors) for a death the log could not show."
}

// exitRules say what an exit means when no log line explains it, first
// match wins (Rule.Signals, Codes, BeforeReady, Explain).
var exitRules = family("exit", []Rule{
	{Name: "exit/illegal-instruction", Signals: []string{"ILL"}, Class: failure.ClassHostCapability, NextStep: sigillStep,
		Explain: "%[1]s during %[2]s: illegal instruction, the CPU lacks an instruction set this engine build uses (e.g. AVX2, AVX-512)"},
	{Name: "exit/bus-error", Signals: []string{"BUS"}, Class: failure.ClassHostCapability, Tier: TierHint, NextStep: shmStep,
		Explain: "%[1]s during %[2]s: bus error, typically shared memory (/dev/shm) too small in a container"},
	{Name: "exit/stopped-from-outside", Signals: []string{"TERM", "INT", "HUP", "QUIT"}, BeforeReady: true, Class: failure.ClassReadyTimeout,
		Explain: "stopped from outside (%[1]s) while still starting, in phase %[2]s: another supervisor's timeout or an operator ended it before ready"},
	// the same signals once it had served (the rule above takes them
	// before ready): hiro's own graceful stop, a router's or campaign's
	// end, systemd, a container stop. With no error line the log shows
	// no failure, so no OOM advice (that is a KILL's); weak, as the stop
	// may have come for a reason the log does not show.
	{Name: "exit/stopped-after-serving", Signals: []string{"TERM", "INT", "HUP", "QUIT"}, Class: failure.ClassEngineDied, Tier: TierHint,
		NextStep: stoppedAfterServingStep,
		Explain:  "stopped from outside (%[1]s) after it served, in phase %[2]s: no line of the log shows a failure; a supervisor or an operator ended it"},
	{Name: "exit/command-not-executable", Codes: []int{126}, Class: failure.ClassEngineDied,
		Explain: "%[1]s: the command could not be executed (permission or format) (shell or container convention)"},
	{Name: "exit/command-not-found", Codes: []int{127}, Class: failure.ClassEngineDied,
		Explain: "%[1]s: the command was not found (shell or container convention)"},
})

// stoppedAfterServingStep is the next step of a server stopped by a
// signal from outside after it served, with no error line in its log.
const stoppedAfterServingStep = "The log shows no failure: the server served and was then stopped by a signal from " +
	"outside. If you or hiro stopped it (hiro backend stop, the end of a campaign or of 'hiro serve'), there is nothing " +
	"to fix; if not, find who sent the signal (systemd, a container runtime's stop, another supervisor's timeout)."

// Classify returns the failure of an attempt that ended as o, from what
// the tracker saw: the verdict of the first rule of outcomeRules that
// holds. Precedence, most specific first: the port taken before launch;
// the model identity; a completion error about the chat template; a
// root-cause line of the log (the engine's rules and the shared families:
// its class, and its phase pinned or when the line was seen, refined by
// context, see giveLine); a server that stayed up after serving requests
// (probe_failed); CPU serving when the profile requires an accelerator; a
// failed probe completion or health answer; a ready or stall timeout; an
// exit the signal or code explains (exitRules); else engine_died with the
// first error line of the log.
//
// The failure records the deciding rule's name (Rule) and the verdict's
// Confidence: strong when a specific rule matched the root-cause line (or
// hiro's own check decided), weak when only a generic rule matched or the
// log's lines point at other classes too (Classes), none when no rule
// matched and the class is the fallback. Unless a rule says otherwise the
// phase is the tracker's phase at the time of classification (at least
// ready with o.AfterReady). The result always has Class, Phase,
// RootCause, SecondsSinceStart, LogTail, Facts and NextStep filled;
// ExitCode or Signal when o.Exit is known; Detail "traceback_frames" when
// the root cause came from a Python traceback. It costs microseconds.
func (t *Tracker) Classify(o Outcome) *failure.Failure {
	v := t.snapshot(o)
	for i := range outcomeRules {
		r := &outcomeRules[i]
		if !r.When(v) {
			continue
		}
		v.rule, v.strength = r.Name, r.Strength
		r.Give(v)
		break
	}
	return v.finish()
}

// snapshot takes what the tracker saw, under its lock, into a verdict.
func (t *Tracker) snapshot(o Outcome) *verdict {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tb.open {
		t.cutBlock() // a traceback cut off by the end of the log: its header explains
	}
	v := &verdict{e: t.e, o: o, detail: map[string]any{},
		f: &failure.Failure{Phase: t.phase, SecondsSinceStart: o.Elapsed.Seconds(),
			LogTail: t.tailLocked(), Facts: t.factsLocked(), Signal: o.Exit.Signal},
		cand: t.cand, fallback: t.fallback, frames: t.frames, marker: t.marker, grammar: t.grammar, schemaReq: t.schemaReq,
		requests: t.served, errAfter: t.errAfter, okAfter: t.okAfter, device: t.device, devPhase: t.devicePhase, phaseNow: t.phase,
		classes: append([]failure.Class(nil), t.classes...), childDied: t.died, upAt: t.upAt}
	if v.cand.tier == 0 {
		v.cand = t.outlived // nothing failed after the thread the process outlived
	}
	v.served = t.served || t.phase.Index() >= failure.PhaseReady.Index() || o.AfterReady
	if n := len(v.f.LogTail); n > 0 {
		v.last = v.f.LogTail[n-1]
	}
	if o.Exit.Code != nil {
		c := *o.Exit.Code
		v.f.ExitCode = &c
	}
	v.sig, v.code = exitSignal(o.Exit)
	v.stayedUp = o.Kind != OutcomeExited || (o.Exit.Code != nil && *o.Exit.Code == 0)
	v.died = o.Kind == OutcomeExited && (v.sig != "" || v.code > 0)
	v.settleCandidate(t.deviceAt)
	return v
}

// settleCandidate drops a hint the rest of the log shows was no failure:
// a worker's death the server outlived (Ollama restarts its runner and
// serves again), which does not explain the server's own death later;
// a device the discovery dropped (an integrated GPU, one too old) when
// a later line (deviceAt) shows the model on another GPU: the notice
// explains CPU serving only.
func (v *verdict) settleCandidate(deviceAt int64) {
	switch {
	case v.died && v.cand.tier == TierHint && v.cand.class == failure.ClassEngineDied && v.okAfter:
		v.detail["survived"] = v.cand.line
		v.cand = candidate{}
	case v.cand.notice && isAccelClass(v.cand.class) && v.device.Kind == DeviceGPU && deviceAt > v.cand.at:
		v.cand = candidate{}
	}
}

// finish fills what every verdict has: the phase after ready, the last
// health answer and marker, the rule, confidence and next step.
func (v *verdict) finish() *failure.Failure {
	f, o := v.f, v.o
	v.requestPhase()
	if o.AfterReady && f.Phase.Index() < failure.PhaseReady.Index() {
		f.Phase = failure.PhaseReady
	}
	if o.Health != nil && o.Kind != OutcomeReadyTimeout && o.Kind != OutcomeStallTimeout {
		v.detail["last_health"] = healthText(*o.Health)
	}
	if v.marker != "" {
		v.detail["last_marker"] = v.marker
	}
	if len(v.detail) > 0 {
		f.Detail = v.detail
	}
	f.Rule, f.Confidence = v.rule, v.strength
	f.Classes = otherClasses(v.allClasses(), f.Class)
	if len(f.Classes) > 0 && f.Confidence == failure.ConfidenceStrong && v.rule == v.cand.rule {
		f.Confidence = failure.ConfidenceWeak // the log's lines conflict
	}
	f.NextStep = v.e.NextStep(f.Class)
	switch {
	case v.step != "":
		f.NextStep = v.step
	case f.Class == failure.ClassEngineDied && (v.cand.tier > 0 || v.fallback != ""):
		f.NextStep = engineCrashStep
	}
	return f
}

// requestPhase makes the phase inference when failedOnRequest holds.
func (v *verdict) requestPhase() {
	if v.failedOnRequest() {
		v.f.Phase = failure.PhaseInference
	}
}

// reBindFailure: a listener that could not bind its address, whatever
// the class its words give (EACCES on a reserved port is
// permission_denied): the start-up's own failure, no request's.
var reBindFailure = regexp.MustCompile(`(?i)\b(while attempting to bind|bind\(\) failed|failed to bind|could not bind|cannot bind)\b`)

// failedOnRequest reports a failure after the server said it was up,
// with no request line in the log: the phase is inference, not
// ready_wait. An engine does no device work after it listens but for a
// request (its own warmup, where it has one after listening, its markers
// name), and servers log requests seldom (Triton, LMDeploy, TGI's shards,
// most engines run as openai print none). Not when hiro's own health
// check had answered ready (its probe completion was the request, phase
// ready_wait), nor for failures of the start-up itself: a port taken
// when the listener binds after "Application startup complete", a
// configuration refused; nor for a warning (Ollama listens first, then
// discovers its devices and warns of those it drops).
func (v *verdict) failedOnRequest() bool {
	f, h := v.f, v.o.Health
	if v.upAt == 0 || f.Phase != failure.PhaseReadyWait || v.requests || v.o.Kind != OutcomeExited ||
		h != nil && h.State == HealthReady {
		return false
	}
	switch {
	case f.Class == failure.ClassPortInUse, f.Class == failure.ClassInvalidConfiguration, reBindFailure.MatchString(v.cand.line):
		return false
	}
	if v.cand.tier > 0 {
		return v.cand.at > v.upAt && !v.cand.warn
	}
	return v.fallback != "" // none before the server was up (upAt)
}

// rule returns the engine's signature named name, or the zero Rule (a
// frame hint, a native frame: no signature).
func (e *Engine) rule(name string) *Rule {
	for i := range e.signatures {
		if e.signatures[i].Name == name {
			return &e.signatures[i]
		}
	}
	return &Rule{}
}

// ruleStep returns the NextStep of the engine's rule named name (a
// signature or a traceback frame hint), or "".
func (e *Engine) ruleStep(name string) string {
	if s := e.rule(name).NextStep; s != "" {
		return s
	}
	for _, h := range e.frameHints {
		if h.NextStep != "" && framePrefix+slug(h.Text) == name {
			return h.NextStep
		}
	}
	return ""
}

// allClasses returns the classes the log's lines point at, the deciding
// rule's Or first when the root-cause line's rule decided (its other
// reading), each once.
func (v *verdict) allClasses() []failure.Class {
	all := v.classes
	if or := v.e.rule(v.cand.rule).Or; or != "" && v.rule == v.cand.rule {
		all = append([]failure.Class{or}, all...)
	}
	var out []failure.Class
	for _, k := range all {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// otherClasses returns the classes of all that are not c, in order.
func otherClasses(all []failure.Class, c failure.Class) []failure.Class {
	var out []failure.Class
	for _, k := range all {
		if k != c {
			out = append(out, k)
		}
	}
	return out
}

func isKind(k OutcomeKind) func(v *verdict) bool {
	return func(v *verdict) bool { return v.o.Kind == k }
}

func isTimeout(v *verdict) bool {
	return v.o.Kind == OutcomeReadyTimeout || v.o.Kind == OutcomeStallTimeout
}

func givePortInUse(v *verdict) {
	v.f.Class, v.f.Phase = failure.ClassPortInUse, failure.PhasePrereq
	v.f.RootCause = fmt.Sprintf("address %s is already in use before launch", v.o.Address)
	if v.o.Message != "" {
		v.f.RootCause += ": " + v.o.Message
	}
	v.detail["address"] = v.o.Address
}

func giveIdentityMismatch(v *verdict) {
	v.f.Class, v.f.Phase = failure.ClassIdentityMismatch, failure.PhaseReadyWait
	v.f.RootCause = fmt.Sprintf("model identity mismatch: expected %q, the engine reports %s",
		v.o.ExpectedModel, quoteList(v.o.ReportedModels))
	near := closestModel(v.o.ExpectedModel, v.o.ReportedModels)
	if near != "" {
		v.f.RootCause += fmt.Sprintf(" (did you mean %q?)", near)
		v.detail["did_you_mean"] = near
	}
	if v.o.Message != "" {
		v.f.RootCause += ": " + v.o.Message
	}
	v.detail["expected_model"] = v.o.ExpectedModel
	v.detail["reported_models"] = append([]string{}, v.o.ReportedModels...)
	if v.o.Health != nil && v.o.Health.ModelMissing {
		v.detail[DetailModelAbsent] = true
	}
	if near != "" {
		// A name this close to one the engine has is a typo in the
		// profile, not a model to create (issue 26, T3): that fix first.
		v.step = fmt.Sprintf("The profile's model %q is close to %q, which this engine has: fix the profile's model "+
			"name first (model = %q) and start again. If you meant another model: %s",
			v.o.ExpectedModel, near, near, v.e.NextStep(failure.ClassIdentityMismatch))
	}
}

// DetailModelAbsent is the Failure.Detail key (true) of an
// identity_mismatch where the engine's own model store says the
// profile's model does not exist (Ollama's /api/tags): the profile names
// a model that is not there, rather than the engine serving another
// identity under the profile's name.
const DetailModelAbsent = "model_absent"

// ModelAbsent reports whether f is an identity_mismatch whose model is
// absent from the engine's store (DetailModelAbsent).
func ModelAbsent(f *failure.Failure) bool {
	if f == nil || f.Class != failure.ClassIdentityMismatch {
		return false
	}
	b, _ := f.Detail[DetailModelAbsent].(bool)
	return b
}

func completionTemplateError(v *verdict) bool {
	o := v.o
	return o.Kind == OutcomeCompletionFailed && o.Status != 0 && o.Status != 200 && templatePattern.MatchString(o.Message)
}

func giveCompletionTemplate(v *verdict) {
	v.f.Class, v.f.Phase = failure.ClassTokenizerTemplate, failure.PhaseReadyWait
	v.f.RootCause = fmt.Sprintf("chat completion answered HTTP %d: %s", v.o.Status, v.o.Message)
	v.detail["status_code"] = v.o.Status
}

// lineExplains: a rule matched a root-cause line. A warning explains an
// exit, but not what hiro's own readiness checks saw (a wrong probe
// reply, a timeout).
func lineExplains(v *verdict) bool {
	return v.cand.tier > 0 && !(v.cand.warn && v.o.Kind != OutcomeExited)
}

// giveLine is the verdict of the root-cause line: its rule's class and
// phase, refined by context (structuredRefine, the phase where the engine
// stopped when it outlived the line).
func giveLine(v *verdict) {
	v.codeFrameLater()
	f, c := v.f, v.cand
	v.lineCause()
	v.rule, v.step = c.rule, v.e.ruleStep(c.rule)
	if c.weak(v.e) {
		v.strength = failure.ConfidenceWeak
	}
	f.Class = v.structuredRefine(f.Class)
	if f.Class == failure.ClassEngineDied && c.crash {
		v.crashRefine()
	} else if c.crash && !isStructured(f.Class) {
		v.lazyCrash()
	}
	f.Phase = phaseCeiling(f.Class, f.Phase)
	// The engine outlived the line and went on: the failure shows where
	// it stopped (a CPU fallback found at ready, a supervisor's stop
	// while loading on the CPU), not where the line was logged. A rule's
	// pinned phase is the step that raises its error and stays.
	if v.phaseNow.Index() > f.Phase.Index() && !isStructured(f.Class) && !c.pinned && f.Class != failure.ClassWarmupFailed && !wentOnAfter(v, f.Class) &&
		(v.phaseNow.Index() >= failure.PhaseReadyWait.Index() || (v.device.CPUOnly() && isAccelClass(f.Class))) {
		f.Phase = v.phaseNow
	}
	if len(v.frames) > 0 {
		v.detail["traceback_frames"] = v.frames
	}
	v.outcomeDetail()
}

// wentOnAfter reports an accelerator's failure (class c) that the engine
// went on after and served without (Ollama's discovery failing on a driver
// too old for its CUDA runtime, then serving on the CPU): logged before
// the server was up, it served and ended cleanly, and no engine child
// died, so it stopped nowhere later and the failure stays in the step that
// logged it (launch, for discovery). A kernel missing for the device at the
// first request (ready_wait) fails that request: inference.
func wentOnAfter(v *verdict, c failure.Class) bool {
	return isAccelClass(c) && servedCleanly(v) && !v.childDied && v.cand.phase.Index() < failure.PhaseReadyWait.Index()
}

// classCeilings is the latest step a class's line can fail in, as a
// table: accelerator_unavailable (no device, or none the build can open)
// fails the device's opening, which comes at launch or as the model is
// put on it; a step after load (kernels, KV cache, warm-up) runs on a
// device, so a line of that class logged after the load's last marker
// is still the load's (mistral.rs opens its CUDA device in its builder,
// after "Model loaded."). A phase reached later by serving on the CPU is
// the outlived phase's, set after this.
var classCeilings = map[failure.Class]failure.Phase{
	failure.ClassAcceleratorUnavailable: failure.PhaseLoad,
}

// phaseCeiling returns ph, or the ceiling of class c when ph is past it
// and before the server said it was ready.
func phaseCeiling(c failure.Class, ph failure.Phase) failure.Phase {
	top, ok := classCeilings[c]
	if ok && ph.Index() > top.Index() && ph.Index() < failure.PhaseReadyWait.Index() {
		return top
	}
	return ph
}

// codeFrameLater makes a class taken from a frame that names where code
// lives (FrameHint.Until) a crash in that code when the exception was
// raised after the hint's last phase: the model's forward failing in
// warmup or in a request is not its load failing. Before a hint's first
// phase (FrameHint.From), in an engine that never served, the frame
// gives its Early class: a grammar backend failing at start-up is the
// configuration, not a request.
func (v *verdict) codeFrameLater() {
	h := v.e.frameHint(v.cand.rule)
	switch {
	case h == nil:
	case h.Until != "" && v.cand.phase.Index() > h.Until.Index():
		v.cand.class, v.cand.crash = failure.ClassEngineDied, true
	case h.From != "" && v.cand.phase.Index() < h.From.Index() && !v.served:
		v.cand.class = h.Early
	}
}

// weak reports a root-cause line whose verdict is weak: a hint or a
// warning, a class taken from a traceback's frames or from another line
// than the root cause (split), a Weak rule's or one's with an Or class.
func (c candidate) weak(e *Engine) bool {
	r := e.rule(c.rule)
	return c.tier == TierHint || c.warn || c.split || strings.HasPrefix(c.rule, framePrefix) || r.Weak || r.Or != ""
}

// lineCause takes the root-cause line's class, phase and line: for a
// wrapper's summary the child's own line relayed before it, and for a
// crash line (a signal's report) the failed C assert() just before it
// (glibc's "prog: FILE:LINE: FUNC: Assertion `EXPR' failed.", the
// abort's cause: Triton's LLVM passes under vLLM); a GPU out of memory
// is never before load (nothing takes GPU memory before the model
// loads).
func (v *verdict) lineCause() {
	f, c := v.f, v.cand
	f.Class, f.Phase, f.RootCause = c.class, c.phase, c.line
	if c.summary && c.prior != "" || c.crash && strings.Contains(c.prior, "Assertion `") || faultAfterError(c) {
		f.RootCause = c.prior
	}
	if c.class == failure.ClassGPUOOM && f.Phase.Index() < failure.PhaseLoad.Index() {
		f.Phase = failure.PhaseLoad
	}
}

// faultAfterError reports a kernel's fault on the device (deviceFault:
// reported by whichever call comes next, it names no call's own failure)
// while serving, after an error line of the engine's own that no rule
// explained (the candidate's prior) logged before the server was up: that
// line, which the engine went on after, states what the fault came of
// (TurboMind's "[TM][ERROR] use_context_fmha not support int8" at load,
// then the first request's illegal memory access). An error line of the
// fault's own step (ggml's abort, a wrapper's loop error) only reports it.
func faultAfterError(c candidate) bool {
	return c.crash && c.prior != "" && deviceFault(c.line) && !deviceFault(c.prior) &&
		c.priorPhase.Index() < failure.PhaseReadyWait.Index() && c.phase.Index() >= failure.PhaseReadyWait.Index()
}

// crashRefine gives a crash line that names no class the one its moment
// shows: a crash while the engine runs its first steps (graph capture,
// its own warmup request) is the warmup failing; a crash in a request's
// handling the server outlived is the request failing (the engine did
// not die). A line that reports its process's death (Rule.Fatal: a
// signal, an abort, a wrapper's "runner terminated"), the crash line's
// own or a later one, under a server that outlived it is its engine
// child dying, not a request failing: engine_died stays. A kernel's
// fault on the device (deviceFault) is the device's crash whatever the
// step: not the warmup failing (r9: MUSA's illegal memory access in the
// warm-up run). So is a crash line that ends its process (Rule.Fatal:
// ggml's GGML_ASSERT and abort, a CHECK, a signal) when the process did
// end by it: the engine died where the warm-up only ran (r12: ggml-cuda's
// asserts in KoboldCpp's warm-up); one the process outlived until it was
// stopped from outside (a hang after Metal's assert) is the warm-up's.
func (v *verdict) crashRefine() {
	f, c := v.f, v.cand
	switch {
	case !v.served && c.phase == failure.PhaseWarmup && !deviceFault(c.line) && !v.diedOfCrash():
		f.Class = failure.ClassWarmupFailed
	case v.stayedUp && !c.fatal && !v.childDied && c.phase.Index() >= failure.PhaseReadyWait.Index():
		f.Class, f.Phase = failure.ClassProbeFailed, failure.PhaseInference
	}
}

// diedOfCrash reports a root-cause line that ends its process (Rule.Fatal)
// in an attempt that ended by itself, not stopped from outside (TERM,
// INT, HUP, QUIT: stoppedSignals).
func (v *verdict) diedOfCrash() bool {
	return v.cand.fatal && !stoppedSignals[v.sig]
}

// stoppedSignals are the signals another process stops an engine with
// (exit/stopped-from-outside).
var stoppedSignals = map[string]bool{"TERM": true, "INT": true, "HUP": true, "QUIT": true}

// lazyCrash: a crash rule of a class of its own (a device plugin's
// module missing: host_capability) logged while the server served and
// outlived it is an import made lazily on a request's path (r10: vLLM's
// CPU attention importing intel_extension_for_pytorch on the first
// completion): the host started the server, so the request failed, and
// the rule's own class is only the other reading (weak).
func (v *verdict) lazyCrash() {
	f, c := v.f, v.cand
	if !v.served || !v.stayedUp || c.fatal || v.childDied || c.phase.Index() < failure.PhaseReadyWait.Index() {
		return
	}
	f.Class, f.Phase = failure.ClassProbeFailed, failure.PhaseInference
	v.strength = failure.ConfidenceWeak
}

// deviceFault reports a line that names a kernel's fault on the device,
// in any vendor's words (asyncCrashTexts: CUDA's, HIP's and MUSA's
// runtime share them): read once per verdict, not per line.
func deviceFault(line string) bool {
	lower := strings.ToLower(line)
	for _, t := range asyncCrashTexts {
		if strings.Contains(lower, t) {
			return true
		}
	}
	return false
}

// structuredRefine turns a crash or grammar line's class into the
// structured-output class the context shows: an engine crash while
// serving with a grammar backend in use is structured_output_crash; a
// grammar failure is crash when the engine died of it (the process, or an
// engine child a line reports dead: Rule.Fatal), rejected when the server
// stayed up and requests failed after it.
func (v *verdict) structuredRefine(c failure.Class) failure.Class {
	inServing := v.cand.phase.Index() >= failure.PhaseReadyWait.Index()
	switch {
	case v.cand.crash && v.grammar && inServing:
		return failure.ClassStructuredOutputCrash
	case isStructured(c) && (v.died || v.childDied):
		// the engine died of it: the process, or the engine child of a
		// server that exited cleanly after it (vLLM's API server after
		// its engine core's fatal error)
		return failure.ClassStructuredOutputCrash
	case isStructured(c) && v.stayedUp && v.errAfter:
		return failure.ClassStructuredOutputRejected
	case c == failure.ClassStructuredOutputCrash && v.stayedUp && !v.childDied:
		return failure.ClassStructuredOutputRejected
	}
	return c
}

// outcomeDetail notes what hiro's own checks saw beside a log's verdict.
func (v *verdict) outcomeDetail() {
	switch v.o.Kind {
	case OutcomeCompletionFailed:
		v.detail["completion"] = completionText(v.o)
	case OutcomeReadyTimeout, OutcomeStallTimeout:
		v.detail["timeout"] = timeoutName(v.o.Kind)
		v.detail["timeout_seconds"] = v.o.Timeout.Seconds()
	case OutcomeAcceleratorUnavailable:
		v.detail["device"] = v.o.Device.String()
	}
}

// servedThenFailed: the server stayed up and served requests, or
// answered one once up (a 500: the request failed, the server did not).
func servedThenFailed(v *verdict) bool {
	return v.o.Kind == OutcomeExited && v.stayedUp && (v.requests || v.phaseNow == failure.PhaseInference)
}

// servedOnCPU: the server stayed up and served, no line names a failure,
// and the engine's own device discovery fell back to the CPU without
// saying why (Ollama's "inference compute id=cpu library=cpu" on a Jetson
// whose JetPack it does not map): the replies came from the CPU, slow or
// wrong. Not when the engine said outright that the host has no GPU
// (hostHasNoGPU): that is a CPU-only host serving as it should, a failure
// only for a profile that requires an accelerator (outcome/cpu-serving).
func servedOnCPU(v *verdict) bool {
	return servedThenFailed(v) && v.fallback == "" && v.device.Kind == DeviceCPU && v.device.Evidence != "" &&
		!hostHasNoGPU(v.device.Evidence)
}

// noGPUStatements are the device-discovery lines in which an engine says
// it looked and the host has no GPU it supports (Ollama before 0.12:
// gpu.go's "no compatible GPUs were discovered"), as against a silent
// fallback that lists only the CPU.
var noGPUStatements = []string{"no compatible GPUs were discovered"}

// hostHasNoGPU says whether the device evidence line is one of
// noGPUStatements.
func hostHasNoGPU(evidence string) bool {
	for _, s := range noGPUStatements {
		if strings.Contains(evidence, s) {
			return true
		}
	}
	return false
}

// giveServedOnCPU: accelerator_unavailable from the start (launch, where
// the device was chosen), with the device line as root cause; weak, as
// the host may have no accelerator to find.
func giveServedOnCPU(v *verdict) {
	v.f.Class, v.f.Phase = failure.ClassAcceleratorUnavailable, failure.PhaseLaunch
	v.f.RootCause = "the server stayed up and served, but its device discovery found no accelerator: " + v.device.Evidence
	if v.devPhase == failure.PhaseLoad {
		// the device was chosen while the model loaded (Ollama's runner
		// placing 0 of N layers on the GPU it was told of): the load put
		// it on the CPU, not the discovery at launch
		v.f.Phase = failure.PhaseLoad
		v.f.RootCause = "the server stayed up and served, but the model was placed on the CPU while it loaded: " + v.device.Evidence
	}
	v.detail["device"] = v.device.String()
}

// giveServedThenFailed: what failed is a request (an error line no rule
// explains; structured_output_rejected when structured output was in
// use) or, with no error line, the reply itself (the probe's expected
// answer did not come back).
func giveServedThenFailed(v *verdict) {
	v.f.Class = failure.ClassProbeFailed
	if v.fallback != "" {
		if v.grammar {
			// a request failed in code that handles its grammar or schema:
			// the server refused the structured request
			v.f.Class = failure.ClassStructuredOutputRejected
		}
		v.f.RootCause = v.fallback
		if len(v.frames) > 0 {
			v.detail["traceback_frames"] = v.frames
		}
		return
	}
	v.f.RootCause = "the server stayed up and answered requests, but no log line names a failure: the replies " +
		"themselves were wrong (the probe's expected reply did not come back)"
}

// schemaNotHonoured: the server served requests that carried a schema or
// grammar (the log shows one: a request body's response_format, the
// request's logged parameters) and stayed up or ended cleanly, and no
// line names a failure: the constraint was accepted and not honoured.
func schemaNotHonoured(v *verdict) bool {
	return v.o.Kind == OutcomeExited && v.stayedUp && v.schemaReq && (v.requests || v.phaseNow == failure.PhaseInference) &&
		v.cand.tier == 0 && v.fallback == "" && !v.childDied
}

// giveSchemaNotHonoured: structured_output_fail_open at inference.
func giveSchemaNotHonoured(v *verdict) {
	v.f.Class, v.f.Phase = failure.ClassStructuredOutputFailOpen, failure.PhaseInference
	v.f.RootCause = "the server answered requests that carried a schema or grammar, and no log line names a failure: " +
		"the constraint was accepted and not honoured (the replies did not follow it)"
}

func giveCPUServing(v *verdict) {
	f, d := v.f, v.o.Device
	f.Class, f.Phase = failure.ClassAcceleratorUnavailable, failure.PhaseReadyWait
	f.RootCause = "the model is served by the CPU, but the profile requires an accelerator (requires_accelerator)"
	if d.Name != "" && d.TotalLayers > 0 && d.GPULayers == 0 {
		// The engine found the GPU (its discovery named it) and still
		// placed no layer there: its free memory was too small, the way
		// memory held by other processes leaves it (Ollama on an occupied
		// GPU), not a missing device.
		f.Class = failure.ClassAcceleratorBusy
		f.RootCause = fmt.Sprintf("the engine found the GPU (%s) but placed 0 of %d layers on it: its free memory was too small "+
			"(other processes may hold it: hiro doctor lists them), so the model is served by the CPU, and the profile "+
			"requires an accelerator (requires_accelerator)", d.Name, d.TotalLayers)
		v.detail["gpu_found"] = d.Name
		v.rule = "outcome/cpu-serving-gpu-found"
	}
	if d.Evidence != "" {
		f.RootCause += ": " + d.Evidence
	}
	v.detail["device"] = d.String()
}

func giveCompletionFailed(v *verdict) {
	v.f.Class, v.f.Phase = failure.ClassProbeFailed, failure.PhaseReadyWait
	v.f.RootCause = completionText(v.o)
	if v.o.Status != 0 {
		v.detail["status_code"] = v.o.Status
	}
}

// giveHealthFailed: a health answer that will not clear is engine_died;
// a step after it that failed (the model list) is probe_failed.
// healthRefusedKey: the health check was answered 401 or 403, the server
// refusing hiro's key (or its lack): it is up, not dead.
func healthRefusedKey(v *verdict) bool {
	h := v.o.Health
	return v.o.Kind == OutcomeHealthFailed && h != nil && (h.StatusCode == http.StatusUnauthorized || h.StatusCode == http.StatusForbidden)
}

func giveHealthRefusedKey(v *verdict) {
	v.f.Class, v.f.Phase = failure.ClassProbeFailed, failure.PhaseReadyWait
	v.f.RootCause = "health check: " + healthText(*v.o.Health)
}

func giveHealthFailed(v *verdict) {
	f, o := v.f, v.o
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
}

func giveTimeout(v *verdict) {
	f, o := v.f, v.o
	f.Class = failure.ClassReadyTimeout
	which, what := timeoutName(o.Kind), "not ready after"
	if o.Kind == OutcomeStallTimeout {
		what = "no log output for"
	}
	f.RootCause = fmt.Sprintf("%s %s (%s timeout) in phase %s", what, roundDur(o.Timeout), which, f.Phase)
	if o.Health != nil {
		f.RootCause += fmt.Sprintf("; last health: %s", healthText(*o.Health))
	}
	if v.last != "" {
		f.RootCause += "; last log line: " + v.last
	}
	v.detail["timeout"] = which
	v.detail["timeout_seconds"] = o.Timeout.Seconds()
}

// firstExitRule returns the first of exitRules the exit matches, or nil.
func (v *verdict) firstExitRule() *Rule {
	for i := range exitRules {
		if exitRules[i].matchesExit(v.sig, v.code, v.served) {
			return &exitRules[i]
		}
	}
	return nil
}

func exitExplains(v *verdict) bool { return v.firstExitRule() != nil }

// giveExit is the verdict of an exit rule; the log's first error line
// (no rule explained it) is added to its root cause.
func giveExit(v *verdict) {
	r := v.firstExitRule()
	v.rule, v.f.Class, v.step = r.Name, r.Class, r.NextStep
	v.f.RootCause = fmt.Sprintf(r.Explain, v.o.Exit, v.f.Phase)
	if v.fallback != "" {
		v.f.RootCause += "; first error line: " + v.fallback
	}
	if r.BeforeReady || r.Name == "exit/stopped-after-serving" {
		v.detail["stopped_by"] = "outside"
	}
	if r.Tier == TierHint {
		v.strength = failure.ConfidenceWeak // the signal has more than one usual cause
	}
}

// stepFailures are the classes of a step of the engine's start that an
// exception no rule explains was raised in: the step is what failed.
var stepFailures = map[failure.Phase]failure.Class{
	failure.PhaseWarmup: failure.ClassWarmupFailed,
	failure.PhaseLoad:   failure.ClassModelLoadFailed,
}

// giveEngineDied is the fallback: engine_died, with the first error line
// of the log as root cause when there is one.
func giveEngineDied(v *verdict) {
	f := v.f
	f.Class = failure.ClassEngineDied
	if v.fallback != "" {
		if c, ok := stepFailures[f.Phase]; ok && !v.served && len(v.frames) > 0 {
			// an exception no rule explains, raised in a step of the
			// engine's own start (its warmup forward, graph capture; the
			// model's load): that step failed, as a crash in warmup does
			// (crashRefine); a native abort with no traceback (ggml's)
			// stays the engine's
			f.Class = c
		}
		f.RootCause = v.fallback
		if len(v.frames) > 0 {
			v.detail["traceback_frames"] = v.frames
		}
		return
	}
	when := "before ready during " + string(f.Phase)
	switch {
	case v.requests:
		when = "while serving requests (phase " + string(f.Phase) + ")"
	case v.served:
		when = "while serving (after ready)"
	}
	f.RootCause = fmt.Sprintf("%s %s; the log has no error line", v.o.Exit, when)
	if v.detail["survived"] != nil {
		f.RootCause = fmt.Sprintf("%s %s; the log has no line about it (an earlier failure, survived: see detail.survived)", v.o.Exit, when)
	}
	if why := exitMeaning(v.sig, v.code); why != "" {
		f.RootCause += " (" + why + ")"
	}
	if v.last != "" {
		f.RootCause += " (last line: " + v.last + ")"
	}
}

// closestModel returns the reported id a person most likely meant by
// want: one equal to it but for case, an organisation prefix ("org/") or
// a tag (":latest"), else the nearest within a few edits (at most 2, or a
// quarter of its length); "" when none is near.
func closestModel(want string, reported []string) string {
	bare := func(id string) string {
		id = strings.ToLower(id)
		if i := strings.LastIndexByte(id, '/'); i >= 0 {
			id = id[i+1:]
		}
		if i := strings.IndexByte(id, ':'); i >= 0 {
			id = id[:i]
		}
		return id
	}
	w := bare(want)
	best, bestD := "", max(2, len(w)/4)+1
	for _, r := range reported {
		if d := levenshtein.ComputeDistance(w, bare(r)); d < bestD {
			best, bestD = r, d
		}
	}
	return best
}
