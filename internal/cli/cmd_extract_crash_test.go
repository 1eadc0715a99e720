package cli

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// TestExtractSIGKILLConcurrentResume kills a real `hiro extract` running
// 6 requests in flight (documents committed in groups) with SIGKILL after
// its first checkpoints, then reruns it: every document checkpointed
// before the kill is kept and not redone, and the finished directory is
// byte-identical to an uninterrupted run's (claims, rejects, checkpoints).
func TestExtractSIGKILLConcurrentResume(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds the hiro binary")
	}
	bin := testsupport.Hiro(t)
	fake := buildFakeEngine(t)
	port := cliFreePort(t)
	// A token every 2 ms: a reply takes about 0.2 s, so the kill lands
	// while requests are in flight.
	startFakeDirect(t, fake, port, `"--token-delay", "2ms"`)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[backends.fake]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:%d\"\nmodel = \"fake-model\"\n", port)), 0o644)
	args := func(out string) []string {
		return []string{"--config", cfg, "extract", "--backend", "fake", "--corpus", claimsMiniCorpus, "--out", out, "--concurrency", "6"}
	}
	env := append(os.Environ(), "HIRO_LEASE_DIR="+t.TempDir())
	ref := filepath.Join(dir, "ref")
	cmd := exec.Command(bin, args(ref)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("uninterrupted run: %v\n%s", err, out)
	}

	out := filepath.Join(dir, "out")
	cmd = exec.Command(bin, args(out)...)
	cmd.Env = env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	progress := filepath.Join(out, extract.ProgressFile)
	deadline := time.Now().Add(60 * time.Second)
	for countLines(progress) < 1 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no checkpoint after 60s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before, _ := os.ReadFile(progress)
	finished := countLines(progress)
	if finished >= 5 {
		t.Skipf("the run finished (%d documents) before it could be killed", finished)
	}
	cmd = exec.Command(bin, args(out)...)
	cmd.Env = env
	res, err := cmd.CombinedOutput()
	if err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("rerun: %v\n%s", err, res)
	}
	if !strings.Contains(string(res), fmt.Sprintf("%d finished earlier", finished)) {
		t.Errorf("the rerun did not keep the %d documents checkpointed before the kill:\n%s", finished, res)
	}
	after, _ := os.ReadFile(progress)
	if i := bytes.LastIndexByte(before, '\n'); i >= 0 {
		before = before[:i+1] // a torn last line is dropped by the rerun
	}
	if !bytes.HasPrefix(after, before) {
		t.Errorf("checkpoints written before the kill were changed by the rerun")
	}
	for _, f := range []string{extract.ClaimsFile, extract.RejectsFile, extract.ProgressFile} {
		a, _ := os.ReadFile(filepath.Join(ref, f))
		b, _ := os.ReadFile(filepath.Join(out, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s after kill and resume differs from the uninterrupted run (%d vs %d bytes)", f, len(b), len(a))
		}
	}
}
