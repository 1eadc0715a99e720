package main

import (
	"bytes"
	"strings"
	"testing"
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
