package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Engine describes one engine kind: how to check its health, where it
// reports the model id, its log phase markers, failure signatures and fact
// parsers. One value per kind, registered by its engine_<kind>.go file.
// An *Engine is immutable after registration and safe for concurrent use.
type Engine struct {
	// Kind is the engine kind as written in a backend profile ("vllm").
	Kind string
	// HealthPath is the HTTP path CheckHealth requests first ("/health").
	HealthPath string
	// ModelsPath is where the engine lists served model ids
	// (OpenAI-compatible "/v1/models", ids in data[].id).
	ModelsPath string
	// ModelStoreEnv names the variable that points the engine at its
	// model store, and ModelStoreDefault the store without it (Ollama:
	// OLLAMA_MODELS, ~/.ollama/models); "" when the engine has none (it
	// loads the files its command names).
	ModelStoreEnv, ModelStoreDefault string
	// storeModels lists the models of a store folder as the engine names
	// them (StoreModels); nil when the engine's store cannot be read so.
	storeModels func(dir string) ([]string, error)

	// health reads the engine's health answer; set by the kind's file.
	health func(ctx context.Context, e *Engine, client *http.Client, baseURL, model string) HealthResult
	// normalizeID maps a model id to the form compared by MatchModel;
	// nil means ids compare exactly.
	normalizeID func(id string) string
	// markers, in the order tried; the first whose text a line contains
	// sets the phase.
	markers []Marker
	// signatures, most specific first; sigAC finds which signature texts
	// a lower-cased line holds, in one pass.
	signatures []Rule
	sigAC      *acMatcher // built on first use by matchers
	// frameHints name the component of a traceback frame; framePhases
	// the step it belongs to.
	frameHints  []FrameHint
	framePhases []FramePhase
	// wrappers are substrings of lines that restate a failure explained
	// elsewhere ("EngineCore failed to start."); never a root cause.
	wrappers []string
	// facts are the numbers parsed from the log.
	facts []FactParser
	// devices read the serving device from the log.
	devices []DeviceRule
	// trigAC finds, in one pass over a raw line, which marker texts, fact
	// triggers, device texts and grammar words it holds (ids in that
	// order). Built on first use by matchers: the automata take a few
	// MB, which a process that never reads a log (the router, until
	// production dies) should not hold.
	trigAC  *acMatcher
	acOnce  sync.Once
	acTrig  [][]byte
	acTexts [][]byte
	// notices are the lower-cased texts of the Notice rules: an INFO line
	// holding one is read (a notice of going on in a lesser way is logged
	// at INFO), other INFO lines only when they report a failure.
	notices [][]byte
	// nextSteps overrides NextStep for this kind, per class.
	nextSteps map[failure.Class]string
	// precede are the rules' After and NotAfter texts, found by trigAC
	// after the grammar words; the tracker notes which were logged.
	precede []string
}

// precedeID returns the index of text in e.precede, adding it; -1 for "".
func (e *Engine) precedeID(text string) int32 {
	if text == "" {
		return -1
	}
	for i, p := range e.precede {
		if p == text {
			return int32(i)
		}
	}
	e.precede = append(e.precede, text)
	return int32(len(e.precede) - 1)
}

// Marker is a log text that starts a phase: a line containing Text (and
// matching Pattern when set) means Phase is now in progress. Phases only
// move forward: a marker of an earlier phase than the one in progress is
// ignored (SGLang logs "fired up" after its own warmup request was served).
type Marker struct {
	// Text is a literal substring of the marker line (case-sensitive, a
	// cheap prefilter).
	Text string
	// Phase is the phase in progress from that line on.
	Phase failure.Phase
	// Pattern, when set, must match the line too (e.g. an access log line
	// with a 2xx status: a 503 while loading is not a served request).
	Pattern *regexp.Regexp
	// After, when set, makes the marker count only once the phase in
	// progress is at least After (batch lines before ready are the
	// engine's own warmup, not served requests).
	After failure.Phase
	// Reload marks a model load that a server already up may start on
	// demand (LM Studio, oMLX, TabbyAPI's inline load): seen once the
	// server listens, it moves the phase back to Phase.
	Reload bool
	// Continues marks a line that goes on reporting a failure logged just
	// before it (within continuesLines lines): the step it names is that
	// failure's too, so the root-cause line's phase moves with it unless
	// its rule pins one (ggml-cuda's cudaMalloc failure, then the graph
	// allocator's "ggml_gallocr_reserve_n: failed to allocate ..." for the
	// context's compute buffers).
	Continues bool
}

// continuesLines bounds how far a Marker.Continues line may follow the
// root-cause line it continues.
const continuesLines = 3

// FrameHint names the component a Python traceback frame belongs to: a
// frame whose line contains Text (lower case: file paths and function
// names, e.g. "marlin", "xgrammar", "chat_template") tells the class of
// an exception raised below it that no signature explains.
type FrameHint struct {
	Text  string
	Class failure.Class
	// NextStep, when set, is the advice when this hint decides.
	NextStep string
	// Until, when set, is the last phase in which the hint gives Class:
	// the frame names where code lives, not the step that runs it (a
	// model's own modelling code is built in load and runs again in
	// warmup and in every request). An exception raised below it later
	// is a crash in that code, whose class the moment gives (warmup_failed
	// in warmup, probe_failed or engine_died once serving).
	Until failure.Phase
	// From, when set, is the first phase in which the hint gives Class;
	// before it the hint gives Early. A grammar backend's code runs for
	// requests, so its frames name a structured-output failure only once
	// the server serves; the same code failing while the engine starts
	// is the configuration it was given (a grammar backend or reasoning
	// parser this model's tokenizer cannot take).
	From  failure.Phase
	Early failure.Class
}

// frameHint returns the frame hint whose rule name is name, or nil.
func (e *Engine) frameHint(name string) *FrameHint {
	if !strings.HasPrefix(name, framePrefix) {
		return nil
	}
	for i := range e.frameHints {
		if framePrefix+slug(e.frameHints[i].Text) == name {
			return &e.frameHints[i]
		}
	}
	return nil
}

// FramePhase names the phase of a traceback frame: a frame whose line
// contains Text (lower case) belongs to Phase ("init_memory_pool":
// kv_init).
type FramePhase struct {
	Text  string
	Phase failure.Phase
	// Holds marks a step whose inner frames are its own helpers, whatever
	// they are named (the KV sizing's profile run calls the model's
	// warm-up functions): frames below it name no later phase.
	Holds bool
}

// FactParser extracts numbers from a log line. Trigger is a literal the
// line must contain (checked first, so most lines cost one
// strings.Contains); Pattern's submatches i+1 are parsed as the fact
// Names[i] (commas removed, so "123,456" is 123456). A later line
// overwrites an earlier value of the same name.
//
// With PerDevice, submatch 1 is a device name ("CUDA0", "CPU_Mapped") and
// the names take submatches 2...; each fact is stored under
// name + "." + device in lower case ("model_buffer_mib.cuda0"), so numbers
// logged once per device are kept per device, and the plain name holds
// the sum over accelerator devices (CPU buffers are kept apart, under
// their own device key only).
type FactParser struct {
	Trigger   string
	Pattern   *regexp.Regexp
	Names     []string
	PerDevice bool
}

// ErrUnknownKind is returned (wrapped) by Lookup for an unknown kind.
var ErrUnknownKind = errors.New("unknown engine kind")

var registry = map[string]*Engine{}

// register adds e to the table; called from each kind's init.
func register(e *Engine) {
	if _, dup := registry[e.Kind]; dup {
		panic("engine: kind registered twice: " + e.Kind)
	}
	prepare(e)
	registry[e.Kind] = e
}

// prepare readies e's tables for matching: rule names, lower-cased texts,
// the trigger and After/NotAfter texts.
func prepare(e *Engine) {
	if e.ModelsPath == "" {
		e.ModelsPath = "/v1/models"
	}
	sigs := make([]Rule, len(e.signatures))
	copy(sigs, e.signatures)
	nameRules(e.Kind, sigs)
	texts := make([][]byte, len(sigs))
	for i := range sigs {
		sigs[i].lower = []byte(strings.ToLower(sigs[i].Text))
		sigs[i].also = []byte(strings.ToLower(sigs[i].Also))
		sigs[i].anchored = anchoredPattern(sigs[i].Pattern)
		texts[i] = sigs[i].lower
		sigs[i].afterID, sigs[i].notAfterI = e.precedeID(sigs[i].After), e.precedeID(sigs[i].NotAfter)
		if sigs[i].Notice && len(sigs[i].lower) > 0 {
			e.notices = append(e.notices, sigs[i].lower)
		}
	}
	e.signatures = sigs
	e.acTexts = texts
	var trig [][]byte
	for _, m := range e.markers {
		trig = append(trig, []byte(m.Text))
	}
	for _, f := range e.facts {
		trig = append(trig, []byte(f.Trigger))
	}
	for _, d := range e.devices {
		trig = append(trig, []byte(d.Text))
	}
	for _, w := range grammarWords {
		trig = append(trig, []byte(w))
	}
	for _, p := range e.precede {
		trig = append(trig, []byte(p))
	}
	e.acTrig = trig
	hints := make([]FrameHint, len(e.frameHints))
	for i, h := range e.frameHints {
		hints[i] = FrameHint{Text: strings.ToLower(h.Text), Class: h.Class, NextStep: h.NextStep, Until: h.Until, From: h.From, Early: h.Early}
	}
	e.frameHints = hints
}

// matchers returns the signature and trigger automata, building them on
// first use.
func (e *Engine) matchers() (sig, trig *acMatcher) {
	e.acOnce.Do(func() {
		e.sigAC, e.trigAC = newAC(e.acTexts), newAC(e.acTrig)
		e.acTexts, e.acTrig = nil, nil
	})
	return e.sigAC, e.trigAC
}

// Kinds returns the registered engine kinds, sorted.
func Kinds() []string {
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the engine of kind. An unknown kind gives an error
// wrapping ErrUnknownKind that lists the known kinds.
func Lookup(kind string) (*Engine, error) {
	if e, ok := registry[kind]; ok {
		return e, nil
	}
	return nil, fmt.Errorf("%w %q: use one of %s", ErrUnknownKind, kind, strings.Join(Kinds(), ", "))
}

// MatchModel reports whether one of the reported model ids is the expected
// one, as this engine compares ids (Ollama: "name" and "name:latest" are
// the same model; others: exact).
// StoreModels lists the models in dir, a model store of the engine (its
// ModelStoreEnv folder), named as the engine's model list names them; ok
// is false when the engine's store has no known layout or dir cannot be
// read (then nothing can be said of it).
func (e *Engine) StoreModels(dir string) (names []string, ok bool) {
	if e.storeModels == nil {
		return nil, false
	}
	names, err := e.storeModels(dir)
	return names, err == nil
}

// ClosestModel is the id of reported nearest to want (case, tag or
// organisation aside, or a few edits away), "" when none is near: the
// "did you mean" of identity_mismatch.
func ClosestModel(want string, reported []string) string { return closestModel(want, reported) }

func (e *Engine) MatchModel(expected string, reported []string) bool {
	want := e.NormalizeModelID(expected)
	for _, r := range reported {
		if e.NormalizeModelID(r) == want {
			return true
		}
	}
	return false
}

// NormalizeModelID returns the form of id that MatchModel compares.
func (e *Engine) NormalizeModelID(id string) string {
	id = strings.TrimSpace(id)
	if e.normalizeID != nil {
		return e.normalizeID(id)
	}
	return id
}

// NextStep returns what a person should try for a failure of class with
// this engine: the kind's own advice when it has one, else the generic
// NextStep.
func (e *Engine) NextStep(c failure.Class) string {
	if s, ok := e.nextSteps[c]; ok {
		return s
	}
	return NextStep(c)
}

// withoutHints returns hints without those whose text is one of texts
// (a kind whose own code a shared hint would name as a component).
func withoutHints(hints []FrameHint, texts ...string) []FrameHint {
	var out []FrameHint
	for _, h := range hints {
		keep := true
		for _, t := range texts {
			keep = keep && h.Text != t
		}
		if keep {
			out = append(out, h)
		}
	}
	return out
}

// joinLists concatenates signature or parser lists for kinds that share
// them (Ollama embeds llama.cpp).
func joinLists[T any](lists ...[]T) []T {
	var out []T
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
