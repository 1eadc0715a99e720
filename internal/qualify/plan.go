package qualify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
)

// Gate kinds, in the order a plan may use them (DESIGN.md, "Gate").
const (
	KindPrereq            = "prereq"
	KindArtifact          = "artifact"
	KindLaunch            = "launch"
	KindReadyControl      = "ready_control"
	KindStructuredControl = "structured_control"
	KindSequential        = "sequential"
	KindSemantic          = "semantic"
)

// GateKinds lists the kinds in their sane order: a plan's gates must not
// go backwards in this order (prereq and artifact before launch, every
// request gate after it).
var GateKinds = []string{KindPrereq, KindArtifact, KindLaunch, KindReadyControl, KindStructuredControl, KindSequential, KindSemantic}

// Defaults for gate parameters.
const (
	DefaultSequentialRequests = 20
	DefaultStructuredRequests = 3
	DefaultGateTimeout        = 10 * time.Minute
	DefaultRequestTimeout     = 60 * time.Second
	DefaultRequestMaxTokens   = 256
)

// Plan is a qualification campaign for one candidate profile.
type Plan struct {
	// Path is the plan file (absolute); Dir its directory; Digest the
	// SHA-256 of its bytes.
	Path   string `toml:"-"`
	Dir    string `toml:"-"`
	Digest string `toml:"-"`
	// Title names the campaign in the evidence and the report.
	Title string `toml:"title"`
	// Summary is an optional sentence on why the campaign is run.
	Summary string `toml:"summary"`
	// Config is the hiro configuration holding the profiles, relative to
	// the plan; empty means the --config given to hiro.
	Config string `toml:"config"`
	// Candidate is the profile under test.
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
	// Gates run in order.
	Gates []*GateSpec `toml:"gates"`
}

// GateSpec is one gate of a plan. Which fields apply depends on Kind.
type GateSpec struct {
	ID    string `toml:"id"`
	Kind  string `toml:"kind"`
	Title string `toml:"title"`
	// Skip marks the gate "not_run: skipped by plan"; later gates still run.
	Skip bool `toml:"skip"`
	// Timeout bounds the whole gate; default DefaultGateTimeout (launch:
	// the sum of its attempts' ready timeouts plus stop grace).
	Timeout config.Duration `toml:"timeout"`

	// prereq
	Accelerator *AcceleratorReq `toml:"accelerator"`
	Disks       []DiskReq       `toml:"disks"`
	Commands    []CommandReq    `toml:"commands"`
	Files       []string        `toml:"files"`

	// artifact: the manifest to verify; default the candidate profile's.
	Manifest string `toml:"manifest"`
	Dir      string `toml:"dir"`

	// launch
	MaxAttempts int        `toml:"max_attempts"`
	Variants    []*Variant `toml:"variants"`

	// request gates (ready_control, structured_control, sequential)
	Prompt         string          `toml:"prompt"`
	Expect         string          `toml:"expect"`
	Requests       int             `toml:"requests"`
	MaxTokens      int             `toml:"max_tokens"`
	RequestTimeout config.Duration `toml:"request_timeout"`
	Schema         string          `toml:"schema"`
	// Structured (sequential): send the claims schema as response_format.
	Structured *bool `toml:"structured"`

	// semantic
	Corpus         string  `toml:"corpus"`
	MinF1          float64 `toml:"min_f1"`
	MinGrounding   float64 `toml:"min_grounding"`
	MinSchemaValid float64 `toml:"min_schema_valid"`
	Tolerance      float64 `toml:"tolerance"`
	Concurrency    int     `toml:"concurrency"`
	// MaxRepairs bounds repair retries per sentence (nil: extract's default).
	MaxRepairs *int `toml:"max_repairs"`
}

// AcceleratorReq is what the prereq gate wants of the accelerators
// (read through nvidia-smi).
type AcceleratorReq struct {
	// NamePattern is a regular expression the GPU name must match.
	NamePattern string `toml:"name_pattern"`
	// Count is the minimum number of GPUs; default 1.
	Count int `toml:"count"`
	// MinFreeMiB is the minimum free memory on each GPU, MiB.
	MinFreeMiB int `toml:"min_free_mib"`
}

// DiskReq wants MinFreeGiB free on the filesystem holding Path.
type DiskReq struct {
	Path       string  `toml:"path"`
	MinFreeGiB float64 `toml:"min_free_gib"`
}

// CommandReq is a command that must succeed; VersionPattern, when set, is a
// regular expression its output must match.
type CommandReq struct {
	Name           string   `toml:"name"`
	Run            []string `toml:"run"`
	VersionPattern string   `toml:"version_pattern"`
}

// Variant is one documented fallback of the attempt ladder: changes to
// the base profile (or to the variant named in BasedOn) with a reason.
type Variant struct {
	Name    string `toml:"name"`
	Reason  string `toml:"reason"`
	BasedOn string `toml:"based_on"`
	// Env sets variables; EnvUnset removes them.
	Env      map[string]string `toml:"env"`
	EnvUnset []string          `toml:"env_unset"`
	// ArgsSet replaces the value following a flag ("--log" = "b.log"),
	// appending "flag value" when the flag is absent; ArgsAppend appends;
	// ArgsRemove removes a flag and the value after it when that value
	// does not start with "-".
	ArgsSet    map[string]string `toml:"args_set"`
	ArgsAppend []string          `toml:"args_append"`
	ArgsRemove []string          `toml:"args_remove"`
}

// PlanError is a plan error: Key is the path of the offending key
// ("gates[2].variants[0].reason").
type PlanError = config.Error

// LoadPlan reads, decodes strictly and validates a plan. It resolves the
// configuration (the plan's own config key, else cfgPath) and checks every
// profile the plan names. It never starts or stops anything.
func LoadPlan(path, cfgPath string) (*Plan, *config.Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, &PlanError{File: path, Msg: "plan file not found"}
		}
		return nil, nil, &PlanError{File: path, Msg: err.Error()}
	}
	var p Plan
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&p)
	if err != nil {
		return nil, nil, &PlanError{File: path, Msg: strings.TrimPrefix(err.Error(), "toml: ") + "; fix the plan's TOML"}
	}
	if und := md.Undecoded(); len(und) > 0 {
		var es config.Errors
		for _, k := range und {
			es = append(es, &PlanError{File: path, Key: k.String(), Msg: "unknown key; see examples/*/plan.toml for the plan format"})
		}
		return nil, nil, es
	}
	sum := sha256.Sum256(data)
	p.Path, p.Dir, p.Digest = abs, filepath.Dir(abs), hex.EncodeToString(sum[:])
	if p.Config != "" {
		cfgPath = p.resolve(p.Config)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		if p.Config != "" && errors.Is(err, os.ErrNotExist) || p.Config != "" && strings.Contains(err.Error(), "not found") {
			return nil, nil, &PlanError{File: path, Key: "config", Msg: fmt.Sprintf("%q (%s) does not exist; point config at the hiro configuration holding the plan's profiles (relative to the plan), or remove the key to use --config", p.Config, cfgPath)}
		}
		return nil, nil, err
	}
	if es := p.validate(cfg); len(es) > 0 {
		return nil, nil, es
	}
	return &p, cfg, nil
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
	if strings.TrimSpace(p.Title) == "" {
		add("title", "missing; give the campaign a title (it heads the evidence and the report)")
	}
	if p.Candidate == "" {
		add("candidate", "missing; name the backend profile under test (one of %s)", strings.Join(cfg.BackendNames(), ", "))
	} else if _, err := cfg.Backend(p.Candidate); err != nil {
		add("candidate", "names %q, which is not a backend profile of %s; known: %s", p.Candidate, cfg.Path, strings.Join(cfg.BackendNames(), ", "))
	}
	if p.Production == "" {
		p.Production = production.Name(cfg)
	} else if _, err := cfg.Backend(p.Production); err != nil {
		add("production", "names %q, which is not a backend profile of %s; known: %s", p.Production, cfg.Path, strings.Join(cfg.BackendNames(), ", "))
	}
	if p.Production != "" && p.Production == p.Candidate {
		add("candidate", "is the production profile %q; qualify a different profile", p.Candidate)
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
	if len(p.Gates) == 0 {
		add("gates", "no gates; a plan needs at least a launch gate ([[gates]] kind = \"launch\")")
	}
	seen := map[string]int{}
	lastOrder, lastKind := -1, ""
	hasLaunch := false
	for i, g := range p.Gates {
		k := fmt.Sprintf("gates[%d]", i)
		if g == nil {
			continue
		}
		if g.ID == "" {
			g.ID = g.Kind
		}
		if !reGateID.MatchString(g.ID) {
			add(k+".id", "%q: use lower-case letters, digits, '_' and '-'", g.ID)
		}
		if j, dup := seen[g.ID]; dup {
			add(k+".id", "%q is also the id of gates[%d]; gate ids must be unique", g.ID, j)
		}
		seen[g.ID] = i
		order := indexOf(GateKinds, g.Kind)
		if order < 0 {
			add(k+".kind", "unknown gate kind %q; use one of %s", g.Kind, strings.Join(GateKinds, ", "))
			continue
		}
		if order < lastOrder {
			add(k+".kind", "%s gate %q comes after a %s gate; gates run in the order %s", g.Kind, g.ID, lastKind, strings.Join(GateKinds, " → "))
		}
		if order > lastOrder {
			lastOrder, lastKind = order, g.Kind
		}
		if g.Kind == KindLaunch {
			if hasLaunch {
				add(k+".kind", "a plan has one launch gate")
			}
			hasLaunch = true
		}
		if order > indexOf(GateKinds, KindLaunch) && !hasLaunch {
			add(k+".kind", "%s gate %q needs a launch gate before it (it sends requests to the candidate)", g.Kind, g.ID)
		}
		es = append(es, p.validateGate(cfg, g, k)...)
	}
	return es
}

func (p *Plan) validateGate(cfg *config.Config, g *GateSpec, k string) config.Errors {
	var es config.Errors
	add := func(key, format string, a ...any) {
		es = append(es, &PlanError{File: p.Path, Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	if g.Timeout.Duration < 0 {
		add(k+".timeout", "must be positive")
	}
	if g.Timeout.Duration == 0 {
		g.Timeout.Duration = DefaultGateTimeout
	}
	if g.RequestTimeout.Duration == 0 {
		g.RequestTimeout.Duration = DefaultRequestTimeout
	}
	if g.MaxTokens == 0 && g.Kind != KindSemantic {
		g.MaxTokens = DefaultRequestMaxTokens
	}
	if g.MaxTokens < 0 {
		add(k+".max_tokens", "must be positive")
	}
	switch g.Kind {
	case KindPrereq:
		for i, c := range g.Commands {
			if len(c.Run) == 0 {
				add(fmt.Sprintf("%s.commands[%d].run", k, i), "missing; give the command as a list, e.g. [\"nvidia-smi\"]")
			}
			if c.VersionPattern != "" {
				if _, err := regexp.Compile(c.VersionPattern); err != nil {
					add(fmt.Sprintf("%s.commands[%d].version_pattern", k, i), "not a regular expression: %v", err)
				}
			}
			if c.Name == "" && len(c.Run) > 0 {
				g.Commands[i].Name = c.Run[0]
			}
		}
		if a := g.Accelerator; a != nil {
			if a.NamePattern != "" {
				if _, err := regexp.Compile(a.NamePattern); err != nil {
					add(k+".accelerator.name_pattern", "not a regular expression: %v", err)
				}
			}
			if a.Count == 0 {
				a.Count = 1
			}
		}
		for i := range g.Files {
			g.Files[i] = p.resolve(g.Files[i])
		}
		for i := range g.Disks {
			g.Disks[i].Path = p.resolve(g.Disks[i].Path)
		}
	case KindArtifact:
		if g.Manifest == "" && cfg.Backends[p.Candidate] == nil {
			break // the unknown candidate is reported once, under "candidate"
		}
		if g.Manifest == "" {
			if c := cfg.Backends[p.Candidate]; c != nil {
				g.Manifest = c.Artifact
				if g.Dir == "" {
					g.Dir = c.ArtifactDir
				}
			}
			if g.Manifest == "" {
				add(k+".manifest", "missing, and the candidate profile names no artifact; set manifest = \"path/to/manifest.json\" or the profile's artifact")
			}
		} else {
			g.Manifest = p.resolve(g.Manifest)
			if g.Dir == "" {
				g.Dir = filepath.Dir(g.Manifest)
			}
		}
		g.Dir = p.resolve(g.Dir)
	case KindLaunch:
		names := map[string]bool{"base": true}
		for i, v := range g.Variants {
			vk := fmt.Sprintf("%s.variants[%d]", k, i)
			if v.Name == "" {
				add(vk+".name", "missing; name the variant (it names the attempt in the evidence)")
			} else if names[v.Name] {
				add(vk+".name", "%q is used twice (\"base\" is the unmodified profile)", v.Name)
			}
			if strings.TrimSpace(v.Reason) == "" {
				add(vk+".reason", "missing; every fallback needs a written reason (e.g. \"documented fallback: V1 runner\")")
			}
			if v.BasedOn != "" && !names[v.BasedOn] {
				add(vk+".based_on", "%q is not an earlier variant", v.BasedOn)
			}
			if len(v.Env) == 0 && len(v.EnvUnset) == 0 && len(v.ArgsSet) == 0 && len(v.ArgsAppend) == 0 && len(v.ArgsRemove) == 0 {
				add(vk, "changes nothing; set env, env_unset, args_set, args_append or args_remove")
			}
			names[v.Name] = true
		}
		if g.MaxAttempts == 0 {
			g.MaxAttempts = len(g.Variants) + 1
		}
		if g.MaxAttempts < 1 || g.MaxAttempts > len(g.Variants)+1 {
			add(k+".max_attempts", "%d; at most one attempt per rung: 1 to %d (base + %d variants)", g.MaxAttempts, len(g.Variants)+1, len(g.Variants))
		}
	case KindReadyControl:
		if g.Prompt == "" {
			g.Prompt = config.DefaultProbePrompt
		}
		if g.Expect == "" {
			g.Expect = "READY"
		}
		if g.MaxTokens == DefaultRequestMaxTokens {
			g.MaxTokens = config.DefaultProbeMaxTokens
		}
	case KindStructuredControl, KindSequential:
		if g.Requests == 0 {
			if g.Kind == KindSequential {
				g.Requests = DefaultSequentialRequests
			} else {
				g.Requests = DefaultStructuredRequests
			}
		}
		if g.Requests < 1 || g.Requests > 10000 {
			add(k+".requests", "%d: use 1 to 10000", g.Requests)
		}
		if g.Schema != "" {
			g.Schema = p.resolve(g.Schema)
		}
	case KindSemantic:
		if g.Corpus == "" && !g.Skip {
			add(k+".corpus", "missing; name a frozen corpus directory (hiro corpus import ...)")
		}
		g.Corpus = p.resolve(g.Corpus)
		for name, v := range map[string]float64{"min_f1": g.MinF1, "min_grounding": g.MinGrounding, "min_schema_valid": g.MinSchemaValid, "tolerance": g.Tolerance} {
			if v < 0 || v > 1 {
				add(k+"."+name, "%v: use a fraction between 0 and 1", v)
			}
		}
		if g.Concurrency == 0 {
			g.Concurrency = 1
		}
		if g.MaxRepairs != nil && (*g.MaxRepairs < 0 || *g.MaxRepairs > 5) {
			add(k+".max_repairs", "%d: use 0 to 5", *g.MaxRepairs)
		}
	}
	return es
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if x == y {
			return i
		}
	}
	return -1
}

// Rung is one attempt of the launch ladder: a name, its reason, the
// derived profile and a description of what changed.
type Rung struct {
	Name    string
	Reason  string
	Profile *config.Profile
	Changes []string
}

// Ladder derives the attempt profiles from base: "base" first, then each
// variant, at most g.MaxAttempts rungs.
func (g *GateSpec) Ladder(base *config.Profile) []Rung {
	rungs := []Rung{{Name: "base", Reason: "the profile as configured", Profile: base.Clone()}}
	byName := map[string]Rung{"base": rungs[0]}
	for _, v := range g.Variants {
		from := rungs[0]
		if v.BasedOn != "" {
			from = byName[v.BasedOn]
		}
		p := from.Profile.Clone()
		var changes []string
		if v.BasedOn != "" && v.BasedOn != "base" {
			changes = append(changes, "based on "+v.BasedOn)
		}
		keys := sortedKeys(v.Env)
		for _, name := range keys {
			p.Env[name] = v.Env[name]
			changes = append(changes, "env "+name+"="+v.Env[name])
		}
		for _, name := range v.EnvUnset {
			delete(p.Env, name)
			changes = append(changes, "env unset "+name)
		}
		for _, flag := range v.ArgsRemove {
			p.Args = removeFlag(p.Args, flag)
			changes = append(changes, "args remove "+flag)
		}
		for _, flag := range sortedKeys(v.ArgsSet) {
			p.Args = setFlag(p.Args, flag, v.ArgsSet[flag])
			changes = append(changes, "args set "+flag+" "+v.ArgsSet[flag])
		}
		if len(v.ArgsAppend) > 0 {
			p.Args = append(p.Args, v.ArgsAppend...)
			changes = append(changes, "args append "+strings.Join(v.ArgsAppend, " "))
		}
		r := Rung{Name: v.Name, Reason: v.Reason, Profile: p, Changes: changes}
		rungs = append(rungs, r)
		byName[v.Name] = r
	}
	if g.MaxAttempts > 0 && len(rungs) > g.MaxAttempts {
		rungs = rungs[:g.MaxAttempts]
	}
	return rungs
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// setFlag sets the value after flag, or appends "flag value"; a flag
// written "--flag=value" is replaced in that form.
func setFlag(args []string, flag, value string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == flag && i+1 < len(out) {
			out[i+1] = value
			return out
		}
		if strings.HasPrefix(a, flag+"=") {
			out[i] = flag + "=" + value
			return out
		}
	}
	return append(out, flag, value)
}

// removeFlag removes flag (and its value, when the next argument is not a
// flag) or "--flag=value".
func removeFlag(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == flag {
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				i++
			}
			continue
		}
		if strings.HasPrefix(a, flag+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}
