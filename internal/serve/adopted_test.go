package serve

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// TestAdoptedDeathSaysTheRouterDidNotStartIt (issue 26 N8): the death
// of a production another hiro started ('hiro rollback'), SIGKILLed
// while serving, is engine_died whose root cause says that this router
// did not start it and so cannot know how it ended, not a bare "exit
// status unknown"; with no log left, the same words follow its pid.
func TestAdoptedDeathSaysTheRouterDidNotStartIt(t *testing.T) {
	served := filepath.Join("..", "..", "examples", "gpu", "results", "campaign", "prod.log")
	for _, c := range []struct{ log, want string }{
		{served, "ended (exit status unknown: this router did not start it (another hiro did, such as 'hiro activate' or 'hiro rollback'), so it cannot know whether it exited or was killed) while serving requests"},
		{filepath.Join(t.TempDir(), "gone.log"), "pid 4242 ended (exit status unknown: this router did not start it"},
	} {
		rec := &supervisor.Record{Name: "twin", Engine: "ollama", PID: 4242, LogPath: c.log, StartedAt: time.Now().Add(-time.Minute)}
		f := adoptedDeath(t.TempDir(), rec)
		if f.Class != failure.ClassEngineDied || !strings.Contains(f.RootCause, c.want) {
			t.Errorf("%s: %s: %q, want engine_died with %q", filepath.Base(c.log), f.Class, f.RootCause, c.want)
		}
	}
}
