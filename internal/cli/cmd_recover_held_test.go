package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/qualify"
)

// 'hiro recover' names a live campaign's configuration and says what it
// holds; a campaign of another configuration is said to be so (issue 26,
// a new user's finding F6: "holds production " with no name, under a
// configuration the campaign never used).
func TestRecoverNamesWhatALiveCampaignHolds(t *testing.T) {
	dir := t.TempDir()
	demo, mine := filepath.Join(dir, "demo.toml"), filepath.Join(dir, "hiro.toml")
	beside := &qualify.Lease{Campaign: "c1", PID: 42, Config: demo, Candidate: "weak"}
	got := heldLine(beside, mine)
	for _, w := range []string{"campaign c1 (hiro pid 42, configuration " + demo + ")", "holds only its candidate weak", "another configuration's: nothing to recover for " + mine} {
		if !strings.Contains(got, w) {
			t.Errorf("%q does not say %q", got, w)
		}
	}
	if strings.Contains(got, "holds its production") {
		t.Errorf("%q says it holds production", got)
	}
	exclusive := &qualify.Lease{Campaign: "c2", PID: 43, Config: mine, Production: "prod", Candidate: "cand"}
	if got := heldLine(exclusive, mine); !strings.Contains(got, "holds its production prod") || strings.Contains(got, "another configuration") {
		t.Errorf("exclusive campaign of this configuration: %q", got)
	}
}
