package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/llm"
)

// loadingIdentityEvery bounds how often the model list is read while
// the health check says loading.
const loadingIdentityEvery = 250 * time.Millisecond

// check is the verdict of the identity and completion steps of readiness.
type check struct {
	ids     []string
	reply   *llm.Reply
	health  engine.HealthResult
	outcome *engine.Outcome // nil: passed
}

// event is what the readiness goroutine tells the main loop.
type event struct {
	step   string
	health engine.HealthResult
	final  *check // set on the last event
}

// waitReady is Start's main loop: it owns the verdict. It selects on the
// process exit (noticed at once, not at the next poll), the readiness
// goroutine's events, the hard and stall timeouts and ctx.
func (p *Process) waitReady(ctx context.Context, opts Options, res *Result) (*Process, *Result) {
	prof := p.profile
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan event, 8)
	go readiness(rctx, p.eng, prof, opts, events)

	hard := time.NewTimer(prof.ReadyTimeout.Duration)
	defer hard.Stop()
	stallEvery := prof.StallTimeout.Duration / 8
	stallEvery = min(max(stallEvery, 5*time.Millisecond), 250*time.Millisecond)
	tick := time.NewTicker(stallEvery)
	defer tick.Stop()

	var lastHealth *engine.HealthResult
	var probeAt time.Time // when the ready probe was sent; zero before
	step := "launch"
	lastPhase := failure.PhaseLaunch
	lastReport := time.Now()
	progressAt := time.Now() // last change of health state
	report := func(force bool) {
		if opts.Progress == nil {
			return
		}
		ph := p.tracker.Phase()
		if step == "failed" && res.Failure != nil && res.Failure.Phase != "" {
			// One phase: the verdict's (the log's last marker can be
			// behind it, e.g. launch for a failure in ready_wait).
			ph = res.Failure.Phase
		}
		if !force && ph == lastPhase && time.Since(lastReport) < time.Second {
			return
		}
		lastPhase, lastReport = ph, time.Now()
		pr := Progress{Elapsed: time.Since(p.startedAt), Step: step, Phase: ph, Lines: p.tracker.Lines()}
		if lastHealth != nil {
			pr.Health = lastHealth.State
		}
		opts.Progress(pr)
	}
	report(true)

	failWith := func(o engine.Outcome) (*Process, *Result) {
		o.Elapsed = time.Since(p.startedAt)
		if o.Health == nil {
			o.Health = lastHealth
		}
		select {
		case <-p.exited:
			o.Exit = p.exitInfo
			res.ExitedAt = p.exitAt
		default:
		}
		f := p.tracker.Classify(o)
		adviseProbeHung(prof, f, o)
		if o.Kind != engine.OutcomeExited {
			// A server that answers but refuses the key, or whose
			// certificate is not trusted: say which setting to fix.
			var h engine.HealthResult
			if o.Health != nil {
				h = *o.Health
			}
			adviseFailure(prof, f, h)
		}
		res.DecidedAt = time.Now()
		res.State, res.Failure = StateFailed, f
		step = "failed"
		report(true)
		stop := p.Stop(context.WithoutCancel(ctx))
		res.Stop = &stop
		p.finish(res)
		return nil, res
	}

	for {
		select {
		case <-p.exited:
			// Drain what the engine wrote before it died, then classify:
			// the verdict follows the exit by the time of one file read.
			p.fl.drain()
			return failWith(engine.Outcome{Kind: engine.OutcomeExited})

		case ev := <-events:
			changed := false
			if ev.health.State != "" {
				changed = lastHealth == nil || lastHealth.State != ev.health.State
				h := ev.health
				lastHealth = &h
			}
			if ev.step != "" && ev.step != step {
				step = ev.step
				changed = true
				if step == "probe" {
					probeAt = time.Now()
				}
			}
			if changed {
				progressAt = time.Now()
				report(true)
			}
			if ev.final == nil {
				continue
			}
			c := ev.final
			res.ModelIDs = c.ids
			if c.outcome == nil {
				// The probe's own log lines name the device (Ollama loads
				// the model for the first request).
				p.fl.read(false)
				if dev := p.tracker.Device(); prof.RequiresAccelerator && dev.CPUOnly() {
					return failWith(engine.Outcome{Kind: engine.OutcomeAcceleratorUnavailable, Device: dev})
				}
				res.State = StateReady
				res.DecidedAt = time.Now()
				res.ReadyAfter = res.DecidedAt.Sub(p.startedAt)
				res.ReadyAfterMS = res.ReadyAfter.Milliseconds()
				res.ProbeReply = strings.TrimSpace(c.reply.Text)
				res.ProbeTTFTMS = float64(c.reply.TTFT.Microseconds()) / 1000
				step = "ready"
				report(true)
				p.finish(res)
				return p, res
			}
			if c.reply != nil {
				res.ProbeReply = strings.TrimSpace(c.reply.Text)
			}
			if c.outcome.Kind == engine.OutcomeCompletionFailed {
				// A probe that failed because the engine is dying is
				// reported as the death it is.
				select {
				case <-p.exited:
				case <-time.After(exitProbeGrace):
				}
				select {
				case <-p.exited:
					p.fl.drain()
					return failWith(engine.Outcome{Kind: engine.OutcomeExited})
				default:
				}
			}
			p.fl.read(false)
			return failWith(*c.outcome)

		case <-hard.C:
			p.fl.read(false)
			if step == "probe" {
				// Health and identity passed and the probe is still out:
				// the wait ended on an unanswered completion, not a load.
				return failWith(probeUnanswered(prof, probeAt.Sub(p.startedAt), time.Since(probeAt)))
			}
			return failWith(engine.Outcome{Kind: engine.OutcomeReadyTimeout, Timeout: prof.ReadyTimeout.Duration})

		case now := <-tick.C:
			idle := min(p.fl.idleFor(now), now.Sub(progressAt))
			if step != "probe" && idle >= prof.StallTimeout.Duration {
				p.fl.read(false)
				return failWith(engine.Outcome{Kind: engine.OutcomeStallTimeout, Timeout: prof.StallTimeout.Duration})
			}
			report(false)

		case <-ctx.Done():
			res.State, res.Err = StateAborted, ctx.Err()
			stop := p.Stop(context.WithoutCancel(ctx))
			res.Stop = &stop
			res.Error = "interrupted before ready (" + interruptWords(ctx) + "): " + stoppedWords(stop)
			p.finish(res)
			return nil, res
		}
	}
}

// finish copies the tracker's phase, facts and serving device into res.
func (p *Process) finish(res *Result) {
	res.Phase = p.tracker.Phase()
	res.Facts = p.tracker.Facts()
	if dev := p.tracker.Device(); dev.Kind != "" {
		res.Device = &dev
	}
	if res.Failure != nil && res.Phase != res.Failure.Phase {
		res.Phase = res.Failure.Phase
	}
}

// readiness polls health (interval from HealthPollMin growing by a
// quarter to HealthPollMax) until it passes, then checks identity and
// makes the probe completion, and sends the final check. A health answer
// that passes but a model list that cannot be read yet goes back to
// polling (the stall and hard timeouts bound it).
func readiness(ctx context.Context, e *engine.Engine, prof *config.Profile, opts Options, out chan<- event) {
	send := func(ev event) bool {
		select {
		case out <- ev:
			return true
		case <-ctx.Done():
			return false
		}
	}
	interval := opts.HealthPollMin
	var prev engine.HealthState
	prevCode := -1
	var lastIDCheck time.Time
	for {
		hctx, cancel := context.WithTimeout(ctx, opts.HealthRequestTimeout)
		h := e.CheckHealth(hctx, opts.HTTPClient, prof.BaseURL, prof.Model)
		cancel()
		if ctx.Err() != nil {
			return
		}
		// A new state, or the same one for another reason (refused, then
		// 401: the verdict's advice and "last health" follow the latest).
		if h.State != prev || h.StatusCode != prevCode {
			prev, prevCode = h.State, h.StatusCode
			if !send(event{step: "health", health: h}) {
				return
			}
		}
		if h.StatusCode == http.StatusUnauthorized || h.StatusCode == http.StatusForbidden {
			// The server refuses hiro's key (or its lack): every poll
			// would get the same answer.
			send(event{final: &check{health: h, outcome: &engine.Outcome{Kind: engine.OutcomeHealthFailed, Health: &h}}})
			return
		}
		if h.ModelMissing {
			// The engine's own store says the model does not exist:
			// no wait makes it appear (issue 26: was ready_timeout).
			send(event{final: &check{ids: h.Listed, health: h, outcome: &engine.Outcome{Kind: engine.OutcomeIdentityMismatch,
				ExpectedModel: prof.Model, ReportedModels: h.Listed, Health: &h, Message: modelStoreNote(e, prof, h)}}})
			return
		}
		if h.State == engine.HealthLoading && time.Since(lastIDCheck) >= loadingIdentityEvery {
			// The server answers but is not ready: when it already lists
			// models and none is the expected one, waiting cannot help
			// (llama.cpp lists its alias while loading; Ollama's health
			// waits for a model that was never created).
			lastIDCheck = time.Now()
			ictx, cancel := context.WithTimeout(ctx, opts.HealthRequestTimeout)
			ids, err := e.ModelIDs(ictx, opts.HTTPClient, prof.BaseURL)
			cancel()
			if err == nil && len(ids) > 0 && !e.MatchModel(prof.Model, ids) {
				send(event{final: &check{ids: ids, health: h, outcome: &engine.Outcome{Kind: engine.OutcomeIdentityMismatch,
					ExpectedModel: prof.Model, ReportedModels: ids, Health: &h}}})
				return
			}
		}
		if h.State == engine.HealthReady {
			if !send(event{step: "identity"}) {
				return
			}
			c, retry := verify(ctx, e, prof, opts, h, func() { send(event{step: "probe"}) })
			if ctx.Err() != nil {
				return
			}
			if !retry {
				send(event{final: c})
				return
			}
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		interval += interval / 4
		if interval > opts.HealthPollMax {
			interval = opts.HealthPollMax
		}
	}
}

// verify runs the identity and completion steps after health passed.
// retry is true when the model list could not be read (not yet served):
// the caller polls again.
func verify(ctx context.Context, e *engine.Engine, prof *config.Profile, opts Options, h engine.HealthResult, probing func()) (c *check, retry bool) {
	c = &check{health: h}
	ictx, cancel := context.WithTimeout(ctx, opts.HealthRequestTimeout)
	ids, err := e.ModelIDs(ictx, opts.HTTPClient, prof.BaseURL)
	cancel()
	if err != nil {
		c.outcome = &engine.Outcome{Kind: engine.OutcomeHealthFailed, Health: &h, Message: err.Error()}
		return c, true
	}
	c.ids = ids
	if !e.MatchModel(prof.Model, ids) {
		c.outcome = &engine.Outcome{Kind: engine.OutcomeIdentityMismatch, ExpectedModel: prof.Model, ReportedModels: ids}
		return c, false
	}
	if probing != nil {
		probing()
	}
	c.reply, c.outcome = probe(ctx, prof, opts.HTTPClient)
	return c, false
}

// probe makes the readiness completion: ReadyProbe.Prompt, bounded by
// MaxTokens and Timeout, temperature 0. It fails on an HTTP error, no
// answer in time, an empty reply, or a reply that JudgeReply refuses
// (when Expect is set).
func probe(ctx context.Context, prof *config.Profile, hc *http.Client) (*llm.Reply, *engine.Outcome) {
	zero := 0.0
	rp := prof.ReadyProbe
	req := llm.Request{
		Model:       prof.Model,
		Messages:    []llm.Message{{Role: "user", Content: rp.Prompt}},
		MaxTokens:   rp.MaxTokens,
		Temperature: &zero,
		Timeout:     rp.Timeout.Duration,
	}
	reply, err := llm.New(prof.BaseURL, hc).Chat(ctx, req)
	if err != nil {
		var ae *llm.APIError
		if errors.As(err, &ae) {
			return reply, &engine.Outcome{Kind: engine.OutcomeCompletionFailed, Status: ae.StatusCode, Message: ae.Message}
		}
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("the ready probe (POST /v1/chat/completions, max_tokens %d) reached ready_probe.timeout", rp.MaxTokens)
		}
		return reply, &engine.Outcome{Kind: engine.OutcomeCompletionFailed, Timeout: rp.Timeout.Duration, Message: msg}
	}
	if why := JudgeReply(rp.Expect, reply.Text); why != "" {
		return reply, &engine.Outcome{Kind: engine.OutcomeCompletionFailed, Status: http.StatusOK, Message: why + " (ready_probe.expect)"}
	}
	if rp.Expect == "" && reply.ContentChunks == 0 && !reply.HasUsage {
		return reply, &engine.Outcome{Kind: engine.OutcomeCompletionFailed, Status: http.StatusOK,
			Message: "the completion stream ended with no content and no usage"}
	}
	return reply, nil
}

// probeUnanswered is the outcome of a ready timeout that expired while
// the ready probe was out: sentAfter is when it was sent (from the
// start), waited how long it went unanswered. It is a completion
// failure (probe_failed, phase ready_wait) naming the request, so the
// verdict does not read as a slow load.
func probeUnanswered(prof *config.Profile, sentAfter, waited time.Duration) engine.Outcome {
	return engine.Outcome{Kind: engine.OutcomeCompletionFailed, Timeout: waited.Round(100 * time.Millisecond),
		Message: fmt.Sprintf("the ready probe (POST /v1/chat/completions, max_tokens %d) was sent %.1f s after start "+
			"and was still unanswered when the ready timeout (%s) expired",
			prof.ReadyProbe.MaxTokens, sentAfter.Seconds(), prof.ReadyTimeout.Duration)}
}

// adviseProbeHung gives f the next step of a ready probe that got no
// answer (status 0, no log line deciding): the HTTP side answered health
// and the model list, so the engine's generation hangs. f nil or another
// failure is left as it is.
func adviseProbeHung(prof *config.Profile, f *failure.Failure, o engine.Outcome) {
	if f == nil || o.Kind != engine.OutcomeCompletionFailed || o.Status != 0 || f.Rule != "outcome/completion-failed" {
		return
	}
	f.NextStep = fmt.Sprintf("The server answered its health check and model list but not the ready probe's "+
		"completion: its generation hangs. Check the model and the accelerator (the engine's log, nvidia-smi, one "+
		"chat request by hand); if generation is only slow, raise ready_probe.timeout (now %s) and ready_timeout (now %s).",
		prof.ReadyProbe.Timeout.Duration, prof.ReadyTimeout.Duration)
}

// JudgeReply is hiro's one rule for the reply of a readiness completion
// (the supervisor's probe, the restore and switch verifications, the
// ready_control gate, the router's checks): text, trimmed of surrounding
// white space (strings.TrimSpace), must equal expect exactly, case and
// punctuation included ("READY." and "ready" are not "READY"). expect ""
// accepts any text (readiness then only needs the completion to succeed:
// docs/design.md "Ready": one bounded real completion succeeds). It returns "" when
// the reply passes, else the reason, e.g. `the reply "READY w0" is not
// the expected "READY"` (the reply cut at 200 bytes).
func JudgeReply(expect, text string) string {
	if expect == "" {
		return ""
	}
	got := strings.TrimSpace(text)
	if got == expect {
		return ""
	}
	if len(got) > 200 {
		got = got[:200] + "..."
	}
	return fmt.Sprintf("the reply %q is not the expected %q", got, expect)
}

// ReadyResult is the verdict of CheckReady.
type ReadyResult struct {
	// OK is true when every readiness check passed.
	OK bool `json:"ok"`
	// Failure says why not (classified by the engine package with an
	// empty log: class, phase ready_wait, root cause).
	Failure *failure.Failure `json:"failure,omitempty"`
	// Advice, when the server refused hiro's TLS or key, is llm.Advice's
	// hint naming the setting to fix (also Failure.NextStep); "" otherwise.
	Advice string `json:"advice,omitempty"`
	// Health is the health answer; ModelIDs what /v1/models reported.
	Health   engine.HealthResult `json:"health"`
	ModelIDs []string            `json:"model_ids,omitempty"`
	// Reply is the trimmed probe reply.
	Reply string `json:"reply,omitempty"`
	// Answered is true on a failure that is the server's own settled
	// answer, not a server still starting: the probe completed but its
	// reply failed JudgeReply, or /v1/models reports another model.
	// Waiting does not change it; restarting the same configuration
	// would not either.
	Answered bool `json:"answered,omitempty"`
	// Duration is how long the checks took.
	Duration time.Duration `json:"duration_ns"`
}

// CheckReady checks a server that should already be running (an
// unmanaged profile, or production after a restore) with the rules of
// readiness, once: health passes, /v1/models reports prof.Model, and the
// ready probe succeeds. hc may be nil: llm.HTTPClient(prof) (the profile's
// key and CA file). It never starts or stops anything.
func CheckReady(ctx context.Context, prof *config.Profile, hc *http.Client) ReadyResult {
	return CheckReadyTracked(ctx, prof, hc, nil)
}

// CheckReadyTracked is CheckReady classifying a failure with t, the
// tracker of the running engine's log (Process.Tracker), so that the
// failure carries its phase, log tail and facts; t nil is CheckReady.
// The router's canary uses it.
func CheckReadyTracked(ctx context.Context, prof *config.Profile, hc *http.Client, t *engine.Tracker) ReadyResult {
	start := time.Now()
	var rr ReadyResult
	if hc == nil {
		var err error
		if hc, err = llm.HTTPClient(prof); err != nil {
			rr.Failure = &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseReadyWait, RootCause: fmt.Sprintf("backend %s: %v", prof.Name, err)}
			return rr
		}
	}
	opts := Options{HTTPClient: hc}
	opts.fillDefaults()
	e, err := engine.Lookup(prof.Engine)
	if err != nil {
		rr.Failure = &failure.Failure{Class: failure.ClassEngineDied, Phase: failure.PhaseReadyWait, RootCause: err.Error()}
		return rr
	}
	if t == nil {
		t = e.NewTracker()
	}
	classify := func(o engine.Outcome) ReadyResult {
		o.Elapsed = time.Since(start)
		rr.Failure = t.Classify(o)
		adviseProbeHung(prof, rr.Failure, o)
		rr.Duration = time.Since(start)
		rr.Advice = adviseFailure(prof, rr.Failure, rr.Health)
		return rr
	}
	hctx, cancel := context.WithTimeout(ctx, opts.HealthRequestTimeout)
	rr.Health = e.CheckHealth(hctx, opts.HTTPClient, prof.BaseURL, prof.Model)
	cancel()
	if rr.Health.State != engine.HealthReady {
		h := rr.Health
		return classify(engine.Outcome{Kind: engine.OutcomeHealthFailed, Health: &h, Message: h.Message})
	}
	c, _ := verify(ctx, e, prof, opts, rr.Health, nil)
	rr.ModelIDs = c.ids
	if c.reply != nil {
		rr.Reply = strings.TrimSpace(c.reply.Text)
	}
	if c.outcome != nil {
		o := *c.outcome
		rr.Answered = o.Kind == engine.OutcomeIdentityMismatch ||
			(o.Kind == engine.OutcomeCompletionFailed && o.Status == http.StatusOK && c.reply != nil && JudgeReply(prof.ReadyProbe.Expect, c.reply.Text) != "")
		return classify(o)
	}
	rr.OK = true
	rr.Duration = time.Since(start)
	return rr
}

// HealthAdvice is llm.Advice for a failed health check h of prof's
// server: which ca_file or key setting to fix when the check met an
// untrusted certificate or a 401/403; "" when h is ready, not run, or
// failed for another reason. The transport error keeps its type (h.Err);
// without one, h.Message is read.
func HealthAdvice(prof *config.Profile, h engine.HealthResult) string {
	if h.State == engine.HealthReady || h.State == "" {
		return ""
	}
	cause := h.Err
	if cause == nil {
		cause = errors.New(h.Message)
	}
	return llm.Advice(prof, h.StatusCode, cause)
}

// adviseFailure makes f's next step llm.Advice's when the failure is a TLS
// certificate hiro does not trust or an HTTP 401/403 (the key): the hint
// that names the profile's ca_file or key setting, in the wording every
// command shares. h is the last health check (its transport error keeps
// its type); f nil or another failure is left as it is. It returns the
// advice, "" when none.
func adviseFailure(prof *config.Profile, f *failure.Failure, h engine.HealthResult) string {
	if f == nil {
		return ""
	}
	a := HealthAdvice(prof, h)
	if a == "" {
		a = llm.Advice(prof, 0, errors.New(f.RootCause))
	}
	if a != "" {
		f.NextStep = a
	}
	return a
}

// modelStoreNote says where the engine looked for a missing model: the
// list it checked, then the store the profile points it at (or the
// engine's default store when the profile sets none). Not the health
// answer's words: they list the models again, which the identity
// mismatch's root cause already does, and say "create or pull it", which
// its next step says better (issue 26, T3).
func modelStoreNote(e *engine.Engine, prof *config.Profile, h engine.HealthResult) string {
	note := fmt.Sprintf("model %q is not in %s", prof.Model, h.Path)
	if e.ModelStoreEnv == "" {
		return note
	}
	if dir, ok := prof.Env[e.ModelStoreEnv]; ok && dir != "" {
		if !filepath.IsAbs(dir) && prof.Workdir != "" {
			dir = filepath.Join(prof.Workdir, dir)
		}
		return fmt.Sprintf("%s: this server reads its models from %s (%s)", note, dir, e.ModelStoreEnv)
	}
	return fmt.Sprintf("%s: this server reads its models from its default store %s (%s is not set in the profile's env)", note, e.ModelStoreDefault, e.ModelStoreEnv)
}

// interruptWords says why ctx ended in a person's words: its cause when
// one was given (a signal's name), else "cancelled" or "timed out".
func interruptWords(ctx context.Context) string {
	cause := context.Cause(ctx)
	switch {
	case cause != nil && cause != context.Canceled && cause != context.DeadlineExceeded:
		return cause.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timed out"
	}
	return "cancelled, e.g. Ctrl-C"
}

// stoppedWords says what the stop of an engine interrupted before ready
// did: stopped gracefully or killed, in how long, and whether its port
// is free; or what it left behind.
func stoppedWords(s StopResult) string {
	switch {
	case s.Err != "":
		return "stopping the engine failed: " + s.Err
	case s.Leak != nil:
		return "the engine was stopped but left processes or its port behind: " + s.Leak.RootCause
	case s.AlreadyExited && s.Exit != "":
		return "the engine had already exited (" + s.Exit + ")"
	case s.AlreadyExited:
		return "the engine had already exited"
	}
	how := "gracefully (SIGTERM)"
	if s.Killed {
		how = "by SIGKILL after the grace period"
	}
	port := "its port is free"
	if !s.PortFree {
		port = "its port is still held"
	}
	return fmt.Sprintf("the engine was stopped %s in %d ms; %s", how, s.DurationMS, port)
}
