package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/shadow"
)

// TestShadowCommands runs `hiro serve` in front of the fake engine with a
// second fake as an unmanaged candidate, and drives a shadow run with
// `hiro shadow start`, `status` and `stop`: the start says where the
// mirror goes, the status counts the pairs, the stop prints the account
// and exits 0 for a candidate that passed.
func TestShadowCommands(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := serveTestState(t)
	port, candPort, listen := cliFreePort(t), cliFreePort(t), cliFreePort(t)
	cand := exec.Command(fake, "--port", strconv.Itoa(candPort), "--model", "cand-model")
	if err := cand.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cand.Process.Kill(); cand.Wait() })
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = %q
args = ["--port", "%d"]
port = %d
model = "fake-model"
ready_timeout = "20s"
stall_timeout = "10s"
stop_grace = "2s"
[backends.cand]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:%d"
model = "cand-model"
[serve]
listen = "127.0.0.1:%d"
on_exit = "stop"
access_log = "off"
`, fake, port, port, candPort, listen)), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var serveErr bytes.Buffer
	go func() { done <- Run(ctx, []string{"--config", cfg, "serve"}, &bytes.Buffer{}, &serveErr) }()
	t.Cleanup(func() { cancel(); <-done })
	hiro := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"--config", cfg}, args...), &out, &errb)
		return code, out.String(), errb.String()
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _, _ := hiro("status"); code == ExitOK {
			break
		}
		select {
		case code := <-done:
			done <- code // for the cleanup
			t.Fatalf("hiro serve exited %d: %s", code, serveErr.String())
		default:
		}
		if time.Now().After(deadline) {
			_, out, errs := hiro("status")
			t.Fatalf("hiro serve never ready: %s %s", out, errs)
		}
	}
	if code, out, errs := hiro("shadow", "status"); code != ExitFailed || !strings.Contains(out, "no run since this router started") {
		t.Errorf("status before a run: %d %q %q", code, out, errs)
	}
	// Another configuration, in another folder, whose production (also
	// named prod, on another port) this router does not serve: its shadow
	// start is refused as its status is, and nothing starts (trial 11 R4:
	// it mirrored this router's production to this file's cand).
	other := filepath.Join(t.TempDir(), "hiro.toml")
	op := cliFreePort(t)
	os.WriteFile(other, []byte(fmt.Sprintf("state_dir = \"state\"\n[production]\nbackend = \"prod\"\n[backends.prod]\nengine = \"llamacpp\"\ncommand = %q\nargs = [\"--port\", \"%d\"]\nport = %d\nmodel = \"fake-model\"\n[backends.cand]\nengine = \"llamacpp\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:%d\"\nmodel = \"cand-model\"\n", fake, op, op, candPort)), 0o644)
	var oout, oerr bytes.Buffer
	if code := Run(context.Background(), []string{"--config", other, "shadow", "start", "cand", "--share", "1"}, &oout, &oerr); code != ExitFailed ||
		!strings.Contains(oerr.String(), "no hiro serve runs for "+other) || !strings.Contains(oerr.String(), "serves "+cfg) ||
		!strings.Contains(oerr.String(), "use 'hiro --config "+cfg+" shadow start") || oout.Len() != 0 {
		t.Errorf("shadow start for another configuration: exit %d\n%s%s", code, oout.String(), oerr.String())
	}
	if code, out, errs := hiro("shadow", "status"); code != ExitFailed || !strings.Contains(out, "no run since this router started") {
		t.Errorf("a run started after the refusal: %d %q %q", code, out, errs)
	}
	code, out, errs := hiro("shadow", "start", "cand", "--share", "1", "--max-pairs", "150", "--min-pairs", "150", "--queue", "256")
	if code != ExitOK || !strings.Contains(out, "mirroring 100 % of production prod's chat and completion requests to cand (on this machine)") {
		t.Fatalf("start: %d %q %q", code, out, errs)
	}
	// The other configuration's stop and status are refused too, and the
	// run goes on (before, stop ended this router's run for a file whose
	// production it does not serve, and status showed it as that file's).
	for _, what := range []string{"stop", "status"} {
		oout.Reset()
		oerr.Reset()
		if code := Run(context.Background(), []string{"--config", other, "shadow", what}, &oout, &oerr); code != ExitFailed ||
			!strings.Contains(oerr.String(), "shadow "+what+": refused, its shadow run (if any) is untouched: no hiro serve runs for "+other) ||
			!strings.Contains(oerr.String(), "use 'hiro --config "+cfg+" shadow "+what+"'") || oout.Len() != 0 {
			t.Errorf("shadow %s for another configuration: exit %d\n%s%s", what, code, oout.String(), oerr.String())
		}
	}
	if code, out, errs := hiro("shadow", "status"); code != ExitOK || !strings.Contains(out, ", active, started ") {
		t.Fatalf("after the other file's stop, the run is not active: %d %q %q", code, out, errs)
	}
	for i := range 150 {
		resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/v1/chat/completions", listen), "application/json",
			strings.NewReader(`{"model":"fake-model","messages":[{"role":"user","content":"Reply with READY."}],"stream":`+strconv.FormatBool(i%2 == 0)+`}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("client request %d: %v %v", i, resp, err)
		}
		// Read the reply to its end, as a client does: one closed mid-stream
		// is a client that left, and its request is abandoned, not mirrored.
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("client request %d: reading the reply: %v", i, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, out, _ = hiro("shadow", "status")
		if strings.Contains(out, "ended (max_pairs)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run never ended:\n%s", out)
		}
	}
	code, out, errs = hiro("shadow", "stop")
	for _, want := range []string{"150 sampled: 150 mirrored (150 pairs scored), 0 dropped", "text        150 pairs: 150 equal", "success_rate", "outcome     passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("stop lacks %q:\n%s", want, out)
		}
	}
	if code != ExitOK {
		t.Errorf("stop: exit %d %s", code, errs)
	}
	if code, _, errs := hiro("shadow", "start", "nosuch"); code != ExitUsage || !strings.Contains(errs, "backends.nosuch: no such backend profile; known: cand, prod") {
		t.Errorf("start of an unknown profile: %d %q", code, errs)
	}
}

// A comparison that the candidate's own count leaves undecided says why
// on its line of the account.
func TestPrintShadowSaysTheNote(t *testing.T) {
	var b strings.Builder
	r := &shadow.Result{Candidate: "cand", Production: "prod", Share: 1, Ended: "max_pairs", Outcome: "inconclusive",
		Comparisons: []evidence.ShadowComparison{{Measure: shadow.MeasureSuccess, Pairs: 40, Candidate: 1, Production: 1, Margin: 0.02,
			Outcome: "inconclusive", Note: "40 of 40 show a rate above 0.928 only; the margin asks 0.980"}}}
	printShadow(&b, &control.ShadowStatus{Result: r})
	if want := "margin 0.020: inconclusive (40 of 40 show a rate above 0.928 only; the margin asks 0.980)"; !strings.Contains(b.String(), want) {
		t.Errorf("account lacks %q:\n%s", want, b.String())
	}
}

// TestPrintShadowCountsClaimsNotPairs (trial 11, R7): "10 pairs: claims
// 10 / 10" read as pairs that returned claims. The extraction line says
// the claims the pairs' replies hold, apart from the replies that were
// schema-valid: 4 pairs holding 9 and 7 claims, 4 and 3 valid replies.
func TestPrintShadowCountsClaimsNotPairs(t *testing.T) {
	var b strings.Builder
	r := &shadow.Result{Candidate: "cand", Production: "prod", Share: 1, Pairs: 4, Outcome: "inconclusive",
		Extraction: evidence.ShadowExtraction{Pairs: 4, CandidateClaims: 9, ProductionClaims: 7, CandidateGrounded: 8, ProductionGrounded: 7,
			CandidateAccepted: 6, ProductionAccepted: 5, CandidateSchemaValid: 4, ProductionSchemaValid: 3}}
	printShadow(&b, &control.ShadowStatus{Result: r})
	want := "extraction  4 pairs: their replies hold 9 / 7 claims (candidate / production), 8 / 7 grounded, 6 / 5 accepted; 4 / 3 replies schema-valid;"
	if !strings.Contains(b.String(), want) {
		t.Errorf("account lacks %q:\n%s", want, b.String())
	}
}

// TestPrintShadowSaysWhatIsInFlight (trial 12, S9): "25 mirrored (22
// pairs scored)" beside 0 queued, 0 pending and 0 unsent did not add up:
// 3 were in flight to the candidate. The line names them, active or
// ended.
func TestPrintShadowSaysWhatIsInFlight(t *testing.T) {
	for _, c := range []struct {
		active bool
		want   string
	}{{true, "25 mirrored (22 pairs scored, 3 in flight (candidate answering)), 0 dropped"},
		{false, "25 mirrored (22 pairs scored, 3 not scored (the candidate was still answering when the run ended)), 0 dropped"}} {
		var b strings.Builder
		r := &shadow.Result{Candidate: "cand", Production: "prod", Share: 1, Seen: 25, Sampled: 25, Mirrored: 25, Pairs: 22, Outcome: "inconclusive"}
		if !c.active {
			r.Ended = "command"
		}
		printShadow(&b, &control.ShadowStatus{Active: c.active, Result: r})
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("active %v: account lacks %q:\n%s", c.active, c.want, b.String())
		}
	}
}

// TestPrintShadowSaysTheCountStopped (issue 26 N7): an ended run's
// account says its "seen" count stopped when the run ended (at
// max_pairs, its duration or a stop), so that 8 seen beside 25 requests
// sent through the router is not read as requests lost; an active run's
// count says nothing of an end.
func TestPrintShadowSaysTheCountStopped(t *testing.T) {
	for _, c := range []struct {
		ended, duration string
		active          bool
		want            string
	}{
		{"max_pairs", "", false, "requests    8 seen while the run lasted (it ended at max_pairs, 5 pairs scored; production's later requests are not counted), 8 sampled"},
		{"duration", "10m0s", false, "8 seen while the run lasted (it ended after its duration, 10m0s; production's later requests are not counted)"},
		{"command", "", false, "8 seen while the run lasted (hiro shadow stop ended it; production's later requests are not counted)"},
		{"", "", true, "requests    8 seen, 8 sampled"},
	} {
		var b strings.Builder
		r := &shadow.Result{Candidate: "cand", Production: "prod", Share: 1, Ended: c.ended, MaxPairs: 5, Duration: c.duration, Seen: 8, Sampled: 8, Mirrored: 8, Pairs: 5, Outcome: "inconclusive"}
		printShadow(&b, &control.ShadowStatus{Active: c.active, Result: r})
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("ended %q: account lacks %q:\n%s", c.ended, c.want, b.String())
		}
	}
}

// A value out of range is bad usage (exit 2), said before any router is
// asked: no router runs here (trial 10, Q17: exit 1, after the
// candidate's health, as the router's answer).
func TestShadowStartBadValueIsUsage(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	code, _, errs := runHiro(t, "shadow", "start", "prod", "--share", "2")
	if code != ExitUsage || !strings.Contains(errs, "shadow share 2: use a fraction in (0, 1]") {
		t.Errorf("--share 2: exit %d, stderr %q; want exit 2 naming the share", code, errs)
	}
}

// An unknown candidate is bad usage too, said before any router is asked
// (trial 12, Q17 again: `shadow start nope` exited 1 with the router's
// words).
func TestShadowStartUnknownCandidateIsUsage(t *testing.T) {
	t.Setenv("HIRO_STATE_HOME", t.TempDir())
	cfg := filepath.Join("..", "..", "examples", "activate", "hiro.toml")
	code, _, errs := runHiro(t, "--config", cfg, "shadow", "start", "nope", "--share", "0.5")
	if code != ExitUsage || !strings.Contains(errs, "backends.nope: no such backend profile; known: prod, router, twin") {
		t.Errorf("shadow start nope: exit %d, stderr %q; want exit 2 naming the profiles", code, errs)
	}
}
