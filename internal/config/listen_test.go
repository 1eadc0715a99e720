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
		{"ollama-agrees", "engine = \"ollama\"\ncommand = \"ollama\"\nargs = [\"serve\"]\nenv = { OLLAMA_HOST = \"127.0.0.1:11435\", HOME = \"/h\" }\n", nil},
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

// Ollama's server exits with "Error: $HOME is not defined" when its
// environment has no HOME, and hiro passes only env and inherit_env: a
// profile giving neither is refused at load, naming the key and both
// fixes, with every other problem of the file (issue 26, F10).
func TestOllamaProfileWithoutHomeIsRefused(t *testing.T) {
	dir := t.TempDir()
	base := "[backends.cand]\nengine = \"ollama\"\ncommand = \"ollama\"\nargs = [\"serve\"]\nport = 11435\nmodel = \"m\"\n"
	host := "[backends.cand.env]\nOLLAMA_HOST = \"127.0.0.1:11435\"\nOLLAMA_MODELS = \"/m\"\n"
	err := loadText(t, dir, "no-home", base+host)
	if err == nil {
		t.Fatal("an Ollama profile without HOME loaded; want a refusal")
	}
	for _, w := range []string{"backends.cand.env.HOME: missing", "$HOME is not defined", `inherit_env = ["HOME"] in [backends.cand]`, `HOME = "/a/folder" in [backends.cand.env]`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q lacks %q", err, w)
		}
	}
	for name, body := range map[string]string{
		"inherited": base + "inherit_env = [\"PATH\", \"HOME\"]\n" + host,
		"set":       base + host + "HOME = \"/h\"\n",
	} {
		if err := loadText(t, dir, name, body); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
