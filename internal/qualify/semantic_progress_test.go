package qualify

import (
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/extract"
)

// TestDocProgressLineAgreesInNumber: one claim is "1 claim", not
// "1 claims".
func TestDocProgressLineAgreesInNumber(t *testing.T) {
	for _, tc := range []struct {
		claims, rejects int
		want            string
	}{
		{1, 1, "cand: document 2/5 (bakery) done: 1 claim, 1 reject"},
		{0, 2, "cand: document 2/5 (bakery) done: 0 claims, 2 rejects"},
		{3, 0, "cand: document 2/5 (bakery) done: 3 claims, 0 rejects"},
	} {
		got := docProgressLine("cand", 2, 5, extract.DocProgress{DocID: "bakery", Status: "done", Claims: tc.claims, Rejects: tc.rejects})
		if got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// A side's extraction is never silent for longer than the heartbeat: with
// no document finished, a line says how many sentences are done; a line
// written meanwhile (a finished document) puts the heartbeat off.
func TestSideHeartbeat(t *testing.T) {
	p := &sideProgress{backend: "prod", docsTotal: 5, start: time.Now()}
	p.noteLine(p.start)
	p.Start(48, 0)
	p.Add(12)
	p.docsDone.Add(2)
	lines := make(chan string, 100)
	stop := make(chan struct{})
	go p.beat(stop, 40*time.Millisecond, func(s string) { lines <- s })
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "prod: 12 of 48 sentences extracted (2 of 5 documents done), ") || !strings.Contains(l, " so far, about ") || !strings.HasSuffix(l, " left for this side at this rate") {
			t.Errorf("heartbeat %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no heartbeat")
	}
	close(stop)
	// Lines written all the time: no heartbeat between them.
	quiet := make(chan string, 100)
	stop = make(chan struct{})
	p.noteLine(time.Now())
	go p.beat(stop, time.Second, func(s string) { quiet <- s })
	deadline := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(deadline) {
		p.noteLine(time.Now())
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	if n := len(quiet); n != 0 {
		t.Errorf("%d heartbeats while other lines kept coming", n)
	}
}

// TestSideETA (issue 26 F10): the progress line says how long the side
// has left at its rate so far: 71 of 240 sentences in 9m41s leaves about
// 23 minutes; nothing before the first sentence or after the last.
func TestSideETA(t *testing.T) {
	for _, c := range []struct {
		elapsed     time.Duration
		done, total int64
		want        string
	}{
		{9*time.Minute + 41*time.Second, 71, 240, ", about 23 min left for this side at this rate"},
		{10 * time.Second, 12, 48, ", about 30 s left for this side at this rate"},
		{30 * time.Minute, 10, 48, ", about 1h54m left for this side at this rate"},
		{time.Minute, 0, 48, ""},
		{time.Minute, 48, 48, ""},
	} {
		if got := etaText(c.elapsed, c.done, c.total); got != c.want {
			t.Errorf("%v, %d of %d: %q, want %q", c.elapsed, c.done, c.total, got, c.want)
		}
	}
	p := &sideProgress{backend: "prod", docsTotal: 48, start: time.Now().Add(-9*time.Minute - 41*time.Second)}
	p.Start(240, 0)
	p.Add(71)
	if l := p.line(p.start.Add(9*time.Minute + 41*time.Second)); !strings.HasSuffix(l, "9m41s so far, about 23 min left for this side at this rate") {
		t.Errorf("heartbeat %q", l)
	}
}

// A resumed extraction counts on from the documents the earlier run
// finished (issue 26 F12): it says what it reuses, numbers the next
// document after them, and its heartbeat counts them as done.
func TestExtractionLinesCountWhatAResumeReused(t *testing.T) {
	var lines []string
	onCommit, prog, stop := ExtractionLines("prod", "prod (replicate 1/2)", 48, func(s string) { lines = append(lines, s) })
	defer stop()
	prog.Start(120, 8)
	onCommit(extract.DocProgress{DocID: "bakery", Status: "done", Claims: 1})
	if len(lines) != 2 {
		t.Fatalf("lines %q, want the resume line and one document line", lines)
	}
	if want := "prod (replicate 1/2): 8 of 48 documents done from the interrupted run, resuming 40"; lines[0] != want {
		t.Errorf("resume line %q, want %q", lines[0], want)
	}
	if !strings.HasPrefix(lines[1], "prod (replicate 1/2): document 9/48 (bakery) done: 1 claim, 0 rejects") {
		t.Errorf("first document after the resume: %q, want document 9/48", lines[1])
	}
	if l := prog.(*sideProgress).line(time.Now()); !strings.Contains(l, "(9 of 48 documents done)") {
		t.Errorf("heartbeat %q does not count the reused documents", l)
	}
	// Nothing reused: no resume line; everything reused: nothing left.
	if got := resumeLine("prod", 48, 48); got != "prod: 48 of 48 documents done by an earlier run, nothing left to extract" {
		t.Errorf("all reused: %q", got)
	}
	var fresh []string
	_, prog2, stop2 := ExtractionLines("prod", "prod", 5, func(s string) { fresh = append(fresh, s) })
	defer stop2()
	prog2.Start(30, 0)
	if len(fresh) != 0 {
		t.Errorf("a fresh run wrote %q", fresh)
	}
}
