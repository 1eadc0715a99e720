package qualify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Gate is one gate kind's plan section and behaviour. Each kind lives in
// its own file (gate_<kind>.go): a struct decoded strictly from the
// gate's [[gates]] table (unknown keys are errors), registered with
// registerKind. A gate talks to the world only through the Handle it is
// given.
type Gate interface {
	// Validate checks the section's values and fills its defaults; it
	// reports problems through v (key paths relative to the gate) and
	// never starts or stops anything.
	Validate(v *Validation)
	// Bound is the gate's time bound: timeout is the plan's (0 when the
	// plan sets none).
	Bound(h *Handle, timeout time.Duration) time.Duration
	// Run runs the gate and fills g with its typed result. A returned
	// error fails the gate (its message is the reason); one wrapping
	// ErrHarness aborts the campaign instead.
	Run(ctx context.Context, h *Handle, g *evidence.Gate) error
}

// A kind's result is told from the evidence alone (package account renders
// report.md, the journal entry and the terminal summary from the typed
// fields of evidence.Gate), so that old evidence renders without its plan.

// Preparer is a gate that needs work done before the production guard
// stops production (the semantic gate's production baseline). Prepare runs
// while production still serves; prodReady says it answered ready.
type Preparer interface {
	Prepare(ctx context.Context, h *Handle, prodReady bool) error
}

// Fingerprinter is a gate whose inputs belong in the evidence's
// fingerprints (manifest, schema, corpus digests).
type Fingerprinter interface {
	Fingerprint(fp *evidence.Fingerprints)
}

// Kind describes a gate kind in the registry.
type Kind struct {
	// Name is the plan's kind value ("sequential").
	Name string
	// Rank orders kinds within a plan: a gate may not follow a gate of a
	// higher rank (prereq and artifact before launch, request gates after).
	Rank int
	// Title is the default human title of such a gate.
	Title string
	// Launches marks the kind that makes the candidate ready (one per plan).
	Launches bool
	// NeedsCandidate marks kinds that send requests to the ready candidate:
	// a launching gate must come before them.
	NeedsCandidate bool
	// New returns the kind's zero plan section.
	New func() Gate
}

var kinds = map[string]Kind{}

// RegisterKind adds a gate kind: each gate_<kind>.go calls it from init
// (tests may register kinds of their own). It panics on a duplicate name.
func RegisterKind(k Kind) {
	if _, dup := kinds[k.Name]; dup {
		panic("qualify: gate kind registered twice: " + k.Name)
	}
	kinds[k.Name] = k
}

// Kinds returns the registered gate kinds in plan order.
func Kinds() []Kind {
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// KindNames returns the registered kinds' names in plan order.
func KindNames() []string {
	var out []string
	for _, k := range Kinds() {
		out = append(out, k.Name)
	}
	return out
}

// LookupKind returns the registered kind called name.
func LookupKind(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// plainBound is the bound of most kinds: the plan's timeout, else
// DefaultGateTimeout. Embed it to get Bound.
type plainBound struct{}

// Bound returns timeout, or DefaultGateTimeout when the plan sets none.
func (plainBound) Bound(_ *Handle, timeout time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	return DefaultGateTimeout
}

// Ready is the candidate a launching gate made ready: its profile (the
// attempt's, variants applied) and, when hiro started it, its process.
type Ready struct {
	Profile *config.Profile
	Proc    *supervisor.Process
}

// Handle is what a gate may use: the profiles it may talk to, the
// evidence writer, the clock and the progress lines. The campaign makes
// one per gate; the ready candidate is shared between them.
type Handle struct {
	// GateID is the gate's id; progress lines are prefixed with it.
	GateID string
	// Candidate is the profile under test; Production the production
	// profile (nil when none is configured).
	Candidate  *config.Profile
	Production *config.Profile
	// ProductionFingerprint identifies production's configuration (its
	// hash before the campaign); the semantic baseline cache is keyed on it.
	ProductionFingerprint string
	// Exclusive says production is stopped while the candidate runs.
	Exclusive bool
	// StateDir is hiro's state directory (records, caches); Dir is the
	// campaign's evidence directory (gates write their files below it).
	StateDir string
	Dir      string
	// Fingerprints are the evidence's fingerprints, for gates that learn
	// a digest while running (the artifact manifest).
	Fingerprints *evidence.Fingerprints
	// Now is the clock.
	Now func() time.Time
	// HTTP is the client for requests to the backends.
	HTTP *http.Client
	// Save hands the evidence as it stands to the writer (a long gate
	// saves between steps, so a crash keeps them).
	Save func() error

	out    *progress
	shared *shared
}

type shared struct {
	ready      *Ready
	engineWait time.Duration
	// predictions are the preflight's, by launch rung name (nil with
	// --no-preflight or without a production guard).
	predictions map[string]*evidence.Prediction
	// stopProduction, when set, stops production for an exclusive
	// candidate; the launch gate calls it once, just before the first
	// attempt it launches.
	stopProduction func(context.Context) error
	// watch, when set, polls a production left serving beside the
	// candidate (productionWatch).
	watch *productionWatch
}

// NewHandle returns a handle for running gates outside a campaign (tests,
// tools): progress lines go to w (nil discards), the clock is time.Now and
// Save does nothing.
func NewHandle(candidate, production *config.Profile, stateDir, dir string, w io.Writer) *Handle {
	return &Handle{Candidate: candidate, Production: production, StateDir: stateDir, Dir: dir,
		Fingerprints: &evidence.Fingerprints{}, Now: time.Now, HTTP: &http.Client{}, Save: func() error { return nil },
		out: newProgress(w, false), shared: &shared{}}
}

// forGate returns a copy of h for gate id (sharing the ready candidate).
func (h *Handle) forGate(id string) *Handle {
	c := *h
	c.GateID = id
	return &c
}

// Logf writes a progress line prefixed with the gate's id.
func (h *Handle) Logf(format string, a ...any) {
	h.out.line("[%s] %s", h.GateID, fmt.Sprintf(format, a...))
}

// Statusf shows a transient status line (terminals only).
func (h *Handle) Statusf(format string, a ...any) {
	h.out.status("[%s] %s", h.GateID, fmt.Sprintf(format, a...))
}

// SetReady records the candidate a launching gate made ready.
func (h *Handle) SetReady(r *Ready) { h.shared.ready = r }

// Ready returns the ready candidate, or a harness error when no launching
// gate passed (a request gate without a candidate is hiro's mistake).
func (h *Handle) Ready() (*Ready, error) {
	if h.shared.ready == nil || h.shared.ready.Profile == nil {
		return nil, harnessErr("no ready candidate (gate %s needs a passed launch gate)", h.GateID)
	}
	return h.shared.ready, nil
}

// Client returns an OpenAI-compatible client of the ready candidate and
// the model id to ask: llm.NewForProfile (the profile's API key, CA file
// and overload policy, so a request that succeeded after 429/503 retries
// is a success and Reply.Retries counts them).
func (h *Handle) Client() (*llm.Client, string, error) {
	r, err := h.Ready()
	if err != nil {
		return nil, "", err
	}
	c, err := llm.NewForProfile(r.Profile)
	if err != nil {
		return nil, "", harnessErr("candidate client: %v", err)
	}
	return c, r.Profile.Model, nil
}

// Waited adds the time since t0 to the time spent waiting on engines
// (Evidence.HarnessMS is the rest).
func (h *Handle) Waited(t0 time.Time) { h.shared.engineWait += time.Since(t0) }

// Validation collects a gate section's problems with their key paths.
type Validation struct {
	// Plan is the plan being validated (its directory resolves relative
	// paths); Config the configuration holding its profiles.
	Plan   *Plan
	Config *config.Config
	// Spec is the gate's common part (id, kind, title, skip, timeout).
	Spec *GateSpec
	key  string
	errs config.Errors
}

// Errorf records a problem at key (relative to the gate, e.g.
// "variants[0].reason"; "" for the gate itself).
func (v *Validation) Errorf(key, format string, a ...any) {
	k := v.key
	if key != "" {
		k += "." + key
	}
	v.errs = append(v.errs, &PlanError{File: v.Plan.Path, Key: k, Msg: fmt.Sprintf(format, a...)})
}

// ConfigErrorf records a problem at key of the configuration file (an
// absolute key path, "backends.cand.artifact"): for a value the gate took
// from a profile, so the message names the key the user wrote.
func (v *Validation) ConfigErrorf(key, format string, a ...any) {
	file := v.Plan.Path
	if v.Config != nil && v.Config.Path != "" {
		file = v.Config.Path
	}
	v.errs = append(v.errs, &PlanError{File: file, Key: key, Msg: fmt.Sprintf(format, a...)})
}

// Resolve makes a path relative to the plan's directory absolute.
func (v *Validation) Resolve(path string) string { return v.Plan.resolve(path) }

// CandidateProfile returns the plan's candidate profile (nil when the
// plan names none that exists; that is reported once, under "candidate").
func (v *Validation) CandidateProfile() *config.Profile {
	if v.Config == nil {
		return nil
	}
	return v.Config.Backends[v.Plan.Candidate]
}

func kindList() string { return strings.Join(KindNames(), ", ") }

// fileDigest is the SHA-256 (hex) of a file's bytes.
func fileDigest(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:]), nil
}
