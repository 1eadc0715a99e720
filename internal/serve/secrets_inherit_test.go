package serve

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/redact"
)

// TestRouteRegistersInheritedSecrets: a route to a profile registers the
// values its inherit_env variables have in hiro's environment (what the
// engine gets) with redact, so that a log line quoting one is redacted in
// the event log and status, as the profile's own env values are.
func TestRouteRegistersInheritedSecrets(t *testing.T) {
	t.Setenv("HIRO_T_SERVE_DB_PASS", "serve-hunter2")
	t.Setenv("HIRO_T_SERVE_OPAQUE", "serve-opaque-inherited-4242")
	prof := &config.Profile{Name: "p", Engine: "llamacpp", BaseURL: "http://127.0.0.1:1", Model: "m",
		InheritEnv: []string{"HIRO_T_SERVE_DB_PASS", "HIRO_T_SERVE_OPAQUE", "HIRO_T_SERVE_UNSET"}}
	line := "ERROR credential serve-hunter2 and serve-opaque-inherited-4242"
	if got := redact.Secrets(line); got != line {
		t.Fatalf("redacted before the route registered anything (the test plants nothing): %s", got)
	}
	if _, err := newRoute(prof, nil, nil); err != nil {
		t.Fatal(err)
	}
	got := redact.Secrets(line)
	for _, s := range []string{"serve-hunter2", "serve-opaque-inherited-4242"} {
		if strings.Contains(got, s) {
			t.Errorf("inherited value %q not redacted: %s", s, got)
		}
	}
}
