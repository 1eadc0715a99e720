package config

import (
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
env = { OLLAMA_MODELS = "/tmp/models" }
ready_timeout = "90s"
stall_timeout = "30s"
[backends.prod.ready_probe]
expect = "READY"
`

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
	if strings.Join(env, ";") != "OLLAMA_MODELS=/tmp/models;PATH=/bin" {
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
		{"unknown engine", strings.Replace(good, `engine = "ollama"`, `engine = "tgi"`, 1), "backends.prod.engine", "unknown engine"},
		{"bad duration", strings.Replace(good, `"90s"`, `"90"`, 1), "backends.prod.ready_timeout", "duration"},
		{"production names nothing", strings.Replace(good, `backend = "prod"`, `backend = "nope"`, 1), "production.backend", "not a backend"},
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
