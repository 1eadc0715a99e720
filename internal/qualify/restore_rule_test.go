package qualify_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// chattyProduction is an env whose production answers the READY prompt
// with "READY w0 w1 w2", started and recorded as 'hiro backend start'
// does with no ready_probe.expect; it returns production's pid.
func chattyProduction(t *testing.T) (*env, int) {
	t.Helper()
	e := newEnv(t, nil, "", nil)
	b, err := os.ReadFile(e.cfgPath)
	must(t, err)
	must(t, os.WriteFile(e.cfgPath, []byte(strings.Replace(string(b), `"--reply", "READY"]`, `"--reply", "READY w0 w1 w2"]`, 1)), 0o644))
	e.setProdExpect("")
	e.startProduction()
	st, err := supervisor.Status(e.cfg.StateDir, "prod")
	if err != nil || st.Status != supervisor.StatusRunning {
		t.Fatalf("production not recorded running: %+v %v", st, err)
	}
	return e, st.PID
}

// setProdExpect rewrites production's ready_probe.expect ("" removes it)
// and reloads the configuration.
func (e *env) setProdExpect(expect string) {
	e.t.Helper()
	b, err := os.ReadFile(e.cfgPath)
	must(e.t, err)
	s := strings.Replace(string(b), "[backends.prod.ready_probe]\nexpect = \"READY\"\n", "", 1)
	if expect != "" {
		s = strings.Replace(s, "[backends.cand]", "[backends.prod.ready_probe]\nexpect = "+strconv.Quote(expect)+"\n\n[backends.cand]", 1)
	}
	must(e.t, os.WriteFile(e.cfgPath, []byte(s), 0o644))
	cfg, err := config.Load(e.cfgPath)
	must(e.t, err)
	e.cfg = cfg
}

func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// What 'hiro backend start' and the router call ready, the restore calls
// restored: the same rule judges the READY reply, and the production hiro
// keeps is adopted, not started a second time onto its own port.
func TestRestoreJudgesTheReplyAsReadinessDoes(t *testing.T) {
	e, pid := chattyProduction(t)
	rr := qualify.Restore(context.Background(), e.cfg, e.cfg.Backends["prod"], 2, nil)
	if !rr.OK || !rr.Adopted || rr.Reply != "READY w0 w1 w2" {
		t.Fatalf("restore of a production the supervisor calls ready: %+v", rr)
	}
	st, _ := supervisor.Status(e.cfg.StateDir, "prod")
	if st.PID != pid || !pidAlive(pid) {
		t.Fatalf("production pid %d became %d (alive %v): it was started again", pid, st.PID, pidAlive(pid))
	}
}

// A production of hiro's that answers but fails the rule (here its
// profile now wants exactly READY) is reported with its real answer; it
// is left running and never started a second time (no port_in_use
// against hiro's own engine), without waiting out the ready timeout.
func TestRestoreOfOwnRunningProductionReportsTheReplyNotThePort(t *testing.T) {
	e, pid := chattyProduction(t)
	e.setProdExpect("READY")
	t0 := time.Now()
	rr := qualify.Restore(context.Background(), e.cfg, e.cfg.Backends["prod"], 2, nil)
	if rr.OK {
		t.Fatalf("a reply the profile refuses was restored: %+v", rr)
	}
	if !strings.Contains(rr.Error, `the reply "READY w0 w1 w2" is not the expected "READY"`) || !strings.Contains(rr.Error, "pid "+strconv.Itoa(pid)) ||
		strings.Contains(rr.Error, "port_in_use") {
		t.Fatalf("restore error does not give the real reason: %s", rr.Error)
	}
	if !pidAlive(pid) {
		t.Fatal("the restore stopped the production hiro keeps")
	}
	if st, _ := supervisor.Status(e.cfg.StateDir, "prod"); st.PID != pid {
		t.Fatalf("production pid %d became %d", pid, st.PID)
	}
	if d := time.Since(t0); d >= e.cfg.Backends["prod"].ReadyTimeout.Duration {
		t.Fatalf("the restore waited %s for an answer that cannot change", d)
	}
}
