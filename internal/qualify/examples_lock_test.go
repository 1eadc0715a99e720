package qualify_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// A second run of an example while one runs exits 6 naming the first
// (its pid) and how to wait or stop it, before it touches ports or
// production (issue 26 G16: the second demo took the first one's servers
// for another program's, and exited 2 saying "its profile changed").
// scripts/example-lock.sh runs for real under bash; the first run holds
// the lock until its standard input closes.
func TestExampleLockRefusesASecondRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	if _, err := exec.LookPath("flock"); err != nil {
		t.Skip("flock(1) not found: the examples run without a lock there")
	}
	root := t.TempDir()
	here := filepath.Join(root, "examples", "demo")
	must(t, os.MkdirAll(here, 0o755))
	lockScript := filepath.Join(testsupport.Root(), "scripts", "example-lock.sh")
	run := func(then string) *exec.Cmd {
		return exec.Command(bash, "-c", `here="$1"; root="$2"; source "$3"; example_lock; `+then, "run", here, root, lockScript)
	}

	first := run("echo held; read -r _ || true")
	stdin, err := first.StdinPipe()
	must(t, err)
	stdout, err := first.StdoutPipe()
	must(t, err)
	must(t, first.Start())
	defer first.Process.Kill()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "held\n" {
		t.Fatalf("the first run did not take the lock: %q %v", line, err)
	}

	out, err := run("echo second ran").CombinedOutput()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 6 {
		t.Fatalf("second run: %v, want exit 6\n%s", err, out)
	}
	for _, want := range []string{"another run of examples/demo is in progress (pid " + strconv.Itoa(first.Process.Pid) + ", started ", "nothing was started or stopped", "Ctrl-C", "run this again"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("second run's message lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "second ran") {
		t.Errorf("the second run went on:\n%s", out)
	}

	stdin.Close()
	must(t, first.Wait())
	if out, err := run("echo third ran").CombinedOutput(); err != nil || !strings.Contains(string(out), "third ran") {
		t.Errorf("a run after the first ended: %v\n%s", err, out)
	}
}
