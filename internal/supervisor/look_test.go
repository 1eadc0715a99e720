package supervisor

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
)

// A bare engine name missing from PATH gets the likely fix first (install
// it, put its folder on PATH; for Ollama the project's script and
// GOPATH/bin), never "edit the profile" alone; a path that is wrong gets
// the profile key (issue 26, a new user's finding: 'qualify --check'
// before Ollama was on PATH said "fix the profile's command").
func TestCommandFixSaysInstallOrPATHForABareName(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		engine, command string
		want, not       []string
	}{
		{"ollama", "ollama", []string{"install it or put its folder on PATH", "scripts/install-ollama.sh", "go env GOPATH", "backends.p.command"}, nil},
		{"vllm", "vllm", []string{"install it or put its folder on PATH", "backends.p.command"}, []string{"install-ollama"}},
		{"ollama", "/opt/nowhere/ollama", []string{"fix backends.p.command"}, []string{"install it"}},
	} {
		p := &config.Profile{Name: "p", Engine: tc.engine, Command: tc.command}
		_, err := CommandPath(p)
		if err == nil {
			t.Fatalf("%s: CommandPath found it", tc.command)
		}
		fix := CommandFix(p, err)
		for _, w := range tc.want {
			if !strings.Contains(fix, w) {
				t.Errorf("%s: fix %q does not say %q", tc.command, fix, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(fix, n) {
				t.Errorf("%s: fix %q says %q", tc.command, fix, n)
			}
		}
	}
}
