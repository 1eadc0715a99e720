// Command testsummary reads `go test -json` on its standard input and
// writes what a person reads of a test run: one line per package (ok or
// FAIL, with its time), the whole output of every failed test, every
// skipped test with its reason, and last a line of counts exactly of the
// form "N passed, N failed, N skipped" (CI's judge reads that line).
// Subtests count as tests. A package that fails without a failed test
// (a build error, a panic in TestMain, a timeout) counts as one failure.
//
// Each argument -fail=NAME counts one more failure, listed by its name:
// scripts/test.sh names a check that ran before the tests (gofmt, go vet)
// this way, so the counts line still says the run failed.
//
// It exits 1 when anything failed or the stream held no test at all, and
// 2 when the stream cannot be read.
//
//	go test -json ./... 2>&1 | go run ./scripts/testsummary [-fail=NAME]...
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string  `json:"Action"`
	Package string  `json:"Package"`
	Test    string  `json:"Test"`
	Elapsed float64 `json:"Elapsed"`
	Output  string  `json:"Output"`
}

// result is a run's tally.
type result struct {
	passed, failed, skipped int
	skips                   []string // "pkg TestX: reason"
	failures                []string // "pkg TestX" or "pkg (package)"
}

func main() {
	var extra []string
	for _, a := range os.Args[1:] {
		name, ok := strings.CutPrefix(a, "-fail=")
		if !ok || name == "" {
			fmt.Fprintf(os.Stderr, "testsummary: unknown argument %q; the only one is -fail=NAME\n", a)
			os.Exit(2)
		}
		extra = append(extra, name)
	}
	r, err := summarize(os.Stdin, os.Stdout, extra...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if r.failed > 0 || r.passed+r.skipped == 0 {
		os.Exit(1)
	}
}

// summarize reads the stream from in and writes the summary to out.
// Lines that are not JSON (a build error printed by go test on the same
// stream) are passed through as they are.
// Each of extra is one more failure (a check that ran before the tests).
func summarize(in io.Reader, out io.Writer, extra ...string) (result, error) {
	var r result
	outputs := map[string][]string{} // pkg + "\x00" + test → its output lines
	pkgFailedTests := map[string]int{}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output", "build-output":
			outputs[key] = append(outputs[key], e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				r.packageDone(out, e, outputs[key], pkgFailedTests[e.Package])
				delete(outputs, key)
				continue
			}
			switch e.Action {
			case "pass":
				r.passed++
			case "fail":
				r.failed++
				pkgFailedTests[e.Package]++
				r.failures = append(r.failures, e.Package+" "+e.Test)
				fmt.Fprintf(out, "--- FAIL: %s %s (%.2fs)\n", e.Package, e.Test, e.Elapsed)
				for _, o := range outputs[key] {
					fmt.Fprint(out, "    ", o)
				}
			case "skip":
				r.skipped++
				r.skips = append(r.skips, e.Package+" "+e.Test+": "+skipReason(outputs[key]))
			}
			delete(outputs, key)
		}
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	for _, x := range extra {
		r.failed++
		r.failures = append(r.failures, x+" (a check before the tests)")
	}
	if len(r.skips) > 0 {
		sort.Strings(r.skips)
		fmt.Fprintf(out, "\nskipped (%d):\n", len(r.skips))
		for _, s := range r.skips {
			fmt.Fprintln(out, "  "+s)
		}
	}
	if len(r.failures) > 0 {
		fmt.Fprintf(out, "\nfailed (%d):\n", len(r.failures))
		for _, f := range r.failures {
			fmt.Fprintln(out, "  "+f)
		}
	}
	fmt.Fprintf(out, "%d passed, %d failed, %d skipped\n", r.passed, r.failed, r.skipped)
	return r, nil
}

// packageDone writes a package's line; a failed package without a failed
// test is one failure, its output written in full.
func (r *result) packageDone(out io.Writer, e event, lines []string, failedTests int) {
	switch {
	case e.Action == "fail" && failedTests == 0:
		r.failed++
		r.failures = append(r.failures, e.Package+" (the package: build, TestMain or timeout)")
		fmt.Fprintf(out, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
		for _, o := range lines {
			fmt.Fprint(out, "    ", o)
		}
	case e.Action == "fail":
		fmt.Fprintf(out, "FAIL\t%s\t%.1fs\n", e.Package, e.Elapsed)
	case e.Action == "pass":
		fmt.Fprintf(out, "ok\t%s\t%.1fs\n", e.Package, e.Elapsed)
	}
	// "skip" of a package: no test files; nothing to say.
}

// skipReason is what a skipped test logged (t.Skip's message), on one
// line: its output without the "=== RUN" and "--- SKIP" lines and without
// the file:line prefix of each logged line.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		if i := strings.Index(t, ": "); i > 0 && strings.Contains(t[:i], ".go:") {
			t = t[i+2:]
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}
