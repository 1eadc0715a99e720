package qualify_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// examples/seed-replay/run.sh when 'hiro qualify' exits 6 (another hiro,
// such as the demo's campaign, holds production or the accelerator): it
// says so and exits 6, looks for no report (there is none), and stops
// the production it started (issue 26, a new user's finding: it printed
// "1 = not qualified", then ls and cat errors). The script runs for real
// under bash with the example set-up replaced by a stand-in hiro that
// records its calls and answers qualify with exit 6.
func TestSeedReplayScriptOnBusy(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	root := t.TempDir()
	script, err := os.ReadFile(filepath.Join(testsupport.Root(), "examples", "seed-replay", "run.sh"))
	must(t, err)
	must(t, os.MkdirAll(filepath.Join(root, "examples", "seed-replay"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "scripts"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "examples", "seed-replay", "run.sh"), script, 0o755))
	calls := filepath.Join(root, "calls")
	must(t, os.WriteFile(filepath.Join(root, "scripts", "example-setup.sh"), []byte(`here="$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
hiro() {
  echo "$*" >> "`+calls+`"
  case "$1" in
    qualify) echo "hiro: campaign not started: the accelerator is held by campaign X" >&2; return 6 ;;
  esac
  return 0
}
`), 0o644))
	cmd := exec.Command(bash, filepath.Join(root, "examples", "seed-replay", "run.sh"))
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	if code != 6 || !strings.Contains(text, "exited 6") || !strings.Contains(text, "run this again") {
		t.Errorf("exit %d, want 6 saying another hiro holds it:\n%s", code, text)
	}
	for _, bad := range []string{"not qualified", "ls:", "cat:", "report.md"} {
		if strings.Contains(text, bad) {
			t.Errorf("output says %q after a busy refusal:\n%s", bad, text)
		}
	}
	b, err := os.ReadFile(calls)
	must(t, err)
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); lines[len(lines)-1] != "backend stop prod" {
		t.Errorf("the script's last hiro call is %q, want it to stop the production it started; calls:\n%s", lines[len(lines)-1], b)
	}
}
