package engine

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Listen says where an engine kind reads the address it listens on: a
// command-line flag, an environment variable, and the default it listens
// on without either. A profile gives the same fact as host and port; the
// two must agree, or readiness waits on a port nobody listens on
// (ListenConflict).
type Listen struct {
	// PortFlags are the flags that set the port ("--port"), written as
	// "--port N" or "--port=N".
	PortFlags []string
	// PortEnv is an environment variable holding the port alone
	// ("LLAMA_ARG_PORT"); AddrEnv one holding host:port, host, :port or
	// a URL ("OLLAMA_HOST").
	PortEnv, AddrEnv string
	// DefaultPort is the port the engine listens on when nothing says
	// otherwise. It is compared only for an engine told its address by a
	// variable (Ollama) and only when Commands names the profile's command
	// (another program, such as the fake engine, has its own); a missing
	// flag proves less (a launcher script may add it).
	DefaultPort int
	// Commands are the base names of the engine's own executables.
	Commands []string
}

// listens holds each kind's Listen, from the engines' own documentation
// (TestEveryKindHasListen: a new kind needs an entry):
// llama-server --port (default 8080, env LLAMA_ARG_PORT); vllm serve
// --port (default 8000); sglang.launch_server --port (default 30000);
// Ollama's OLLAMA_HOST (default 127.0.0.1:11434). The openai kind is any
// server: hiro knows no flag of it.
var listens = map[string]Listen{
	"llamacpp": {PortFlags: []string{"--port"}, PortEnv: "LLAMA_ARG_PORT", DefaultPort: 8080, Commands: []string{"llama-server"}},
	"vllm":     {PortFlags: []string{"--port"}, DefaultPort: 8000, Commands: []string{"vllm"}},
	"sglang":   {PortFlags: []string{"--port"}, DefaultPort: 30000},
	"ollama":   {AddrEnv: "OLLAMA_HOST", DefaultPort: 11434, Commands: []string{"ollama"}},
	"openai":   {},
	// text-generation-launcher --port (env PORT), default 3000;
	// trtllm-serve --port, default 8000; lmdeploy serve api_server
	// --server-port, default 23333; koboldcpp --port, default 5001;
	// llamafile is llama.cpp's server (--port, default 8080);
	// mistralrs-server --port; TabbyAPI --port (config.yml network.port),
	// default 5000.
	"tgi":       {PortFlags: []string{"--port"}, PortEnv: "PORT", DefaultPort: 3000, Commands: []string{"text-generation-launcher"}},
	"trtllm":    {PortFlags: []string{"--port"}, DefaultPort: 8000, Commands: []string{"trtllm-serve"}},
	"lmdeploy":  {PortFlags: []string{"--server-port"}, DefaultPort: 23333, Commands: []string{"lmdeploy"}},
	"koboldcpp": {PortFlags: []string{"--port"}, DefaultPort: 5001, Commands: []string{"koboldcpp"}},
	"llamafile": {PortFlags: []string{"--port"}, DefaultPort: 8080},
	"mistralrs": {PortFlags: []string{"--port"}, Commands: []string{"mistralrs-server"}},
	"tabbyapi":  {PortFlags: []string{"--port"}, DefaultPort: 5000},
}

// EnvNeed is a variable an engine's own executable cannot start
// without. A profile passes its server only env and inherit_env (nothing
// else of hiro's environment), so a profile that gives neither is refused
// at load (MissingEnv) instead of dying at launch.
type EnvNeed struct {
	// Name is the variable ("HOME").
	Name string
	// Why says what the engine does with it and how it fails without it,
	// with the source that says so.
	Why string
}

// needs holds each kind's EnvNeeds, read from the engines' sources.
// Ollama v0.6.5: "ollama serve" (cmd.RunServer) first calls
// initializeKeypair, which reads or writes $HOME/.ollama/id_ed25519
// through os.UserHomeDir; without HOME it exits with "Error: $HOME is not
// defined" before it listens, whatever OLLAMA_MODELS says (envconfig.Models
// needs HOME only when OLLAMA_MODELS is unset). The other kinds start
// without HOME (Python's expanduser falls back to the password database;
// llama.cpp reads no home folder to start).
var needs = map[string][]EnvNeed{
	"ollama": {{Name: "HOME", Why: "ollama serve keeps its key in $HOME/.ollama and exits with \"Error: $HOME is not defined\" without it"}},
}

// NeedsOf returns the variables kind's own executables need to start.
func NeedsOf(kind string) []EnvNeed { return needs[kind] }

// MissingEnv returns the first variable a profile of kind does not give
// its server although the engine needs it: the setting to add (a dotted
// key path, "backends.cand.env.HOME") and a message saying why and the two
// ways to give it; "" and "" when the profile gives every one, or when
// command is not one of the engine's own executables (a launcher script
// may set the variable itself). key is the profile's dotted path; env and
// inherit are its env and inherit_env.
func MissingEnv(kind, key, command string, env map[string]string, inherit []string) (setting, msg string) {
	l, ok := listens[kind]
	if !ok || !ownCommand(l, command) {
		return "", ""
	}
	for _, n := range needs[kind] {
		if _, set := env[n.Name]; set || slices.Contains(inherit, n.Name) {
			continue
		}
		list := strings.Join(append(slices.Clone(inherit), n.Name), `", "`)
		return key + ".env." + n.Name, fmt.Sprintf("missing: %s; hiro passes the server only its env and inherit_env, and neither gives %s: set inherit_env = [\"%s\"] in [%s] (hiro's own %s), or %s = \"/a/folder\" in [%s.env]",
			n.Why, n.Name, list, key, n.Name, n.Name, key)
	}
	return "", ""
}

// ListenOf returns kind's Listen; ok is false for an unknown kind.
func ListenOf(kind string) (Listen, bool) {
	l, ok := listens[kind]
	return l, ok
}

// ListenConflict returns why a profile of kind that expects its server on
// port would not find it there: the setting at fault (a dotted key path)
// and a message naming both values and what to change; "" and "" when
// they agree, or when nothing says (the openai kind, a command hiro does
// not know). key is the profile's dotted path ("backends.prod"); command,
// args and env are the profile's.
func ListenConflict(kind, key string, port int, command string, args []string, env map[string]string) (setting, msg string) {
	l, ok := listens[kind]
	if !ok || port == 0 {
		return "", ""
	}
	said, p, at := l.told(args, env)
	switch {
	case said == "":
		return l.defaultConflict(key, port, command)
	case p == 0 || p == port:
		return "", ""
	case at == "args":
		return key + ".args", fmt.Sprintf("%s makes the server listen on port %d, but %s.port is %d; make them agree (hiro waits for the server on %s.port)", said, p, key, port, key)
	}
	hint := ""
	if at == l.AddrEnv {
		hint = fmt.Sprintf(", e.g. %s = \"127.0.0.1:%d\"", l.AddrEnv, port)
	}
	return key + ".env." + at, fmt.Sprintf("%q makes the server listen on port %d, but %s.port is %d; make them agree%s (hiro waits for the server on %s.port)", said, p, key, port, hint, key)
}

// MoveAdvice is how to move a profile of kind (dotted path key,
// "backends.prod") to another port: its port and the setting that tells
// the engine its port (a flag in args, a variable in env), which must
// agree, so that following the advice literally is not refused at load:
// "set backends.prod.port and backends.prod.env.OLLAMA_HOST (as
// 127.0.0.1:PORT) to the same free port".
func MoveAdvice(kind, key string, args []string, env map[string]string) string {
	l, ok := listens[kind]
	_, _, at := l.told(args, env)
	switch {
	case !ok || at == "":
		return fmt.Sprintf("set %s.port to a free port", key)
	case at == "args":
		return fmt.Sprintf("set %s.port and the port flag in %s.args (%s) to the same free port", key, key, strings.Join(l.PortFlags, ", "))
	case at == l.AddrEnv:
		return fmt.Sprintf("set %s.port and %s.env.%s (as 127.0.0.1:PORT) to the same free port", key, key, at)
	}
	return fmt.Sprintf("set %s.port and %s.env.%s to the same free port", key, key, at)
}

// told returns what the profile tells the engine about its port: the
// words (a flag and its value, or a variable's value), the port they give
// (0 when it cannot be read) and where ("args", or the variable's name);
// "" when nothing tells it.
func (l Listen) told(args []string, env map[string]string) (said string, port int, at string) {
	if f, v, found := flagValue(l.PortFlags, args); found {
		p, _ := strconv.Atoi(v)
		return f + " " + v, p, "args"
	}
	if v, found := env[l.PortEnv]; l.PortEnv != "" && found {
		p, _ := strconv.Atoi(strings.TrimSpace(v))
		return v, p, l.PortEnv
	}
	if v, found := env[l.AddrEnv]; l.AddrEnv != "" && found {
		return v, addrPort(v, l.DefaultPort), l.AddrEnv
	}
	return "", 0, ""
}

// defaultConflict: nothing tells an engine that takes its address from a
// variable where to listen, so it listens on its default port.
func (l Listen) defaultConflict(key string, port int, command string) (setting, msg string) {
	if l.AddrEnv == "" || l.DefaultPort == 0 || l.DefaultPort == port || !ownCommand(l, command) {
		return "", ""
	}
	return key + ".port", fmt.Sprintf("is %d, but %s listens on its default port %d unless %s says otherwise; set %s.env.%s = \"127.0.0.1:%d\", or set %s.port = %d",
		port, filepath.Base(command), l.DefaultPort, l.AddrEnv, key, l.AddrEnv, port, key, l.DefaultPort)
}

// flagValue finds the first of flags in args, written "--port N" or
// "--port=N", and returns the flag and its value.
func flagValue(flags, args []string) (flag, value string, found bool) {
	for i, a := range args {
		for _, f := range flags {
			if a == f && i+1 < len(args) {
				return f, args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, f+"="); ok {
				return f, v, true
			}
		}
	}
	return "", "", false
}

// ownCommand says whether command is one of the engine's own executables.
func ownCommand(l Listen, command string) bool {
	base := filepath.Base(strings.TrimSpace(command))
	for _, c := range l.Commands {
		if base == c {
			return true
		}
	}
	return false
}

// addrPort reads the port of an address variable in the forms Ollama
// takes: "host:port", ":port", "host" (the default port), or a URL; 0 when
// it cannot be read (the engine's own error then says so).
func addrPort(v string, def int) int {
	v = strings.TrimSpace(v)
	if v == "" {
		return def
	}
	if strings.Contains(v, "://") {
		u, err := url.Parse(v)
		if err != nil {
			return 0
		}
		v = u.Host
	}
	if _, p, err := net.SplitHostPort(v); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil {
			return 0
		}
		return n
	}
	return def // a host alone: the default port
}
