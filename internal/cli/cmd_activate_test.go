package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func switchTestConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(dir, "leases"))
	t.Setenv("HIRO_PRODUCTION_DIR", filepath.Join(dir, "production"))
	p := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(p, []byte(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = "llama-server"
port = 18080
model = "m"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Nothing to roll back before any activation: exit 1, and in --json the
// refusal is a JSON object.
func TestRollbackWithoutActivationRefused(t *testing.T) {
	cfg := switchTestConfig(t)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "rollback"}, &out, &errb)
	if code != ExitFailed || !strings.Contains(errb.String(), "no activation to roll back") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	code = Run(context.Background(), []string{"--config", cfg, "rollback", "--json"}, &out, &errb)
	var sum switchSummary
	if code != ExitFailed || json.Unmarshal(out.Bytes(), &sum) != nil || sum.Outcome != "refused" || sum.ExitCode != ExitFailed {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

// A missing evidence folder is bad usage (exit 2), not a refusal.
func TestActivateMissingEvidenceIsUsage(t *testing.T) {
	cfg := switchTestConfig(t)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "activate", filepath.Join(t.TempDir(), "nope")}, &out, &errb)
	if code != ExitUsage || !strings.Contains(errb.String(), "activate: evidence") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
