package engine

import (
	"strings"
	"testing"
)

// Every registered kind says where it reads its listen address.
func TestEveryKindHasListen(t *testing.T) {
	for _, k := range Kinds() {
		if _, ok := ListenOf(k); !ok {
			t.Errorf("engine kind %s has no Listen in listen.go", k)
		}
	}
}

func TestListenConflict(t *testing.T) {
	env := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		kind, command string
		port          int
		args          []string
		env           map[string]string
		want          []string // substrings; none: no conflict
	}{
		{"ollama", "ollama", 11435, []string{"serve"}, env("OLLAMA_HOST", "127.0.0.1:11435"), nil},
		{"ollama", "ollama", 11435, []string{"serve"}, env("OLLAMA_HOST", "127.0.0.1:11436"),
			[]string{`backends.p.env.OLLAMA_HOST: "127.0.0.1:11436"`, "port 11436", "backends.p.port is 11435", `OLLAMA_HOST = "127.0.0.1:11435"`}},
		{"ollama", "ollama", 11435, []string{"serve"}, env("OLLAMA_HOST", "http://0.0.0.0:11437"), []string{"port 11437"}},
		{"ollama", "ollama", 11434, []string{"serve"}, env("OLLAMA_HOST", "0.0.0.0"), nil},
		{"ollama", "ollama", 11435, []string{"serve"}, env("OLLAMA_HOST", "0.0.0.0"), []string{"port 11434"}},
		{"ollama", "/usr/local/bin/ollama", 11435, []string{"serve"}, nil, []string{"backends.p.port: is 11435", "default port 11434", `set backends.p.env.OLLAMA_HOST = "127.0.0.1:11435"`}},
		{"ollama", "hiro-fake-engine", 11435, []string{"--port", "11435"}, nil, nil},
		{"vllm", "vllm", 8001, []string{"serve", "m", "--port", "8002"}, nil, []string{"backends.p.args: --port 8002", "port 8002", "backends.p.port is 8001"}},
		{"vllm", "python", 8001, []string{"-m", "vllm.entrypoints.openai.api_server", "--port=8001"}, nil, nil},
		{"vllm", "vllm", 8001, []string{"serve", "m"}, nil, nil}, // a launcher may add --port: not proof
		{"llamacpp", "llama-server", 9000, []string{"-m", "x.gguf"}, env("LLAMA_ARG_PORT", "9001"), []string{"LLAMA_ARG_PORT", "port 9001"}},
		{"llamacpp", "llama-server", 9000, []string{"--port", "9000"}, env("LLAMA_ARG_PORT", "9001"), nil},
		{"sglang", "python3", 30001, []string{"-m", "sglang.launch_server"}, nil, nil},
		{"sglang", "python3", 30001, []string{"--port", "30002"}, nil, []string{"port 30002"}},
		{"openai", "my-server", 1234, []string{"--port", "9"}, nil, nil},
	}
	for _, c := range cases {
		setting, msg := ListenConflict(c.kind, "backends.p", c.port, c.command, c.args, c.env)
		got := setting + ": " + msg
		if len(c.want) == 0 {
			if setting != "" || msg != "" {
				t.Errorf("%s %s %v %v: conflict %q, want none", c.kind, c.command, c.args, c.env, got)
			}
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %s %v %v: %q lacks %q", c.kind, c.command, c.args, c.env, got, w)
			}
		}
	}
}

// identity_mismatch's "did you mean" names the listed id a person most
// likely meant, and nothing when none is near.
func TestClosestModel(t *testing.T) {
	cases := []struct {
		want     string
		reported []string
		near     string
	}{
		{"hiro-fixture-strong", []string{"hiro-tiny:latest", "hiro-fixture-strong:latest"}, "hiro-fixture-strong:latest"},
		{"Qwen2.5-7B-Instruct", []string{"Qwen/Qwen2.5-7B-Instruct"}, "Qwen/Qwen2.5-7B-Instruct"},
		{"hiro-fixture-strnog", []string{"hiro-fixture-strong:latest", "hiro-tiny:latest"}, "hiro-fixture-strong:latest"},
		{"mistral-small", []string{"hiro-tiny:latest"}, ""},
		{"m", nil, ""},
	}
	for _, c := range cases {
		if got := closestModel(c.want, c.reported); got != c.near {
			t.Errorf("closestModel(%q, %q) = %q, want %q", c.want, c.reported, got, c.near)
		}
	}
	e, err := Lookup("ollama")
	if err != nil {
		t.Fatal(err)
	}
	f := e.NewTracker().Classify(Outcome{Kind: OutcomeIdentityMismatch, ExpectedModel: "hiro-fixture-strnog", ReportedModels: []string{"hiro-fixture-strong:latest"}})
	if !strings.Contains(f.RootCause, `did you mean "hiro-fixture-strong:latest"?`) || f.Detail["did_you_mean"] != "hiro-fixture-strong:latest" {
		t.Errorf("root cause %q detail %v", f.RootCause, f.Detail)
	}
}

// MoveAdvice names every place of a profile that says its port, so that
// the port_in_use next step followed literally passes the loader's
// agreement check (issue 26 F4: "set OLLAMA_HOST to another
// address:port" alone was refused: backends.prod.port still said the old
// port).
func TestMoveAdvice(t *testing.T) {
	for _, c := range []struct {
		kind string
		args []string
		env  map[string]string
		want string
	}{
		{"ollama", nil, map[string]string{"OLLAMA_HOST": "127.0.0.1:11435"}, "set backends.prod.port and backends.prod.env.OLLAMA_HOST (as 127.0.0.1:PORT) to the same free port"},
		{"ollama", nil, nil, "set backends.prod.port to a free port"},
		{"llamacpp", []string{"-m", "x.gguf", "--port", "8080"}, nil, "set backends.prod.port and the port flag in backends.prod.args (--port) to the same free port"},
		{"llamacpp", nil, map[string]string{"LLAMA_ARG_PORT": "8080"}, "set backends.prod.port and backends.prod.env.LLAMA_ARG_PORT to the same free port"},
		{"openai", nil, nil, "set backends.prod.port to a free port"},
	} {
		if got := MoveAdvice(c.kind, "backends.prod", c.args, c.env); got != c.want {
			t.Errorf("%s %v %v: %q, want %q", c.kind, c.args, c.env, got, c.want)
		}
	}
}

// An engine that cannot start without a variable the profile does not
// pass (Ollama without HOME) is named with both ways to give it; its own
// executable only (a launcher script may set it).
func TestMissingEnv(t *testing.T) {
	cases := []struct {
		kind, command string
		env           map[string]string
		inherit       []string
		want          []string // substrings; none: nothing missing
	}{
		{"ollama", "ollama", map[string]string{"OLLAMA_MODELS": "/m"}, nil,
			[]string{"backends.c.env.HOME: missing", `Error: $HOME is not defined`, `inherit_env = ["HOME"] in [backends.c]`, `HOME = "/a/folder" in [backends.c.env]`}},
		{"ollama", "/usr/local/bin/ollama", nil, []string{"PATH"}, []string{`inherit_env = ["PATH", "HOME"]`}},
		{"ollama", "ollama", map[string]string{"HOME": "/h"}, nil, nil},
		{"ollama", "ollama", nil, []string{"PATH", "HOME"}, nil},
		{"ollama", "hiro-fake-engine", nil, nil, nil},
		{"ollama", "./start-ollama.sh", nil, nil, nil},
		{"vllm", "vllm", nil, nil, nil},
		{"nosuchkind", "ollama", nil, nil, nil},
	}
	for _, c := range cases {
		setting, msg := MissingEnv(c.kind, "backends.c", c.command, c.env, c.inherit)
		got := setting + ": " + msg
		if len(c.want) == 0 {
			if setting != "" || msg != "" {
				t.Errorf("%s %s %v %v: %q, want nothing missing", c.kind, c.command, c.env, c.inherit, got)
			}
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %s %v %v: %q lacks %q", c.kind, c.command, c.env, c.inherit, got, w)
			}
		}
	}
	if n := NeedsOf("ollama"); len(n) != 1 || n[0].Name != "HOME" {
		t.Errorf("NeedsOf(ollama) = %v, want HOME", n)
	}
}
