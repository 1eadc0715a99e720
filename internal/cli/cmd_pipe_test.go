package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// A reader that goes away ('hiro backend status --json | head -c0') makes
// the write fail with EPIPE: hiro ends with a failing status and prints no
// error about it (it printed {"error":"write /dev/stdout: broken pipe"}).
func TestBrokenPipeIsSilent(t *testing.T) {
	bin := testsupport.Hiro(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte("state_dir = \"state\"\n[backends.fake]\nengine = \"llamacpp\"\ncommand = \"true\"\nport = 29999\nmodel = \"m\"\n"), 0o644)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--config", cfg, "backend", "status", "--json")
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	if err == nil {
		t.Fatalf("status into a closed pipe exited 0: the failed write went unnoticed")
	}
	if stderr.Len() != 0 {
		t.Errorf("status into a closed pipe printed %q; want nothing", stderr.String())
	}
}
