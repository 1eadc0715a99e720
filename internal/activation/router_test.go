package activation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// serveProc is a running `hiro serve` (the real command, a real process).
type serveProc struct {
	cmd *exec.Cmd
	out *strings.Builder
	log *lockedWriter // out, read under its lock while hiro serve runs
	ctl *control.Client
	url string
}

// startServe starts `hiro --config CFG serve` with env and waits until it
// reports production ready.
func startServe(t *testing.T, cfgPath, url, stateHome string, env []string, within time.Duration) *serveProc {
	t.Helper()
	p := &serveProc{out: &strings.Builder{}, url: url}
	p.cmd = exec.Command(hiroBin, "--config", cfgPath, "serve")
	p.cmd.Env = env
	w := &lockedWriter{b: p.out}
	p.log = w
	p.cmd.Stdout, p.cmd.Stderr = w, w
	must(t, p.cmd.Start())
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("hiro serve output:\n%s", w.String())
		}
	})
	deadline := time.Now().Add(within)
	for {
		if p.ctl == nil {
			p.ctl, _ = control.Dial(stateHome + "/serve")
		}
		if p.ctl != nil {
			if st, err := p.ctl.Status(context.Background()); err == nil && st.Production.State == control.StateReady && !st.Draining {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hiro serve did not report production ready within %s:\n%s", within, w.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *serveProc) production(t *testing.T) string {
	t.Helper()
	st, err := p.ctl.Status(context.Background())
	must(t, err)
	return st.Production.Name
}

type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(b)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// load sends chat completions for the production alias through the
// router from clients goroutines, one after another each, until stopped,
// and counts what came back.
type load struct {
	mu sync.Mutex
	// ok counts 200 answers by the model that answered.
	ok map[string]int
	// retry503 are the times of 503 answers that carried Retry-After.
	retry503 []time.Time
	// failed are every other answer or error.
	failed []string
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startLoad(url string, clients int, maxTokens int) *load {
	return startLoadOf(url, clients, maxTokens, false)
}

// startLoadOf is startLoad; stream asks for streamed completions, counted
// as ok["stream"] when the stream ends with "data: [DONE]".
func startLoadOf(url string, clients int, maxTokens int, stream bool) *load {
	body := fmt.Sprintf(`{"model":"extraction","stream":%v,"max_tokens":%d,"messages":[{"role":"user","content":"Reply with exactly the word READY and nothing else."}]}`, stream, maxTokens)
	return startLoadWith(url, clients, stream, func(int) string { return body })
}

// startLoadWith is startLoadOf with each client's i-th request body
// from bodyOf.
func startLoadWith(url string, clients int, stream bool, bodyOf func(i int) string) *load {
	l := &load{ok: map[string]int{}, stop: make(chan struct{})}
	hc := &http.Client{Timeout: 60 * time.Second}
	for i := 0; i < clients; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-l.stop:
					return
				default:
				}
				resp, err := hc.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(bodyOf(n)))
				now := time.Now()
				if err != nil {
					l.add(func() { l.failed = append(l.failed, err.Error()) })
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch {
				case resp.StatusCode == 200 && stream:
					if strings.Contains(string(b), "data: [DONE]") {
						l.add(func() { l.ok["stream"]++ })
					} else {
						l.add(func() { l.failed = append(l.failed, "stream cut: "+string(b)) })
					}
				case resp.StatusCode == 200:
					var r struct {
						Model string `json:"model"`
					}
					_ = json.Unmarshal(b, &r)
					l.add(func() { l.ok[r.Model]++ })
				case resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "":
					l.add(func() { l.retry503 = append(l.retry503, now) })
					time.Sleep(20 * time.Millisecond)
				default:
					l.add(func() { l.failed = append(l.failed, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, b)) })
				}
			}
		}()
	}
	return l
}

func (l *load) add(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

func (l *load) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.failed) + len(l.retry503)
	for _, c := range l.ok {
		n += c
	}
	return n
}

// waitMore waits until n more answers came back.
func (l *load) waitMore(t *testing.T, n int) {
	t.Helper()
	start := l.total()
	deadline := time.Now().Add(30 * time.Second)
	for l.total() < start+n {
		if time.Now().After(deadline) {
			t.Fatalf("the load stalled: %d answers", l.total())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

func (l *load) String() string {
	return fmt.Sprintf("ok %v, 503+Retry-After %d, failed %d %v", l.ok, len(l.retry503), len(l.failed), firstN(l.failed, 5))
}

func firstN(xs []string, n int) []string {
	if len(xs) > n {
		return xs[:n]
	}
	return xs
}

// Requests flow through `hiro serve` during activate and rollback of a
// candidate that shares the accelerator: the router is switched through
// its control socket, the old production drained and stopped, and not
// one request fails.
func TestActivateAndRollbackThroughTheRouterNoRequestFails(t *testing.T) {
	// The candidate streams slowly: at the rollback, streams are in
	// flight on it, and must end there before it is stopped.
	w := newWorld(t, false, "--token-delay", "300ms")
	w.startProduction()
	evPath := w.qualify()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	l := startLoad(url, 4, 4)
	streams := startLoadOf(url, 3, 8, true)
	l.waitMore(t, 50)

	code, out := w.hiro("activate", evPath, "--journal", w.journal)
	if code != 0 || !strings.Contains(out, "switched through its control socket") {
		l.finish()
		t.Fatalf("activate: exit %d\n%s", code, out)
	}
	if p := sp.production(t); p != "cand" {
		t.Fatalf("the router serves %s after the activation", p)
	}
	l.waitMore(t, 50)
	code, out = w.hiro("rollback", "--journal", w.journal)
	if code != 0 {
		l.finish()
		t.Fatalf("rollback: exit %d\n%s", code, out)
	}
	if p := sp.production(t); p != "prod" {
		t.Fatalf("the router serves %s after the rollback", p)
	}
	l.waitMore(t, 50)
	streams.waitMore(t, 5)
	l.finish()
	streams.finish()
	t.Logf("requests through the router: %s; streams: %s", l, streams)
	if len(l.failed) > 0 || len(l.retry503) > 0 || len(streams.failed) > 0 || len(streams.retry503) > 0 {
		t.Fatalf("requests failed during a non-exclusive switch: %s; streams: %s", l, streams)
	}
	if l.ok["cand-model"] == 0 || l.ok["prod-model"] == 0 {
		t.Fatalf("both productions should have answered: %s", l)
	}
	if _, ok := w.running("cand"); ok {
		t.Fatal("cand still runs after the rollback")
	}
}

// An exclusive candidate: the router drains and hands production over
// (503 + Retry-After while the accelerator changes hands, nothing else),
// then serves the candidate; the rollback does the same the other way.
func TestExclusiveActivationThroughTheRouterOnlyBounded503(t *testing.T) {
	w := newWorld(t, true)
	w.startProduction()
	evPath := w.qualify()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	l := startLoad(url, 4, 4)
	l.waitMore(t, 50)

	var windows [][2]time.Time
	for _, args := range [][]string{{"activate", evPath}, {"rollback"}} {
		t0 := time.Now()
		code, out := w.hiro(append(args, "--journal", "")...)
		windows = append(windows, [2]time.Time{t0, time.Now()})
		if code != 0 {
			l.finish()
			t.Fatalf("%s: exit %d\n%s", args[0], code, out)
		}
		l.waitMore(t, 50)
	}
	if p := sp.production(t); p != "prod" {
		t.Fatalf("the router serves %s after the rollback", p)
	}
	l.finish()
	t.Logf("requests through the router: %s; switches took %s and %s", l, windows[0][1].Sub(windows[0][0]), windows[1][1].Sub(windows[1][0]))
	if len(l.failed) > 0 {
		t.Fatalf("requests failed: %s", l)
	}
	// Every 503 fell inside a switch, and it was bounded by it.
	for _, at := range l.retry503 {
		if !(in(at, windows[0]) || in(at, windows[1])) {
			t.Fatalf("a 503 at %s outside both switches %v", at.Format(time.RFC3339Nano), windows)
		}
	}
	if l.ok["cand-model"] == 0 || l.ok["prod-model"] == 0 {
		t.Fatalf("both productions should have answered: %s", l)
	}
}

func in(t time.Time, w [2]time.Time) bool { return !t.Before(w[0]) && !t.After(w[1]) }

// campaignWorld writes a plan whose candidate qualifies on its base
// attempt (no variant needed) and returns its path.
func (w *world) exclusivePlan() string {
	p := w.dir + "/plan-x.toml"
	must(w.t, os.WriteFile(p, []byte(`title = "Exclusive trial"
config = "hiro.toml"
candidate = "cand"
evidence_dir = "evidence"

[[gates]]
id = "launch"
kind = "launch"
[[gates.variants]]
name = "no-exit"
reason = "documented fallback: run without the exit flag"
args_remove = ["--exit"]

[[gates]]
id = "ready"
kind = "ready_control"
`), 0o644))
	return p
}

// An exclusive campaign with 'hiro serve' running: the router drains and
// hands production over (503 + Retry-After only while the campaign holds
// it), the campaign takes it back verified through the router, and
// requests are served again; nothing else fails.
func TestExclusiveCampaignHandsOverThroughTheRouter(t *testing.T) {
	w := newWorld(t, true)
	w.startProduction()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	l := startLoad(url, 4, 4)
	l.waitMore(t, 50)
	t0 := time.Now()
	code, out := w.hiro("qualify", w.exclusivePlan())
	window := [2]time.Time{t0, time.Now()}
	if code != 0 || !strings.Contains(out, "hand production over") || !strings.Contains(out, "asking hiro serve to take production prod back") {
		l.finish()
		t.Fatalf("qualify: exit %d\n%s", code, out)
	}
	l.waitMore(t, 50)
	l.finish()
	t.Logf("requests through the router: %s; campaign took %s", l, window[1].Sub(window[0]))
	if len(l.failed) > 0 {
		t.Fatalf("requests failed: %s", l)
	}
	if len(l.retry503) == 0 {
		t.Fatalf("no 503 during the hand-over: did the router hand production over? %s", l)
	}
	for _, at := range l.retry503 {
		if !in(at, window) {
			t.Fatalf("a 503 at %s outside the campaign %v", at.Format(time.RFC3339Nano), window)
		}
	}
	st, err := sp.ctl.Status(context.Background())
	must(t, err)
	if st.Production.Name != "prod" || st.Production.State != control.StateReady || st.Handover != nil || st.Draining {
		t.Fatalf("router after the campaign: %+v handover %+v draining %v", st.Production, st.Handover, st.Draining)
	}
}

// SIGKILL of the campaign's hiro while the router holds production for
// it: production comes back verified (the router notices the dead owner,
// or the next hiro command takes it back through the router), the
// candidate is stopped, and requests are served again.
func TestSIGKILLDuringHandoverProductionComesBack(t *testing.T) {
	w := newWorld(t, true, "--load-time", "30s")
	w.startProduction()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	w.killCampaignDuringHandover(t, sp)

	code, out := w.hiro("backend", "status")
	if code != 0 {
		t.Fatalf("next command: exit %d\n%s", code, out)
	}
	w.routerTookBack(t, sp, url, out, "campaign")
}

// killCampaignDuringHandover runs an exclusive campaign against the
// router sp and SIGKILLs its hiro once the router holds production for
// it and the candidate is starting.
func (w *world) killCampaignDuringHandover(t *testing.T, sp *serveProc) {
	t.Helper()
	cmd := w.hiroCmd("qualify", w.exclusivePlan())
	must(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := sp.ctl.Status(context.Background())
		_, candUp := w.running("cand")
		if err == nil && st.Handover != nil && candUp {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the campaign never held production with the candidate starting: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
}

// A hand-over cut short (issue 25): SIGKILL of the campaign's hiro while
// the router holds production for it and the exclusive candidate loads.
// With no other hiro command, the router takes production back and also
// stops the dead campaign's candidate and releases its leases, as 'hiro
// recover' does: no candidate keeps running beside production.
func TestHandoverCutShortRouterStopsTheCandidate(t *testing.T) {
	w := newWorld(t, true, "--load-time", "30s")
	w.startProduction()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	w.killCampaignDuringHandover(t, sp)
	leases := filepath.Join(w.dir, "leases")
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := sp.ctl.Status(context.Background())
		_, candUp := w.running("cand")
		var campaigns []string // the campaign's leases left (the router holds its own)
		ls, _ := lease.List(leases)
		for _, l := range ls {
			if l.Kind == lease.KindCampaign {
				campaigns = append(campaigns, l.Campaign)
			}
		}
		if err == nil && st.Production.State == control.StateReady && st.Handover == nil && !candUp && len(campaigns) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the campaign's hiro died: status %+v, candidate running %v, campaign leases %v\nrouter:\n%s", st, candUp, campaigns, sp.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(sp.log.String(), `"event":"campaign_recovery"`) {
		t.Errorf("no campaign_recovery event:\n%s", sp.log.String())
	}
}

// SIGKILL of hiro in the middle of an exclusive activation through the
// router (production handed over, the candidate loading): the next hiro
// command stops the candidate and has the router take production back,
// verified; requests are served by the old production again.
func TestSIGKILLDuringExclusiveActivationThroughTheRouter(t *testing.T) {
	w := newWorld(t, true, "--load-time", "3s")
	w.startProduction()
	evPath := w.qualify()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	cmd := w.hiroCmd("activate", evPath, "--journal", "")
	must(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := sp.ctl.Status(context.Background())
		_, candUp := w.running("cand")
		if err == nil && st.Handover != nil && candUp {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the activation never held production with the candidate starting: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()

	code, out := w.hiro("backend", "status")
	if code != 0 || !strings.Contains(out, "switch settled") {
		t.Fatalf("next command: exit %d\n%s", code, out)
	}
	w.routerTookBack(t, sp, url, out, "activation")
}

// An exclusive activation through a second configuration file (a copy of
// the router's, naming the same production endpoint) goes through the
// running router like one through the router's own file: the router hands
// production over and is switched to the new production, the old one is
// not restarted beside it, no death is recorded, and requests see only
// 503s bounded by the switch.
func TestExclusiveActivationFromAnotherConfigFileThroughTheRouter(t *testing.T) {
	w := newWorld(t, true)
	w.startProduction()
	// The second file: same backends and production, shared state.
	other := filepath.Join(w.dir, "other")
	must(t, os.MkdirAll(other, 0o755))
	b, err := os.ReadFile(w.cfgPath)
	must(t, err)
	otherCfg := filepath.Join(other, "hiro.toml")
	must(t, os.WriteFile(otherCfg, []byte(strings.Replace(string(b), `state_dir = "state"`, fmt.Sprintf("state_dir = %q", w.cfg.StateDir), 1)), 0o644))
	must(t, os.WriteFile(filepath.Join(other, "prod-launcher.sh"), []byte("#!/bin/sh\n# production launcher\n"), 0o755))
	pb, err := os.ReadFile(filepath.Join(w.dir, "plan.toml"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(other, "plan.toml"), pb, 0o644))
	p, cfg2, err := qualify.LoadPlan(filepath.Join(other, "plan.toml"), otherCfg)
	must(t, err)
	qo, err := qualify.Run(context.Background(), p, cfg2, qualify.Options{})
	must(t, err)
	if qo.ExitCode != 0 {
		t.Fatalf("campaign: exit %d: %s", qo.ExitCode, qo.Evidence.TerminationReason)
	}
	evPath := filepath.Join(qo.Dir, evidence.PrivateFile)
	// The campaign restored production with the second file's profile
	// (its config_files resolve to other/prod-launcher.sh): hiro serve
	// from the first file refuses a production of another configuration
	// (exit 2, nothing stopped). The operator does what it says: stop it
	// and start it from the first file.
	if _, sr, err := supervisor.StopRecorded(context.Background(), w.cfg.StateDir, "prod", 0); err != nil || !sr.PortFree {
		t.Fatalf("stopping the restored production: %+v %v", sr, err)
	}
	w.startProduction()

	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	l := startLoad(url, 4, 4)
	l.waitMore(t, 50)
	t0 := time.Now()
	cmd := exec.Command(hiroBin, "--config", otherCfg, "activate", evPath, "--journal", "")
	cmd.Env, cmd.Dir = w.env, other
	out, _ := cmd.CombinedOutput()
	window := [2]time.Time{t0, time.Now()}
	if cmd.ProcessState.ExitCode() != 0 || !strings.Contains(string(out), "control socket") {
		l.finish()
		t.Fatalf("activate from the second file: exit %d, want 0 through the router\n%s", cmd.ProcessState.ExitCode(), out)
	}
	l.waitMore(t, 50)
	// A while for a wrongly restarted old production to show.
	time.Sleep(2 * time.Second)
	l.finish()
	st, err := sp.ctl.Status(context.Background())
	must(t, err)
	if st.Production.Name != "cand" || st.Production.State != control.StateReady || st.Handover != nil {
		t.Fatalf("router after the activation: %+v handover %+v", st.Production, st.Handover)
	}
	if st.Production.LastFailure != nil || st.Production.Restarts != 0 {
		t.Errorf("the hand-over was taken for a failure: last failure %+v, %d restarts", st.Production.LastFailure, st.Production.Restarts)
	}
	if supervisor.CheckReady(context.Background(), w.cfg.Backends["prod"], nil).OK {
		t.Errorf("the old production answers beside the new one")
	}
	if len(l.failed) > 0 {
		t.Fatalf("requests failed: %s", l)
	}
	for _, at := range l.retry503 {
		if !in(at, window) {
			t.Fatalf("a 503 at %s outside the switch %v", at.Format(time.RFC3339Nano), window)
		}
	}
}

// An exclusive campaign that cannot reach the router's control socket
// (another state home) takes production's endpoint lease and stops
// production itself: the router's checks that see production go are the
// hand-over, not a failure: no failure is recorded or kept as the last
// one, production is not restarted beside the candidate, and the router
// serves production again once the campaign has released it.
func TestRouterDoesNotRecordAHandoverAsAFailure(t *testing.T) {
	w := newWorld(t, true, "--load-time", "2s")
	// Frequent checks: several of them see production go.
	f, err := os.OpenFile(w.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString("health_interval = \"100ms\"\n")
	must(t, err)
	must(t, f.Close())
	w.startProduction()
	url := fmt.Sprintf("http://127.0.0.1:%d", w.servePort)
	sp := startServe(t, w.cfgPath, url, w.stateHome, w.env, 30*time.Second)
	elsewhere := t.TempDir()
	cmd := exec.Command(hiroBin, "--config", w.cfgPath, "qualify", w.exclusivePlan())
	cmd.Env, cmd.Dir = append(append([]string{}, w.env...), "HIRO_STATE_HOME="+elsewhere), w.dir
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 0 || strings.Contains(string(out), "hand production over") {
		t.Fatalf("qualify without the router's control socket: exit %d, want 0 and no hand-over through the router\n%s", cmd.ProcessState.ExitCode(), out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := sp.ctl.Status(context.Background())
		must(t, err)
		if st.Production.LastFailure != nil {
			t.Fatalf("the hand-over was recorded as production's failure: %+v", st.Production.LastFailure)
		}
		if st.Production.Restarts != 0 {
			t.Fatalf("the router restarted production %d times around the campaign", st.Production.Restarts)
		}
		if st.Production.State == control.StateReady && st.Handover == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the router does not serve production again after the campaign: %+v handover %+v", st.Production, st.Handover)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// routerTookBack waits for the router sp to serve production prod again,
// ready and no longer handed over, after the next command (out) recovered
// from a killed hiro doing what; the killed hiro's candidate must be gone
// and requests through url are answered by production, without 503s.
func (w *world) routerTookBack(t *testing.T, sp *serveProc, url, out, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := sp.ctl.Status(context.Background())
		if err == nil && st.Production.Name == "prod" && st.Production.State == control.StateReady && st.Handover == nil && !st.Draining {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("production did not come back through the router: %+v\nnext command:\n%s", st, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, ok := w.running("cand"); ok {
		t.Fatalf("the killed %s's candidate still runs", what)
	}
	l := startLoad(url, 2, 4)
	l.waitMore(t, 20)
	l.finish()
	if len(l.failed) > 0 || len(l.retry503) > 0 || l.ok["prod-model"] == 0 {
		t.Fatalf("after the recovery: %s", l)
	}
}
