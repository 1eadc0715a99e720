package qualify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"golang.org/x/sys/unix"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Defaults for gate parameters.
const (
	DefaultGateTimeout      = 10 * time.Minute
	DefaultRequestTimeout   = 60 * time.Second
	DefaultRequestMaxTokens = 256
)

// Bounds of a plan file, checked before it is decoded: a larger or more
// deeply nested file is refused with a message (the TOML decoder recurses
// on nesting).
const (
	MaxPlanBytes   = 1 << 20
	MaxPlanNesting = 32
)

// Plan is a qualification campaign for one candidate profile.
type Plan struct {
	// Path is the plan file (absolute); Dir its directory; Digest the
	// SHA-256 of its bytes.
	Path   string `toml:"-"`
	Dir    string `toml:"-"`
	Digest string `toml:"-"`
	// Title names the campaign in the evidence and the report (required).
	Title string `toml:"title"`
	// Summary is an optional sentence on why the campaign is run.
	Summary string `toml:"summary"`
	// Config is the hiro configuration holding the profiles, relative to
	// the plan; empty means the --config given to hiro. It wins over
	// --config (and $HIRO_CONFIG): qualify says so on stderr when both
	// name different files.
	Config string `toml:"config"`
	// Candidate is the profile under test: a backend of the configuration
	// (required).
	Candidate string `toml:"candidate"`
	// Production is the production profile; default the active
	// production (production.Name: the latest activation, else the
	// configuration's production.backend). Empty with none: no guard.
	Production string `toml:"production"`
	// Exclusive says the candidate needs the accelerator alone, so
	// production is stopped first; default the candidate profile's
	// exclusive_accelerator.
	Exclusive *bool `toml:"exclusive"`
	// EvidenceDir is where evidence is written, relative to the plan;
	// default "evidence". Each campaign gets a subdirectory named by its id.
	EvidenceDir string `toml:"evidence_dir"`
	// Decisions are the plan author's reasons, copied into the report.
	Decisions []string `toml:"decisions"`
	// Gates run in order (decoded one by one: see decodeGate).
	Gates []*GateSpec `toml:"-"`
}

// GateSpec is one gate of a plan: the keys every kind has, and the kind's
// own section (Gate), decoded strictly into the kind's struct.
type GateSpec struct {
	// ID names the gate in the evidence and the report: lower-case
	// letters, digits, '_' and '-', unique in the plan (required).
	ID string `toml:"id"`
	// Kind is the gate kind, one of the kinds below (required).
	Kind string `toml:"kind"`
	// Title is the gate's human title; default the kind's.
	Title string `toml:"title"`
	// Skip marks the gate "not_run: skipped by plan"; later gates still run.
	Skip bool `toml:"skip"`
	// Timeout bounds the whole gate; zero takes the kind's bound
	// (DefaultGateTimeout; launch: the sum of its attempts' bounds).
	Timeout config.Duration `toml:"timeout"`
	// Gate is the kind's section.
	Gate Gate `toml:"-"`
	// keys are the keys the plan wrote in this gate's table (so that a
	// written 0 is told from an absent key).
	keys map[string]bool
	// reported are the gate's keys that decoding already reported: a
	// value of the wrong type (left at its default), and the key an
	// unknown key's "did you mean" names. Their validation errors are
	// not reported beside them.
	reported map[string]bool
}

// MaxGateTimeout is the longest timeout a gate may set (7 days): a longer
// bound is a typo ("999999h") that would let a hung gate hold production
// aside for ever.
const MaxGateTimeout = 7 * 24 * time.Hour

// Bound is the gate's time bound.
func (g *GateSpec) Bound(h *Handle) time.Duration { return g.Gate.Bound(h, g.Timeout.Duration) }

// DisplayTitle is the plan's title for the gate, else its kind's.
func (g *GateSpec) DisplayTitle() string {
	if g.Title != "" {
		return g.Title
	}
	if k, ok := LookupKind(g.Kind); ok {
		return k.Title
	}
	return g.ID
}

// PlanError is a plan error: Key is the path of the offending key
// ("gates[2].variants[0].reason").
type PlanError = config.Error

// LoadPlan reads, decodes strictly and validates a plan. It resolves the
// configuration (the plan's own config key, else cfgPath) and checks every
// profile the plan names. It never starts or stops anything. Errors name
// the plan by its absolute path; once the TOML parses, every error is
// reported at once (config.Errors): unknown keys, unknown gate kinds and
// every value out of range, wrongly typed values included (each key whose
// value does not decode is reported, and the rest is decoded and
// validated without it).
func LoadPlan(path, cfgPath string) (*Plan, *config.Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	path = abs
	data, err := readPlanFile(abs)
	if err != nil {
		return nil, nil, &PlanError{File: path, Msg: err.Error()}
	}
	if err := checkNesting(data); err != nil {
		return nil, nil, &PlanError{File: path, Msg: err.Error()}
	}
	var p Plan
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&p)
	und := md.Undecoded()
	// reported: top-level keys decoding reported (see GateSpec.reported).
	reported := map[string]bool{}
	var es config.Errors
	if err != nil {
		var top map[string]any
		if toml.Unmarshal(data, &top) != nil {
			// A syntax error: the rest of the file cannot be read.
			return nil, nil, &PlanError{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ") + "; fix the plan's TOML"}
		}
		// A value of the wrong type: decode key by key, so that every
		// such value is reported with the other errors.
		delete(top, "gates") // decoded per gate below
		v, u, bad := decodeKeys(top, func() any { return &Plan{} })
		if v == nil {
			return nil, nil, &PlanError{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ") + "; fix the plan's TOML"}
		}
		p, und = *v.(*Plan), u
		for _, key := range badKeyOrder(bad) {
			reported[key] = true
			es = append(es, &PlanError{File: path, Key: key, Msg: valueError(key, bad[key])})
		}
	}
	for _, k := range und {
		if len(k) > 0 && k[0] == "gates" {
			continue // decoded per gate below
		}
		var known []string
		if len(k) == 1 {
			known = tomlKeys(reflect.TypeOf(p))
			if s := config.Suggest(k[0], known); s != "" {
				reported[s] = true
			}
		}
		es = append(es, &PlanError{File: path, Key: k.String(), Msg: unknownPlanKey(k[len(k)-1], known)})
	}
	var raw struct {
		Gates []map[string]any `toml:"gates"`
	}
	if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
		return nil, nil, &PlanError{File: path, Key: "gates", Msg: strings.TrimPrefix(err.Error(), "toml: ") + "; write each gate as a [[gates]] table"}
	}
	for i, m := range raw.Gates {
		g, gerrs := decodeGate(path, i, m)
		es = append(es, gerrs...)
		p.Gates = append(p.Gates, g)
	}
	sum := sha256.Sum256(data)
	p.Path, p.Dir, p.Digest = abs, filepath.Dir(abs), hex.EncodeToString(sum[:])
	if p.Config != "" {
		cfgPath = p.resolve(p.Config)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		if p.Config != "" && errors.Is(err, os.ErrNotExist) || p.Config != "" && strings.Contains(err.Error(), "not found") {
			err = &PlanError{File: path, Key: "config", Msg: fmt.Sprintf("%q (%s) does not exist; point config at the hiro configuration holding the plan's profiles (relative to the plan), or remove the key to use --config", p.Config, cfgPath)}
		}
		if len(es) == 0 {
			return nil, nil, err
		}
		// The plan's own errors first, then the configuration's.
		var ce *config.Error
		var ces config.Errors
		switch {
		case errors.As(err, &ces):
			es = append(es, ces...)
		case errors.As(err, &ce):
			es = append(es, ce)
		default:
			es = append(es, &PlanError{Msg: err.Error()})
		}
		return nil, nil, namedGates(es, path, raw.Gates)
	}
	for _, e := range p.validate(cfg) {
		if !reported[planKeyRoot(e.Key)] {
			es = append(es, e)
		}
	}
	if len(es) > 0 {
		return nil, nil, namedGates(es, path, raw.Gates)
	}
	return &p, cfg, nil
}

// reGateIndexKey is a plan error's key that names a gate by its index:
// "gates[6]", "gates[6].min_f1".
var reGateIndexKey = regexp.MustCompile(`^gates\[(\d+)\]`)

// namedGates adds the gate's id to the keys of the plan's own errors
// (those in file) that name a gate by its 0-based index, when the
// [[gates]] table gives one: "gates[6] (id \"semantic\").min_f1". A
// TOML reader counts tables from 1; the id is what the plan says
// (trial 10 Q1).
func namedGates(es config.Errors, file string, gates []map[string]any) config.Errors {
	for _, e := range es {
		if e.File != file {
			continue
		}
		m := reGateIndexKey.FindStringSubmatch(e.Key)
		if m == nil {
			continue
		}
		i, err := strconv.Atoi(m[1])
		if err != nil || i >= len(gates) || e.Key[len(m[0]):] == ".id" {
			continue // an error at the id itself quotes it
		}
		if id, _ := gates[i]["id"].(string); id != "" {
			e.Key = fmt.Sprintf("gates[%d] (id %q)%s", i, id, e.Key[len(m[0]):])
		}
	}
	return es
}

func (p *Plan) resolve(s string) string {
	if s == "" || filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(p.Dir, s)
}

var reGateID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func (p *Plan) validate(cfg *config.Config) config.Errors {
	var es config.Errors
	add := func(key, format string, a ...any) {
		es = append(es, &PlanError{File: p.Path, Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	// The configuration's one rule per value type, on every key of the
	// plan and of each gate's section.
	config.CheckValues(p, "", add)
	for i, g := range p.Gates {
		if g == nil {
			continue // did not decode: reported by decodeGate
		}
		// The one shape of a gate's key, as decoding gives it:
		// "gates[N].key", to which namedGates adds the plan's id.
		k := fmt.Sprintf("gates[%d]", i)
		before := len(es)
		config.CheckValues(g, k, add)
		if g.Gate != nil {
			config.CheckValues(g.Gate, k, add)
		}
		es = append(es[:before], g.unreported(es[before:])...)
	}
	if strings.TrimSpace(p.Title) == "" {
		add("title", "missing; give the campaign a title (it heads the evidence and the report)")
	}
	if p.Candidate == "" {
		add("candidate", "missing; %s", candidateChoices(cfg, p.Production))
	} else if _, err := cfg.Backend(p.Candidate); err != nil {
		add("candidate", "names %q, which is not a backend profile of %s%s; known: %s", p.Candidate, cfg.Path, config.DidYouMean(p.Candidate, cfg.BackendNames()), strings.Join(cfg.BackendNames(), ", "))
	}
	if p.Production == "" {
		p.Production = production.Name(cfg)
	} else if _, err := cfg.Backend(p.Production); err != nil {
		add("production", "names %q, which is not a backend profile of %s%s; known: %s", p.Production, cfg.Path, config.DidYouMean(p.Production, cfg.BackendNames()), strings.Join(cfg.BackendNames(), ", "))
	}
	// profileErrs: the profiles' own keys that do not hold (an artifact
	// path with a typo), added after the gates' errors unless a gate
	// reported the same key (the artifact gate, for the candidate's).
	var profileErrs config.Errors
	for _, role := range []struct{ key, name string }{{"candidate", p.Candidate}, {"production", p.Production}} {
		prof := cfg.Backends[role.name]
		if role.key == "production" && prof != nil {
			if eff, err := production.ProfileFor(cfg, role.name); err == nil && eff != nil {
				prof = eff // the active production's effective profile
			}
		}
		if prof != nil {
			profileErrs = append(profileErrs, profileArtifactErrors(cfg, prof)...)
		}
		if prof == nil || prof.Unmanaged {
			continue
		}
		if _, err := supervisor.CommandPath(prof); err != nil {
			add(role.key, "profile %s: command %q cannot be run: %v; %s in %s (nothing was stopped)", prof.Name, prof.Command, err, supervisor.CommandFix(prof, err), cfg.Path)
		}
	}
	if p.Production != "" && p.Production == p.Candidate {
		add("candidate", "is the production profile %q; qualify a different profile", p.Candidate)
	} else if c, pr := cfg.Backends[p.Candidate], cfg.Backends[p.Production]; c != nil && pr != nil && sameEndpoint(c.BaseURL, pr.BaseURL) {
		add("candidate", "profile %s listens on %s, production %s's own address; give the candidate another port in %s", c.Name, c.BaseURL, pr.Name, cfg.Path)
	}
	if p.Exclusive == nil {
		ex := false
		if c := cfg.Backends[p.Candidate]; c != nil {
			ex = c.ExclusiveAccelerator
		}
		p.Exclusive = &ex
	}
	if p.EvidenceDir == "" {
		p.EvidenceDir = "evidence"
	}
	p.EvidenceDir = p.resolve(p.EvidenceDir)
	if err := writableDir(p.EvidenceDir); err != nil {
		add("evidence_dir", "%s: %v; point evidence_dir at a folder hiro may write (relative to the plan)", p.EvidenceDir, err)
	}
	if *p.Exclusive && p.Production != "" {
		if prod := cfg.Backends[p.Production]; prod != nil && prod.Unmanaged {
			add("exclusive", "the candidate needs the accelerator exclusively, but production %s is unmanaged: hiro cannot stop it; stop it yourself and set exclusive = false, or manage production with hiro", p.Production)
		}
	}
	if len(p.Gates) == 0 {
		add("gates", "no gates; a plan needs at least a launch gate ([[gates]] kind = \"launch\")")
	}
	seen := map[string]int{}
	lastRank, lastKind := -1, ""
	launched := false
	// undecoded: a gate before this one has no kind hiro knows (reported
	// by decodeGate), so whether a launch gate came before is unknown.
	undecoded := false
	for i, g := range p.Gates {
		k := fmt.Sprintf("gates[%d]", i)
		if g == nil {
			undecoded = true
			continue // reported by decodeGate
		}
		if g.ID == "" {
			g.ID = g.Kind
		}
		if g.ID != "" && !reGateID.MatchString(g.ID) {
			add(k+".id", "%q: use lower-case letters, digits, '_' and '-'", g.ID)
		}
		if j, dup := seen[g.ID]; dup && g.ID != "" {
			add(k+".id", "%q is also the id of gates[%d]; gate ids must be unique", g.ID, j)
		}
		seen[g.ID] = i
		if g.Gate == nil {
			undecoded = true
			continue // its kind is reported by decodeGate
		}
		kind, _ := LookupKind(g.Kind)
		if kind.Rank < lastRank {
			add(k+".kind", "%s gate %q comes after a %s gate; gates run in the order %s", g.Kind, g.ID, lastKind, strings.Join(KindNames(), " → "))
		}
		if kind.Rank > lastRank {
			lastRank, lastKind = kind.Rank, g.Kind
		}
		if kind.Launches {
			if launched {
				add(k+".kind", "a plan has one %s gate", g.Kind)
			}
			launched = true
		}
		if kind.NeedsCandidate && !launched && !undecoded {
			why := ""
			if c := cfg.Backends[p.Candidate]; c != nil && c.Unmanaged {
				// No gate kind qualifies a server that is already running:
				// a campaign's candidate is launched and stopped by hiro.
				why = fmt.Sprintf("; candidate %s is unmanaged, and a campaign's candidate must be one hiro launches: "+
					"give it a managed profile (command and port) that runs the same server, see docs/endpoints.md", p.Candidate)
			}
			add(k+".kind", "%s gate %q needs a launch gate before it (it sends requests to the candidate)%s", g.Kind, g.ID, why)
		}
		if g.Timeout.Duration < 0 {
			add(k+".timeout", "%s is negative; give a positive bound such as \"10m\", or leave it out for the kind's default", g.Timeout.Duration)
		} else if g.Timeout.Duration > MaxGateTimeout {
			add(k+".timeout", "%s is longer than the maximum of 7 days (168h); give a bound such as \"10m\", or leave it out for the kind's default", g.Timeout.Duration)
		}
		v := &Validation{Plan: p, Config: cfg, Spec: g, key: k}
		g.Gate.Validate(v)
		es = append(es, g.unreported(v.errs)...)
	}
	for _, e := range profileErrs {
		if !hasKey(es, e.File, e.Key) {
			es = append(es, e)
		}
	}
	return es
}

// profileArtifactErrors checks a profile the plan refers to (candidate
// or production) names an artifact manifest that exists and parses, at
// the key the user wrote: backends.NAME.artifact of the configuration.
// Without it a typo in production's artifact passed --check unseen
// while the same typo in the candidate's was reported (trial T5).
func profileArtifactErrors(cfg *config.Config, prof *config.Profile) config.Errors {
	if prof.Artifact == "" {
		return nil
	}
	_, err := artifact.Load(prof.Artifact)
	if err == nil {
		return nil
	}
	fix := "pin the artifact first (hiro artifact pin) or fix the profile's artifact"
	if errors.Is(err, fs.ErrNotExist) {
		fix = "or fix the profile's artifact path"
	}
	return config.Errors{&PlanError{File: cfg.Path, Key: "backends." + prof.Name + ".artifact", Msg: fmt.Sprintf("%v; %s", err, fix)}}
}

// hasKey reports whether es holds an error at key of file.
func hasKey(es config.Errors, file, key string) bool {
	for _, e := range es {
		if e.File == file && e.Key == key {
			return true
		}
	}
	return false
}

// unreported drops the errors of the gate's keys that decoding already
// reported (g.reported): a value that did not decode is not "missing"
// too, nor is the key a misspelt one meant.
func (g *GateSpec) unreported(es config.Errors) config.Errors {
	if len(g.reported) == 0 {
		return es
	}
	var out config.Errors
	for _, e := range es {
		key := e.Key
		if i := strings.Index(key, "]."); strings.HasPrefix(key, "gates[") && i >= 0 {
			key = key[i+2:]
		}
		if !g.reported[planKeyRoot(key)] {
			out = append(out, e)
		}
	}
	return out
}

// planKeyRoot is the first part of a key path: "variants" of
// "variants[0].reason", "title" of "title".
func planKeyRoot(key string) string {
	if i := strings.IndexAny(key, ".["); i >= 0 {
		return key[:i]
	}
	return key
}

// decodeKeys decodes the table m strictly into a new value (newV), and,
// when the whole table does not decode, key by key: each key whose value
// does not decode alone is left out (bad holds its error) and the others
// are decoded together, so that one wrongly typed value hides no other
// error. It returns the value (nil when an error belongs to no one key:
// bad[""]), the keys the value does not know, and the bad keys.
func decodeKeys(m map[string]any, newV func() any) (v any, undecoded []toml.Key, bad map[string]error) {
	encode := func(m map[string]any) (string, error) {
		var buf bytes.Buffer
		err := toml.NewEncoder(&buf).Encode(m)
		return buf.String(), err
	}
	decode := func(m map[string]any) (any, toml.MetaData, error) {
		text, err := encode(m)
		if err != nil {
			return nil, toml.MetaData{}, err
		}
		v := newV()
		md, err := toml.Decode(text, v)
		return v, md, err
	}
	v, md, err := decode(m)
	if err == nil {
		return v, md.Undecoded(), nil
	}
	bad = map[string]error{}
	good := map[string]any{}
	for key, val := range m {
		if _, _, kerr := decode(map[string]any{key: val}); kerr != nil {
			bad[key] = kerr
		} else {
			good[key] = val
		}
	}
	if len(bad) == 0 {
		return nil, nil, map[string]error{"": err}
	}
	if v, md, err = decode(good); err != nil {
		return nil, nil, map[string]error{"": err}
	}
	return v, md.Undecoded(), bad
}

// valueError is the decoding error of key's value alone for a person:
// without the line of a table re-encoded alone, and naming the inner key
// when it is not key itself ("variants[0]": "key reason: ...").
func valueError(key string, err error) string {
	msg := strings.TrimPrefix(err.Error(), "toml: ")
	if m := reDecodeLine.FindStringSubmatch(msg); m != nil {
		msg = msg[len(m[0]):]
		if m[1] != key {
			msg = "key " + m[1] + ": " + msg
		}
	}
	if h := config.MismatchHint(msg); h != "" {
		msg += "; " + h
	}
	return msg
}

// badKeyOrder are the keys of bad in order.
func badKeyOrder(m map[string]error) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeGate decodes gate i of the plan strictly: the common keys into a
// GateSpec and the rest into its kind's own struct; a key neither knows
// is an error with its path ("gates[2].requets").
func decodeGate(file string, i int, m map[string]any) (*GateSpec, config.Errors) {
	k := fmt.Sprintf("gates[%d]", i)
	fail := func(key, format string, a ...any) config.Errors {
		return config.Errors{&PlanError{File: file, Key: key, Msg: fmt.Sprintf(format, a...)}}
	}
	// Decode the table alone, so that its keys are checked against its
	// own kind (a key one gate knows must not pass in another), and key by
	// key when a value does not decode, so that every error is reported.
	var es config.Errors
	reported := map[string]bool{}
	badKeys := func(bad map[string]error, what string) {
		for _, key := range badKeyOrder(bad) {
			reported[key] = true
			es = append(es, &PlanError{File: file, Key: k + "." + key, Msg: what + valueError(key, bad[key])})
		}
	}
	v1, und1, bad1 := decodeKeys(m, func() any { return &GateSpec{} })
	if v1 == nil {
		return nil, fail(k, "%s", gateDecodeError(bad1[""]))
	}
	g := v1.(*GateSpec)
	badKeys(bad1, "")
	g.reported = reported
	// A gate without a known kind is kept with its common part (its id
	// is still checked) and no Gate.
	if g.Kind == "" {
		if bad1["kind"] != nil {
			return g, es
		}
		return g, append(es, fail(k+".kind", "missing; use one of %s", kindList())...)
	}
	kind, ok := LookupKind(g.Kind)
	if !ok {
		return g, append(es, fail(k+".kind", "unknown gate kind %q%s; use one of %s", g.Kind, config.DidYouMean(g.Kind, KindNames()), kindList())...)
	}
	g.keys = map[string]bool{}
	for key := range m {
		g.keys[key] = true
	}
	v2, und2, bad2 := decodeKeys(m, func() any { return kind.New() })
	if v2 == nil {
		return nil, append(es, fail(k, "%s gate: %s", g.Kind, gateDecodeError(bad2[""]))...)
	}
	g.Gate = v2.(Gate)
	for key := range bad1 {
		delete(bad2, key) // reported once, as a key every gate has
	}
	badKeys(bad2, g.Kind+" gate: ")
	undec2 := map[string]bool{}
	for _, key := range und2 {
		undec2[key.String()] = true
	}
	for _, key := range und1 {
		if undec2[key.String()] {
			var known []string
			if len(key) == 1 {
				known = append(tomlKeys(reflect.TypeOf(*g)), tomlKeys(reflect.TypeOf(g.Gate))...)
				if s := config.Suggest(key[0], known); s != "" {
					reported[s] = true
				}
			}
			es = append(es, &PlanError{File: file, Key: k + "." + key.String(), Msg: "unknown key for " + withArticle(g.Kind) + " gate" + strings.TrimPrefix(unknownPlanKey(key[len(key)-1], known), "unknown key")})
		}
	}
	return g, es
}

// candidateChoices says which profiles a missing candidate can name: the
// configuration's backend profiles but production (the plan's, else the
// configuration's), or that there is none to try.
func candidateChoices(cfg *config.Config, prod string) string {
	if prod == "" {
		prod = production.Name(cfg)
	}
	var others []string
	for _, n := range cfg.BackendNames() {
		if n != prod {
			others = append(others, n)
		}
	}
	if len(others) == 0 {
		return fmt.Sprintf("name the backend profile under test; %s has none besides production %s: add a [backends.NAME] profile for the candidate", cfg.Path, prod)
	}
	return fmt.Sprintf("name the backend profile under test (one of %s; %s is production)", strings.Join(others, ", "), prod)
}

// reDecodeLine is the position the TOML decoder gives: a line of the
// gate's table re-encoded alone, not of the plan file.
var reDecodeLine = regexp.MustCompile(`^line \d+ \(last key "([^"]*)"\): `)

// gateDecodeError is a gate's decoding error for a person: the key named
// instead of a line number that is not the plan file's.
func gateDecodeError(err error) string {
	msg := strings.TrimPrefix(err.Error(), "toml: ")
	if m := reDecodeLine.FindStringSubmatch(msg); m != nil {
		msg = "key " + m[1] + ": " + msg[len(m[0]):]
	}
	if h := config.MismatchHint(msg); h != "" {
		msg += "; " + h
	}
	return msg
}

// sameEndpoint reports whether two base URLs reach the same listener: the
// same port on the same host, any loopback or wildcard host counting as
// one.
func sameEndpoint(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	if err1 != nil || err2 != nil || ua.Port() == "" || ua.Port() != ub.Port() {
		return false
	}
	local := func(h string) bool {
		if h == "localhost" || h == "" {
			return true
		}
		ip := net.ParseIP(h)
		return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
	}
	ha, hb := ua.Hostname(), ub.Hostname()
	return ha == hb || local(ha) && local(hb)
}

// writableDir checks that dir is a folder hiro can write, or that its
// nearest existing parent is (the folder is created when the campaign
// starts).
func writableDir(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return fmt.Errorf("%s is not a folder", d)
			}
			if unix.Access(d, unix.W_OK|unix.X_OK) != nil {
				return fmt.Errorf("%s is not writable", d)
			}
			// Access says yes to root everywhere; creating a folder is
			// the real test (/proc refuses it).
			tmp, err := os.MkdirTemp(d, ".hiro-check-")
			if err != nil {
				return fmt.Errorf("cannot create a folder in %s: %v", d, err)
			}
			return os.Remove(tmp)
		}
		if !errors.Is(err, os.ErrNotExist) || filepath.Dir(d) == d {
			return err
		}
	}
}

// readPlanFile reads a plan of at most MaxPlanBytes.
func readPlanFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errors.New("plan file not found")
		}
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file; give the plan's TOML file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxPlanBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxPlanBytes {
		return nil, fmt.Errorf("larger than %d KiB: a plan is a short TOML file; check that this is the plan", MaxPlanBytes>>10)
	}
	return data, nil
}

// checkNesting refuses TOML whose arrays and inline tables nest deeper
// than MaxPlanNesting, before the decoder recurses into them. It skips
// strings and comments.
func checkNesting(data []byte) error {
	depth, line := 0, 1
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '\n':
			line++
		case '#':
			for i < len(data) && data[i] != '\n' {
				i++
			}
			line++
		case '"', '\'':
			q := string([]byte{c, c, c})
			if bytes.HasPrefix(data[i:], []byte(q)) {
				end := bytes.Index(data[i+3:], []byte(q))
				if end < 0 {
					return nil // the decoder reports the open string
				}
				line += bytes.Count(data[i:i+3+end], []byte("\n"))
				i += 3 + end + 2
				continue
			}
			for i++; i < len(data) && data[i] != c && data[i] != '\n'; i++ {
				if c == '"' && data[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			if depth > MaxPlanNesting {
				return fmt.Errorf("line %d: arrays or tables nested more than %d deep; a plan needs a few levels at most", line, MaxPlanNesting)
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// unknownPlanKey is the message for an unknown plan key: the known key
// nearest in spelling when one is near (config.Suggest), and where every
// key is listed.
func unknownPlanKey(word string, known []string) string {
	if s := config.Suggest(word, known); s != "" {
		return fmt.Sprintf("unknown key; did you mean %s? (docs/plan.md lists every key)", s)
	}
	return "unknown key; docs/plan.md lists every key of the plan, and examples/*/plan.toml are complete plans"
}

// tomlKeys lists the TOML keys of struct type t (through pointers and
// embedded structs): the names in its fields' toml tags.
func tomlKeys(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		switch {
		case f.Anonymous && name == "":
			keys = append(keys, tomlKeys(f.Type)...)
		case name != "" && name != "-":
			keys = append(keys, name)
		}
	}
	return keys
}

// withArticle is kind with its indefinite article for a sentence: "an
// artifact", "a launch" (by the first letter: every gate kind's name
// reads so).
func withArticle(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}
