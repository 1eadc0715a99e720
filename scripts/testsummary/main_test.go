package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

const stream = `{"Action":"run","Package":"p/a","Test":"TestOK"}
{"Action":"output","Package":"p/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"p/a","Test":"TestOK","Elapsed":0.1}
{"Action":"run","Package":"p/a","Test":"TestOK/sub"}
{"Action":"pass","Package":"p/a","Test":"TestOK/sub","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestNeedsOllama"}
{"Action":"output","Package":"p/a","Test":"TestNeedsOllama","Output":"=== RUN   TestNeedsOllama\n"}
{"Action":"output","Package":"p/a","Test":"TestNeedsOllama","Output":"    x_test.go:12: ollama not found: set HIRO_OLLAMA\n"}
{"Action":"output","Package":"p/a","Test":"TestNeedsOllama","Output":"--- SKIP: TestNeedsOllama (0.00s)\n"}
{"Action":"skip","Package":"p/a","Test":"TestNeedsOllama","Elapsed":0}
{"Action":"run","Package":"p/a","Test":"TestBroken"}
{"Action":"output","Package":"p/a","Test":"TestBroken","Output":"    y_test.go:3: got 1, want 2\n"}
{"Action":"fail","Package":"p/a","Test":"TestBroken","Elapsed":0.2}
{"Action":"fail","Package":"p/a","Elapsed":0.5}
{"Action":"output","Package":"p/b","Output":"panic: in TestMain\n"}
{"Action":"fail","Package":"p/b","Elapsed":0.1}
{"Action":"skip","Package":"p/c","Elapsed":0}
# p/d
not json: a build error
`

func TestSummarize(t *testing.T) {
	var out bytes.Buffer
	r, err := summarize(strings.NewReader(stream), &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if last := lines[len(lines)-1]; last != "2 passed, 2 failed, 1 skipped" {
		t.Errorf("last line %q\n%s", last, out.String())
	}
	if r.passed != 2 || r.failed != 2 || r.skipped != 1 {
		t.Errorf("tally %+v", r)
	}
	for _, want := range []string{
		"p/a TestNeedsOllama: ollama not found: set HIRO_OLLAMA",
		"--- FAIL: p/a TestBroken (0.20s)",
		"got 1, want 2",
		"p/b (the package: build, TestMain or timeout)",
		"panic: in TestMain",
		"not json: a build error",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

func TestSkipReasonWithoutMessage(t *testing.T) {
	if got := skipReason([]string{"=== RUN   TestX\n", "--- SKIP: TestX (0.00s)\n"}); got != "(no reason given)" {
		t.Errorf("skipReason = %q", got)
	}
}

// A check that failed before the tests is a failure of the counts line.
func TestSummarizeExtraFailures(t *testing.T) {
	var out bytes.Buffer
	if _, err := summarize(strings.NewReader(`{"Action":"pass","Package":"p","Test":"TestA"}`+"\n"), &out, "gofmt"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "gofmt (a check before the tests)\n1 passed, 1 failed, 0 skipped\n") {
		t.Errorf("summary:\n%s", out.String())
	}
}

// The heartbeat (a newcomer's T21: scripts/test.sh was silent for 7
// minutes before the first package line) says how long go test has run,
// how many packages are done and which run now; it is printed while the
// stream is open, not only at its end.
func TestHeartbeat(t *testing.T) {
	p := &progress{total: 3, started: map[string]bool{}}
	if got, want := p.line(61*time.Second), "test: go test has run 61 s: 0 of 3 packages done; none running now (go test is compiling test binaries)"; got != want {
		t.Errorf("before any package: %q, want %q", got, want)
	}
	pr, pw := io.Pipe()
	var out bytes.Buffer
	done := make(chan error)
	go func() {
		_, err := summarizeProgress(pr, &out, p)
		done <- err
	}()
	for _, l := range []string{
		`{"Action":"start","Package":"p/a"}`,
		`{"Action":"start","Package":"p/b"}`,
		`{"Action":"start","Package":"p/c"}`,
		`{"Action":"pass","Package":"p/a","Test":"TestA"}`,
		`{"Action":"pass","Package":"p/a","Elapsed":1}`,
	} {
		if _, err := io.WriteString(pw, l+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	var beats syncBuffer
	stop := make(chan struct{})
	go p.beat(&beats, 10*time.Millisecond, stop)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(beats.String(), "1 of 3 packages done; running: p/b, p/c") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	if !strings.Contains(beats.String(), "test: go test has run 0 s: 1 of 3 packages done; running: p/b, p/c") {
		t.Errorf("no heartbeat while the stream is open: %q", beats.String())
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "1 passed, 0 failed, 0 skipped\n") {
		t.Errorf("the counts line is not last on stdout:\n%s", out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
