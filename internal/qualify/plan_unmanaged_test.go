package qualify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/qualify"
)

// A launch-less plan for an unmanaged candidate says why no gate can run
// without a launch and what to do (issue 26 G5: it said only "needs a
// launch gate before it", and no page said an unmanaged server cannot be
// a campaign's candidate).
func TestUnmanagedCandidateWithoutLaunchSaysWhy(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hiro.toml")
	must(t, os.WriteFile(cfg, []byte(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = "true"
port = 29998
model = "m"
[backends.junk]
engine = "openai"
unmanaged = true
base_url = "http://127.0.0.1:29997"
model = "m"
`), 0o644))
	plan := filepath.Join(dir, "plan.toml")
	must(t, os.WriteFile(plan, []byte("title = \"t\"\ncandidate = \"junk\"\nexclusive = false\n[[gates]]\nkind = \"ready_control\"\n"), 0o644))
	_, _, err := qualify.LoadPlan(plan, cfg)
	if err == nil {
		t.Fatal("a launch-less plan was accepted")
	}
	for _, want := range []string{"needs a launch gate before it", "candidate junk is unmanaged", "a campaign's candidate must be one hiro launches", "docs/endpoints.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}
