package config

import (
	"strings"
	"testing"
)

// A profile's port and the engine's own listen setting (Ollama's
// OLLAMA_HOST, a --port flag) are one fact written twice: a disagreement
// is refused at load, naming both values, instead of a ready_timeout
// after the stall timeout (issue 26, item 1).
func TestListenAddressMustAgreeWithPort(t *testing.T) {
	dir := t.TempDir()
	profile := func(body string) string {
		return "[backends.prod]\nmodel = \"m\"\nhost = \"127.0.0.1\"\nport = 11435\n" + body
	}
	cases := []struct {
		name, body string
		want       []string // none: loads
	}{
		{"ollama-agrees", "engine = \"ollama\"\ncommand = \"ollama\"\nargs = [\"serve\"]\nenv = { OLLAMA_HOST = \"127.0.0.1:11435\" }\n", nil},
		{"ollama-disagrees", "engine = \"ollama\"\ncommand = \"ollama\"\nargs = [\"serve\"]\nenv = { OLLAMA_HOST = \"127.0.0.1:11436\" }\n",
			[]string{"backends.prod.env.OLLAMA_HOST", `"127.0.0.1:11436"`, "port 11436", "backends.prod.port is 11435"}},
		{"ollama-default", "engine = \"ollama\"\ncommand = \"ollama\"\nargs = [\"serve\"]\n",
			[]string{"backends.prod.port", "default port 11434", `OLLAMA_HOST = "127.0.0.1:11435"`}},
		{"vllm-flag", "engine = \"vllm\"\ncommand = \"vllm\"\nargs = [\"serve\", \"m\", \"--port\", \"8000\"]\n",
			[]string{"backends.prod.args", "--port 8000", "backends.prod.port is 11435"}},
		{"fake-engine", "engine = \"ollama\"\ncommand = \"hiro-fake-engine\"\nargs = [\"--port\", \"11435\"]\n", nil},
	}
	for _, c := range cases {
		err := loadText(t, dir, c.name, profile(c.body))
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: loaded; want a refusal", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.name, err, w)
			}
		}
	}
}
