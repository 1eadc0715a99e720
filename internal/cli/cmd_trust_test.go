package cli

import (
	"strings"
	"testing"
)

// 'hiro trust list', as a new user types it, lists the trusted keys as
// 'hiro trust' does: on a fresh state, nothing, cleanly (exit 0, no
// error), saying where keys come from.
func TestTrustListOnAFreshState(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	t.Setenv("HIRO_KEY_DIR", "")
	code, out, errs := runHiro(t, "trust", "list")
	if code != ExitOK || errs != "" || !strings.Contains(out, "no trusted keys yet") {
		t.Fatalf("trust list on a fresh state: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, bare, _ := runHiro(t, "trust"); code != ExitOK || bare != out {
		t.Errorf("'hiro trust' (exit %d) and 'hiro trust list' differ:\n%s\nvs\n%s", code, bare, out)
	}
}
