package supervisor

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// The one rule for a readiness reply: trimmed of surrounding white space,
// equal to expect, case and punctuation included; no expect accepts any.
func TestJudgeReplyRule(t *testing.T) {
	for _, c := range []struct {
		expect, text string
		ok           bool
	}{
		{"READY", "READY", true},
		{"READY", " \n READY\t\n", true},
		{"READY", "READY.", false},
		{"READY", "ready", false},
		{"READY", "READY w0 w1", false},
		{"READY", "", false},
		{"", "READY w0 w1", true},
		{"", "anything", true},
	} {
		why := JudgeReply(c.expect, c.text)
		if (why == "") != c.ok {
			t.Errorf("JudgeReply(%q, %q) = %q, want ok %v", c.expect, c.text, why, c.ok)
		}
		if !c.ok && !strings.Contains(why, strconv.Quote(strings.TrimSpace(c.text))) {
			t.Errorf("JudgeReply(%q, %q) = %q: the reason does not quote the reply", c.expect, c.text, why)
		}
	}
}

// Start and CheckReady judge the same server's reply alike, and a wrong
// reply is the server's settled answer (Answered), quoted in the failure.
func TestStartAndCheckReadyJudgeTheReplyAlike(t *testing.T) {
	port := freePort(t)
	args := []string{"--port", strconv.Itoa(port), "--reply", "READY w0 w1 w2"}
	p, state := fakeProfile(t, "llamacpp", port, args, "")
	proc, res := startFake(t, p, state)
	if res.State != StateReady || proc == nil {
		t.Fatalf("no ready_probe.expect: a chatty reply must be ready, got %s %v", res.State, res.Failure)
	}
	if cr := CheckReady(context.Background(), p, nil); !cr.OK || cr.Reply != "READY w0 w1 w2" || cr.Answered {
		t.Fatalf("CheckReady of the server Start called ready: %+v", cr)
	}
	p.ReadyProbe.Expect = "READY"
	cr := CheckReady(context.Background(), p, nil)
	if cr.OK || !cr.Answered || cr.Failure == nil || cr.Failure.Class != failure.ClassProbeFailed ||
		!strings.Contains(cr.Failure.RootCause, `the reply "READY w0 w1 w2" is not the expected "READY"`) {
		t.Fatalf("expect READY: %+v %v", cr, cr.Failure)
	}
	proc.Stop(context.Background())
	// Start with the same expectation refuses it with the same words.
	port2 := freePort(t)
	p2, state2 := fakeProfile(t, "llamacpp", port2, []string{"--port", strconv.Itoa(port2), "--reply", "READY w0 w1 w2"}, `ready_probe = { expect = "READY" }`)
	_, res = startFake(t, p2, state2)
	if res.State == StateReady || res.Failure == nil || !strings.Contains(res.Failure.RootCause, `the reply "READY w0 w1 w2" is not the expected "READY"`) {
		t.Fatalf("Start with expect READY: %s %v", res.State, res.Failure)
	}
}
