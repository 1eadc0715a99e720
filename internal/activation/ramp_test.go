package activation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/activation"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/journal"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/prompt"
	"github.com/hiro-dev/hiro/internal/ramp"
)

// lastRecord is the newest production record of w's configuration.
func (w *world) lastRecord() *production.Record {
	w.t.Helper()
	hist, err := production.History(w.cfgPath)
	must(w.t, err)
	if len(hist) == 0 {
		w.t.Fatal("no production record")
	}
	return hist[len(hist)-1]
}

// waitRampShare waits until the router's ramp serves share (or ended).
func waitRampShare(t *testing.T, sp *serveProc, share float64, within time.Duration) *evidence.RampResult {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		if st, err := sp.ctl.RampStatus(context.Background()); err == nil && st.Result != nil &&
			(st.Result.Share == share || st.Result.State != evidence.RampRamping) {
			return st.Result
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ramp did not reach %v within %s", share, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// underLoad starts production, qualifies the candidate, starts hiro
// serve in front of production and clients through it (answered 20
// requests already); it returns the candidate's evidence, the router and
// the load.
func (w *world) underLoad(clients int) (string, *serveProc, *load) {
	w.t.Helper()
	w.startProduction()
	evPath := w.qualify()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(w.t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	l := startLoad(url, clients, 4)
	l.waitMore(w.t, 20)
	return evPath, sp, l
}

// hiroBackground starts hiro with args and returns a function that waits
// for its end (exit status, output).
func (w *world) hiroBackground(args ...string) func() (int, string) {
	cmd := w.hiroCmd(args...)
	var out strings.Builder
	lw := &lockedWriter{b: &out}
	cmd.Stdout, cmd.Stderr = lw, lw
	must(w.t, cmd.Start())
	return func() (int, string) {
		err := cmd.Wait()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			w.t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), lw.String()
	}
}

// A progressive activation under load: the router ramps production's
// requests to the candidate 10 → 50 → 100 %, each step advancing on its
// own live comparison (the fakes answer thousands of clean requests a
// step: conclusive at a 2-point margin);
// then the switch commits with the ramp in the record, the journal entry
// shows the steps, and no client request failed.
func TestProgressiveActivationRampsThenSwitches(t *testing.T) {
	w := newWorld(t, false)
	evPath, sp, l := w.underLoad(4)
	code, out := w.hiro("activate", evPath, "--progressive", "10,50,100", "--soak", "300ms", "--min-requests", "456", "--journal", w.journal)
	l.waitMore(t, 20)
	l.finish()
	if code != 0 || !strings.Contains(out, "ramp: step 1 of 3: 10 % of production's requests to cand") || !strings.Contains(out, "ramp: step 3 of 3: 100 %") {
		t.Fatalf("activate: exit %d\n%s", code, out)
	}
	t.Logf("activate:\n%s", out)
	if p := sp.production(t); p != "cand" {
		t.Fatalf("the router serves %s after the ramp", p)
	}
	rec := w.lastRecord()
	if rec.Outcome != production.OutcomeSwitched || rec.Ramp == nil || rec.Ramp.State != evidence.RampCompleted || len(rec.Ramp.History) != 3 {
		t.Fatalf("record: %s, ramp %+v", rec.Outcome, rec.Ramp)
	}
	for _, h := range rec.Ramp.History {
		if h.Candidate.Requests < 150 || h.Candidate.Errors != 0 || (h.Decision != evidence.RampAdvance && h.Decision != evidence.RampComplete) {
			t.Errorf("step %v: %s (%s) candidate %+v", h.Share, h.Decision, h.Reason, h.Candidate)
		}
	}
	j, err := journal.Load(w.journal)
	must(t, err)
	found := false
	for _, e := range j.Entries {
		for _, sec := range e.Sections {
			found = found || (sec.Title == "Progressive ramp" && len(sec.Items) == 3 && strings.HasPrefix(sec.Items[0], "10 % of production's requests to cand"))
		}
		if found && e.Ramp == nil {
			t.Error("the ramp's journal entry holds no ramp to draw")
		}
		if e.Ramp != nil && len(e.Ramp.Series) < 3 {
			t.Errorf("the entry's ramp holds %d points over time, want one a look (at least one per step)", len(e.Ramp.Series))
		}
	}
	if !found {
		t.Errorf("no journal entry shows the ramp (%d entries)", len(j.Entries))
	}
	t.Logf("requests through the router: %s", l)
	if len(l.failed) > 0 || len(l.retry503) > 0 {
		t.Fatalf("client requests failed during a clean ramp: %s", l)
	}
	if l.ok["cand-model"] == 0 || l.ok["prod-model"] == 0 {
		t.Errorf("both backends should have answered: %s", l)
	}
}

// extractionBody is hiro's own extraction request for the i-th target
// sentence (the prompt's hash, its layout, the claims schema): the
// router checks its reply with the validators of hiro extract.
func extractionBody(i int) string {
	in := prompt.Input{HeadingPath: []string{"Bridges"}, Before: []string{"The city grew along the river."},
		Target: fmt.Sprintf("The bridge opened in 1932 and carried trams across the river %d times a day.", i), After: []string{"It was rebuilt later."}}
	var msgs []map[string]string
	for _, m := range extract.Messages(in) {
		msgs = append(msgs, map[string]string{"role": m.Role, "content": m.Content})
	}
	b, _ := json.Marshal(map[string]any{"model": "extraction", "max_tokens": 256, "temperature": 0, "messages": msgs,
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "claims", "schema": json.RawMessage(prompt.SchemaJSON()), "strict": true}}})
	return string(b)
}

// The candidate regresses at the 25 % step (a flag file the fake
// watches): it answers 500, or becomes 300 ms slower, or its extraction
// replies start quoting text the sentence does not have. The router
// reverses the ramp by itself on that measure, the activation stops the
// candidate and records a failed activation with the ramp and its
// reason; production never stopped; and no client request of the load
// failed (a 500 of the candidate is resent to production).
func TestProgressiveActivationReversesOnARegression(t *testing.T) {
	for _, c := range []struct{ measure, flag string }{
		{ramp.MeasureErrors, "--chat-fail-when"},
		{ramp.MeasureLatency, "--slow-when"},
		{ramp.MeasureInvalid, "--ungrounded-when"},
	} {
		t.Run(c.measure, func(t *testing.T) {
			flagFile := filepath.Join(t.TempDir(), "regress")
			w := newWorldWith(t, false, []string{"--chat", "claims"}, "--chat", "claims", c.flag, flagFile)
			w.startProduction()
			evPath := w.qualify()
			url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
			sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
			l := startLoadWith(url, 4, false, extractionBody)
			l.waitMore(t, 20)
			wait := w.hiroBackground("activate", evPath, "--progressive", "10,25,100", "--soak", "3s", "--min-requests", "456", "--journal", w.journal)
			if r := waitRampShare(t, sp, 0.25, 60*time.Second); r.State != evidence.RampRamping {
				l.finish()
				code, out := wait()
				t.Fatalf("the ramp ended before 25 %%: %s %s; activate exit %d\n%s", r.State, r.Reason, code, out)
			}
			must(t, os.WriteFile(flagFile, nil, 0o644))
			code, out := wait()
			t.Logf("activate:\n%s", out)
			l.waitMore(t, 50)
			l.finish()
			if code != 1 || !strings.Contains(out, "reversed at 25 %: "+c.measure+": ") {
				t.Fatalf("activate: exit %d, want 1 with a reversal on %s\n%s", code, c.measure, out)
			}
			if p := sp.production(t); p != "prod" {
				t.Fatalf("the router serves %s after the reversal", p)
			}
			rec := w.lastRecord()
			if rec.Outcome != production.OutcomeFailed || rec.Ramp == nil || rec.Ramp.State != evidence.RampReversed || !strings.Contains(rec.Error, c.measure) {
				t.Fatalf("record: %s %q, ramp %+v", rec.Outcome, rec.Error, rec.Ramp)
			}
			if _, ok := w.running("cand"); ok {
				t.Error("the candidate still runs after the reversal")
			}
			t.Logf("requests through the router: %s; resent %d", l, rec.Ramp.Resent)
			if len(l.failed) > 0 || len(l.retry503) > 0 {
				t.Errorf("client requests failed: %s; none may", l)
			}
			if l.ok["cand-model"] == 0 || l.ok["prod-model"] == 0 {
				t.Errorf("both backends should have answered: %s", l)
			}
		})
	}
}

// hiro rollback in the middle of a ramp stops it at its step: every
// request back on production, the activation records the ramp as
// stopped by the rollback.
func TestRollbackStopsARamp(t *testing.T) {
	w := newWorld(t, false)
	evPath, sp, l := w.underLoad(2)
	wait := w.hiroBackground("activate", evPath, "--progressive", "25,100", "--soak", "1h", "--journal", "")
	waitRampShare(t, sp, 0.25, 30*time.Second)
	l.waitMore(t, 20)
	// Mid-ramp, production is the old one for every command; the
	// router's status shows the ramp.
	code, out := w.hiro("status")
	t.Logf("status:\n%s", out)
	if !strings.Contains(out, "production  prod") || !strings.Contains(out, "ramp        prod → cand, ramping: step 1 of 2, 25 % of production's requests to cand") {
		l.finish()
		t.Fatalf("status mid-ramp: exit %d\n%s", code, out)
	}
	code, out = w.hiro("rollback")
	t.Logf("rollback:\n%s", out)
	if code != 0 || !strings.Contains(out, "The progressive activation of cand was stopped at step 1 of 2 (25 %)") {
		l.finish()
		t.Fatalf("rollback: exit %d\n%s", code, out)
	}
	acode, aout := wait()
	l.finish()
	if acode != 1 {
		t.Fatalf("activate: exit %d, want 1\n%s", acode, aout)
	}
	rec := w.lastRecord()
	if rec.Ramp == nil || rec.Ramp.State != evidence.RampStopped || rec.Ramp.Reason != "hiro rollback" || sp.production(t) != "prod" {
		t.Fatalf("record: %s, ramp %+v", rec.Outcome, rec.Ramp)
	}
	if len(l.failed) > 0 || len(l.retry503) > 0 {
		t.Fatalf("client requests failed: %s", l)
	}
}

// A candidate that needs the accelerator alone cannot ramp beside
// production: refused before anything starts, naming what works.
func TestProgressiveRefusedForAnExclusiveCandidate(t *testing.T) {
	w := newWorld(t, true)
	w.startProduction()
	evPath := w.qualify()
	code, out := w.hiro("activate", evPath, "--progressive", "1,100", "--journal", "")
	if code != 1 || !strings.Contains(out, "a progressive activation is impossible here; activate at once") || !strings.Contains(out, "second machine") {
		t.Fatalf("activate: exit %d\n%s", code, out)
	}
	if _, ok := w.running("cand"); ok {
		t.Error("the candidate was started")
	}
}

// A ramp that completed, whose candidate dies before the switch (killed
// between the ramp's end and the router's switch, from the activation's
// own progress line): the activation checks the candidate at the switch,
// does not point the router at a dead backend, reverses the ramp with
// the reason and records a failed activation; production never stopped.
// (The router may reverse first, on the first refused connection: its
// reason then says "before the switch".)
func TestCompletedRampWithDeadCandidateIsNotSwitched(t *testing.T) {
	w := newWorld(t, false)
	evPath, sp, l := w.underLoad(4)
	w.load()
	pol := ramp.Policy{Steps: []float64{0.5, 1}, MinRequests: 150, Soak: config.Duration{Duration: 300 * time.Millisecond}}
	must(t, pol.Fill())
	ctx := context.Background()
	router := activation.RouterFor(ctx, w.cfg)
	if router == nil {
		t.Fatal("no router for the configuration")
	}
	var lines []string
	killed := false
	progress := func(line string) {
		lines = append(lines, line)
		if !strings.HasPrefix(line, "router: ramp production's requests to cand: done") {
			return
		}
		st, ok := w.running("cand")
		if !ok {
			t.Error("the candidate does not run after its ramp completed")
			return
		}
		must(t, syscall.Kill(-st.PID, syscall.SIGKILL))
		deadline := time.Now().Add(10 * time.Second)
		for w.ready("cand") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		killed = true
	}
	out, err := activation.Activate(ctx, w.cfg, evPath, activation.Options{Progress: progress, Router: router, Progressive: &pol, JournalDir: w.journal})
	must(t, err)
	failedAtEnd := len(l.failed)
	l.waitMore(t, 50)
	l.finish()
	t.Logf("activate:\n%s", strings.Join(lines, "\n"))
	if !killed {
		t.Fatal("the ramp never completed: the candidate was not killed")
	}
	if p := sp.production(t); p != "prod" {
		t.Fatalf("the router serves %s after its candidate died before the switch", p)
	}
	rec := out.Record
	if rec.Outcome != production.OutcomeFailed || rec.Router || rec.Ramp == nil || rec.Ramp.State != evidence.RampReversed ||
		!strings.Contains(rec.Ramp.Reason, "the switch") || !strings.Contains(rec.Error, "failed its check at the switch") {
		t.Fatalf("record: %s (router switched %v) %q, ramp %+v", rec.Outcome, rec.Router, rec.Error, rec.Ramp)
	}
	if rec.Ramp.Share != 0 || len(rec.Ramp.Series) == 0 || rec.Ramp.Series[len(rec.Ramp.Series)-1].Share != 0 {
		t.Errorf("the reversed ramp's share %v, last point %+v; want 0", rec.Ramp.Share, rec.Ramp.Series)
	}
	if rec.Restored == nil || !rec.Restored.OK {
		t.Errorf("production not verified back: %+v", rec.Restored)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "check cand before the switch: FAILED") {
		t.Error("no progress line for the check at the switch")
	}
	t.Logf("requests through the router: %s", l)
	// What the candidate had in flight at the kill (up to one per
	// client) is resent to production: no client request fails.
	if len(l.failed) > 0 || len(l.failed) != failedAtEnd || len(l.retry503) > 0 {
		t.Errorf("client requests: %s; want none failed (the ones in flight at the kill are resent)", l)
	}
	if rec.Ramp.Resent == 0 {
		t.Errorf("the record counts no request resent to production: %+v", rec.Ramp)
	}
}
