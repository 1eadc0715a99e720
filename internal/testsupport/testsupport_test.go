package testsupport

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFreePortIsBindableAndBelowEphemeral(t *testing.T) {
	p := FreePort(t)
	if p < 20000 || p >= 32000 {
		t.Fatalf("FreePort = %d, want 20000-31999", p)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d from FreePort cannot be bound: %v", p, err)
	}
	l.Close()
}

func TestBuildOnceThenCleanup(t *testing.T) {
	var wg sync.WaitGroup
	paths := make([]string, 4)
	for i := range paths {
		wg.Add(1)
		go func() { defer wg.Done(); paths[i] = FakeEngine(t) }()
	}
	wg.Wait()
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Fatalf("two builds: %s and %s", paths[0], p)
		}
	}
	st, err := os.Stat(paths[0])
	if err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("fake engine not built as an executable: %v", err)
	}
	if err := Cleanup(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(paths[0]); !os.IsNotExist(err) {
		t.Fatalf("Cleanup left %s: %v", paths[0], err)
	}
	if _, err := Build("github.com/hiro-dev/hiro/cmd/no-such-command"); err == nil {
		t.Fatal("building a missing command gave no error")
	}
	Cleanup()
}

func TestCaseSetDirsFindsTheRepositorysSets(t *testing.T) {
	dirs := CaseSetDirs()
	want := map[string]bool{
		filepath.Join(Root(), "internal", "engine", "testdata", "field"): false,
		filepath.Join(Root(), "examples", "gpu", "results"):              false,
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "cases.json")); err != nil {
			t.Errorf("CaseSetDirs lists %s without a cases.json", d)
		}
		if _, ok := want[d]; ok {
			want[d] = true
		}
	}
	for d, seen := range want {
		if !seen {
			t.Errorf("CaseSetDirs %v misses %s", dirs, d)
		}
	}
}

// With HIRO_TEST_PREBUILT set, Build takes the binary from that folder and
// compiles nothing (the import paths here do not exist: a go build fails);
// a binary missing there is an error that names the variable.
func TestBuildTakesPrebuilt(t *testing.T) {
	pre := t.TempDir()
	if err := os.WriteFile(filepath.Join(pre, "hiro-prebuilt-tool"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(PrebuiltEnv, pre)
	p, err := Build("example.invalid/none/hiro-prebuilt-tool")
	if err != nil || p != filepath.Join(pre, "hiro-prebuilt-tool") {
		t.Fatalf("Build = %q, %v; want the prebuilt binary", p, err)
	}
	if _, err := Build("example.invalid/none/hiro-prebuilt-missing"); err == nil || !strings.Contains(err.Error(), PrebuiltEnv) {
		t.Fatalf("missing prebuilt binary: err %v, want one naming %s", err, PrebuiltEnv)
	}
}

// TestWaitFor: the condition is asked until it holds (true, after the
// polls it took) and no longer than within (false, with the condition
// still asked at least once).
func TestWaitFor(t *testing.T) {
	n := 0
	if !WaitFor(5*time.Second, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("a condition true at the third ask: asked %d times", n)
	}
	n = 0
	start := time.Now()
	if WaitFor(50*time.Millisecond, func() bool { n++; return false }) {
		t.Error("a condition never true was reported true")
	}
	if took := time.Since(start); n < 2 || took < 50*time.Millisecond || took > 5*time.Second {
		t.Errorf("never true: asked %d times in %s, want several within about 50ms", n, took)
	}
}
