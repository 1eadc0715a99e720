package config

import (
	"strings"
	"testing"
)

// The values a run trips on are refused at load by one rule per type,
// naming the key: overload.multiplier = nan made 32 retries in 0.5 s,
// health_interval = "1ns" 40,000 polls in 5 s, a negative
// ready_probe.timeout passed; each loaded before.
func TestOneRulePerValueType(t *testing.T) {
	base := `[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = "llama-server"
port = 9001
model = "m"
`
	for _, c := range []struct{ extra, key, want string }{
		{"[backends.prod.overload]\nmultiplier = nan\n", "backends.prod.overload.multiplier", "not a finite number"},
		{"[backends.prod.overload]\nmultiplier = inf\n", "backends.prod.overload.multiplier", "not a finite number"},
		{"[serve]\nhealth_interval = \"1ns\"\n", "serve.health_interval", "shorter than 100ms"},
		{"[serve]\ncanary_interval = \"50ms\"\n", "serve.canary_interval", "shorter than 100ms"},
		{"[backends.prod.ready_probe]\ntimeout = \"-1s\"\n", "backends.prod.ready_probe.timeout", "negative"},
		{"[backends.prod.overload]\ninitial_interval = \"10ns\"\n", "backends.prod.overload.initial_interval", "shorter than 1ms"},
		{"[production]\nmax_evidence_age = \"-1h\"\n", "production.max_evidence_age", "negative"},
	} {
		text := base + c.extra
		if strings.HasPrefix(c.extra, "[production]") {
			text = strings.Replace(base, "[production]\n", c.extra, 1)
		}
		err := loadText(t, t.TempDir(), "hiro", text)
		if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want an error on %s saying %q", c.extra, err, c.key, c.want)
		}
	}
	if err := loadText(t, t.TempDir(), "hiro", base+"[serve]\nhealth_interval = \"2s\"\n"); err != nil {
		t.Errorf("a sensible interval: %v", err)
	}
}
