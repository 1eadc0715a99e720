package evidence

import (
	"time"

	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/signing"
)

// SchemaID is the value of Evidence.Schema for this version of the format.
// v3 is v2 plus what round 3 adds (statistics of the comparisons, the
// inconclusive outcome, the environment fingerprint): every field v3 adds
// is optional to a reader of v2, so a v2 document decodes unchanged.
const SchemaID = "hiro.evidence/v3"

// SchemaV2 is the previous format's id: v2 replaced v1's untyped gate
// "result" object with typed results (Gate.Artifact, Gate.Semantic) and
// added load figures to RequestStats. Load reads it as it is; Validate
// checks it against v2's schema as published (schema_v2.json).
const SchemaV2 = "hiro.evidence/v2"

// SchemaV1 is the first format's id: Load still reads it (the journal
// holds v1 evidence), upgrading each gate's "result" to its typed field.
const SchemaV1 = "hiro.evidence/v1"

// Verdicts.
const (
	VerdictQualified    = "qualified"
	VerdictNotQualified = "not_qualified"
	VerdictAborted      = "aborted"
	// VerdictInconclusive (v3): no gate failed and at least one gate's
	// comparison could not decide (its status is StatusInconclusive).
	VerdictInconclusive = "inconclusive"
	// VerdictRunning marks a document written while the campaign is still
	// going: a crash leaves the last complete state with this verdict.
	VerdictRunning = "running"
)

// Gate statuses.
const (
	StatusPassed  = "passed"
	StatusFailed  = "failed"
	StatusNotRun  = "not_run"
	StatusRunning = "running"
	// StatusInconclusive (v3): the gate's comparison with production could
	// not decide between passed and failed (its interval holds the
	// margin); later gates still run.
	StatusInconclusive = "inconclusive"
)

// Evidence is one campaign's record. It is rewritten atomically after
// every gate, so a crash leaves the last complete state.
type Evidence struct {
	// Schema is SchemaID.
	Schema string `json:"schema"`
	// ID identifies the campaign: UTC start time and plan name, e.g.
	// "20261130T101500Z-vllm-mistral".
	ID string `json:"id"`
	// Title is the plan's title.
	Title string `json:"title"`
	// Plan is the plan file's path (private copy only).
	Plan string `json:"plan,omitempty"`
	// Candidate and ProductionBackend are profile names.
	Candidate         string `json:"candidate"`
	ProductionBackend string `json:"production_backend,omitempty"`
	// CandidateEngine is the candidate profile's engine kind (vllm,
	// ollama, ...): the account names its version from Host.
	CandidateEngine string `json:"candidate_engine,omitempty"`
	// Intent is the plan's own words: what the campaign set out to test
	// and the decisions behind it (package account tells the rest from
	// the gates).
	Intent *Intent `json:"intent,omitempty"`
	// Exclusive says the candidate needed the accelerator alone.
	Exclusive bool `json:"exclusive"`
	// Verdict is qualified, not_qualified, inconclusive, aborted (or
	// running while the campaign goes on).
	Verdict string `json:"verdict"`
	// ExitCode is the documented exit status hiro returned (0-5,
	// package exitcode).
	ExitCode int `json:"exit_code"`
	// NotJudged are the gate kinds the configuration's activation policy
	// ([activation] require) needs that the plan has no gate of, or
	// skips: the verdict says nothing of them, and 'hiro activate'
	// refuses the evidence ("semantic": extraction quality was not
	// judged). Empty when the plan covers the policy. v3.
	NotJudged []string `json:"not_judged,omitempty"`
	// TerminationReason says in one sentence why the campaign ended
	// ("all gates passed", "gate launch failed", "interrupted by SIGTERM").
	TerminationReason string `json:"termination_reason"`
	// StartedAt and FinishedAt are RFC 3339 times; DurationMS the wall time.
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	// HarnessMS is hiro's own time: wall time minus time spent waiting on
	// engines (launch, readiness, requests, stop).
	HarnessMS int64 `json:"harness_ms"`
	// Gates are in plan order, every gate present whatever happened.
	Gates []Gate `json:"gates"`
	// Production is what the production guard did.
	Production Production `json:"production"`
	// Preflight says whether launch attempts were predicted before
	// production was stopped (false with --no-preflight). v3.
	Preflight *PreflightRun `json:"preflight,omitempty"`
	// Fingerprints are SHA-256 digests of everything that defines the
	// campaign's inputs.
	Fingerprints Fingerprints `json:"fingerprints"`
	// Host is the host and stack fingerprint (doctor's facts).
	Host map[string]any `json:"host,omitempty"`
	// Report is the human account the Markdown report and the journal
	// entry are rendered from.
	Report Report `json:"report"`
	// Methods says how each number is computed (name → definition).
	Methods map[string]string `json:"methods,omitempty"`
	// Signature is hiro's Ed25519 signature over the canonical bytes of
	// the document without it (package signing; docs/reliability.md), carrying
	// the signer's public key. Since v3: every document a campaign writes
	// is signed (the private and the public copy each over itself); one
	// written by an older hiro has none.
	Signature *signing.Signature `json:"signature,omitempty"`
}

// Intent is the plan's own account of the campaign, written by a person.
type Intent struct {
	// Summary says what the campaign tests and what it leaves unchanged.
	Summary string `json:"summary,omitempty"`
	// Decisions are the plan's and its gates' decisions, one sentence or
	// two each.
	Decisions []string `json:"decisions,omitempty"`
}

// Gate is one gate's result.
type Gate struct {
	// ID is the gate's id in the plan; Kind its kind (prereq, artifact,
	// launch, ready_control, structured_control, sequential, concurrency,
	// semantic: package qualify's registry).
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Title is a short human name for the gate.
	Title string `json:"title,omitempty"`
	// Status is passed, failed, inconclusive or not_run (running while in
	// progress).
	Status string `json:"status"`
	// Reason explains a failure or why the gate did not run ("not
	// authorized: launch failed", "skipped by plan").
	Reason string `json:"reason,omitempty"`
	// Bound is the gate's time bound in milliseconds.
	BoundMS int64 `json:"bound_ms,omitempty"`
	// StartedAt and DurationMS time the gate.
	StartedAt  *time.Time `json:"started_at,omitempty"`
	DurationMS int64      `json:"duration_ms"`
	// Attempts are the launch gate's attempts, every one recorded.
	Attempts []Attempt `json:"attempts,omitempty"`
	// Checks are the prereq gate's individual checks.
	Checks []Check `json:"checks,omitempty"`
	// Requests summarises request-based gates (controls, sequential,
	// concurrency).
	Requests *RequestStats `json:"requests,omitempty"`
	// Artifact is the artifact gate's verification.
	Artifact *ArtifactResult `json:"artifact,omitempty"`
	// Semantic is the semantic gate's comparison with production.
	Semantic *SemanticResult `json:"semantic,omitempty"`
	// Shadow (v3) is the shadow gate's account of live traffic mirrored
	// to the candidate.
	Shadow *ShadowResult `json:"shadow,omitempty"`
	// Failure classifies a failed gate (e.g. structured_output_fail_open).
	Failure *failure.Failure `json:"failure,omitempty"`
	// ProductionLosses (v3) are the times production, serving beside the
	// candidate, stopped answering while this gate asked it, in order: at
	// most two (a second loss in one gate aborts the campaign). Absent
	// when production never stopped answering during the gate.
	ProductionLosses []ProductionLoss `json:"production_losses,omitempty"`
}

// ProductionLoss (v3) is one time production stopped answering during a
// gate that asks it, and what came of it: a live `hiro serve` serving
// production restarts it, the campaign waits for that (at most the
// profile's ready_timeout plus 30 s of the router's backoff) and runs
// the gate's production side again; without a router, or when
// production is not back within the bound, the campaign aborts.
type ProductionLoss struct {
	// At is the first failed check of production (health and identity);
	// Error its reason in a few words ("connection refused").
	At    time.Time `json:"at"`
	Error string    `json:"error"`
	// Router names the router waited for ("hiro serve pid 4242"); empty
	// when none served production (nothing was waited for).
	Router string `json:"router,omitempty"`
	// WaitedMS is how long the campaign waited for production to serve
	// again, in milliseconds; BoundMS the most it would wait.
	WaitedMS int64 `json:"waited_ms,omitempty"`
	BoundMS  int64 `json:"bound_ms,omitempty"`
	// BackAt is when production served again (health and model
	// checked); nil when it did not within the bound.
	BackAt *time.Time `json:"back_at,omitempty"`
	// AwayMS is how long production was away: from At to BackAt, in
	// milliseconds (0 when it did not come back).
	AwayMS int64 `json:"away_ms,omitempty"`
	// Rerun says what was run again once production was back ("the
	// production side: production's extraction of the corpus");
	// empty when nothing was.
	Rerun string `json:"rerun,omitempty"`
}

// Attempt is one rung of the launch gate's attempt ladder.
type Attempt struct {
	// Name is "base" or the variant's name; Reason the plan's written reason.
	Name   string `json:"name"`
	Reason string `json:"reason,omitempty"`
	// Changes lists what the variant changed ("env VLLM_USE_V2_MODEL_RUNNER=0",
	// "args +--quantization awq"). Env values appear only in the private copy.
	Changes []string `json:"changes,omitempty"`
	// Outcome is OutcomePredictedFailure when the preflight predicted
	// the attempt cannot run and it was not launched; empty when it was
	// launched (ReachedReady and Failure say how it went). v3.
	Outcome string `json:"outcome,omitempty"`
	// Prediction is what the preflight said before the attempt (absent
	// with --no-preflight). v3.
	Prediction *Prediction `json:"prediction,omitempty"`
	// ReachedReady says the attempt became ready (docs/design.md "Ready").
	ReachedReady bool `json:"reached_ready"`
	// ReadyAfterMS is the time from start to ready.
	ReadyAfterMS int64 `json:"ready_after_ms,omitempty"`
	// DurationMS is how long the attempt took, stop included.
	DurationMS int64 `json:"duration_ms"`
	// Failure is why it failed; nil when ready.
	Failure *failure.Failure `json:"failure,omitempty"`
	// Facts are numbers parsed from the log (also in Failure.Facts when failed).
	Facts map[string]float64 `json:"facts,omitempty"`
	// Device is where the engine served the model, as its log showed it
	// (GPU with layers offloaded, partial, CPU); absent when the log did
	// not say.
	Device *failure.Device `json:"device,omitempty"`
	// LogPath is the attempt's log file (private copy only).
	LogPath string `json:"log_path,omitempty"`
	// Stop records how the attempt's process was stopped.
	Stop *Stop `json:"stop,omitempty"`
	// Effective is what the attempt ran: the candidate profile with the
	// variant's changes applied (private copy only). 'hiro activate'
	// starts exactly this when the campaign qualified on this attempt.
	Effective *Effective `json:"effective,omitempty"`
}

// Effective is an attempt's effective profile: the environment and
// arguments that replaced the profile's (private copy only: values may be
// secrets), and the SHA-256 of the whole effective profile
// (config.Profile.Hash), which activation checks before it runs it.
type Effective struct {
	ProfileHash string            `json:"profile_hash"`
	Env         map[string]string `json:"env,omitempty"`
	Args        []string          `json:"args,omitempty"`
}

// Stop is how a process was stopped.
type Stop struct {
	Graceful bool             `json:"graceful"`
	Killed   bool             `json:"killed"`
	Leak     *failure.Failure `json:"leak,omitempty"`
}

// Check is one prereq check.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// Detail is what was found (free MiB, a version line, ...).
	Detail string `json:"detail,omitempty"`
	// Output is the command's captured output (private copy only).
	Output string `json:"output,omitempty"`
}

// RequestStats summarise request gates. Latencies are milliseconds.
type RequestStats struct {
	Count  int `json:"count"`
	Errors int `json:"errors"`
	// Concurrency is how many requests were in flight at once (load
	// gates; 1 for sequential requests).
	Concurrency int `json:"concurrency,omitempty"`
	// WallMS is the wall-clock time from the first request sent to the
	// last reply received; RequestsPerSecond is the successful requests
	// over WallMS, and OutputTokensPerSecondWall the completion tokens
	// (server usage) over WallMS: the throughput of the server as a whole.
	WallMS                    int64   `json:"wall_ms,omitempty"`
	RequestsPerSecond         float64 `json:"requests_per_second,omitempty"`
	OutputTokensPerSecondWall float64 `json:"output_tokens_per_second_wall,omitempty"`
	// SchemaAccepted counts requests the server accepted with the schema
	// (HTTP 200); SchemaValid counts replies that parsed and validated.
	SchemaAccepted *int `json:"schema_accepted,omitempty"`
	SchemaValid    *int `json:"schema_valid,omitempty"`
	// Percentiles of TTFT and end-to-end latency (ms) over successful
	// requests, nearest-rank method.
	TTFT    *Percentiles `json:"ttft_ms,omitempty"`
	Latency *Percentiles `json:"latency_ms,omitempty"`
	// OutputTokensPerSecond is the sum of completion tokens (server usage)
	// over the sum of end-to-end latencies.
	OutputTokensPerSecond float64 `json:"output_tokens_per_second,omitempty"`
	// TPOTMS is the mean time per output token after the first.
	TPOTMS float64 `json:"tpot_ms,omitempty"`
	// LatenciesMS and TTFTsMS are every successful request's end-to-end
	// latency and time to first token (ms), in request order: the
	// distributions the journal draws.
	LatenciesMS []float64 `json:"latencies_ms,omitempty"`
	TTFTsMS     []float64 `json:"ttfts_ms,omitempty"`
	// Samples are the replies (trimmed), for the record.
	Samples []string `json:"samples,omitempty"`
	// ErrorMessages are the distinct error messages seen.
	ErrorMessages []string `json:"error_messages,omitempty"`
	// Overload is how the requests fared with busy answers (HTTP 429,
	// 503), which the profile's [overload] policy retries: a request that
	// succeeded after retries counts as a success (not in Errors); one that
	// reached the bound is an error. Absent when there was none.
	Overload *OverloadStats `json:"overload,omitempty"`
	// Comparison (v3) is the gate's comparison with production on the
	// same requests (compare_with_production); absent when the plan did
	// not ask for one.
	Comparison *PerformanceComparison `json:"comparison,omitempty"`
}

// OverloadStats count busy answers and their retries (package llm's
// client counters for one gate).
type OverloadStats struct {
	// Retried429 and Retried503 are the busy answers retried, by status.
	Retried429 int `json:"retried_429"`
	Retried503 int `json:"retried_503"`
	// SucceededAfterRetry requests got a reply after at least one retry;
	// GaveUp requests failed at the bound.
	SucceededAfterRetry int `json:"succeeded_after_retry"`
	GaveUp              int `json:"gave_up"`
	// RetryWaitMS is the time spent waiting before retries.
	RetryWaitMS int64 `json:"retry_wait_ms"`
}

// Percentiles p50/p95/p99 and max, in the unit of the field holding them.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Production is what the production guard did.
type Production struct {
	// Backend is the production profile's name; Model its model id.
	Backend string `json:"backend,omitempty"`
	Model   string `json:"model,omitempty"`
	// WasRunning says production answered ready before the campaign.
	WasRunning bool `json:"was_running"`
	// Stopped says the guard stopped production (exclusive candidate).
	Stopped bool `json:"stopped"`
	// LeftStopped says production was not running when the exclusive
	// campaign began (stopped on purpose, or never started): the guard
	// left it as it found it and did not start it at the end. Absent
	// before v3.
	LeftStopped bool       `json:"left_stopped,omitempty"`
	StoppedAt   *time.Time `json:"stopped_at,omitempty"`
	// Restored is the restore's verification; nil when nothing needed it.
	Restored *Restored `json:"restored,omitempty"`
	// ConfigHashBefore/After are SHA-256 of production's configuration
	// (profile and its config files) before and after; Unchanged compares them.
	ConfigHashBefore string `json:"config_hash_before,omitempty"`
	ConfigHashAfter  string `json:"config_hash_after,omitempty"`
	ConfigUnchanged  bool   `json:"config_unchanged"`
	// Lost (v3) is the campaign's watch of a production it left serving
	// beside the candidate: the first moment production stopped
	// answering (health and identity, polled while the gates ran); nil
	// when it never did or was not watched.
	Lost *ServingCheck `json:"lost,omitempty"`
	// AtEnd (v3) is the check of health and identity at the end of a
	// campaign that did not stop production: whether production still
	// served when the campaign ended; nil when production was stopped
	// (Restored says the rest), not serving before, or not checked.
	AtEnd *ServingCheck `json:"at_end,omitempty"`
}

// ServingCheck (v3) is one check that production serves: its health
// check passed and its model list names its model. No completion is
// sent (supervisor.CheckServing).
type ServingCheck struct {
	OK bool      `json:"ok"`
	At time.Time `json:"at"`
	// Model is the model id production reported when OK.
	Model string `json:"model,omitempty"`
	// Error says why not OK in a few words ("connection refused").
	Error string `json:"error,omitempty"`
}

// Restored is the proof production came back.
type Restored struct {
	OK bool `json:"ok"`
	// Attempts is how many restore tries it took.
	Attempts int `json:"attempts"`
	// Adopted says production was found starting (a restore an earlier
	// hiro began, proven by its state record) and was waited for and
	// adopted rather than started again.
	Adopted bool `json:"adopted,omitempty"`
	// Health is the health check result ("200").
	Health string `json:"health,omitempty"`
	// Model is the model id production reported.
	Model string `json:"model,omitempty"`
	// Reply is the bounded READY completion's reply.
	Reply string `json:"reply,omitempty"`
	// Error says why it is not OK.
	Error string     `json:"error,omitempty"`
	At    *time.Time `json:"at,omitempty"`
	// ReadyAfterMS is how long the restore took.
	ReadyAfterMS int64 `json:"ready_after_ms,omitempty"`
}

// Fingerprints are SHA-256 hex digests of the campaign's inputs.
type Fingerprints struct {
	Plan             string `json:"plan"`
	Prompts          string `json:"prompts,omitempty"`
	Schemas          string `json:"schemas,omitempty"`
	Corpus           string `json:"corpus,omitempty"`
	ArtifactManifest string `json:"artifact_manifest,omitempty"`
	CandidateProfile string `json:"candidate_profile,omitempty"`
	// ProductionConfigBefore/After repeat Production.ConfigHash*.
	ProductionConfigBefore string `json:"production_config_before,omitempty"`
	ProductionConfigAfter  string `json:"production_config_after,omitempty"`
	// Environment (v3) is what the candidate ran on: engine build and
	// accelerator stack; 'hiro activate' refuses when it differs now.
	Environment *Environment `json:"environment,omitempty"`
	// Files maps each hashed input file to its SHA-256 (private copy only).
	Files map[string]string `json:"files,omitempty"`
}

// Environment is the environment a campaign's candidate ran in (package
// qualify's EnvironmentOf). Empty fields are unknown (no GPU, an engine
// not found on PATH).
type Environment struct {
	// EngineBuild is "sha256:<hex>" of the engine's executable.
	EngineBuild string `json:"engine_build,omitempty"`
	// GPUModel, Driver and CUDARuntime are the first GPU's name, driver
	// version and CUDA version as nvidia-smi reports them.
	GPUModel    string `json:"gpu_model,omitempty"`
	Driver      string `json:"driver,omitempty"`
	CUDARuntime string `json:"cuda_runtime,omitempty"`
}

// Report is the human account of the campaign, in the shape of the seed's
// journal entry.
type Report struct {
	Summary      string       `json:"summary"`
	Sections     []Section    `json:"sections"`
	Decisions    []string     `json:"decisions,omitempty"`
	Validation   []Validation `json:"validation"`
	CurrentState string       `json:"current_state"`
	NextSteps    []string     `json:"next_steps,omitempty"`
}

// Section is one "work completed" section: a title, a status label and
// bullet items.
type Section struct {
	Title  string   `json:"title"`
	Status string   `json:"status"`
	Items  []string `json:"items"`
}

// Validation is one row of the validation table.
type Validation struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Result string `json:"result"`
}
