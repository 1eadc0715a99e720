package qualify_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// The shipped campaigns load: their plans and the configurations they
// name validate (examples/activate is the one that qualifies, for the
// activation walk-through of docs/activation.md).
func TestShippedExamplePlansLoad(t *testing.T) {
	// examples/seed-replay's candidate runs .bin/hiro-fake-engine, which
	// scripts/build.sh makes; a fresh clone has none, so put the test
	// binary's build there (it is ignored by git) when it is missing.
	shipped := filepath.Join(testsupport.Root(), ".bin", "hiro-fake-engine")
	if _, err := os.Stat(shipped); os.IsNotExist(err) {
		installFakeEngine(t, shipped)
	}
	for _, ex := range []string{"demo", "activate", "seed-replay"} {
		plan := filepath.Join("..", "..", "examples", ex, "plan.toml")
		p, cfg, err := qualify.LoadPlan(plan, "")
		if err != nil {
			t.Errorf("examples/%s: %v", ex, err)
			continue
		}
		if cfg.Backends[p.Candidate] == nil {
			t.Errorf("examples/%s: candidate %q is not in its configuration", ex, p.Candidate)
		}
	}
}

// installFakeEngine copies the fake engine this test binary built to path.
func installFakeEngine(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(fakeEngine)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// The demo's fixed ports: a port another program listens on is replaced
// by a free one (scripts/example-ports.sh, which examples/demo/run.sh
// calls), said on stderr, in copies of hiro.toml and plan.toml two
// levels down so their relative paths hold; a free port is kept as is.
func TestExamplePortsFallBackWhenBusy(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer busy.Close()
	taken := busy.Addr().(*net.TCPAddr).Port
	free := freePort(t)
	root := t.TempDir()
	here := filepath.Join(root, "examples", "demo")
	must(t, os.MkdirAll(here, 0o755))
	must(t, os.WriteFile(filepath.Join(here, "hiro.toml"), []byte(fmt.Sprintf("port = %d\nOLLAMA_HOST = \"127.0.0.1:%d\"\nother = %d\nstate_dir = \"../../.hiro/demo\"\n", taken, taken, free)), 0o644))
	must(t, os.WriteFile(filepath.Join(here, "plan.toml"), []byte("config = \"hiro.toml\"\n"), 0o644))
	// Files the configuration names relative to its folder (the seed
	// replay's logs/ and artifact/): found beside the copies too.
	must(t, os.MkdirAll(filepath.Join(here, "logs"), 0o755))
	must(t, os.WriteFile(filepath.Join(here, "logs", "v2.log"), []byte("replayed\n"), 0o644))
	script, _ := filepath.Abs(filepath.Join("..", "..", "scripts", "example-ports.sh"))
	cmd := exec.Command("bash", "-c", `source "$1"; example_ports "$2" "$3"; echo "plan=$plan"; echo "hiro_config=$hiro_config"`, "bash", script, strconv.Itoa(taken), strconv.Itoa(free))
	cmd.Env = append(os.Environ(), "here="+here, "root="+root, "hiro_config=unchanged")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s%s", err, stdout.String(), stderr.String())
	}
	copyDir := filepath.Join(root, ".hiro", "demo-ports")
	if !strings.Contains(stdout.String(), "plan="+filepath.Join(copyDir, "plan.toml")) || !strings.Contains(stdout.String(), "hiro_config="+filepath.Join(copyDir, "hiro.toml")) {
		t.Fatalf("$plan and $hiro_config not moved to the copies:\n%s%s", stdout.String(), stderr.String())
	}
	m := regexp.MustCompile(fmt.Sprintf(`port %d is in use by another program; using (\d+) instead`, taken)).FindStringSubmatch(stderr.String())
	if m == nil || strings.Contains(stderr.String(), fmt.Sprintf("port %d is in use", free)) {
		t.Fatalf("stderr does not say which port replaced %d (and only it):\n%s", taken, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(copyDir, "hiro.toml"))
	must(t, err)
	want := fmt.Sprintf("port = %s\nOLLAMA_HOST = \"127.0.0.1:%s\"\nother = %d\nstate_dir = \"../../.hiro/demo\"\n", m[1], m[1], free)
	if string(b) != want {
		t.Errorf("copied hiro.toml:\n%s\nwant:\n%s", b, want)
	}
	if b, err := os.ReadFile(filepath.Join(copyDir, "logs", "v2.log")); err != nil || string(b) != "replayed\n" {
		t.Errorf("the example's logs/ is not beside the copies: %q %v", b, err)
	}
	if l, err := net.Listen("tcp", "127.0.0.1:"+m[1]); err != nil {
		t.Errorf("the replacement port %s is not free: %v", m[1], err)
	} else {
		l.Close()
	}

	// Every port free: nothing is copied, the example's own plan is used.
	busy.Close()
	cmd = exec.Command("bash", "-c", `source "$1"; example_ports "$2"; echo "plan=$plan"`, "bash", script, strconv.Itoa(taken))
	cmd.Env = append(os.Environ(), "here="+here, "root="+root)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "plan="+filepath.Join(here, "plan.toml") {
		t.Errorf("with free ports: %v %q", err, out)
	}
}
