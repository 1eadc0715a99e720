package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// hangGuard bounds a test's hiro that might hang on a read: a kill,
// reported as the hang it is, never a timing assertion.
const hangGuard = 2 * time.Minute

// A hiro waiting for a log that never comes ends at the first SIGINT or
// SIGTERM with exit 3, naming what it waited on (issue 26 G13: it said
// "still finishing (restoring production...)" and only SIGKILL ended it).
func TestDiagnoseInterruptedWhileWaiting(t *testing.T) {
	bin := testsupport.Hiro(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			fifo := filepath.Join(t.TempDir(), "engine.log")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Skipf("no named pipes here: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "diagnose", fifo, "--engine", "vllm")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// hiro's signal handling is in place once it prints.
			br := bufio.NewReader(stderr)
			line, err := br.ReadString('\n')
			if !strings.Contains(line, "waiting for the log on the named pipe") {
				cmd.Process.Kill()
				t.Fatalf("first stderr line %q (%v), want the wait named", line, err)
			}
			cmd.Process.Signal(sig)
			rest, _ := io.ReadAll(br)
			err = cmd.Wait()
			var ee *exec.ExitError
			if ctx.Err() != nil {
				t.Fatalf("hiro did not end on %s: killed after %v", sig, hangGuard)
			}
			if !errors.As(err, &ee) || ee.ExitCode() != ExitAborted {
				t.Fatalf("exit %v, want %d; stderr %s", err, ExitAborted, rest)
			}
			if !strings.Contains(string(rest), "while waiting for the log on "+fifo) || strings.Contains(string(rest), "still finishing") {
				t.Errorf("stderr %q: want the interrupted wait named, no 'still finishing'", rest)
			}
		})
	}
}

// A named pipe as --config is refused before any read (exit 2): a read of
// it blocks, and hiro reads its configuration more than once.
func TestConfigNamedPipeRefused(t *testing.T) {
	bin := testsupport.Hiro(t)
	fifo := filepath.Join(t.TempDir(), "hiro.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--config", fifo, "backend", "status")
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("hiro blocked on the named pipe: killed after %v", hangGuard)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != ExitUsage || !strings.Contains(stderr.String(), "is a named pipe (FIFO), not a regular file") {
		t.Errorf("exit %v, stderr %q: want exit 2 naming the named pipe", err, stderr.String())
	}
	_ = os.Remove(fifo)
}

// The second signal's line says what the command still finishes: a
// command that restores production says so, one that touches none
// names no production (issue 26 leftover 4: every command said
// "restoring production where needed").
func TestSecondSignalSaysWhatTheCommandFinishes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", "x.toml", "qualify", "plan.toml"}, "still finishing (stopping the candidate and restoring production where needed)"},
		{[]string{"rollback"}, "still finishing (finishing or undoing the production switch)"},
		{[]string{"recover"}, "still finishing (restoring production)"},
		{[]string{"extract", "doc.md", "--out", "o"}, "hiro: SIGINT again: still finishing; hiro exits when done"},
		{[]string{"diagnose", "log", "--engine", "vllm"}, "hiro: SIGINT again: still finishing; hiro exits when done"},
	} {
		got := againLine("SIGINT", finishingFor(c.args))
		if !strings.Contains(got, c.want) || (!strings.Contains(c.want, "production") && strings.Contains(got, "production")) {
			t.Errorf("hiro %s: second signal says %q, want %q", strings.Join(c.args, " "), got, c.want)
		}
	}
}
