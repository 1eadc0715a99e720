package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/BurntSushi/toml"

	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/redact"
)

// EngineKinds returns the engine kinds a profile may name, sorted: the kinds
// registered in package engine (one engine_<kind>.go each), so a new kind is
// accepted here without editing this package.
func EngineKinds() []string { return engine.Kinds() }

// Defaults for profile bounds. Chosen for a small model on one GPU box:
// a 15 GB checkpoint took 94 s to load in the seed's campaign, so the hard
// ready timeout leaves room for that plus kernel setup and warm-up.
const (
	DefaultHost            = "127.0.0.1"
	DefaultReadyTimeout    = 10 * time.Minute
	DefaultStallTimeout    = 2 * time.Minute
	DefaultStopGrace       = 10 * time.Second
	DefaultProbePrompt     = "Reply with exactly the word READY and nothing else."
	DefaultProbeMaxTokens  = 8
	DefaultProbeTimeout    = 30 * time.Second
	DefaultRestoreAttempts = 2
	DefaultStateDir        = ".hiro"
	// DefaultMaxEvidenceAge is how old a campaign's evidence may be for
	// 'hiro activate' to act on it: a week.
	DefaultMaxEvidenceAge = 7 * 24 * time.Hour
)

// Defaults of a profile's [overload] policy: how long hiro keeps retrying a
// request the server answered with 429 (too many requests) or 503 (busy).
// Eight retries doubling from half a second, at most 30 s apart, reach
// about two minutes of waiting, inside the five-minute bound.
const (
	DefaultOverloadMaxRetries      = 8
	DefaultOverloadInitialInterval = 500 * time.Millisecond
	DefaultOverloadMaxInterval     = 30 * time.Second
	DefaultOverloadMaxElapsed      = 5 * time.Minute
	DefaultOverloadMultiplier      = 2.0
)

// Duration is a time.Duration written in TOML as a string such as "90s",
// "2m" or "1h30m" (time.ParseDuration syntax).
type Duration struct{ time.Duration }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: write it like \"90s\", \"2m\" or \"1h30m\"", string(b))
	}
	d.Duration = v
	return nil
}

// MarshalText writes the duration as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.Duration.String()), nil }

// ReadyProbe is the bounded real completion that readiness requires.
type ReadyProbe struct {
	// Prompt is the user message; default DefaultProbePrompt.
	Prompt string `toml:"prompt" json:"prompt"`
	// Expect, when set, is the exact reply required after trimming
	// whitespace (e.g. "READY"). Empty: any non-error completion passes.
	Expect string `toml:"expect" json:"expect,omitempty"`
	// MaxTokens bounds the completion; default DefaultProbeMaxTokens.
	MaxTokens int `toml:"max_tokens" json:"max_tokens"`
	// Timeout bounds the request; default DefaultProbeTimeout.
	Timeout Duration `toml:"timeout" json:"timeout"`
}

// Overload is the policy for answers that say the server is busy, not
// broken: HTTP 429 and 503 (with or without Retry-After). Such a request is
// retried with exponential backoff (github.com/cenkalti/backoff/v5, with
// jitter) until it succeeds or the bound is reached; only then is it a
// failure. A Retry-After header replaces the computed wait for that retry.
type Overload struct {
	// MaxRetries bounds the retries of one request; 0 disables retrying.
	// Default DefaultOverloadMaxRetries when the key is absent.
	MaxRetries int `toml:"max_retries" json:"max_retries"`
	// InitialInterval is the first wait; MaxInterval caps each wait;
	// Multiplier grows the wait after each retry.
	InitialInterval Duration `toml:"initial_interval" json:"initial_interval"`
	MaxInterval     Duration `toml:"max_interval" json:"max_interval"`
	Multiplier      float64  `toml:"multiplier" json:"multiplier"`
	// MaxElapsed bounds the time from the first request to the start of
	// the last retry: a wait that would end past it is not taken.
	MaxElapsed Duration `toml:"max_elapsed" json:"max_elapsed"`
}

// Profile is how to run (or reach) one inference server (docs/design.md
// "Backend profile").
type Profile struct {
	// Name is the profile's key in [backends.NAME]; filled by Load.
	Name string `toml:"-" json:"name"`
	// Engine is the engine kind: one of EngineKinds().
	Engine string `toml:"engine" json:"engine"`
	// Unmanaged profiles are only probed at BaseURL; hiro never starts or
	// stops them. They have no Command.
	Unmanaged bool `toml:"unmanaged" json:"unmanaged,omitempty"`
	// Command is the executable; a bare name is looked up in PATH at start,
	// a relative path is resolved against the configuration's directory.
	Command string `toml:"command" json:"command,omitempty"`
	// Args are the command's arguments, passed as they are.
	Args []string `toml:"args" json:"args,omitempty"`
	// Env is the environment the server gets, in addition to InheritEnv.
	// Nothing else from hiro's environment is passed.
	Env map[string]string `toml:"env" json:"env,omitempty"`
	// InheritEnv names variables copied from hiro's own environment (e.g.
	// "PATH", "HOME"), when set there.
	InheritEnv []string `toml:"inherit_env" json:"inherit_env,omitempty"`
	// Workdir is the server's working directory (relative to the
	// configuration's directory); default that directory.
	Workdir string `toml:"workdir" json:"workdir,omitempty"`
	// Host and Port are where the server listens; Host defaults to
	// 127.0.0.1. Port is required for managed profiles unless BaseURL is set.
	Host string `toml:"host" json:"host,omitempty"`
	Port int    `toml:"port" json:"port,omitempty"`
	// BaseURL is the server's root URL (no /v1); default http://Host:Port.
	BaseURL string `toml:"base_url" json:"base_url"`
	// Model is the model id the server must report in /v1/models and is
	// asked for in completions.
	Model string `toml:"model" json:"model"`
	// Artifact is the path of the artifact manifest (package artifact) of
	// the model this profile serves; optional.
	Artifact string `toml:"artifact" json:"artifact,omitempty"`
	// ArtifactDir is the directory the manifest describes; default the one
	// hiro artifact verify uses: the manifest's own folder when it holds the
	// manifest's files, else the directory the manifest records.
	ArtifactDir string `toml:"artifact_dir" json:"artifact_dir,omitempty"`
	// ExclusiveAccelerator: the server needs the accelerator alone, so
	// production must be stopped while it runs.
	ExclusiveAccelerator bool `toml:"exclusive_accelerator" json:"exclusive_accelerator,omitempty"`
	// RequiresAccelerator: the server must serve from an accelerator; when
	// its log shows the model served by the CPU alone (a hidden GPU, a
	// container without GPUs, a driver the engine could not use), the
	// start fails with accelerator_unavailable instead of being ready.
	RequiresAccelerator bool `toml:"requires_accelerator" json:"requires_accelerator,omitempty"`
	// ReadyTimeout is the hard bound from start to ready; default
	// DefaultReadyTimeout, or stall_timeout when that is set and longer.
	ReadyTimeout Duration `toml:"ready_timeout" json:"ready_timeout"`
	// StallTimeout ends a start when the server neither logs nor gets
	// closer to ready for this long; it resets on every log line. Default
	// DefaultStallTimeout, or ready_timeout when that is set and shorter.
	StallTimeout Duration `toml:"stall_timeout" json:"stall_timeout"`
	// StopGrace is how long stop waits after SIGTERM before SIGKILL.
	StopGrace Duration `toml:"stop_grace" json:"stop_grace"`
	// ReadyProbe is the bounded real completion of readiness.
	ReadyProbe ReadyProbe `toml:"ready_probe" json:"ready_probe"`
	// ConfigFiles are files that define this server's configuration beyond
	// the profile (a launcher script, a Modelfile); production's are hashed
	// before and after a campaign.
	ConfigFiles []string `toml:"config_files" json:"config_files,omitempty"`
	// APIKeyEnv names the environment variable (of hiro's environment)
	// holding the API key; APIKeyFile is a file holding it (relative to
	// the configuration's directory; surrounding white space is trimmed).
	// At most one is set; the key itself is never written in the
	// configuration. hiro sends it as "Authorization: Bearer KEY" on every
	// request to BaseURL's host (health, model list, completions). A
	// managed server gets the same key through its own flag or variable
	// (e.g. inherit_env = ["VLLM_API_KEY"] or args "--api-key-file").
	APIKeyEnv  string `toml:"api_key_env" json:"api_key_env,omitempty"`
	APIKeyFile string `toml:"api_key_file" json:"api_key_file,omitempty"`
	// CAFile is a PEM file of the certificate authorities trusted for an
	// https BaseURL, in place of the system roots (relative to the
	// configuration's directory). Empty: the system roots.
	CAFile string `toml:"ca_file" json:"ca_file,omitempty"`
	// AllowPlainHTTP silences the warning hiro prints when the profile's
	// API key would go over plain http to a host that is not this machine
	// (package llm, EndpointWarnings): for a network the user trusts (a VPN,
	// a service mesh that encrypts between pods). Loopback needs no such
	// setting; https needs none.
	AllowPlainHTTP bool `toml:"allow_plain_http" json:"allow_plain_http,omitempty"`
	// ShadowRemote allows `hiro serve` to mirror production's live
	// requests (users' prompts) to this profile when its BaseURL is not
	// this machine (docs/shadow.md): off by default, so shadow traffic
	// leaves the machine only for a profile that says so. Loopback
	// candidates need no such setting.
	ShadowRemote bool `toml:"shadow_remote" json:"shadow_remote,omitempty"`
	// Overload is the retry policy for 429 and 503 answers.
	Overload Overload `toml:"overload" json:"overload"`
}

// APIKey returns the profile's API key read from APIKeyEnv (through
// lookup; nil means os.LookupEnv) or APIKeyFile, and "" when the profile
// names neither. Errors name the key path and say what to do; they never
// contain the key.
func (p *Profile) APIKey(lookup func(string) (string, bool)) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	switch {
	case p.APIKeyEnv != "":
		v, ok := lookup(p.APIKeyEnv)
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return "", &Error{Key: "backends." + p.Name + ".api_key_env", Msg: fmt.Sprintf("environment variable %s is not set or empty; export it with the server's API key", p.APIKeyEnv)}
		}
		return v, nil
	case p.APIKeyFile != "":
		b, err := os.ReadFile(p.APIKeyFile)
		if err != nil {
			return "", &Error{Key: "backends." + p.Name + ".api_key_file", Msg: fmt.Sprintf("cannot read the API key: %v; create the file or fix the path", err)}
		}
		v := strings.TrimSpace(string(b))
		if v == "" || strings.ContainsAny(v, "\r\n") {
			return "", &Error{Key: "backends." + p.Name + ".api_key_file", Msg: fmt.Sprintf("%s must hold the key alone on one line", p.APIKeyFile)}
		}
		return v, nil
	}
	return "", nil
}

// Production names the profile that serves extraction now.
type Production struct {
	// Backend is the name of the production profile.
	Backend string `toml:"backend" json:"backend"`
	// RestoreAttempts bounds how many times restoring production is tried;
	// default DefaultRestoreAttempts.
	RestoreAttempts int `toml:"restore_attempts" json:"restore_attempts"`
	// MaxEvidenceAge is how long after a campaign finished its evidence
	// may still activate the candidate; default DefaultMaxEvidenceAge.
	MaxEvidenceAge Duration `toml:"max_evidence_age" json:"max_evidence_age"`
}

// Config is a whole hiro configuration file.
type Config struct {
	// Path is the absolute path of the file it was loaded from; Dir its directory.
	Path string `toml:"-" json:"-"`
	Dir  string `toml:"-" json:"-"`
	// StateDir holds records of running backends, logs, leases; relative
	// to Dir; default DefaultStateDir.
	StateDir string `toml:"state_dir" json:"state_dir"`
	// Production is the production section; optional.
	Production Production `toml:"production" json:"production"`
	// Backends are the profiles by name.
	Backends map[string]*Profile `toml:"backends" json:"backends"`
	// DiskPaths are paths whose free space doctor reports, relative to Dir.
	DiskPaths []string `toml:"disk_paths" json:"disk_paths,omitempty"`
	// Serve is the router's section (`hiro serve`); optional, see Serve.
	Serve Serve `toml:"serve" json:"serve"`
	// Activation is the activation policy; optional, see Activation.
	Activation Activation `toml:"activation" json:"activation"`
}

// Error is a configuration error: Key is the dotted path of the offending
// key ("backends.prod.port"), Msg says what is wrong and what to do.
type Error struct {
	File string
	Key  string
	Msg  string
	// Err is the cause when one is worth testing with errors.Is
	// (ErrNotFound); it is not part of the message.
	Err error
	// meant is the key an unknown key's "did you mean" names: its
	// validation errors (a default the typo left in place) are not
	// reported beside it.
	meant string
}

// ErrNotFound is the cause (errors.Is) of Load's error when the
// configuration file does not exist.
var ErrNotFound = errors.New("configuration file not found")

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	loc := e.File
	if e.Key != "" {
		if loc != "" {
			loc += ": "
		}
		loc += e.Key
	}
	if loc == "" {
		return e.Msg
	}
	return loc + ": " + e.Msg
}

// Errors is a list of configuration errors, all found in one pass.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Load reads, decodes strictly, fills defaults and validates the
// configuration at path. Errors are *Error or Errors naming the key path.
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	if fi, err := os.Stat(abs); err == nil && !fi.Mode().IsRegular() {
		// A named pipe or a terminal would block the read (hiro reads
		// its configuration more than once, and a read is not
		// interruptible): refuse before reading.
		return nil, &Error{File: path, Msg: fmt.Sprintf("is a %s, not a regular file: hiro reads its configuration more than once; "+
			"write it to a file and pass that with --config", atomicfile.FileKind(fi.Mode()))}
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &Error{File: path, Msg: "configuration file not found; pass --config FILE or set HIRO_CONFIG (examples/hiro.toml is a starting point)", Err: ErrNotFound}
		}
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return Parse(data, abs)
}

// Parse is Load for bytes already read; path is used to resolve relative
// paths and in messages.
func Parse(data []byte, path string) (*Config, error) {
	return parse(data, path, nil)
}

// parse is Parse with the profiles named in skip left out before the
// checks: their unknown keys and invalid values are not reported.
func parse(data []byte, path string, skip map[string]bool) (*Config, error) {
	if err := checkUTF8(path, data); err != nil {
		return nil, err
	}
	var c Config
	md, early, err := decodeAll(path, data, &c)
	if err != nil {
		return nil, err
	}
	if err := checkMapTables(path, data, md); err != nil {
		return nil, err
	}
	for name := range skip {
		delete(c.Backends, name)
	}
	early = othersThan(early, skip)
	if und := md.Undecoded(); len(und) > 0 {
		early = append(early, othersThan(unknownKeyErrors(path, data, md, und), skip)...)
	}
	c.Path = path
	c.Dir = filepath.Dir(path)
	for name, p := range c.Backends {
		if p != nil && !md.IsDefined("backends", name, "overload", "max_retries") {
			p.Overload.MaxRetries = DefaultOverloadMaxRetries
		}
	}
	c.fillDefaults()
	if !md.IsDefined("activation", "require") {
		c.Activation.Require = append([]string{}, DefaultActivationRequire...)
	}
	if es := append(early, laterErrors(c.validate(), early)...); len(es) > 0 {
		return nil, es
	}
	return &c, nil
}

// maxValueErrors bounds how many value errors one parse collects.
const maxValueErrors = 20

// decodeAll decodes data into c and reports every bad value at once (an
// invalid duration, a string where a number goes), not one a run: each
// value error's line is blanked and the rest decoded again. A syntax
// error stops it (err), as it makes the rest unreadable; so does a value
// error whose line is not known.
func decodeAll(path string, data []byte, c *Config) (toml.MetaData, Errors, error) {
	var syntax map[string]any
	if _, err := toml.Decode(string(data), &syntax); err != nil {
		return toml.MetaData{}, nil, decodeError(path, data, err)
	}
	var es Errors
	work := data
	for {
		*c = Config{}
		md, err := toml.NewDecoder(bytes.NewReader(work)).Decode(c)
		if err == nil {
			return md, es, nil
		}
		e := decodeError(path, work, err)
		line := valueErrorLine(err)
		next := blankLine(work, line)
		var again map[string]any
		if line <= 0 || len(es) >= maxValueErrors || next == nil || toml.Unmarshal(next, &again) != nil {
			// The blanked line was part of a multi-line value: what is
			// left would be a syntax error of hiro's making.
			if ce, ok := e.(*Error); ok {
				return md, nil, append(es, ce)
			}
			return md, nil, e
		}
		if ce, ok := e.(*Error); ok {
			es = append(es, ce)
		}
		work = next
	}
}

// valueErrorLine is the 1-based line of a decoder's value error, or 0.
func valueErrorLine(err error) int {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return pe.Position.Line
	}
	if m := reTOMLErrLine.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

var reTOMLErrLine = regexp.MustCompile(`^toml: line (\d+)`)

// blankLine returns data with its 1-based line emptied (the line count
// kept, so later messages keep their line numbers), or nil when there is
// no such line or it is already blank.
func blankLine(data []byte, line int) []byte {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) || len(bytes.TrimSpace(lines[line-1])) == 0 {
		return nil
	}
	out := make([][]byte, len(lines))
	copy(out, lines)
	out[line-1] = nil
	return bytes.Join(out, []byte("\n"))
}

// laterErrors drops the validation errors of keys an earlier error
// already named: a blanked value is not missing as well, and a misspelt
// key's intended one is not reported for its default.
func laterErrors(es, early Errors) Errors {
	named := map[string]bool{}
	for _, e := range early {
		named[e.Key] = true
		if e.meant != "" {
			named[e.meant] = true
		}
	}
	var out Errors
	for _, e := range es {
		if !named[e.Key] {
			out = append(out, e)
		}
	}
	return out
}

// literalKeyNames are keys a user might write a literal API key under.
var literalKeyNames = map[string]bool{"api_key": true, "apikey": true, "key": true, "token": true, "bearer": true, "bearer_token": true, "api_token": true}

var reTOMLKey = regexp.MustCompile(`last key "([^"]*)"`)

// checkUTF8 refuses a file that is not UTF-8 (TOML files must be): a
// UTF-16 file (byte-order mark FF FE or FE FF) or stray bytes would
// otherwise be read as something else, or as an empty table.
func checkUTF8(path string, data []byte) error {
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return &Error{File: path, Msg: "the file starts with a UTF-16 byte-order mark: TOML files must be UTF-8; save it as UTF-8"}
	}
	if utf8.Valid(data) {
		return nil
	}
	bad := 0
	for bad < len(data) {
		r, n := utf8.DecodeRune(data[bad:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		bad += n
	}
	return &Error{File: path, Msg: fmt.Sprintf("line %d: byte %#02x at offset %d is not UTF-8: TOML files must be UTF-8; save it as UTF-8", lineAt(data, bad), data[bad], bad)}
}

// lineAt is the 1-based line of the byte at offset in data.
func lineAt(data []byte, offset int) int {
	return 1 + bytes.Count(data[:min(offset, len(data))], []byte{'\n'})
}

var reTOMLLine = regexp.MustCompile(`^line (\d+)`)

// decodeError turns a TOML error into an *Error naming the key and line.
func decodeError(path string, data []byte, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		key := ""
		if m := reTOMLKey.FindStringSubmatch(pe.Error()); m != nil {
			key = m[1]
		}
		if pe.LastKey != "" {
			key = pe.LastKey
		}
		line := pe.Position.Line
		// An unexpected end of line ("[backends.prod" without "]") is the
		// line it ends, not the next one the parser had moved to.
		if st := pe.Position.Start; st >= 0 && st < len(data) && data[st] == '\n' {
			line = lineAt(data, st)
		}
		// An error in a table header ("[[backends.x" without "]]") is not
		// in the table before it, which LastKey names: the message names
		// the line, and the header on it is what to fix.
		if headerAt(data, line) {
			key = ""
		}
		msg := fmt.Sprintf("line %d: %s", line, pe.Message)
		return &Error{File: path, Key: key, Msg: msg}
	}
	msg := strings.TrimPrefix(err.Error(), "toml: ")
	if m := reTOMLKey.FindStringSubmatch(msg); m != nil {
		msg = strings.Replace(msg, " (last key \""+m[1]+"\")", "", 1)
		return &Error{File: path, Key: m[1], Msg: msg + "; " + typeHint(data, msg, m[1])}
	}
	return &Error{File: path, Msg: msg}
}

// headerAt reports whether the 1-based line of data is a table header
// ("[a.b]", "[[a.b]]", possibly unclosed).
func headerAt(data []byte, line int) bool {
	lines := strings.Split(string(data), "\n")
	return line >= 1 && line <= len(lines) && strings.HasPrefix(strings.TrimSpace(lines[line-1]), "[")
}

// typeHint says how to write a value of the wrong type: an array where one
// is expected (args = "serve" → args = ["serve"]), a table, or the general
// rule.
func typeHint(data []byte, msg, key string) string {
	name := key[strings.LastIndexByte(key, '.')+1:]
	switch {
	case strings.HasSuffix(msg, "destination has type slice"):
		ex := name + ` = ["a", "b"]`
		if m := reTOMLLine.FindStringSubmatch(msg); m != nil {
			n, _ := strconv.Atoi(m[1])
			lines := strings.Split(string(data), "\n")
			if n >= 1 && n <= len(lines) {
				if _, v, ok := strings.Cut(lines[n-1], "="); ok && strings.Contains(msg, "TOML value has type string") {
					ex = name + " = [" + strings.TrimSpace(v) + "]"
				}
			}
		}
		return "an array is expected: write it in brackets, e.g. " + ex
	case strings.Contains(msg, "expected table but found"):
		return tableHint(key)
	}
	if h := MismatchHint(msg); h != "" {
		return h
	}
	return "fix the value's type (strings in quotes, numbers and booleans bare)"
}

// reMismatch reads the TOML library's type mismatch ("incompatible
// types: TOML value has type string; destination has type float").
var reMismatch = regexp.MustCompile(`TOML value has type (\w+); destination has type (\w+)`)

// MismatchHint says, for the TOML library's type mismatch in msg, what
// was expected and how to write it ("a number is expected, not a
// string: write it without quotes, e.g. 0.05"); "" when msg is not one
// or the destination is an array or table (typeHint and tableHint say
// those).
func MismatchHint(msg string) string {
	m := reMismatch.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}
	found := map[string]string{"string": "a string", "int64": "an integer", "float64": "a float", "bool": "a boolean",
		"[]interface {}": "an array", "map[string]interface {}": "a table"}[m[1]]
	if found == "" {
		found = "a " + m[1]
	}
	switch dst := m[2]; {
	case strings.HasPrefix(dst, "float"):
		return "a number is expected, not " + found + ": write it bare, without quotes, e.g. 0.05"
	case strings.HasPrefix(dst, "int"), strings.HasPrefix(dst, "uint"):
		return "a whole number is expected, not " + found + ": write it bare, without quotes, e.g. 20"
	case dst == "bool":
		return "true or false is expected, not " + found + ": write it bare, without quotes"
	case dst == "string":
		return "a string is expected, not " + found + `: write it in double quotes`
	}
	return ""
}

// tableHint says how to write the table at the dotted key where another
// value was found: "[a.b]" with its keys below, or b = { key = "value" }.
func tableHint(key string) string {
	name := key[strings.LastIndexByte(key, '.')+1:]
	return "a table is expected: write it as [" + key + "] with its keys below, or as " + name + ` = { key = "value" }`
}

// checkMapTables refuses a non-table value under a key decoded into a Go
// map (backends, backends.NAME.env): the TOML library leaves the map empty
// without an error, so backends = "x" read as a file with no profiles.
// Keys decoded into structs (production, serve, ready_probe...) get the
// library's type mismatch, made an *Error by decodeError.
func checkMapTables(path string, data []byte, md toml.MetaData) error {
	for _, k := range md.Keys() {
		if !(len(k) == 1 && k[0] == "backends") && !(len(k) == 3 && k[0] == "backends" && k[2] == "env") {
			continue
		}
		typ := md.Type(k...)
		if typ == "Hash" {
			continue
		}
		found := map[string]string{"Integer": "an integer", "Float": "a float", "Datetime": "a date-time", "String": "a string", "Bool": "a boolean", "Array": "an array", "ArrayHash": "an array of tables"}[typ]
		if found == "" {
			found = typ
		}
		msg := "expected a table but found " + found
		if n, ok := keyLines(data)[k.String()]; ok {
			msg = fmt.Sprintf("line %d: %s", n, msg)
		}
		hint := tableHint(k.String())
		if len(k) == 1 {
			hint = "a table is expected: write each backend profile as a [backends.NAME] table with engine, command, port and model below it"
		}
		return &Error{File: path, Key: k.String(), Msg: msg + "; " + hint}
	}
	return nil
}

func (c *Config) fillDefaults() {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir
	}
	c.StateDir = c.resolve(c.StateDir)
	for i, d := range c.DiskPaths {
		c.DiskPaths[i] = c.resolve(d)
	}
	if c.Production.RestoreAttempts == 0 {
		c.Production.RestoreAttempts = DefaultRestoreAttempts
	}
	c.fillServeDefaults()
	if c.Production.MaxEvidenceAge.Duration == 0 {
		c.Production.MaxEvidenceAge.Duration = DefaultMaxEvidenceAge
	}
	for name, p := range c.Backends {
		if p == nil {
			continue
		}
		p.Name = name
		if p.Host == "" {
			p.Host = DefaultHost
		}
		if p.BaseURL == "" && p.Port != 0 {
			p.BaseURL = "http://" + net.JoinHostPort(p.Host, strconv.Itoa(p.Port))
		}
		p.BaseURL = strings.TrimRight(p.BaseURL, "/")
		// A default fits the other timeout when the profile sets that one:
		// ready_timeout = "30s" alone gets a 30 s stall timeout, a long
		// stall_timeout alone a ready timeout as long. Two explicit
		// values that conflict are still refused (validate).
		switch {
		case p.ReadyTimeout.Duration == 0 && p.StallTimeout.Duration == 0:
			p.ReadyTimeout.Duration, p.StallTimeout.Duration = DefaultReadyTimeout, DefaultStallTimeout
		case p.ReadyTimeout.Duration == 0:
			p.ReadyTimeout.Duration = max(DefaultReadyTimeout, p.StallTimeout.Duration)
		case p.StallTimeout.Duration == 0:
			p.StallTimeout.Duration = min(DefaultStallTimeout, p.ReadyTimeout.Duration)
		}
		if p.StopGrace.Duration == 0 {
			p.StopGrace.Duration = DefaultStopGrace
		}
		if p.ReadyProbe.Prompt == "" {
			p.ReadyProbe.Prompt = DefaultProbePrompt
		}
		if p.ReadyProbe.MaxTokens == 0 {
			p.ReadyProbe.MaxTokens = DefaultProbeMaxTokens
		}
		if p.ReadyProbe.Timeout.Duration == 0 {
			p.ReadyProbe.Timeout.Duration = DefaultProbeTimeout
		}
		if p.Command != "" && (strings.HasPrefix(p.Command, "./") || strings.HasPrefix(p.Command, "../")) {
			p.Command = c.resolve(p.Command)
		}
		if p.Workdir == "" {
			p.Workdir = c.Dir
		} else {
			p.Workdir = c.resolve(p.Workdir)
		}
		if p.Artifact != "" {
			p.Artifact = c.resolve(p.Artifact)
		}
		if p.ArtifactDir != "" {
			p.ArtifactDir = c.resolve(p.ArtifactDir)
		}
		for i, f := range p.ConfigFiles {
			p.ConfigFiles[i] = c.resolve(f)
		}
		p.APIKeyFile = c.resolve(p.APIKeyFile)
		p.CAFile = c.resolve(p.CAFile)
		p.Overload.fillDefaults()
	}
}

// fillDefaults sets the intervals, multiplier and bound left zero.
// MaxRetries is set by Parse (0 written in the file means no retries).
func (o *Overload) fillDefaults() {
	if o.InitialInterval.Duration == 0 {
		o.InitialInterval.Duration = DefaultOverloadInitialInterval
	}
	if o.MaxInterval.Duration == 0 {
		o.MaxInterval.Duration = DefaultOverloadMaxInterval
	}
	if o.Multiplier == 0 {
		o.Multiplier = DefaultOverloadMultiplier
	}
	if o.MaxElapsed.Duration == 0 {
		o.MaxElapsed.Duration = DefaultOverloadMaxElapsed
	}
}

// DefaultOverload returns the default overload policy (what a profile
// without an [overload] table gets).
func DefaultOverload() Overload {
	o := Overload{MaxRetries: DefaultOverloadMaxRetries}
	o.fillDefaults()
	return o
}

// resolve makes p absolute against the configuration's directory.
func (c *Config) resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.Dir, p)
}

var reName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
var reEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (c *Config) validate() Errors {
	var es Errors
	add := func(key, format string, a ...any) {
		es = append(es, &Error{File: c.Path, Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	if len(c.Backends) == 0 {
		add("backends", "no backend profiles; add at least one [backends.NAME] table with engine, command, port and model")
	}
	// One rule per value type (durations, floats) over every key; each
	// profile gets the same walk in its own validate.
	CheckValues(c, "", add, "backends")
	for _, name := range c.BackendNames() {
		p := c.Backends[name]
		k := "backends." + name
		if p == nil {
			add(k, "empty profile")
			continue
		}
		es = append(es, p.validate(c.Path, k)...)
		if !reName.MatchString(name) {
			add(k, "invalid backend name %q: use letters, digits, '.', '_' and '-' only", name)
		}
	}
	if c.Production.Backend != "" {
		if _, ok := c.Backends[c.Production.Backend]; !ok {
			add("production.backend", "names %q, which is not a backend profile%s; known: %s", c.Production.Backend, DidYouMean(c.Production.Backend, c.BackendNames()), strings.Join(c.BackendNames(), ", "))
		}
	}
	if c.Production.RestoreAttempts < 0 || c.Production.RestoreAttempts > 10 {
		add("production.restore_attempts", "must be between 1 and 10, got %d", c.Production.RestoreAttempts)
	}
	es = append(es, c.ValidateServe()...)
	es = append(es, c.validateActivation()...)
	// Two managed profiles on one port conflict only when run together;
	// a campaign stops production first, so this is not an error here.
	return es
}

// listenPort is the port hiro waits for a managed server on: port, else
// base_url's; 0 when neither says.
func (p *Profile) listenPort() int {
	if p.Port != 0 {
		return p.Port
	}
	if u, err := url.Parse(p.BaseURL); err == nil {
		if n, err := strconv.Atoi(u.Port()); err == nil {
			return n
		}
	}
	return 0
}

// Validate checks one profile; key is its dotted path ("backends.NAME").
// Plans that define derived profiles call it too.
func (p *Profile) Validate(file, key string) error {
	if es := p.validate(file, key); len(es) > 0 {
		return es
	}
	return nil
}

func (p *Profile) validate(file, k string) Errors {
	var es Errors
	add := func(key, format string, a ...any) {
		es = append(es, &Error{File: file, Key: key, Msg: fmt.Sprintf(format, a...)})
	}
	CheckValues(p, k, add)
	if p.Engine == "" {
		add(k+".engine", "missing; set one of %s", strings.Join(EngineKinds(), ", "))
	} else if !contains(EngineKinds(), p.Engine) {
		add(k+".engine", "unknown engine kind %q%s; use one of %s", p.Engine, DidYouMean(p.Engine, EngineKinds()), strings.Join(EngineKinds(), ", "))
	}
	if p.Unmanaged {
		if p.Command != "" {
			add(k+".command", "an unmanaged profile has no command; remove command or set unmanaged = false")
		}
		if p.BaseURL == "" {
			add(k+".base_url", "missing; an unmanaged profile is reached only through base_url (e.g. \"http://127.0.0.1:8080\")")
		}
	} else {
		if strings.TrimSpace(p.Command) == "" {
			add(k+".command", "missing; set the executable that starts the server (or unmanaged = true with base_url for a server hiro only probes)")
		}
		if p.Port == 0 && p.BaseURL == "" {
			add(k+".port", "missing; set the port the server listens on (1-65535)")
		}
		if setting, msg := engine.ListenConflict(p.Engine, k, p.listenPort(), p.Command, p.Args, p.Env); setting != "" {
			add(setting, "%s", msg)
		}
		if setting, msg := engine.MissingEnv(p.Engine, k, p.Command, p.Env, p.InheritEnv); setting != "" {
			add(setting, "%s", msg)
		}
	}
	if p.Port < 0 || p.Port > 65535 {
		add(k+".port", "%d is out of range; use 1-65535", p.Port)
	}
	if p.BaseURL != "" {
		u, err := url.Parse(p.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add(k+".base_url", "%q is not an http(s) URL; write it like \"http://127.0.0.1:8080\"", p.BaseURL)
		} else if u.User != nil {
			// Not quoted: the value holds a credential.
			add(k+".base_url", "holds credentials (user:password@ before the host), which would be printed and stored wherever the URL is; remove them and give the key with api_key_env or api_key_file")
		} else if strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1") {
			add(k+".base_url", "%q ends in /v1; give the server's root, hiro adds /v1 itself", p.BaseURL)
		}
	}
	if strings.TrimSpace(p.Model) == "" {
		add(k+".model", "missing; set the model id the server must report in /v1/models")
	}
	for name := range p.Env {
		if !reEnvName.MatchString(name) {
			add(k+".env."+name, "invalid environment variable name")
		}
	}
	for i, name := range p.InheritEnv {
		if !reEnvName.MatchString(name) {
			add(fmt.Sprintf("%s.inherit_env[%d]", k, i), "invalid environment variable name %q", name)
		}
	}
	if p.StallTimeout.Duration > p.ReadyTimeout.Duration {
		add(k+".stall_timeout", "%s is longer than ready_timeout %s; the stall timeout must fit under the hard ready timeout: set stall_timeout below it or raise ready_timeout", p.StallTimeout.Duration, p.ReadyTimeout.Duration)
	}
	if p.ReadyProbe.MaxTokens < 0 {
		add(k+".ready_probe.max_tokens", "must be positive")
	}
	if p.APIKeyEnv != "" && p.APIKeyFile != "" {
		add(k+".api_key_file", "both api_key_env and api_key_file are set; keep one")
	}
	if p.APIKeyEnv != "" && !reEnvName.MatchString(p.APIKeyEnv) {
		add(k+".api_key_env", "%q is not an environment variable name; name the variable holding the key (e.g. \"VLLM_API_KEY\"), never the key itself", p.APIKeyEnv)
	}
	if p.CAFile != "" && p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "https://") {
		add(k+".ca_file", "is set but base_url %q is not https; use an https base_url or remove ca_file", p.BaseURL)
	}
	o := p.Overload
	if o.MaxRetries < 0 || o.MaxRetries > 100 {
		add(k+".overload.max_retries", "%d: use 0 (no retries) to 100", o.MaxRetries)
	}
	if o.MaxInterval.Duration > 0 && o.InitialInterval.Duration > o.MaxInterval.Duration {
		add(k+".overload.initial_interval", "%s is longer than max_interval %s", o.InitialInterval.Duration, o.MaxInterval.Duration)
	}
	if o.Multiplier != 0 && o.Multiplier < 1 {
		add(k+".overload.multiplier", "%v: must be at least 1", o.Multiplier)
	}
	return es
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// BackendNames returns the profile names, sorted.
func (c *Config) BackendNames() []string {
	names := make([]string, 0, len(c.Backends))
	for n := range c.Backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Backend returns the named profile, or an error listing the known names.
func (c *Config) Backend(name string) (*Profile, error) {
	p, ok := c.Backends[name]
	if !ok || p == nil {
		return nil, &Error{File: c.Path, Key: "backends." + name, Msg: fmt.Sprintf("no such backend profile%s; known: %s", DidYouMean(name, c.BackendNames()), strings.Join(c.BackendNames(), ", "))}
	}
	return p, nil
}

// ProductionProfile returns the production profile, or nil when the
// configuration names none.
func (c *Config) ProductionProfile() *Profile {
	if c.Production.Backend == "" {
		return nil
	}
	return c.Backends[c.Production.Backend]
}

// Clone returns a deep copy of the profile, for derived attempt profiles.
func (p *Profile) Clone() *Profile {
	q := *p
	q.Args = append([]string(nil), p.Args...)
	q.InheritEnv = append([]string(nil), p.InheritEnv...)
	q.ConfigFiles = append([]string(nil), p.ConfigFiles...)
	q.Env = make(map[string]string, len(p.Env))
	for k, v := range p.Env {
		q.Env[k] = v
	}
	return &q
}

// Hash returns the SHA-256 (hex) of the profile's canonical JSON form:
// everything that defines how the server is run. A running backend's
// record keeps it, so a changed profile is noticed.
func (p *Profile) Hash() string {
	b, _ := json.Marshal(p) // map keys are sorted by encoding/json
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Inherited returns the InheritEnv variables present in lookup
// (os.LookupEnv in production use) with their values: what the server
// gets from hiro's own environment. Unset variables are left out.
func (p *Profile) Inherited(lookup func(string) (string, bool)) map[string]string {
	m := map[string]string{}
	for _, n := range p.InheritEnv {
		if v, ok := lookup(n); ok {
			m[n] = v
		}
	}
	return m
}

// RegisterSecrets tells package redact what of the profile reaches its
// server's process and may be secret: its env, the values its inherit_env
// variables have in lookup (os.LookupEnv in production use: hiro's own
// environment) and the values after secret-looking flags in its args;
// redact.AddEnv's and redact.AddArgs's rules decide which. The API key is
// not among them (APIKey reads it; its callers register it).
func (p *Profile) RegisterSecrets(lookup func(string) (string, bool)) {
	redact.AddEnv(p.Env)
	redact.AddEnv(p.Inherited(lookup))
	redact.AddArgs(p.Args)
}

// Environ returns the process environment for the server: each InheritEnv
// variable present in lookup (os.LookupEnv in production use), then Env,
// sorted "NAME=value" strings.
func (p *Profile) Environ(lookup func(string) (string, bool)) []string {
	m := p.Inherited(lookup)
	for k, v := range p.Env {
		m[k] = v
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
