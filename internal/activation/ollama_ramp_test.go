package activation_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/ollamatest"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/ramp"
)

// A progressive activation on the reference engine: production and
// candidate are real Ollama servers with the project's strong model,
// `hiro serve` in front, clients sending short chat requests through it.
// The ramp holds at its first step (50 %, a soak of an hour) until the
// candidate's process group is SIGKILLed mid-step; the router reverses
// the ramp by itself (the next request the candidate refuses goes to
// production), the activation records the reversal with its reason, and
// production still serves. The kill lands while the clients' requests
// run, and the count of failed client requests must be 0: a request in
// flight on the dead candidate (its connection closed before any byte of
// the reply) or refused by it is resent to production by the router,
// none is lost to the reversal.
func TestOllamaProgressiveActivationReversesOnAKilledCandidate(t *testing.T) {
	w, evPath := qualifiedOllamaPair(t, "Ollama candidate beside production", nil, nil) // skips under -short and without Ollama

	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 2*time.Minute)
	l := startLoad(url, 2, 2)
	l.waitMore(t, 5)

	wait := w.hiroBackground("activate", evPath, "--progressive", "50,100", "--soak", "1h", "--journal", w.journal)
	if r := waitRampShare(t, sp, 0.5, 2*time.Minute); r.State != evidence.RampRamping {
		l.finish()
		code, out := wait()
		t.Fatalf("the ramp ended before 50 %%: %s %s; activate exit %d\n%s", r.State, r.Reason, code, out)
	}
	// Mid-step: the candidate has answered some of its share.
	candAnswered := func() int {
		if rs, err := sp.ctl.RampStatus(context.Background()); err == nil && rs.Result != nil && len(rs.Result.History) > 0 {
			return rs.Result.History[len(rs.Result.History)-1].Candidate.Requests
		}
		return 0
	}
	deadline := time.Now().Add(time.Minute)
	for candAnswered() < 3 {
		if time.Now().After(deadline) {
			l.finish()
			t.Fatalf("the candidate answered %d requests in a minute at 50 %%: %s", candAnswered(), l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	candBefore := candAnswered()
	before := l.total()
	st, ok := w.running("cand")
	if !ok {
		l.finish()
		t.Fatal("the candidate does not run mid-ramp")
	}
	// The regression: the candidate's process group is killed while the
	// clients' requests run (two clients sending back to back: one is in
	// flight on it, or about to be); the test waits for its port to refuse.
	must(t, syscall.Kill(-st.PID, syscall.SIGKILL))
	killed := time.Now()
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", w.candPort), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Since(killed) > 10*time.Second {
			l.finish()
			t.Fatal("the candidate's port still accepts 10 s after SIGKILL")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The router reverses by itself, within a health interval at most;
	// should it not, a rollback ends the activation (its soak is an hour).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if rs, err := sp.ctl.RampStatus(context.Background()); err == nil && rs.Result != nil && rs.Result.State != evidence.RampRamping {
			break
		}
		if time.Now().After(deadline) {
			w.hiro("rollback")
			wait()
			l.finish()
			t.Fatalf("the ramp still routes to the killed candidate 30 s after SIGKILL: %s", l)
		}
	}
	code, out := wait()
	reversedAfter := time.Since(killed)
	t.Logf("activate:\n%s", out)
	l.waitMore(t, 10)
	l.finish()
	if code != 1 || !strings.Contains(out, "reversed at 50 %") {
		t.Fatalf("activate: exit %d, want 1 with the reversal\n%s", code, out)
	}
	if p := sp.production(t); p != "prod" {
		t.Fatalf("the router serves %s after the reversal", p)
	}
	rec := w.lastRecord()
	if rec.Outcome != production.OutcomeFailed || rec.Ramp == nil || rec.Ramp.State != evidence.RampReversed ||
		!strings.Contains(rec.Ramp.Reason, "the candidate is down") || rec.Ramp.Share != 0 || rec.Ramp.EndedAt == nil {
		t.Fatalf("record: %s %q, ramp %+v", rec.Outcome, rec.Error, rec.Ramp)
	}
	if _, ok := w.running("cand"); ok {
		t.Error("the candidate is recorded running after the reversal")
	}
	if !w.ready("prod") {
		t.Error("production does not answer its readiness check after the reversal")
	}
	t.Logf("Ollama ramp: %d client requests (%d on the candidate) before the kill; the router reversed %s after it, activate ended %s after it; reversal reason %q; resent to production %d, cut mid-reply %d; requests through the router: %s (total %d)",
		before, candBefore, rec.Ramp.EndedAt.Sub(killed).Round(time.Millisecond), reversedAfter.Round(time.Millisecond), rec.Ramp.Reason, rec.Ramp.Resent, rec.Ramp.CutMidReply, l, l.total())
	if rec.Ramp.Resent == 0 {
		t.Errorf("the record counts no request resent to production; the kill's requests must be: %+v", rec.Ramp)
	}
	if len(l.failed) > 0 || len(l.retry503) > 0 {
		t.Fatalf("client requests failed: %s", l)
	}
}

// A progressive activation on the reference engine whose candidate
// regresses on quality: production serves the project's strong model,
// the candidate the weak one (the same training stopped early: it
// answers READY, so its campaign qualifies, but it copies worse). Two
// clients run `hiro extract` through `hiro serve` on a two-sentence
// document whose sentences the weak model misquotes; at the 50 % step
// (a soak of an hour: it cannot advance) the router checks the
// candidate's replies with the validators of hiro extract and reverses
// the ramp on invalid_rate; the activation records the reversal and no
// extraction request failed.
func TestOllamaProgressiveActivationReversesOnValidators(t *testing.T) {
	router := func(w *world) string {
		return fmt.Sprintf("[backends.router]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:%d\"\nmodel = \"extraction\"\n", w.servePort)
	}
	w, evPath := qualifiedOllamaPairOf(t, "Weak Ollama candidate beside production", ollamatest.WeakModel, nil, nil, router) // skips under -short and without Ollama
	start := time.Now()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 2*time.Minute)
	// The first sentences of corpora/hiro-mini's bakery: the weak model's
	// quotes of the first are not in it (temperature 0: every time).
	doc := filepath.Join(w.dir, "bakery.txt")
	must(t, os.WriteFile(doc, []byte("Marta Olsen founded the Olsen Bakery in Tromvik in 1952. Her son Erik took over the bakery in 1980.\n"), 0o644))
	// Exit 1 is allowed: a claim was rejected (the weak model's quotes).
	endLoad := w.startExtractLoad(2, true, doc, "--max-repairs", "0")
	wait := w.hiroBackground("activate", evPath, "--progressive", "50,100", "--soak", "1h", "--journal", w.journal)
	if r := waitRampShare(t, sp, 0.5, 2*time.Minute); r.State != evidence.RampRamping {
		endLoad()
		code, out := wait()
		t.Fatalf("the ramp ended before 50 %%: %s %s; activate exit %d\n%s", r.State, r.Reason, code, out)
	}
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if rs, err := sp.ctl.RampStatus(context.Background()); err == nil && rs.Result != nil && rs.Result.State != evidence.RampRamping {
			break
		}
		if time.Now().After(deadline) {
			rs, _ := sp.ctl.RampStatus(context.Background())
			w.hiro("rollback")
			wait()
			endLoad()
			t.Fatalf("the ramp still routes to the weak candidate after 3 minutes: %+v", rs.Result)
		}
	}
	code, out := wait()
	runs, failed := endLoad()
	t.Logf("activate:\n%s", out)
	if code != 1 || !strings.Contains(out, "reversed at 50 %: "+ramp.MeasureInvalid+": ") {
		t.Fatalf("activate: exit %d, want 1 with a reversal on invalid_rate\n%s", code, out)
	}
	if p := sp.production(t); p != "prod" {
		t.Fatalf("the router serves %s after the reversal", p)
	}
	rec := w.lastRecord()
	if rec.Outcome != production.OutcomeFailed || rec.Ramp == nil || rec.Ramp.State != evidence.RampReversed || len(rec.Ramp.History) != 1 {
		t.Fatalf("record: %s %q, ramp %+v", rec.Outcome, rec.Error, rec.Ramp)
	}
	h := rec.Ramp.History[0]
	t.Logf("Ollama ramp on validators: reversed %s after hiro serve started; candidate %d requests, %d of %d checked replies invalid; production %d requests, %d of %d invalid; %d extraction runs through the router",
		rec.Ramp.EndedAt.Sub(start).Round(time.Millisecond), h.Candidate.Requests, h.Candidate.Invalid, h.Candidate.Checked, h.Production.Requests, h.Production.Invalid, h.Production.Checked, runs)
	if h.Candidate.Invalid == 0 || h.Production.Checked == 0 || h.Production.Invalid*4 > h.Production.Checked {
		t.Errorf("step: candidate %d of %d checked invalid, production %d of %d; want the candidate's replies invalid, production's mostly valid", h.Candidate.Invalid, h.Candidate.Checked, h.Production.Invalid, h.Production.Checked)
	}
	if len(failed) > 0 {
		t.Fatalf("client extraction requests failed: %v", failed)
	}
}
