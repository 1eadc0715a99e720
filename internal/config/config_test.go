package config

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

const good = `
state_dir = "state"
[production]
backend = "prod"

[backends.prod]
engine = "ollama"
command = "ollama"
args = ["serve"]
port = 11500
model = "hiro-fixture"
inherit_env = ["PATH"]
env = { OLLAMA_MODELS = "/tmp/models", OLLAMA_HOST = "127.0.0.1:11500", HOME = "/tmp/ollama-home" }
ready_timeout = "90s"
stall_timeout = "30s"
[backends.prod.ready_probe]
expect = "READY"
`

// A default timeout fits the other one the profile sets (issue 26 G6:
// ready_timeout = "30s" alone was refused, the 2m stall default being
// longer); an explicit conflicting pair is refused (TestParseBad).
func TestTimeoutDefaultsFit(t *testing.T) {
	noStall := strings.Replace(good, `stall_timeout = "30s"`, "", 1)
	for _, tc := range []struct {
		name         string
		text         string
		ready, stall time.Duration
	}{
		{"ready alone, shorter than the stall default", strings.Replace(noStall, `"90s"`, `"30s"`, 1), 30 * time.Second, 30 * time.Second},
		{"ready alone, longer than the stall default", strings.Replace(noStall, `"90s"`, `"5m"`, 1), 5 * time.Minute, DefaultStallTimeout},
		{"stall alone, longer than the ready default", strings.Replace(strings.Replace(good, `ready_timeout = "90s"`, "", 1), `"30s"`, `"20m"`, 1), 20 * time.Minute, 20 * time.Minute},
		{"neither", strings.Replace(noStall, `ready_timeout = "90s"`, "", 1), DefaultReadyTimeout, DefaultStallTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.text), "hiro.toml")
			if err != nil {
				t.Fatal(err)
			}
			p := c.Backends["prod"]
			if p.ReadyTimeout.Duration != tc.ready || p.StallTimeout.Duration != tc.stall {
				t.Errorf("ready %v stall %v, want %v and %v", p.ReadyTimeout.Duration, p.StallTimeout.Duration, tc.ready, tc.stall)
			}
		})
	}
}

func TestParseGood(t *testing.T) {
	c, err := Parse([]byte(good), "/etc/hiro/hiro.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.ProductionProfile()
	if p == nil || p.Name != "prod" {
		t.Fatalf("production profile = %+v", p)
	}
	if p.BaseURL != "http://127.0.0.1:11500" {
		t.Errorf("BaseURL = %q", p.BaseURL)
	}
	if p.ReadyTimeout.Duration != 90*time.Second || p.StallTimeout.Duration != 30*time.Second || p.StopGrace.Duration != DefaultStopGrace {
		t.Errorf("bounds = %v %v %v", p.ReadyTimeout, p.StallTimeout, p.StopGrace)
	}
	if p.ReadyProbe.Expect != "READY" || p.ReadyProbe.Prompt != DefaultProbePrompt {
		t.Errorf("probe = %+v", p.ReadyProbe)
	}
	if c.StateDir != "/etc/hiro/state" || p.Workdir != "/etc/hiro" {
		t.Errorf("paths: state %q workdir %q", c.StateDir, p.Workdir)
	}
	env := p.Environ(func(k string) (string, bool) {
		if k == "PATH" {
			return "/bin", true
		}
		return "secret", true
	})
	if strings.Join(env, ";") != "HOME=/tmp/ollama-home;OLLAMA_HOST=127.0.0.1:11500;OLLAMA_MODELS=/tmp/models;PATH=/bin" {
		t.Errorf("Environ = %v (must hold only named variables)", env)
	}
	q := p.Clone()
	q.Args[0] = "x"
	q.Env["A"] = "b"
	if p.Args[0] != "serve" || p.Env["A"] != "" {
		t.Error("Clone shares slices or maps with the original")
	}
	if p.Hash() == q.Hash() {
		t.Error("Hash did not change with args")
	}
}

func TestParseErrorsNameTheKey(t *testing.T) {
	cases := []struct {
		name, text, key, msg string
	}{
		{"unknown key", good + "\n[backends.x]\nengine=\"ollama\"\ncommand=\"a\"\nport=1\nmodel=\"m\"\nreadytimeout=\"1s\"\n", "backends.x.readytimeout", "unknown key"},
		{"wrong type", strings.Replace(good, "port = 11500", `port = "11500"`, 1), "backends.prod.port", "line"},
		{"missing command", strings.Replace(good, `command = "ollama"`, "", 1), "backends.prod.command", "missing"},
		{"port out of range", strings.Replace(good, "port = 11500", "port = 70000", 1), "backends.prod.port", "out of range"},
		{"duplicate backend", good + "\n[backends.prod]\nengine = \"vllm\"\n", "backends.prod", "already"},
		{"unknown engine", strings.Replace(good, `engine = "ollama"`, `engine = "textgen"`, 1), "backends.prod.engine", "unknown engine"},
		{"bad duration", strings.Replace(good, `"90s"`, `"90"`, 1), "backends.prod.ready_timeout", "duration"},
		{"production names nothing", strings.Replace(good, `backend = "prod"`, `backend = "nope"`, 1), "production.backend", "not a backend"},
		{"procs over Go's cap", good + "\n[serve]\nprocs = 100000\n", "serve.procs", "up to 1024, got 100000"},
		{"negative procs", good + "\n[serve]\nprocs = -1\n", "serve.procs", "got -1"},
		{"backoff over its max", good + "\n[serve]\nrestart_backoff = \"1m\"\nrestart_backoff_max = \"10s\"\n", "serve.restart_backoff", "larger than restart_backoff_max (10s)"},
		{"backoff over the default max", good + "\n[serve]\nrestart_backoff = \"1m\"\n", "serve.restart_backoff", "larger than restart_backoff_max (30s)"},
		{"stall over ready", strings.Replace(good, `"30s"`, `"5m"`, 1), "backends.prod.stall_timeout", "longer than ready_timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.text), "hiro.toml")
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not name key %q with %q", err, tc.key, tc.msg)
			}
		})
	}
}

const remote = `
[backends.remote]
engine = "openai"
unmanaged = true
base_url = "https://llm.example.org"
model = "m"
api_key_env = "HIRO_TEST_REMOTE_KEY"
ca_file = "certs/ca.pem"
`

func TestAPIKeySources(t *testing.T) {
	c, err := Parse([]byte(remote), "/etc/hiro/hiro.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Backends["remote"]
	if p.CAFile != "/etc/hiro/certs/ca.pem" {
		t.Errorf("ca_file = %q, want it resolved against the configuration's folder", p.CAFile)
	}
	env := map[string]string{"HIRO_TEST_REMOTE_KEY": " sk-secret-1 \n"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if k, err := p.APIKey(lookup); err != nil || k != "sk-secret-1" {
		t.Fatalf("key from env: %q %v", k, err)
	}
	delete(env, "HIRO_TEST_REMOTE_KEY")
	if _, err := p.APIKey(lookup); err == nil || !strings.Contains(err.Error(), "backends.remote.api_key_env") || !strings.Contains(err.Error(), "HIRO_TEST_REMOTE_KEY") {
		t.Fatalf("unset variable: %v", err)
	}
	dir := t.TempDir()
	p.APIKeyEnv, p.APIKeyFile = "", dir+"/key"
	os.WriteFile(p.APIKeyFile, []byte("sk-secret-2\n"), 0o600)
	if k, err := p.APIKey(nil); err != nil || k != "sk-secret-2" {
		t.Fatalf("key from file: %q %v", k, err)
	}
	os.WriteFile(p.APIKeyFile, []byte("sk-a\nsk-b\n"), 0o600)
	if _, err := p.APIKey(nil); err == nil || strings.Contains(err.Error(), "sk-a") {
		t.Fatalf("two-line key file: %v (must not print the key)", err)
	}
	p.APIKeyFile = ""
	if k, err := p.APIKey(nil); err != nil || k != "" {
		t.Fatalf("no key source: %q %v", k, err)
	}
}

func TestLiteralKeyRefused(t *testing.T) {
	for _, key := range []string{"api_key", "token"} {
		_, err := Parse([]byte(remote+key+` = "sk-literal"`+"\n"), "/x/hiro.toml")
		if err == nil || !strings.Contains(err.Error(), "backends.remote."+key) || !strings.Contains(err.Error(), "api_key_env") || strings.Contains(err.Error(), "sk-literal") {
			t.Errorf("%s: %v", key, err)
		}
	}
	_, err := Parse([]byte(remote+"api_key_file = \"k\"\n"), "/x/hiro.toml")
	if err == nil || !strings.Contains(err.Error(), "both api_key_env and api_key_file") {
		t.Errorf("both sources: %v", err)
	}
	_, err = Parse([]byte(strings.Replace(remote, `api_key_env = "HIRO_TEST_REMOTE_KEY"`, `api_key_env = "sk-abc/def"`, 1)), "/x/hiro.toml")
	if err == nil || !strings.Contains(err.Error(), "not an environment variable name") {
		t.Errorf("key written as a variable name: %v", err)
	}
	_, err = Parse([]byte(strings.Replace(remote, "https://", "http://", 1)), "/x/hiro.toml")
	if err == nil || !strings.Contains(err.Error(), "ca_file") {
		t.Errorf("ca_file with http: %v", err)
	}
	// A password in the URL is a literal key too, and is not repeated.
	_, err = Parse([]byte(strings.Replace(remote, "https://", "https://admin:hiroTESTsecretPW@", 1)), "/x/hiro.toml")
	if err == nil || !strings.Contains(err.Error(), "backends.remote.base_url: holds credentials") || strings.Contains(err.Error(), "hiroTESTsecretPW") {
		t.Errorf("credentials in base_url: %v", err)
	}
}

func TestOverloadPolicy(t *testing.T) {
	c, err := Parse([]byte(remote), "/x/hiro.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Backends["remote"].Overload, DefaultOverload(); got != want {
		t.Errorf("default overload %+v, want %+v", got, want)
	}
	c, err = Parse([]byte(remote+"[backends.remote.overload]\nmax_retries = 0\nmax_elapsed = \"30s\"\n"), "/x/hiro.toml")
	if err != nil {
		t.Fatal(err)
	}
	if o := c.Backends["remote"].Overload; o.MaxRetries != 0 || o.MaxElapsed.Duration != 30*time.Second || o.InitialInterval.Duration != DefaultOverloadInitialInterval {
		t.Errorf("overload with max_retries = 0: %+v", o)
	}
	_, err = Parse([]byte(remote+"[backends.remote.overload]\nmultiplier = 0.5\ninitial_interval = \"1m\"\nmax_interval = \"1s\"\n"), "/x/hiro.toml")
	if err == nil || !strings.Contains(err.Error(), "overload.multiplier") || !strings.Contains(err.Error(), "overload.initial_interval") {
		t.Errorf("bad overload: %v", err)
	}
}

// TestUnknownKeysSuggestAndNameTheLine: a misspelt key names its line and
// the known key nearest in spelling; an unknown table is one error (not one
// per key inside it), with the table it probably meant.
func TestUnknownKeysSuggestAndNameTheLine(t *testing.T) {
	text := strings.Replace(good, `stall_timeout = "30s"`, `stall_timout = "30s"`, 1) +
		"frobnicate = 1\n" +
		"[serv]\nlisten = \"127.0.0.1:1\"\nalias = \"a\"\nhealth_interval = \"1s\"\n"
	lineOf := func(s string) int {
		for i, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, s) {
				return i + 1
			}
		}
		t.Fatalf("no line %q", s)
		return 0
	}
	_, err := Parse([]byte(text), "hiro.toml")
	es, ok := err.(Errors)
	if !ok {
		t.Fatalf("error %v (%T), want Errors", err, err)
	}
	want := []string{
		fmt.Sprintf("hiro.toml: backends.prod.stall_timout: line %d: unknown key; did you mean stall_timeout?", lineOf("stall_timout")),
		fmt.Sprintf("hiro.toml: backends.prod.ready_probe.frobnicate: line %d: unknown key; check its spelling", lineOf("frobnicate")),
		fmt.Sprintf("hiro.toml: serv: line %d: unknown table; did you mean [serve]?", lineOf("[serv]")),
	}
	if len(es) != len(want) {
		t.Fatalf("%d errors, want %d (one per mistake):\n%v", len(es), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(es[i].Error(), w) {
			t.Errorf("error %d:\n got %s\nwant %s...", i, es[i], w)
		}
	}
}

func TestSuggest(t *testing.T) {
	keys := []string{"ready_timeout", "stall_timeout", "stop_grace", "port"}
	for word, want := range map[string]string{"stall_timout": "stall_timeout", "Port": "port", "prot": "port", "stop": "", "timeout": ""} {
		if got := suggest(word, keys); got != want {
			t.Errorf("suggest(%q) = %q, want %q", word, got, want)
		}
	}
}

// TestServeMessagesSayWhatZeroMeans: a [serve] value out of range is
// refused naming its key, what was wrong and what 0 means (0 is
// accepted: the default, or no wait for wait_for_ready); max_body_bytes
// said "must be positive" although 0 is accepted. A lone tls_cert names
// the missing key, tls_key.
func TestServeMessagesSayWhatZeroMeans(t *testing.T) {
	cases := []struct {
		name, serve, key string
		want             []string
	}{
		{"negative body bound", "max_body_bytes = -1", "serve.max_body_bytes", []string{"must not be negative, got -1", "0 or unset: the default, 8388608"}},
		{"negative drain", `drain_timeout = "-1s"`, "serve.drain_timeout", []string{"must not be negative, got -1s", "0 or unset: the default, 30s"}},
		{"negative wait", `wait_for_ready = "-2s"`, "serve.wait_for_ready", []string{"got -2s", "0 or unset: no wait, 503 at once"}},
		{"negative budget", "restart_budget = -1", "serve.restart_budget", []string{"got -1", "0 or unset: the default, 3"}},
		{"cert without key", `tls_cert = "c.pem"`, "serve.tls_key", []string{"is not set but tls_cert is", "private key"}},
		{"key without cert", `tls_key = "k.pem"`, "serve.tls_cert", []string{"is not set but tls_key is"}},
		{"bad variable name", `metrics_key_env = "1KEY"`, "serve.metrics_key_env", []string{`"1KEY"`, "letters, digits and '_'"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(good+"\n[serve]\n"+tc.serve+"\n"), "hiro.toml")
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, "hiro.toml: "+tc.key+": ") || strings.Contains(msg, "positive") {
				t.Errorf("error %q: want it under %s, without \"positive\"", msg, tc.key)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
		})
	}
	c, err := Parse([]byte(good+"\n[serve]\nmax_body_bytes = 0\nwait_for_ready = \"0s\"\n"), "hiro.toml")
	if err != nil {
		t.Fatalf("0 refused: %v", err)
	}
	if c.Serve.MaxBodyBytes != DefaultServeMaxBodyBytes {
		t.Errorf("max_body_bytes = 0 gave %d, want the default %d", c.Serve.MaxBodyBytes, DefaultServeMaxBodyBytes)
	}
}

// TOML mistakes are reported on the line that holds them, with a hint
// that fits the mistake, and bytes that are not UTF-8 are refused, read
// from real files by Load.
func TestDecodeErrorsLineHintAndEncoding(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, text, want string }{
		{"unclosed-header", "[backends.prod\nengine = \"x\"\n",
			`unclosed-header.toml: line 1: expected '.' or ']' to end table name`},
		{"unclosed-header-later", "state_dir = \"s\"\n\n[backends.prod\n",
			`unclosed-header-later.toml: line 3: expected '.' or ']'`},
		{"string-for-array", strings.Replace(good, `args = ["serve"]`, `args = "serve"`, 1),
			`string-for-array.toml: backends.prod.args: line 9: incompatible types: TOML value has type string; destination has type slice; an array is expected: write it in brackets, e.g. args = ["serve"]`},
		{"number-for-array", strings.Replace(good, `args = ["serve"]`, `args = 3`, 1),
			`an array is expected: write it in brackets, e.g. args = ["a", "b"]`},
		{"string-for-table", strings.Replace(good, "[backends.prod.ready_probe]\nexpect = \"READY\"\n", "ready_probe = \"READY\"\n", 1),
			`backends.prod.ready_probe: line 16: type mismatch for config.ReadyProbe: expected table but found string; a table is expected: write it as [backends.prod.ready_probe] with its keys below, or as ready_probe = { key = "value" }`},
		{"utf16-bom", "\xff\xfe", `utf16-bom.toml: the file starts with a UTF-16 byte-order mark: TOML files must be UTF-8`},
		{"utf16", "\xff\xfe[\x00b\x00]\x00", `the file starts with a UTF-16 byte-order mark`},
		{"latin1", "# config\nstate_dir = \"\xe9t\xe9\"\n", `latin1.toml: line 2: byte 0xe9 at offset 22 is not UTF-8: TOML files must be UTF-8`},
	} {
		err := loadText(t, dir, c.name, c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant it to contain %s", c.name, err, c.want)
		}
	}
}

// A non-table under a key hiro reads as a table of tables (backends, a
// profile's env), or as a table (production, serve), is an error on its
// line with the table hint, read from real files by Load: backends = "x"
// read as a file without profiles.
func TestNonTableWhereTableExpected(t *testing.T) {
	dir := t.TempDir()
	tableHint := "a table is expected: write each backend profile as a [backends.NAME] table"
	for _, c := range []struct{ name, text, want string }{
		{"backends-string", "state_dir = \"s\"\nbackends = \"x\"\n",
			`backends-string.toml: backends: line 2: expected a table but found a string; ` + tableHint},
		{"backends-int", "backends = 5\n", `backends-int.toml: backends: line 1: expected a table but found an integer; ` + tableHint},
		{"backends-array", "backends = [\"prod\"]\n", `backends: line 1: expected a table but found an array; ` + tableHint},
		{"backends-array-of-tables", "[[backends]]\nengine = \"vllm\"\n", `backends: line 1: expected a table but found an array of tables; ` + tableHint},
		{"env-string", strings.Replace(good, `env = { OLLAMA_MODELS = "/tmp/models", OLLAMA_HOST = "127.0.0.1:11500", HOME = "/tmp/ollama-home" }`, `env = "OLLAMA_MODELS=/tmp/models"`, 1),
			`backends.prod.env: line 13: expected a table but found a string; a table is expected: write it as [backends.prod.env] with its keys below, or as env = { key = "value" }`},
		{"production-string", "production = \"fake\"\n", `production: line 1: type mismatch for config.Production: expected table but found string; a table is expected: write it as [production]`},
		{"serve-int", "serve = 5\n", `serve: line 1: type mismatch for config.Serve: expected table but found int64; a table is expected: write it as [serve]`},
	} {
		err := loadText(t, dir, c.name, c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant it to contain %s", c.name, err, c.want)
		}
	}
}

// An error in a table header names no table (the line is where to look),
// never the valid table before it.
func TestHeaderErrorNamesNoEarlierTable(t *testing.T) {
	dir := t.TempDir()
	prod := "state_dir = \"s\"\n[backends.prod]\nengine = \"vllm\"\ncommand = \"x\"\nport = 1\nmodel = \"m\"\n"
	for _, c := range []struct{ name, text, want string }{
		{"unclosed-array-header", prod + "[[backends.x\n", `unclosed-array-header.toml: line 7: expected '.' or ']'`},
		{"trailing-dot", prod + "[backends.x.\n", `trailing-dot.toml: line 7: expected '.' or ']'`},
		{"unreadable-name", prod + "[backends.x y]\n", `unreadable-name.toml: line 7: expected '.' or ']'`},
		{"bare-bracket", prod + "[\n", `bare-bracket.toml: line 7: `},
		{"extra-bracket", prod + "[backends.x]]\n", `extra-bracket.toml: line 7: expected a top-level item`},
		{"value-error", "[backends.prod]\nengine = \"vllm\n", `value-error.toml: backends.prod.engine: line 2: strings cannot contain newlines`},
	} {
		err := loadText(t, dir, c.name, c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "backends.prod:") {
			t.Errorf("%s: error %v\nwant it to contain %s, and not name backends.prod", c.name, err, c.want)
		}
	}
}

// loadText writes text to DIR/NAME.toml and returns Load's error for it.
func loadText(t *testing.T, dir, name, text string) error {
	t.Helper()
	path := dir + "/" + name + ".toml"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	return err
}

// TestEveryMistakeAtOnce: a bad value, an unknown key and a bad engine
// kind in two profiles are reported by one parse (a new user fixed them
// over three runs), each once: the blanked value and the misspelt key's
// intended one are not also called missing.
func TestEveryMistakeAtOnce(t *testing.T) {
	text := strings.Replace(good, `ready_timeout = "90s"`, `ready_timeout = "2 minutes"`, 1) +
		"[backends.cand]\nengine = \"olama\"\ncommand = \"ollama\"\nargs = [\"serve\"]\nprot = 11501\nmodel = \"m\"\n" +
		"ready_timeout = 5\n"
	_, err := Parse([]byte(text), "hiro.toml")
	es, ok := err.(Errors)
	if !ok {
		t.Fatalf("error %v (%T), want Errors", err, err)
	}
	for _, w := range []string{
		`backends.prod.ready_timeout: line 14: invalid duration "2 minutes"`,
		`backends.cand.ready_timeout: line 24: invalid duration "5"`,
		`backends.cand.prot: line 22: unknown key; did you mean port?`,
		`backends.cand.engine: unknown engine kind "olama" (did you mean ollama?)`,
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the errors do not say %q:\n%v", w, err)
		}
	}
	for _, e := range es {
		if e.Key == "backends.cand.port" || e.Key == "backends.prod.ready_timeout" && !strings.Contains(e.Msg, "invalid duration") {
			t.Errorf("a consequence reported beside its cause: %v", e)
		}
	}
	// A bad value inside a multi-line array stops there: blanking its
	// first line would be a syntax error of hiro's making.
	multi := good + "[backends.x]\nengine = \"ollama\"\nargs = [\n  1,\n  2,\n]\nready_timeout = \"soon\"\n"
	_, err = Parse([]byte(multi), "hiro.toml")
	if err == nil || strings.Contains(err.Error(), "expected") && !strings.Contains(err.Error(), "args") {
		t.Errorf("multi-line bad value: %v", err)
	}
}

// TestMismatchHint (trial 12's S5): the TOML library's type mismatch gets
// hiro's words for what to write, by the destination's type.
func TestMismatchHint(t *testing.T) {
	for msg, want := range map[string]string{
		"incompatible types: TOML value has type string; destination has type float":   "a number is expected, not a string: write it bare",
		"incompatible types: TOML value has type string; destination has type integer": "a whole number is expected, not a string",
		"incompatible types: TOML value has type int64; destination has type string":   "a string is expected, not an integer: write it in double quotes",
		"incompatible types: TOML value has type string; destination has type bool":    "true or false is expected, not a string",
		"incompatible types: TOML value has type string; destination has type slice":   "",
		"line 3: expected newline": "",
	} {
		got := MismatchHint(msg)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("MismatchHint(%q) = %q, want %q", msg, got, want)
		}
	}
}
