package engine

import (
	"testing"
	"time"
)

// A canary leaves an Ollama model's stay as it is: none while it is
// unloaded or about to be, the time left as keep_alive while a finite
// keep-alive runs, any canary when there is none or Ollama cannot tell.
func TestOllamaCanaryKeepAlive(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name string
		r    OllamaResidency
		keep time.Duration
		skip bool
	}{
		{"unknown", OllamaResidency{}, 0, false},
		{"unloaded", OllamaResidency{Known: true}, 0, true},
		{"about to leave", OllamaResidency{Known: true, Loaded: true, Expires: now.Add(500 * time.Millisecond)}, 0, true},
		{"five minutes left", OllamaResidency{Known: true, Loaded: true, Expires: now.Add(5 * time.Minute)}, 5 * time.Minute, false},
		{"kept forever", OllamaResidency{Known: true, Loaded: true, Expires: now.Add(100 * 365 * 24 * time.Hour)}, 0, false},
		{"no expiry", OllamaResidency{Known: true, Loaded: true}, 0, false},
	}
	for _, c := range cases {
		keep, skip := c.r.CanaryKeepAlive(now)
		if keep != c.keep || (skip != "") != c.skip {
			t.Errorf("%s: keep-alive %s, skip %q; want %s, skip %v", c.name, keep, skip, c.keep, c.skip)
		}
	}
}
