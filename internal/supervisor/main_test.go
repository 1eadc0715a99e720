package supervisor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// fakeEngine is the path of cmd/hiro-fake-engine, built once per test
// binary by TestMain.
var fakeEngine string

func TestMain(m *testing.M) {
	fakeEngine = testsupport.MustBuild(testsupport.FakeEnginePkg)
	code := m.Run()
	if err := testsupport.Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// freePort is testsupport.FreePort, the one free-port helper of hiro's tests.
var freePort = testsupport.FreePort

// fakeProfile loads a one-backend configuration whose command is the
// fake engine with args; extra is more TOML for the profile table.
func fakeProfile(t testing.TB, kind string, port int, args []string, extra string) (*config.Profile, string) {
	t.Helper()
	dir := t.TempDir()
	var q []string
	for _, a := range args {
		q = append(q, strconv.Quote(a))
	}
	portLine := ""
	if port > 0 {
		portLine = fmt.Sprintf("port = %d", port)
	} else {
		portLine = fmt.Sprintf("port = %d", freePort(t))
	}
	for _, d := range []string{`ready_timeout = "20s"`, `stall_timeout = "10s"`, `stop_grace = "2s"`} {
		if !strings.Contains(extra, strings.SplitN(d, " ", 2)[0]+" ") {
			extra += "\n" + d
		}
	}
	toml := fmt.Sprintf(`state_dir = "state"
[backends.fake]
engine = %q
command = %q
args = [%s]
%s
model = "fake-model"
%s
`, kind, fakeEngine, strings.Join(q, ", "), portLine, extra)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatalf("config: %v\n%s", err, toml)
	}
	return c.Backends["fake"], c.StateDir
}

// startFake starts the profile and registers a cleanup that stops it.
// Other test suites on the machine may take the chosen port between
// freePort and the start: a port_in_use not caused by this test process
// is retried on a new port (the profile's port, base URL, arguments and
// environment are rewritten).
func startFake(t testing.TB, p *config.Profile, stateDir string) (*Process, *Result) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		proc, res := Start(context.Background(), p, Options{StateDir: stateDir})
		if proc != nil {
			t.Cleanup(func() { proc.Stop(context.Background()) })
		}
		f := res.Failure
		if attempt < 3 && f != nil && f.Class == failure.ClassPortInUse && p.Port != 0 &&
			!strings.Contains(f.RootCause, "pid "+strconv.Itoa(os.Getpid())+" ") {
			t.Logf("port %d taken by someone else (%s); retrying on another", p.Port, f.RootCause)
			movePort(t, p, freePort(t))
			continue
		}
		return proc, res
	}
}

// movePort rewrites every mention of p's port to port.
func movePort(t testing.TB, p *config.Profile, port int) {
	old, neu := strconv.Itoa(p.Port), strconv.Itoa(port)
	for i, a := range p.Args {
		if a == old {
			p.Args[i] = neu
		}
	}
	for k, v := range p.Env {
		p.Env[k] = strings.ReplaceAll(v, ":"+old, ":"+neu)
	}
	p.BaseURL = strings.ReplaceAll(p.BaseURL, ":"+old, ":"+neu)
	p.Port = port
}

var rePidLine = regexp.MustCompile(`fake: (?:started helper|wrapper pid=\d+ started engine) pid=(\d+)`)

// logPIDs returns the pids the fake engine logged for its helper or
// wrapped engine.
func logPIDs(t testing.TB, logPath string) []int {
	t.Helper()
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, m := range rePidLine.FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	s, err := procfs.ReadStat(pid)
	return err == nil && s.Alive()
}

// killLater kills pid at the end of the test (escaped helpers).
func killLater(t testing.TB, pid int) {
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cond()
}
