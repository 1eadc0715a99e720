package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/ollamatest"
)

// The real Ollama with an empty model store: its health says the model
// is not in /api/tags within a second of its start. Readiness ends then,
// with identity_mismatch and a next step naming Ollama's remedy and the
// store this server reads, instead of waiting out the stall timeout for
// a ready_timeout that said to raise OLLAMA_LOAD_TIMEOUT (issue 26).
func TestOllamaModelMissingFailsFast(t *testing.T) {
	bin := ollamatest.Binary(t)
	models := filepath.Join(t.TempDir(), "empty-store")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	toml := "state_dir = \"state\"\n" + ollamatest.ProfileTOML("ollama", bin, freePort(t), "hiro-fixture-strong", models, dir, nil)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Backends["ollama"]
	p.StallTimeout.Duration, p.ReadyTimeout.Duration = time.Minute, 2*time.Minute
	proc, res := startFake(t, p, c.StateDir)
	if proc != nil || res.State != StateFailed || res.Failure.Class != failure.ClassIdentityMismatch {
		t.Fatalf("state %s failure %+v", res.State, res.Failure)
	}
	f := res.Failure
	if f.SecondsSinceStart > 30 {
		t.Errorf("failed after %.1f s: readiness waited instead of ending when health said the model is missing", f.SecondsSinceStart)
	}
	for _, want := range []string{`"hiro-fixture-strong"`, "not in /api/tags", models, "OLLAMA_MODELS"} {
		if !strings.Contains(f.RootCause, want) {
			t.Errorf("root cause %q lacks %q", f.RootCause, want)
		}
	}
	for _, want := range []string{"prepare-models.sh", "ollama create", "ollama pull", "OLLAMA_MODELS"} {
		if !strings.Contains(f.NextStep, want) {
			t.Errorf("next step %q lacks %q", f.NextStep, want)
		}
	}
}

// A managed server that refuses hiro's key on its health check answers
// 401 on every poll: readiness ends at the first, with the key advice,
// not after the stall timeout.
func TestRefusedKeyFailsFast(t *testing.T) {
	port := freePort(t)
	p, state := fakeProfile(t, "llamacpp", port, []string{"--port", strconv.Itoa(port), "--require-api-key", "--api-key", "sk-the-servers-own-key-0001"},
		`stall_timeout = "1m"
ready_timeout = "2m"
api_key_env = "HIRO_TEST_WRONG_KEY"`)
	t.Setenv("HIRO_TEST_WRONG_KEY", "sk-not-the-servers-key-0002")
	proc, res := startFake(t, p, state)
	if proc != nil || res.State != StateFailed || res.Failure == nil {
		t.Fatalf("state %s failure %+v", res.State, res.Failure)
	}
	f := res.Failure
	if f.Class != failure.ClassProbeFailed || f.SecondsSinceStart > 30 {
		t.Errorf("class %s after %.1f s (%s); want probe_failed at once", f.Class, f.SecondsSinceStart, f.RootCause)
	}
	if !strings.Contains(f.RootCause, "HTTP 401") || !strings.Contains(f.NextStep, "HIRO_TEST_WRONG_KEY") {
		t.Errorf("root cause %q, next step %q: want the 401 and the key's variable", f.RootCause, f.NextStep)
	}
}
