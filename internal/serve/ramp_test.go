package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/ramp"
)

// rampCandidate adds an unmanaged profile NAME for a fake engine it
// starts on a free port (model other-model) with args, and returns the
// profile's TOML and the process.
func rampCandidate(t *testing.T, name string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	port := freePort(t)
	cmd := startOther(t, port, args...)
	return `[backends.` + name + `]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:` + itoa(port) + `"
model = "other-model"
`, cmd
}

// rampTestPolicy is a ramp policy fast enough for a test: a step advances
// on 20 clean candidate requests (the one-sided 95 % upper bound of 0
// errors in 20 is 0.139, within the margin 0.15) after 300 ms.
func rampTestPolicy(steps ...float64) ramp.Policy {
	return ramp.Policy{Steps: steps, Soak: config.Duration{Duration: 300 * time.Millisecond}, MinRequests: 20, Margin: 0.15}
}

// holdingRamp starts a router in front of a production fake (prodArgs)
// and the unmanaged fake candidate "cand" (candArgs), and a ramp over
// steps whose soak is an hour: it holds each step until a failure
// reverses it. It returns the router and the candidate's process.
func holdingRamp(t *testing.T, prodArgs, candArgs []string, steps ...float64) (*router, *exec.Cmd) {
	t.Helper()
	cand, proc := rampCandidate(t, "cand", candArgs...)
	r := startRouter(t, fakeConfig(t, prodArgs, cand), nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	p := rampTestPolicy(steps...)
	p.Soak = config.Duration{Duration: time.Hour}
	if _, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: "cand", Policy: p}); err != nil {
		t.Fatal(err)
	}
	return r, proc
}

// answer is one client request of the load: when it was sent, its
// status and which backend's model answered.
type answer struct {
	at    time.Time // sent
	done  time.Time // answered
	code  int
	model string
}

// load sends extraction requests from workers until stop is closed,
// each with its own OpenAI "user" (a new client each time), and keeps
// every answer.
type load struct {
	mu      sync.Mutex
	answers []answer
	wg      sync.WaitGroup
	stop    chan struct{}
}

func startLoad(t *testing.T, r *router, workers int) *load {
	l := &load{stop: make(chan struct{})}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				var m map[string]any
				_ = json.Unmarshal([]byte(extractionBody("extraction", i, false)), &m)
				m["user"] = "client-" + itoa(w) + "-" + itoa(i)
				b, _ := json.Marshal(m)
				t0 := time.Now()
				code, _, body := post(t, r.url, RouteChat, string(b))
				l.mu.Lock()
				l.answers = append(l.answers, answer{at: t0, done: time.Now(), code: code, model: answeredBy(body)})
				l.mu.Unlock()
			}
		}()
	}
	return l
}

func (l *load) end() []answer {
	close(l.stop)
	l.wg.Wait()
	return l.answers
}

// answeredBy is the model field of an answer ("" for an error).
func answeredBy(body string) string {
	var v struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal([]byte(body), &v)
	return v.Model
}

// waitRamp polls the ramp's account until ok says so.
func waitRamp(t *testing.T, r *router, within time.Duration, what string, ok func(*evidence.RampResult) bool) *evidence.RampResult {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		st, err := r.ctl.RampStatus(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Result != nil && ok(st.Result) {
			return st.Result
		}
		if time.Now().After(deadline) {
			t.Fatalf("ramp not %s after %s: %+v", what, within, st.Result)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRampGoodCandidateReachesFullShare: a candidate as good as
// production is ramped 10 → 50 → 100 % on live extraction requests, each
// step advancing on its own comparison; no client request fails; once
// complete every request is the candidate's, and hiro status shows the
// ramp; a stop after it keeps it completed.
func TestRampGoodCandidateReachesFullShare(t *testing.T) {
	cand, _ := rampCandidate(t, "cand", "--chat", "claims")
	cfg := fakeConfig(t, []string{"--chat", "claims"}, cand)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	st, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: "cand", Policy: rampTestPolicy(0.1, 0.5, 1)})
	if err != nil || !st.Active || st.Result.Share != 0.1 {
		t.Fatalf("start: %+v %v", st, err)
	}
	l := startLoad(t, r, 4)
	res := waitRamp(t, r, 60*time.Second, "completed", func(r *evidence.RampResult) bool { return r.State != evidence.RampRamping })
	answers := l.end()
	if res.State != evidence.RampCompleted || res.Share != 1 || len(res.History) != 3 {
		t.Fatalf("ramp: %s share %v, %d steps, reason %q", res.State, res.Share, len(res.History), res.Reason)
	}
	for i, h := range res.History {
		want := evidence.RampAdvance
		if i == 2 {
			want = evidence.RampComplete
		}
		if h.Decision != want || h.Candidate.Requests < 20 || h.Candidate.Errors != 0 || h.Candidate.Checked == 0 || h.Candidate.Invalid != 0 {
			t.Errorf("step %d (%v): %s (%s), candidate %+v", i, h.Share, h.Decision, h.Reason, h.Candidate)
		}
		if i == 0 && h.Production.Requests < 3*h.Candidate.Requests {
			// At 10 % production answers about 9 in 10.
			t.Errorf("step %d (%v): production answered %d, the candidate %d", i, h.Share, h.Production.Requests, h.Candidate.Requests)
		}
	}
	failed := 0
	for _, a := range answers {
		if a.code != 200 {
			failed++
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d client requests failed during a clean ramp", failed, len(answers))
	}
	for i := range 10 {
		if code, _, body := post(t, r.url, RouteChat, extractionBody("extraction", i, false)); code != 200 || answeredBy(body) != "other-model" {
			t.Fatalf("after completion: %d %s", code, answeredBy(body))
		}
	}
	status, err := r.ctl.Status(context.Background())
	if err != nil || status.Ramp == nil || status.Ramp.Result.State != evidence.RampCompleted || status.Production.Name != "prod" {
		t.Fatalf("status: %+v %v", status.Ramp, err)
	}
	stopped, err := r.ctl.RampStop(context.Background(), "switched")
	if err != nil || stopped.Active || stopped.Result.State != evidence.RampCompleted {
		t.Fatalf("stop after completion: %+v %v", stopped, err)
	}
	if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 || answeredBy(body) != "fake-model" {
		t.Errorf("after the ramp's end, production answers: %d %s", code, answeredBy(body))
	}
	for _, ev := range []string{`"event":"ramp_start"`, `"event":"ramp_step"`, `"event":"ramp_complete"`} {
		if !strings.Contains(r.events.String(), ev) {
			t.Errorf("no %s event", ev)
		}
	}
}

// TestRampReversesACandidateThatStartsFailing: once the ramp is at
// 25 %, the candidate regresses (a flag file the fake watches): it
// answers 500, or becomes 300 ms slower, or its extraction replies start
// quoting text the sentence does not have (hiro's validators reject
// them). The router reverses the ramp by itself on that measure
// (error_rate, latency, invalid_rate), and every request is production's
// after that. No client request fails: each 500 of the candidate (no
// byte of it reached the client) is resent to production and counted as
// the candidate's error; a slow or invalid reply is still a reply.
func TestRampReversesACandidateThatStartsFailing(t *testing.T) {
	for _, c := range []struct{ measure, flag string }{
		{ramp.MeasureErrors, "--chat-fail-when"},
		{ramp.MeasureLatency, "--slow-when"},
		{ramp.MeasureInvalid, "--ungrounded-when"},
	} {
		t.Run(c.measure, func(t *testing.T) {
			flagFile := filepath.Join(t.TempDir(), "regress")
			cand, _ := rampCandidate(t, "cand", "--chat", "claims", c.flag, flagFile)
			cfg := fakeConfig(t, []string{"--chat", "claims"}, cand)
			r := startRouter(t, cfg, nil)
			r.waitState(t, control.StateReady, 20*time.Second)
			p := rampTestPolicy(0.1, 0.25, 1)
			// Each step serves 2 s at least: the 25 % step is still
			// serving when the candidate regresses (a failed check does
			// not wait for the soak).
			p.Soak = config.Duration{Duration: 2 * time.Second}
			if _, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: "cand", Policy: p}); err != nil {
				t.Fatal(err)
			}
			l := startLoad(t, r, 4)
			waitRamp(t, r, 60*time.Second, "at 25 %", func(r *evidence.RampResult) bool { return r.Share == 0.25 || r.State != evidence.RampRamping })
			regressed := time.Now()
			if err := os.WriteFile(flagFile, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			res := waitRamp(t, r, 30*time.Second, "reversed", func(r *evidence.RampResult) bool { return r.State != evidence.RampRamping })
			reversedAt := time.Now()
			time.Sleep(300 * time.Millisecond) // production alone serves meanwhile
			answers := l.end()
			if res.State != evidence.RampReversed || res.Share != 0 || !strings.HasPrefix(res.Reason, "reversed at 25 %: "+c.measure+": ") {
				b, _ := json.MarshalIndent(res, "", " ")
				t.Fatalf("ramp: %s share %v, reason %q; want reversed at 25 %% on %s\n%s", res.State, res.Share, res.Reason, c.measure, b)
			}
			last := res.History[len(res.History)-1]
			if last.Share != 0.25 || last.Decision != evidence.RampReverse || !hasFailed(last.Checks, c.measure) {
				t.Errorf("reversed step: %+v", last)
			}
			failed, after, afterCand := clientFailures(answers, reversedAt)
			t.Logf("reversed %s after the regression; %d of %d client requests failed; %d after the reversal; resent %d; %s",
				reversedAt.Sub(regressed).Round(time.Millisecond), failed, len(answers), after, res.Resent, res.Reason)
			if failed > 0 {
				t.Errorf("%d client requests failed; none may (a candidate's 500 is resent to production)", failed)
			}
			if after == 0 || afterCand > 0 {
				t.Errorf("after the reversal: %d requests, %d not production's", after, afterCand)
			}
			if c.measure == ramp.MeasureErrors && (last.Candidate.Errors == 0 || res.Resent < last.Candidate.Errors) {
				t.Errorf("resent %d, candidate errors %d: every 500 is resent", res.Resent, last.Candidate.Errors)
			}
			if c.measure == ramp.MeasureInvalid && last.Candidate.Invalid == 0 {
				t.Errorf("reversed step: candidate %+v, no invalid reply counted", last.Candidate)
			}
			if !strings.Contains(r.events.String(), `"event":"ramp_reversed"`) {
				t.Errorf("no ramp_reversed event:\n%s", r.events.String())
			}
		})
	}
}

// hasFailed says whether the check of measure failed among checks.
func hasFailed(checks []evidence.RampCheck, measure string) bool {
	for _, c := range checks {
		if c.Measure == measure && c.Outcome == ramp.Failed {
			return true
		}
	}
	return false
}

// clientFailures counts the answers that were not 200, and those sent
// after the time after (all, and those not answered by production).
func clientFailures(answers []answer, after time.Time) (failed, sentAfter, notProd int) {
	for _, a := range answers {
		if a.code != 200 {
			failed++
		}
		if a.at.After(after) {
			sentAfter++
			if a.model != "fake-model" {
				notProd++
			}
		}
	}
	return failed, sentAfter, notProd
}

// TestRampCrashedCandidateReverses: the candidate's process is killed
// mid-ramp: the refused connections go to production (nothing was sent),
// the ramp reverses at once, naming the candidate down, and no request
// after that fails.
func TestRampCrashedCandidateReverses(t *testing.T) {
	r, proc := holdingRamp(t, []string{"--chat", "claims"}, []string{"--chat", "claims"}, 0.5, 1) // holds at 50 %
	l := startLoad(t, r, 2)
	waitRamp(t, r, 20*time.Second, "serving the candidate", func(r *evidence.RampResult) bool { return r.History[0].Candidate.Requests >= 10 })
	killedAt := time.Now()
	proc.Process.Kill()
	proc.Wait()
	res := waitRamp(t, r, 10*time.Second, "reversed", func(r *evidence.RampResult) bool { return r.State != evidence.RampRamping })
	reversedAt := time.Now()
	time.Sleep(200 * time.Millisecond)
	answers := l.end()
	if res.State != evidence.RampReversed || !strings.Contains(res.Reason, "the candidate is down") {
		t.Fatalf("ramp: %s, reason %q", res.State, res.Reason)
	}
	if d := reversedAt.Sub(killedAt); d > time.Second {
		t.Errorf("reversed %s after the kill; the health interval is 200 ms", d)
	}
	failed := 0
	for _, a := range answers {
		if a.code != 200 {
			failed++
			if a.at.After(reversedAt) {
				t.Errorf("a request sent after the reversal failed: %d", a.code)
			}
		}
	}
	t.Logf("%d of %d client requests failed; reversed %s after the kill: %s; resent %d", failed, len(answers), reversedAt.Sub(killedAt).Round(time.Millisecond), res.Reason, res.Resent)
	if failed > 0 {
		// A request in flight on the candidate when it died, or refused
		// by it after, is answered by production.
		t.Errorf("%d client requests failed; none may", failed)
	}
}

// TestRampCandidateKilledMidRequestLosesNoRequest: every request is the
// candidate's (a one-step ramp) and each takes 400 ms there; its process
// is killed while the four clients' requests are in flight on it. Each
// of them, its connection closed before any byte of a reply, is resent
// to production: no client request fails, the ramp reverses and counts
// them as resent.
func TestRampCandidateKilledMidRequestLosesNoRequest(t *testing.T) {
	r, proc := holdingRamp(t, []string{"--chat", "claims"}, []string{"--chat", "claims", "--reply-delay", "400ms"}, 1)
	l := startLoad(t, r, 4)
	waitRamp(t, r, 20*time.Second, "serving the candidate", func(r *evidence.RampResult) bool { return r.History[0].Candidate.Requests >= 8 })
	time.Sleep(150 * time.Millisecond) // every worker is mid-request (400 ms each)
	proc.Process.Kill()
	proc.Wait()
	res := waitRamp(t, r, 10*time.Second, "reversed", func(r *evidence.RampResult) bool { return r.State != evidence.RampRamping })
	time.Sleep(200 * time.Millisecond)
	answers := l.end()
	if res.State != evidence.RampReversed {
		t.Fatalf("ramp: %s, reason %q", res.State, res.Reason)
	}
	failed := 0
	for _, a := range answers {
		if a.code != 200 {
			failed++
		}
	}
	t.Logf("%d of %d client requests failed; resent %d; %s", failed, len(answers), res.Resent, res.Reason)
	if failed > 0 {
		t.Errorf("%d client requests failed; the ones in flight on the killed candidate must be resent", failed)
	}
	if res.Resent < 1 || res.History[0].Candidate.Errors < 1 {
		t.Errorf("resent %d, candidate errors %d: the requests cut by the kill are resent and counted as the candidate's errors", res.Resent, res.History[0].Candidate.Errors)
	}
}

// TestRampCandidateFailuresBeforeTheReplyAreResent: a candidate that
// fails every chat request before any byte of a reply (it answers 500,
// 503, 504 or 429, closes the connection without an answer, or closes it
// after a 200's headers) never reaches a client: each request is resent to
// production, counted as the candidate's error and as resent, and the
// ramp reverses.
func TestRampCandidateFailuresBeforeTheReplyAreResent(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"500", []string{"--chat-fail-when", os.DevNull}},
		{"503", []string{"--overload-status", "503", "--overload-every", "1"}},
		{"504", []string{"--overload-status", "504", "--overload-every", "1"}},
		{"429", []string{"--overload-status", "429", "--overload-every", "1"}},
		{"closed before the headers", []string{"--chat-drop", "before-headers"}},
		{"closed after the headers", []string{"--chat-drop", "after-headers"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := holdingRamp(t, []string{"--chat", "claims"}, append([]string{"--chat", "claims"}, c.args...), 0.5, 1)
			l := startLoad(t, r, 2)
			res := waitRamp(t, r, 30*time.Second, "reversed", func(r *evidence.RampResult) bool { return r.State != evidence.RampRamping })
			answers := l.end()
			t.Logf("%d client requests; resent %d; %s", len(answers), res.Resent, res.Reason)
			if res.State != evidence.RampReversed {
				t.Fatalf("ramp: %s, reason %q", res.State, res.Reason)
			}
			for _, a := range answers {
				if a.code != 200 || a.model != "fake-model" {
					t.Fatalf("a client got %d from %q; every request the candidate failed must be resent to production", a.code, a.model)
				}
			}
			// Resent also counts what was in flight at the reversal (the
			// step's samples end there).
			if c := res.History[0].Candidate; c.Errors == 0 || c.Errors != c.Requests || res.Resent < c.Errors {
				t.Errorf("resent %d, candidate %+v; want every candidate request resent and counted as its error", res.Resent, c)
			}
		})
	}
}

// TestRampPassesOnTheRequestsOwnErrors: a candidate's 400 says the
// request is at fault (production would answer it the same): it reaches
// the client as the candidate answered it, is not resent, and counts as
// the candidate's error.
func TestRampPassesOnTheRequestsOwnErrors(t *testing.T) {
	r, _ := holdingRamp(t, nil, []string{"--chat", "400"}, 1)
	code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	if code != 400 || !strings.Contains(body, "chat template") {
		t.Fatalf("the candidate's 400 reached the client as %d %s", code, body)
	}
	res := waitRamp(t, r, 10*time.Second, "counting the 400", func(r *evidence.RampResult) bool { return r.History[0].Candidate.Errors > 0 })
	if res.Resent != 0 {
		t.Errorf("resent %d; a 400 is the request's own error, never resent", res.Resent)
	}
}

// TestRampCutStreamIsCounted: a stream the candidate had begun (its
// first event reached the client) cannot be resent when the candidate
// dies: the client gets the cut stream, and the ramp counts it
// (cut_mid_reply).
func TestRampCutStreamIsCounted(t *testing.T) {
	r, proc := holdingRamp(t, nil, []string{"--token-delay", "200ms"}, 1)
	resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("extraction", true)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	if err != nil || !strings.Contains(first, "other-model") {
		t.Fatalf("first event %q, %v; want the candidate's", first, err)
	}
	proc.Process.Kill()
	proc.Wait()
	rest, _ := io.ReadAll(br)
	if strings.Contains(string(rest), "[DONE]") {
		t.Fatalf("the stream ended whole after the kill: %q", rest)
	}
	res := waitRamp(t, r, 10*time.Second, "counting the cut stream", func(r *evidence.RampResult) bool { return r.CutMidReply > 0 })
	if res.CutMidReply != 1 || res.Resent != 0 {
		t.Errorf("cut_mid_reply %d, resent %d; want 1 and 0", res.CutMidReply, res.Resent)
	}
}

// TestRampIsStickyPerClient: at 50 % a client named by the OpenAI
// "user" field, or by the X-Hiro-Session header, is answered by one
// backend every time; different clients land on both.
func TestRampIsStickyPerClient(t *testing.T) {
	r, _ := holdingRamp(t, nil, nil, 0.5, 1)
	sides := map[string]bool{}
	for c := range 16 {
		user := "user-" + itoa(c)
		var m map[string]any
		_ = json.Unmarshal([]byte(chatBody("extraction", false)), &m)
		m["user"] = user
		b, _ := json.Marshal(m)
		first := ""
		for i := range 8 {
			var model string
			if c%2 == 0 {
				_, _, body := post(t, r.url, RouteChat, string(b))
				model = answeredBy(body)
			} else {
				_, _, body := post(t, r.url, RouteChat, chatBody("extraction", false), SessionHeader, user)
				model = answeredBy(body)
			}
			if i == 0 {
				first = model
			} else if model != first {
				t.Fatalf("%s was answered by %s, then by %s", user, first, model)
			}
		}
		sides[first] = true
	}
	if !sides["fake-model"] || !sides["other-model"] {
		t.Errorf("16 clients at 50 %% all on one side: %v", sides)
	}
	st, err := r.ctl.RampStop(context.Background(), "hiro rollback")
	if err != nil || st.Active || st.Result.State != evidence.RampStopped || st.Result.Reason != "hiro rollback" {
		t.Fatalf("stop: %+v %v", st, err)
	}
	if _, _, body := post(t, r.url, RouteChat, chatBody("extraction", false), SessionHeader, "user-1"); answeredBy(body) != "fake-model" {
		t.Errorf("after the stop: %s", answeredBy(body))
	}
}

// TestRampRefusals: production itself, an exclusive candidate on this
// machine (naming what works), a candidate that is not running, bad
// steps, and a second ramp are refused with what to do.
func TestRampRefusals(t *testing.T) {
	free := freePort(t)
	up, _ := rampCandidate(t, "up")
	cfg := fakeConfig(t, nil, `[backends.exclusive]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:`+itoa(free)+`"
model = "m"
exclusive_accelerator = true
[backends.down]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:`+itoa(free)+`"
model = "m"
`+up)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	for _, c := range []struct {
		cand  string
		steps []float64
		want  string
	}{
		{"prod", nil, "is production"},
		{"exclusive", nil, "a progressive ramp is impossible here; activate it at once"},
		{"down", nil, "does not answer"},
		{"up", []float64{0.1, 0.5}, "the last step is 100 %"},
	} {
		_, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: c.cand, Policy: ramp.Policy{Steps: c.steps}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("start %s: %v; want %q", c.cand, err, c.want)
		}
	}
	if _, err := r.ctl.RampStop(context.Background(), ""); err == nil || !strings.Contains(err.Error(), "no ramp since this router started") {
		t.Errorf("stop without a ramp: %v", err)
	}
	if _, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: "up"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: "up"}); err == nil || !strings.Contains(err.Error(), "stop it first") {
		t.Errorf("second ramp: %v", err)
	}
}

// TestRampOwnerGoneReverses: the activation that owns a ramp dies (a
// real process, killed): the router reverses by itself within a health
// interval or two, production serves every request.
func TestRampOwnerGoneReverses(t *testing.T) {
	cand, _ := rampCandidate(t, "cand")
	cfg := fakeConfig(t, nil, cand)
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	owner := exec.Command("sleep", "60")
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
	p := rampTestPolicy(0.5, 1)
	p.Soak = config.Duration{Duration: time.Hour}
	if _, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: "cand", Policy: p, OwnerPID: owner.Process.Pid}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if st, _ := r.ctl.RampStatus(context.Background()); !st.Active || st.Result.State != evidence.RampRamping {
		t.Fatalf("the ramp ended while its owner lives: %+v", st.Result)
	}
	owner.Process.Kill()
	owner.Wait()
	res := waitRamp(t, r, 5*time.Second, "reversed", func(r *evidence.RampResult) bool { return r.State != evidence.RampRamping })
	if res.State != evidence.RampReversed || res.Share != 0 || !strings.Contains(res.Reason, "the activation that owned the ramp (pid "+itoa(owner.Process.Pid)+") is gone") {
		t.Fatalf("ramp: %s share %v, reason %q", res.State, res.Share, res.Reason)
	}
	for i := range 10 {
		if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false), SessionHeader, "user-"+itoa(i)); code != 200 || answeredBy(body) != "fake-model" {
			t.Fatalf("after the reversal: %d %s", code, answeredBy(body))
		}
	}
}

// TestRampWithoutTrafficEndsAtItsMaxDuration: a ramp whose traffic never
// comes holds its first step until its overall bound (max_duration),
// then the router reverses it with that reason and production answers
// every request again. Before, such a ramp held both backends for ever.
func TestRampWithoutTrafficEndsAtItsMaxDuration(t *testing.T) {
	cand, _ := rampCandidate(t, "cand", "--chat", "claims")
	r := startRouter(t, fakeConfig(t, []string{"--chat", "claims"}, cand), nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	p := rampTestPolicy(0.5, 1)
	p.MaxDuration = config.Duration{Duration: 1500 * time.Millisecond}
	started := time.Now()
	if _, err := r.ctl.RampStart(context.Background(), control.RampStartRequest{Candidate: "cand", Policy: p}); err != nil {
		t.Fatal(err)
	}
	res := waitRamp(t, r, 10*time.Second, "reversed", func(r *evidence.RampResult) bool { return r.State != evidence.RampRamping })
	if took := time.Since(started); res.State != evidence.RampReversed || !strings.Contains(res.Reason, "the ramp's bound (max_duration 1.5s) passed") ||
		!strings.Contains(res.Reason, "step at 50 % still holding (0 of the 20 candidate requests a step advances on)") || took < 1500*time.Millisecond {
		t.Fatalf("after %s: ramp %s, reason %q", took, res.State, res.Reason)
	}
	if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 || answeredBy(body) != "fake-model" {
		t.Errorf("after the reversal: %d, answered by %q", code, answeredBy(body))
	}
}
