package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 'hiro backend start' of a requires_accelerator profile on a host that
// shows no GPU (no nvidia-smi on PATH here) is refused before launch:
// accelerator_unavailable predicted by the host rule, the reason and
// what to do, nothing started (no record, no log); --no-preflight
// launches it anyway (and the engine's own start decides).
func TestRequiresAcceleratorRefusedBeforeLaunchWithoutAGPU(t *testing.T) {
	fake := buildFakeEngine(t)
	t.Setenv("PATH", t.TempDir()) // no nvidia-smi: the host shows no GPU
	dir := t.TempDir()
	port := cliFreePort(t)
	cfg := filepath.Join(dir, "hiro.toml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`state_dir = "state"
[backends.gpu]
engine = "llamacpp"
command = %q
args = ["--port", "%d", "--model", "fake-model"]
port = %d
model = "fake-model"
requires_accelerator = true
`, fake, port, port)), 0o644))
	code, out, errs := runHiro(t, "--config", cfg, "backend", "start", "gpu")
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", code, ExitFailed, out, errs)
	}
	for _, want := range []string{"accelerator_unavailable in phase prereq", "predicted before launch", "the host shows no GPU", "remove requires_accelerator", "nothing was started", "--no-preflight"} {
		if !strings.Contains(out, want) {
			t.Errorf("refusal lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errs, "phase launch") {
		t.Errorf("something was launched:\n%s", errs)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "state", "logs", "*")); len(logs) != 0 {
		t.Errorf("a refused start left logs %v", logs)
	}
	code, out, errs = runHiro(t, "--config", cfg, "backend", "start", "gpu", "--no-preflight")
	t.Cleanup(func() { runHiro(t, "--config", cfg, "backend", "stop", "gpu") })
	if strings.Contains(out, "predicted before launch") || !strings.Contains(errs, "phase launch") {
		t.Errorf("--no-preflight: exit %d, want a launch\n%s%s", code, out, errs)
	}
}
