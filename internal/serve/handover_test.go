package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/control"
	"github.com/hiro-dev/hiro/internal/lease"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// TestLeaseHoldsProduction: while a campaign holds production's lease the
// router neither starts nor serves it; when the lease is released it
// starts production by itself.
func TestLeaseHoldsProduction(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	dir, err := lease.Dir()
	if err != nil {
		t.Fatal(err)
	}
	l := &lease.Lease{Kind: lease.KindCampaign, Campaign: "camp-lease", Config: cfg.Path, Production: "prod"}
	l.Self()
	h, err := lease.Acquire(dir, l, lease.ProductionKey(cfg.Backends["prod"].BaseURL))
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateHandedOver, 5*time.Second)
	if st.Handover == nil || st.Handover.Campaign != "camp-lease" || st.Handover.Source != "lease" || st.Production.PID != 0 {
		t.Fatalf("with the lease held: %+v %+v", st.Handover, st.Production)
	}
	code, hd, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	if code != 503 || hd.Get("Retry-After") == "" || !strings.Contains(body, "camp-lease") {
		t.Errorf("request under a campaign: %d %s", code, body)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	st = r.waitState(t, control.StateReady, 20*time.Second)
	if st.Handover != nil || st.Production.PID == 0 {
		t.Errorf("after the lease was released: %+v", st)
	}
}

// TestRestartHoldsLease: the router's own restart of production holds
// production's endpoint lease, so that another hiro (a campaign, 'hiro
// backend start') is refused naming hiro serve while it runs; and a
// restart that finds the lease taken while it waited for its backoff does
// not start production beside its new holder, but holds production for
// it and starts it again once the lease is released.
func TestRestartHoldsLease(t *testing.T) {
	cfg := fakeConfig(t, []string{"--load-time", "1500ms"}, `restart_backoff = "1s"`)
	key := lease.ProductionKey(cfg.Backends["prod"].BaseURL)
	dir, err := lease.Dir()
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, cfg, nil)
	st := r.waitState(t, control.StateReady, 20*time.Second)
	// The lease is the router's only while it starts production: the
	// start releases it before it says ready, so whoever sees "ready" can
	// take it at once.
	h, err := lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "test"}, key)
	if err != nil {
		t.Fatalf("the router said ready and still holds production's lease: %v", err)
	}
	h.Release()

	// During a restart: refused, naming hiro serve.
	killPID(st.Production.PID)
	st = r.waitState(t, control.StateStarting, 10*time.Second)
	_, err = lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "test"}, key)
	var held *lease.HeldError
	if !errors.As(err, &held) || held.Holder == nil || !strings.Contains(held.Holder.Command, "hiro serve (restart)") {
		t.Fatalf("lease taken while the router restarts production: err %v (state %+v)", err, st.Production)
	}
	st = r.waitState(t, control.StateReady, 20*time.Second)

	// Taken while the restart waits for its backoff: no start beside it.
	killPID(st.Production.PID)
	r.waitState(t, control.StateRestarting, 10*time.Second)
	l := &lease.Lease{Kind: lease.KindCampaign, Campaign: "camp-race", Config: cfg.Path, Production: "prod"}
	h, err = lease.Acquire(dir, l, key)
	if err != nil {
		t.Fatal(err)
	}
	st = r.waitState(t, control.StateHandedOver, 10*time.Second)
	if st.Handover == nil || st.Handover.Campaign != "camp-race" || st.Production.PID != 0 {
		t.Fatalf("restart with the lease taken: %+v %+v", st.Handover, st.Production)
	}
	if pids := enginePIDs(cfg.Backends["prod"].Port); len(pids) != 0 {
		t.Errorf("engine pids %v run beside the lease's holder", pids)
	}
	if !strings.Contains(r.events.String(), `"start_refused"`) {
		t.Errorf("no start_refused event:\n%s", r.events.String())
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
	if st = r.waitState(t, control.StateReady, 20*time.Second); st.Production.PID == 0 {
		t.Errorf("after the lease was released: %+v", st.Production)
	}
}

// TestSwitch: the router points production at another running, recorded
// backend and names the previous one; the alias now reaches the new one.
func TestSwitch(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	port := freePort(t)
	cfg.Backends["next"] = cfg.Backends["prod"].Clone()
	next := cfg.Backends["next"]
	next.Name, next.Port, next.Model = "next", port, "next-model"
	next.BaseURL = "http://127.0.0.1:" + itoa(port)
	next.Args = []string{"--port", itoa(port), "--model", "next-model", "--reply", "NEXT"}
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)

	if _, err := r.ctl.Switch(context.Background(), "next", nil); err == nil {
		t.Fatal("a switch to a backend that is not running was accepted")
	}
	proc, res := supervisor.Start(context.Background(), next, supervisor.Options{StateDir: cfg.StateDir})
	if res.State != supervisor.StateReady {
		t.Fatalf("starting next: %+v", res)
	}
	if _, err := proc.Detach(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { supervisor.StopRecorded(context.Background(), cfg.StateDir, "next", 0) })
	switchedAt := time.Now()
	sw, err := r.ctl.Switch(context.Background(), "next", nil)
	if err != nil || sw.Previous != "prod" || sw.Active != "next" || sw.PreviousPID == 0 {
		t.Fatalf("switch %+v %v", sw, err)
	}
	code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	if code != 200 || !strings.Contains(body, "NEXT") {
		t.Errorf("alias after the switch: %d %s", code, body)
	}
	if code, _, _ := post(t, r.url, RouteChat, chatBody("fake-model", false)); code != 404 {
		t.Errorf("the previous model id is still served: %d", code)
	}
	st := r.waitState(t, control.StateReady, time.Second)
	if st.Production.Name != "next" || st.Production.PID != res.PID || st.Production.Since.Before(switchedAt) {
		t.Errorf("status after the switch (ready since the switch, %s): %+v", switchedAt, st.Production)
	}
	// The caller stops the previous production.
	if _, sr, err := supervisor.StopRecorded(context.Background(), cfg.StateDir, "prod", 0); err != nil || !sr.PortFree {
		t.Errorf("stopping the previous production: %+v %v", sr, err)
	}
	// The new production is watched: its death is noticed and it is restarted.
	if err := killPID(res.PID); err != nil {
		t.Fatal(err)
	}
	restarted := func(st *control.Status) bool {
		return st.Production.Restarts == 1 && st.Production.State == control.StateReady
	}
	if st = r.waitStatus(t, 20*time.Second, restarted); !restarted(st) {
		t.Fatalf("the switched-to production's death was not handled: %+v", st.Production)
	}
	resp, err := http.Post(r.url+RouteChat, "application/json", strings.NewReader(chatBody("extraction", false)))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "NEXT") {
			t.Errorf("after the restart: %s", b)
		}
	}
}

// TestUnmanagedDeath: production is a URL hiro does not launch (the fake
// engine run by the test). Killed, the first request already gets 503
// with Retry-After (not 502), production goes down and is reported, not
// restarted, requests say so without the operator's detail; started
// again by its owner, it is served again.
func TestUnmanagedDeath(t *testing.T) {
	port := freePort(t)
	startEngine := func() *exec.Cmd {
		cmd := exec.Command(fakeEngine, "--port", itoa(port), "--model", "fake-model")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	eng := startEngine()
	dir := t.TempDir()
	path := filepath.Join(dir, "hiro.toml")
	os.WriteFile(path, []byte(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
unmanaged = true
base_url = "http://127.0.0.1:`+itoa(port)+`"
model = "fake-model"
[serve]
listen = "127.0.0.1:0"
alias = "extraction"
health_interval = "300ms"
access_log = "off"
`), 0o644)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r := startRouter(t, cfg, nil)
	r.waitState(t, control.StateReady, 20*time.Second)
	if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Fatalf("while up: %d %s", code, body)
	}
	eng.Process.Kill()
	eng.Wait()
	code, h, body := post(t, r.url, RouteChat, chatBody("extraction", false))
	if code != 503 || h.Get("Retry-After") == "" || !strings.Contains(errorMessage(t, body), "production prod is") {
		t.Errorf("first request after the death: %d %v %s", code, h, body)
	}
	st := r.waitState(t, control.StateDown, 10*time.Second)
	if st.Production.Restarts != 0 || st.Production.LastFailure == nil {
		t.Errorf("unmanaged production restarted or its failure not recorded: %+v", st.Production)
	}
	code, h, body = post(t, r.url, RouteChat, chatBody("extraction", false))
	msg := errorMessage(t, body)
	// It comes back on its own: retried soon, not "the operator has to act".
	if code != 503 || h.Get("Retry-After") != itoa(retryAfterRestarting) || !strings.Contains(msg, "production prod is down") ||
		!strings.Contains(msg, "serves it again once it answers") || strings.Contains(msg, "operator") ||
		strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "pid") {
		t.Errorf("while down: %d %v %q", code, h, msg)
	}
	startEngine()
	r.waitState(t, control.StateReady, 20*time.Second)
	if code, _, body := post(t, r.url, RouteChat, chatBody("extraction", false)); code != 200 {
		t.Errorf("after its owner started it again: %d %s", code, body)
	}
}

// TestReadyReleasesTheStartsLease: the router's own start gives
// production's lease back before it publishes "ready" (setState), not
// after the start returns, so the moment the state is ready the lease
// can be taken. No process: the start is a function that says ready.
func TestReadyReleasesTheStartsLease(t *testing.T) {
	cfg := fakeConfig(t, nil, "")
	s, err := New(Options{Config: cfg, ControlDir: shortDir(t), Events: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := lease.Dir()
	if err != nil {
		t.Fatal(err)
	}
	key := lease.ProductionKey(cfg.Backends["prod"].BaseURL)
	p := s.prod
	ran := false
	held := p.underLease("start", func() {
		ran = true
		if _, err := lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "test"}, key); err == nil {
			t.Error("the lease was free while the router started production")
		}
		p.setState(control.StateReady, "started")
		h, err := lease.Acquire(dir, &lease.Lease{Kind: lease.KindCommand, Command: "test"}, key)
		if err != nil {
			t.Errorf("the router said ready (%s) and still holds production's lease: %v", p.state(), err)
			return
		}
		h.Release()
	})
	if !ran || held != nil || p.own != nil {
		t.Errorf("underLease ran %v (held by %v), lease still held %v", ran, held, p.own != nil)
	}
}
