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
// While the stream runs it prints a heartbeat on stderr every
// HIRO_HEARTBEAT_SECONDS (60 by default, 0 for none; the period of
// scripts/heartbeat.sh): "test: go test has run N s: K of M packages
// done; running: a, b" (a race build of the whole module prints nothing
// for minutes). -packages=M gives M, the number of packages go test was
// given; without it the line says "K packages done".
//
// It exits 1 when anything failed or the stream held no test at all, and
// 2 when the stream cannot be read.
//
//	go test -json ./... 2>&1 | go run ./scripts/testsummary [-packages=M] [-fail=NAME]...
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
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
	prog := &progress{started: map[string]bool{}}
	for _, a := range os.Args[1:] {
		if n, ok := strings.CutPrefix(a, "-packages="); ok {
			m, err := strconv.Atoi(n)
			if err != nil || m < 0 {
				fmt.Fprintf(os.Stderr, "testsummary: -packages=%q is not a count\n", n)
				os.Exit(2)
			}
			prog.total = m
			continue
		}
		name, ok := strings.CutPrefix(a, "-fail=")
		if !ok || name == "" {
			fmt.Fprintf(os.Stderr, "testsummary: unknown argument %q; they are -packages=M and -fail=NAME\n", a)
			os.Exit(2)
		}
		extra = append(extra, name)
	}
	period := 60 * time.Second
	if v := os.Getenv("HIRO_HEARTBEAT_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			fmt.Fprintf(os.Stderr, "testsummary: HIRO_HEARTBEAT_SECONDS=%q is not a number of seconds\n", v)
			os.Exit(2)
		}
		period = time.Duration(n) * time.Second
	}
	stop := make(chan struct{})
	if period > 0 {
		go prog.beat(os.Stderr, period, stop)
	}
	r, err := summarizeProgress(os.Stdin, os.Stdout, prog, extra...)
	close(stop)
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
	return summarizeProgress(in, out, nil, extra...)
}

// summarizeProgress is summarize keeping prog (nil for none) up to date:
// which packages started and how many are done, for the heartbeat.
func summarizeProgress(in io.Reader, out io.Writer, prog *progress, extra ...string) (result, error) {
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
		if e.Test == "" {
			prog.saw(e)
		}
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

// progress is what the heartbeat says: the packages that started and not
// yet ended, and how many ended. Its methods may be called on nil.
type progress struct {
	mu      sync.Mutex
	total   int             // packages given to go test; 0: not known
	started map[string]bool // started, not yet done
	done    int
}

// saw records a package's event: "start", or its end (pass, fail, skip).
func (p *progress) saw(e event) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch e.Action {
	case "start":
		p.started[e.Package] = true
	case "pass", "fail", "skip":
		delete(p.started, e.Package)
		p.done++
	}
}

// line is the heartbeat after elapsed: how long, how many packages are
// done and which run now.
func (p *progress) line(elapsed time.Duration) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := fmt.Sprintf("test: go test has run %d s: ", int(elapsed.Round(time.Second)/time.Second))
	if p.total > 0 {
		s += fmt.Sprintf("%d of %d packages done", p.done, p.total)
	} else {
		s += fmt.Sprintf("%d packages done", p.done)
	}
	if len(p.started) == 0 {
		return s + "; none running now (go test is compiling test binaries)"
	}
	running := make([]string, 0, len(p.started))
	for pkg := range p.started {
		running = append(running, pkg)
	}
	sort.Strings(running)
	return s + "; running: " + strings.Join(running, ", ")
}

// beat writes the heartbeat line to w every period until stop is closed.
func (p *progress) beat(w io.Writer, period time.Duration, stop <-chan struct{}) {
	start := time.Now()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			fmt.Fprintln(w, p.line(time.Since(start)))
		}
	}
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
