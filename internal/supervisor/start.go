package supervisor

import (
	"context"
	"errors"
	"fmt"
	"github.com/hiro-dev/hiro/internal/private"
	"github.com/hiro-dev/hiro/internal/procfs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/llm"
)

// States of a Result.
const (
	// StateReady: the engine passed every readiness check.
	StateReady = "ready"
	// StateFailed: the attempt failed; Result.Failure says why.
	StateFailed = "failed"
	// StateAborted: the caller's context was cancelled (interrupt) before
	// a verdict; the process was stopped. Result.Err holds ctx's error.
	StateAborted = "aborted"
	// StateError: hiro could not attempt the start (unmanaged profile,
	// unknown engine kind, state directory not writable). Nothing was
	// started. Result.Err says what to do.
	StateError = "error"
)

// Defaults of Options.
const (
	// DefaultHealthPollMin is the first interval between health checks;
	// it grows by a quarter per check up to DefaultHealthPollMax.
	DefaultHealthPollMin = 10 * time.Millisecond
	// DefaultHealthPollMax caps the health check interval. 20 ms keeps
	// the ready verdict within ~30 ms of health turning 200 (median about
	// half the interval plus the identity check and the probe).
	DefaultHealthPollMax = 20 * time.Millisecond
	// DefaultHealthRequestTimeout bounds one health or /v1/models request.
	DefaultHealthRequestTimeout = 2 * time.Second
	// DefaultWaitDelay is exec.Cmd.WaitDelay: how long Wait waits for
	// I/O after the process exited before giving up on it.
	DefaultWaitDelay = 2 * time.Second
	// exitProbeGrace is how long a failed probe waits to see whether the
	// process is exiting, so that a death is reported as the exit it is.
	exitProbeGrace = 50 * time.Millisecond
)

// Options tune Start. The zero value works except for StateDir.
type Options struct {
	// StateDir holds logs/<name>-<time>.log and backends/<name>.json
	// (config.Config.StateDir). Required.
	StateDir string
	// Attempt, when set, is added to the log file name
	// (<name>-<attempt>-<time>.log) to tell attempts of a ladder apart.
	Attempt string
	// LookupEnv reads hiro's own environment for Profile.InheritEnv;
	// default os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// HTTPClient is used for health and model id requests (each also
	// bounded by HealthRequestTimeout) and for the probe; default
	// llm.HTTPClient of the profile (its API key as bearer on every
	// request, its CA file for https).
	HTTPClient *http.Client
	// HealthPollMin and HealthPollMax bound the interval between health
	// checks; defaults DefaultHealthPollMin and DefaultHealthPollMax.
	HealthPollMin, HealthPollMax time.Duration
	// HealthRequestTimeout bounds one health request; default
	// DefaultHealthRequestTimeout.
	HealthRequestTimeout time.Duration
	// LogPoll is how often the log file is read; default DefaultLogPoll.
	LogPoll time.Duration
	// Owner says what the hiro starting the engine does, for another
	// hiro that finds the engine's record while this one lives
	// (Record.Owner): "campaign <id>"; default its command line.
	Owner string
	// OnStart, when set, is called once the process has been started
	// and its state record written (Start writes it in StateDir at
	// launch), before readiness is awaited.
	OnStart func(*Process)
	// Progress, when set, is called from Start's goroutine on every
	// change of step or phase and about once a second otherwise. It must
	// return quickly.
	Progress func(Progress)
}

// Progress is one report of an attempt in progress, for a terminal.
type Progress struct {
	// Elapsed is the time since the process was started.
	Elapsed time.Duration
	// Step is what the supervisor is doing: "launch", "health",
	// "identity", "probe", "ready" or "failed".
	Step string
	// Phase is the engine's phase from its log (last marker seen); in the
	// "failed" report, the verdict's (Result.Failure.Phase).
	Phase failure.Phase
	// Health is the last health state ("down", "loading", "ready"); empty
	// before the first check.
	Health engine.HealthState
	// Lines is how many log lines were read so far.
	Lines int64
}

// Result is the verdict of one Start. It is JSON-ready: the CLI prints it
// under `hiro backend start --json` (with "state" and "failure").
type Result struct {
	// State is StateReady, StateFailed, StateAborted or StateError.
	State string `json:"state"`
	// Failure says why, when State is StateFailed (from engine.Classify;
	// shutdown_leak of the stop after a failure is in Stop).
	Failure *failure.Failure `json:"failure,omitempty"`
	// Err is a harness error (StateError, StateAborted).
	Err error `json:"-"`
	// Error is Err's message, for JSON.
	Error string `json:"error,omitempty"`
	// Name is the profile name; Engine its kind.
	Name   string `json:"name"`
	Engine string `json:"engine"`
	// PID and PGID of the started process (0 when none was started).
	PID  int `json:"pid,omitempty"`
	PGID int `json:"pgid,omitempty"`
	// Port and BaseURL the engine serves on.
	Port    int    `json:"port,omitempty"`
	BaseURL string `json:"base_url"`
	// LogPath is this attempt's log file (stdout and stderr).
	LogPath string `json:"log_path,omitempty"`
	// StartedAt is when the process was started; zero, and left out of
	// the JSON, when none was (an unmanaged profile is probed, not started).
	StartedAt time.Time `json:"started_at,omitzero"`
	// ReadyAfter is the time from start to the ready verdict (0 unless
	// ready); ReadyAfterMS the same in milliseconds for JSON.
	ReadyAfter   time.Duration `json:"-"`
	ReadyAfterMS int64         `json:"ready_after_ms,omitempty"`
	// ExpectedModel is the profile's model id; ModelIDs what /v1/models
	// reported (when it was asked).
	ExpectedModel string   `json:"expected_model"`
	ModelIDs      []string `json:"model_ids,omitempty"`
	// ProbeReply is the trimmed reply of the readiness completion;
	// ProbeTTFTMS its time to first token in milliseconds.
	ProbeReply  string  `json:"probe_reply,omitempty"`
	ProbeTTFTMS float64 `json:"probe_ttft_ms,omitempty"`
	// Phase is the engine's last phase from its log; Facts the numbers
	// parsed from it so far.
	Phase failure.Phase      `json:"phase"`
	Facts map[string]float64 `json:"facts,omitempty"`
	// Device is where the engine serves the model, as its log shows it
	// (GPU with layers offloaded, partial, or CPU); nil when the log does
	// not say. It is part of the ready verdict: a profile with
	// requires_accelerator fails with accelerator_unavailable on CPU.
	Device *engine.ServingDevice `json:"device,omitempty"`
	// ExitedAt is when hiro saw the process exit (Wait returned), when it
	// exited before a verdict.
	ExitedAt time.Time `json:"exited_at,omitzero"`
	// DecidedAt is when the verdict was reached (before any stop).
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// Stop is the stop Start made after a failure (nil when ready or when
	// nothing was started).
	Stop *StopResult `json:"stop,omitempty"`
}

// Process is a started engine. The process was started by this hiro, so
// its exit is observed directly (one goroutine waits on it). Methods are
// safe for concurrent use.
type Process struct {
	profile   *config.Profile
	eng       *engine.Engine
	cmd       *exec.Cmd
	tracker   *engine.Tracker
	fl        *follower
	stateDir  string
	logPath   string
	port      int
	startedAt time.Time
	owner     string // Options.Owner

	exited   chan struct{} // closed when Wait returned
	exitInfo engine.ExitInfo
	exitAt   time.Time

	stopOnce sync.Once
	stopRes  StopResult
}

// PID returns the engine process id; it leads its process group, so the
// PGID is the same.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Tracker returns the tracker fed with the engine's log, still fed while
// the process runs (the structured-output gate reads it).
func (p *Process) Tracker() *engine.Tracker { return p.tracker }

// StartedAt returns when the engine process was started.
func (p *Process) StartedAt() time.Time { return p.startedAt }

// LogPath returns the attempt's log file.
func (p *Process) LogPath() string { return p.logPath }

// Exited is closed when the process has exited; ExitInfo then says how.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitInfo returns how the process ended (zero while it runs).
func (p *Process) ExitInfo() engine.ExitInfo {
	select {
	case <-p.exited:
		return p.exitInfo
	default:
		return engine.ExitInfo{}
	}
}

// Start launches profile prof and waits until it is ready, failed, or ctx
// is cancelled. On StateReady it returns the running *Process: the caller
// stops it (Stop) or leaves it running (Detach). On any other state the
// process, when one was started, has already been stopped (Result.Stop
// says how) and the returned *Process is nil.
//
// Before launching, Start refuses a port that is already taken
// (port_in_use, phase launch, nothing started). The hard bound is
// prof.ReadyTimeout from the launch; prof.StallTimeout ends the wait when
// the log stays silent (hiro's own health requests logged by the engine
// do not count) and the health answer does not change.
func Start(ctx context.Context, prof *config.Profile, opts Options) (*Process, *Result) {
	res := &Result{Name: prof.Name, Engine: prof.Engine, BaseURL: prof.BaseURL, ExpectedModel: prof.Model, Phase: failure.PhaseLaunch}
	fail := func(err error) (*Process, *Result) {
		res.State, res.Err, res.Error = StateError, err, err.Error()
		return nil, res
	}
	if prof.Unmanaged {
		return fail(fmt.Errorf("backend %s is unmanaged: hiro only probes %s and never starts it; use a managed profile (command, port) to start one", prof.Name, prof.BaseURL))
	}
	if opts.StateDir == "" {
		return fail(errors.New("supervisor: Options.StateDir is empty; set state_dir in the configuration"))
	}
	eng, err := engine.Lookup(prof.Engine)
	if err != nil {
		return fail(fmt.Errorf("backend %s: %w", prof.Name, err))
	}
	if opts.HTTPClient == nil {
		hc, err := llm.HTTPClient(prof)
		if err != nil {
			return fail(fmt.Errorf("backend %s: %w", prof.Name, err))
		}
		opts.HTTPClient = hc
	}
	opts.fillDefaults()
	addr, port, ok := listenAddr(prof)
	if !ok {
		return fail(fmt.Errorf("backend %s: cannot tell the port to listen on from port or base_url %q; set port", prof.Name, prof.BaseURL))
	}
	res.Port = port
	tracker := eng.NewTracker()

	// The port must be free: a server already there would answer our
	// readiness checks in the new engine's place.
	if busy, why := portBusy(addr); busy {
		if hs := procfs.PortHolders(port); len(hs) > 0 {
			why += "; held by " + procfs.Describe(hs)
		}
		f := tracker.Classify(engine.Outcome{Kind: engine.OutcomePortInUse, Address: addr, Message: why})
		// hiro refuses before the launch; the contract names the
		// phase launch (the engine package says prereq).
		f.Phase = failure.PhaseLaunch
		// The profile's own keys, not only the engine's: a port given in
		// two places is moved in both (the loader refuses them apart).
		f.NextStep = "Another process holds the port: stop it, or " + engine.MoveAdvice(prof.Engine, "backends."+prof.Name, prof.Args, prof.Env) + "."
		res.State, res.Failure = StateFailed, f
		return nil, res
	}

	// A command that cannot be found is a configuration error, not an
	// engine failure: nothing is started and the caller is told what to fix.
	if _, err := lookCommand(prof.Command, prof.Environ(opts.LookupEnv)); err != nil {
		return fail(fmt.Errorf("backend %s: command %q cannot be run (%v); %s (the PATH looked in: inherit_env or env PATH, else hiro's)",
			prof.Name, prof.Command, err, CommandFix(prof, err)))
	}
	logDir := filepath.Join(opts.StateDir, "logs")
	// Engine logs may echo secrets (vLLM prints its arguments): the
	// folder is the user's alone (0700), each log 0600.
	if err := private.EnsureDir(logDir, "log folder"); err != nil {
		return fail(fmt.Errorf("%w; check state_dir", err))
	}
	start := time.Now()
	stamp := start.UTC().Format("20060102T150405.000Z")
	base := prof.Name
	if opts.Attempt != "" {
		base += "-" + opts.Attempt
	}
	logPath := filepath.Join(logDir, base+"-"+stamp+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND|os.O_EXCL, private.FileMode)
	if err != nil {
		return fail(fmt.Errorf("creating the log file: %w", err))
	}
	res.LogPath = logPath

	env := prof.Environ(opts.LookupEnv)
	path, lerr := lookCommand(prof.Command, env)
	cmd := exec.Command(path, prof.Args...)
	cmd.Args[0] = prof.Command
	cmd.Env = env
	cmd.Dir = prof.Workdir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = DefaultWaitDelay

	fl, err := newFollower(logPath, tracker.Feed, healthLineFilter(eng.HealthPath))
	if err != nil {
		logf.Close()
		return fail(fmt.Errorf("opening the log file to follow it: %w", err))
	}
	if lerr == nil {
		lerr = cmd.Start()
	}
	if lerr != nil {
		// Nothing runs: record why in the log and classify it as an exit
		// at launch.
		fmt.Fprintf(logf, "hiro: error: cannot start %q: %v\n", prof.Command, lerr)
		logf.Close()
		fl.read(true)
		fl.close()
		res.State = StateFailed
		res.Failure = tracker.Classify(engine.Outcome{Kind: engine.OutcomeExited, Elapsed: time.Since(start)})
		res.Failure.Phase = failure.PhaseLaunch
		return nil, res
	}
	logf.Close() // the engine holds its own descriptor
	owner := opts.Owner
	if owner == "" {
		owner = "'hiro " + strings.Join(os.Args[1:], " ") + "'"
	}
	proc := &Process{profile: prof, eng: eng, cmd: cmd, tracker: tracker, fl: fl, stateDir: opts.StateDir,
		logPath: logPath, port: port, startedAt: start, owner: owner, exited: make(chan struct{})}
	res.PID, res.PGID, res.StartedAt = cmd.Process.Pid, cmd.Process.Pid, start
	go proc.own()
	fl.start(opts.LogPoll)
	// Recorded from launch (pid, process group, start time): a hiro
	// killed while the engine loads leaves a record that a later one can
	// prove, stop or wait for, instead of finding the port taken by a
	// process it has no record of. Start's own stop after a failure, and
	// Stop, remove it.
	// A record that cannot be written here is reported by Detach.
	_ = WriteRecord(opts.StateDir, proc.Record())
	if opts.OnStart != nil {
		opts.OnStart(proc)
	}

	return proc.waitReady(ctx, opts, res)
}

// own is the one goroutine that waits on the process; Exited is closed
// the moment Wait returns.
func (p *Process) own() {
	_ = p.cmd.Wait()
	p.exitAt = time.Now()
	p.exitInfo = engine.ExitInfoFrom(p.cmd.ProcessState)
	close(p.exited)
}

func (o *Options) fillDefaults() {
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second}}
	}
	if o.HealthPollMin <= 0 {
		o.HealthPollMin = DefaultHealthPollMin
	}
	if o.HealthPollMax < o.HealthPollMin {
		o.HealthPollMax = DefaultHealthPollMax
		if o.HealthPollMax < o.HealthPollMin {
			o.HealthPollMax = o.HealthPollMin
		}
	}
	if o.HealthRequestTimeout <= 0 {
		o.HealthRequestTimeout = DefaultHealthRequestTimeout
	}
	if o.LogPoll <= 0 {
		o.LogPoll = DefaultLogPoll
	}
}

// lookCommand resolves a bare command name in the PATH the engine gets
// (the profile's environment) and else in hiro's own PATH.
func lookCommand(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(v) {
				if dir == "" {
					continue
				}
				cand := filepath.Join(dir, name)
				if st, err := os.Stat(cand); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return cand, nil
				}
			}
		}
	}
	return exec.LookPath(name)
}

// healthLineFilter recognises the engine logging hiro's own readiness
// requests (llama.cpp "request: GET /health 127.0.0.1 503", Ollama's GIN
// `| GET      "/"` and `"/api/tags"`), which must not reset the stall
// timeout: a loading engine that logs nothing else is stalled.
func healthLineFilter(healthPath string) func(string) bool {
	paths := []string{"/api/tags", "/v1/models"}
	if healthPath != "" {
		paths = append(paths, healthPath)
	}
	return func(line string) bool {
		if !strings.Contains(line, "GET") {
			return false
		}
		for _, p := range paths {
			if strings.Contains(line, `"`+p+`"`) || strings.Contains(line, " "+p+" ") || strings.HasSuffix(line, " "+p) {
				return true
			}
		}
		return false
	}
}
