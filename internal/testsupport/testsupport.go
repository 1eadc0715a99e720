package testsupport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that no earlier call in this test binary returned: a test that takes
// two ports before it binds either (production's and the candidate's)
// never gets one twice. It is drawn from 20000-31999, below the kernel's
// ephemeral range (32768+), so the client side of another test's
// connection cannot take it before the engine binds it. Test binaries of
// other packages run at the same time (go test ./... runs packages in
// parallel), so each port given is also claimed across processes: an
// exclusive flock on os.TempDir()/hiro-test-ports/PORT, held until this
// binary exits (the kernel drops it then, so nothing goes stale). It
// fails t when 200 draws found none free.
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	for i := 0; i < 200; i++ {
		port := 20000 + rand.IntN(12000)
		if portsGiven[port] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		if !claimPort(port) {
			continue
		}
		portsGiven[port] = true
		return port
	}
	t.Fatal("testsupport: no free loopback port in 20000-31999")
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
	portClaims []*os.File // held open: each keeps its port's flock
)

// claimPort takes port's cross-process claim (see FreePort): false when
// another live test binary holds it. Where the claim file cannot be
// made at all, the port is given unclaimed, as before claims existed.
func claimPort(port int) bool {
	dir := filepath.Join(os.TempDir(), "hiro-test-ports")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return true
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return true
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return false
	}
	portClaims = append(portClaims, f)
	return true
}

// Import paths of the commands tests run as real processes.
const (
	FakeEnginePkg = "github.com/hiro-dev/hiro/cmd/hiro-fake-engine"
	HiroPkg       = "github.com/hiro-dev/hiro/cmd/hiro"
)

var (
	mu     sync.Mutex
	dir    string
	builds = map[string]*build{}
)

type build struct {
	once sync.Once
	path string
	err  error
}

// PrebuiltEnv names a folder of binaries built beforehand (`go build -o
// DIR/hiro ./cmd/hiro`, ...): Build takes DIR/<base of pkg> from it instead
// of compiling, so a compiled test binary (`go test -c`) runs on a machine
// without Go (the benchmarks on a quiet machine).
const PrebuiltEnv = "HIRO_TEST_PREBUILT"

// Build compiles the command pkg (an import path) with `go build` once per
// test binary and returns the binary's path, in a temporary folder that
// Cleanup removes; with PrebuiltEnv set it returns the binary found there
// (an error when it is missing). Concurrent callers share the one build; a failed build
// returns the same error (with go build's output) to every caller.
func Build(pkg string) (string, error) {
	mu.Lock()
	b := builds[pkg]
	if b == nil {
		b = &build{}
		builds[pkg] = b
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "hiro-testbin-")
		if err != nil {
			mu.Unlock()
			return "", err
		}
		dir = d
	}
	d := dir
	mu.Unlock()
	b.once.Do(func() {
		if pre := os.Getenv(PrebuiltEnv); pre != "" {
			b.path = filepath.Join(pre, path.Base(pkg))
			if _, err := os.Stat(b.path); err != nil {
				b.err = fmt.Errorf("%s=%s names no %s: build it there with go build -o, or unset %s: %v", PrebuiltEnv, pre, path.Base(pkg), PrebuiltEnv, err)
			}
			return
		}
		b.path = filepath.Join(d, path.Base(pkg))
		if out, err := exec.Command("go", "build", "-o", b.path, pkg).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", pkg, err, out)
		}
	})
	return b.path, b.err
}

// MustBuild is Build for TestMain: on failure it prints the error and exits
// the test binary with status 1.
func MustBuild(pkg string) string {
	p, err := Build(pkg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		Cleanup()
		os.Exit(1)
	}
	return p
}

// FakeEngine returns cmd/hiro-fake-engine built once per test binary; it
// fails t when the build fails.
func FakeEngine(t testing.TB) string {
	t.Helper()
	p, err := Build(FakeEnginePkg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Hiro returns cmd/hiro built once per test binary; it fails t when the
// build fails.
func Hiro(t testing.TB) string {
	t.Helper()
	p, err := Build(HiroPkg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Cleanup removes every binary Build made and reports an error when the
// folder is still there. TestMain calls it after m.Run; a later Build makes
// a fresh folder.
func Cleanup() error {
	mu.Lock()
	defer mu.Unlock()
	if dir == "" {
		return nil
	}
	d := dir
	dir = ""
	builds = map[string]*build{}
	if err := os.RemoveAll(d); err != nil {
		return fmt.Errorf("testsupport: removing %s: %w", d, err)
	}
	if _, err := os.Stat(d); err == nil {
		return fmt.Errorf("testsupport: %s is still there after cleanup", d)
	}
	return nil
}

// Root returns the absolute path of the repository checkout (found from
// this source file's location).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// CaseSetDirs returns the absolute folders of every failure-log case set
// present (a cases.json beside the logs it names, read with
// engine.LoadCaseSet or engine.LoadCaseFile, the one loader): the handed
// sets ../shared/cases/*/ beside the checkout (absent in a fresh clone),
// the field and live corpora internal/engine/testdata/*/ and the failures
// captured on an H200 in examples/gpu/results. Each group is sorted by
// name; a set added in any of these places is picked up with no edit.
func CaseSetDirs() []string {
	root := Root()
	var dirs []string
	for _, pattern := range []string{
		filepath.Join(root, "..", "shared", "cases", "*", "cases.json"),
		filepath.Join(root, "internal", "engine", "testdata", "*", "cases.json"),
		filepath.Join(root, "examples", "gpu", "results", "cases.json"),
	} {
		files, _ := filepath.Glob(pattern) // the patterns are well formed
		sort.Strings(files)
		for _, f := range files {
			dirs = append(dirs, filepath.Clean(filepath.Dir(f)))
		}
	}
	return dirs
}

// NobodyUID is the uid GiveToNobody gives files to: nobody's on Debian
// and most Linux distributions.
const NobodyUID = 65534

// GiveToNobody makes path (not following a symbolic link) owned by the
// user nobody, so a test can hold another user's file or folder. It needs
// root (CI and the development machines run tests as root); elsewhere it
// skips the test saying so.
func GiveToNobody(t testing.TB, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("giving %s to another user needs root; run the tests as root to check another user's files are refused", path)
	}
	if err := os.Lchown(path, NobodyUID, NobodyUID); err != nil {
		t.Fatalf("chown nobody %s: %v", path, err)
	}
	t.Cleanup(func() { _ = os.Lchown(path, os.Getuid(), os.Getgid()) })
}
