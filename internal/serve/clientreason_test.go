package serve

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/control"
)

// What an API client is told while production is handed over names what
// holds it: an activation or a rollback (package activation's hand-over
// names: kind and start time), or a campaign by its id; never a pid.
// Before, an exclusive activation read "handed over to a qualification
// campaign (activate-<pid>-<ms>)".
func TestClientReasonNamesActivations(t *testing.T) {
	for name, want := range map[string]string{
		"activate-20261201T101500.123Z": "handed_over to an activation (started 20261201T101500.123Z)",
		"rollback-20261201T101500.123Z": "handed_over to a rollback (started 20261201T101500.123Z)",
		"20261201T101500Z-cand-a1b2c3":  "handed_over to a qualification campaign (20261201T101500Z-cand-a1b2c3)",
	} {
		got := clientReason("prod", control.StateHandedOver, nil, name, false, 5)
		if !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
		if strings.HasPrefix(name, "activate") || strings.HasPrefix(name, "rollback") {
			if strings.Contains(got, "campaign") || regexp.MustCompile(`pid|\b\d{3,7}\b`).MatchString(strings.ReplaceAll(got, "20261201T101500.123Z", "")) {
				t.Errorf("%s: %q names a campaign or a pid", name, got)
			}
		}
	}
}
