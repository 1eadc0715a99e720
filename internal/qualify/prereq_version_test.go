package qualify

import (
	"context"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/ollamatest"
)

// The demo plan's Ollama check and 'hiro doctor' agree: a go-installed
// Ollama says "version is 0.0.0", and the check's pattern sees the build
// info's v0.6.5 (the demo's pattern accepts 0.6.x only, never 0.0.0 alone).
func TestPrereqCommandSeesBuildInfoVersion(t *testing.T) {
	// Where the other real-engine tests find it ($HIRO_OLLAMA, PATH,
	// $(go env GOPATH)/bin), not $HOME/go/bin, which a set GOPATH moves.
	ollama, err := ollamatest.FindBinary()
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	if buildInfoVersion(ollama) == "" {
		t.Skipf("%s has no module version in its build info", ollama)
	}
	pattern := `(version is |build info: version v)0\.6\.[0-9]+`
	ch := checkCommand(context.Background(), CommandReq{Name: "ollama", Run: []string{ollama, "--version"}, VersionPattern: pattern})
	if ch.Status != evidence.StatusPassed || !strings.Contains(ch.Detail, "0.6.") {
		t.Fatalf("check %s: %s (output %q)", ch.Status, ch.Detail, ch.Output)
	}
	// The same pattern on the output alone (no build info: a shell
	// printing what the unstamped build prints) fails.
	ch = checkCommand(context.Background(), CommandReq{Name: "fake", Run: []string{"sh", "-c", "echo ollama version is 0.0.0"}, VersionPattern: pattern})
	if ch.Status != evidence.StatusFailed {
		t.Fatalf("0.0.0 accepted: %s %s", ch.Status, ch.Detail)
	}
}
