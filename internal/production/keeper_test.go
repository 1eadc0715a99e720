package production_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if err := testsupport.Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

// keeperConfig is a configuration whose production is the fake engine
// on a free port (managed, or unmanaged).
func keeperConfig(t *testing.T, unmanaged bool, reply string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	fake := testsupport.FakeEngine(t)
	port := testsupport.FreePort(t)
	extra := ""
	if unmanaged {
		extra = "unmanaged = true\nbase_url = \"http://127.0.0.1:" + strconv.Itoa(port) + "\"\n"
	} else {
		extra = fmt.Sprintf("command = %q\nargs = [\"--port\", \"%d\", \"--model\", \"prod-model\", \"--reply\", %q]\nport = %d\n", fake, port, reply, port)
	}
	text := fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
model = "prod-model"
ready_timeout = "15s"
stall_timeout = "10s"
stop_grace = "2s"
%s`, extra)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	t.Cleanup(func() { supervisor.StopRecorded(context.Background(), cfg.StateDir, "prod", time.Second) })
	return cfg
}

func portOf(t *testing.T, baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

func alive(pid int) bool { return pid > 0 && syscall.Kill(pid, 0) == nil }

// TestKeeper: what the keeper finds in production's state record and what
// its restore does with it, for each case: not recorded (started,
// recorded, detached), recorded and ready (adopted, never started twice),
// recorded and stale (the record dropped, a fresh one started),
// recorded by another configuration (left running, never stopped),
// unmanaged (verified only, never started).
func TestKeeper(t *testing.T) {
	type check func(t *testing.T, k production.Keeper, prof *config.Profile, before int, v *production.Verification)
	cases := []struct {
		name      string
		unmanaged bool
		// setup prepares the record; it returns the pid it started (0: none).
		setup func(t *testing.T, cfg *config.Config) int
		found production.Found
		check check
	}{{
		name:  "not recorded",
		setup: func(*testing.T, *config.Config) int { return 0 },
		found: production.FoundNone,
		check: func(t *testing.T, k production.Keeper, prof *config.Profile, _ int, v *production.Verification) {
			f, st := k.Look(prof)
			if !v.OK || v.Adopted || f != production.FoundOwn || !alive(st.PID) {
				t.Errorf("restore %+v; then found %s pid %d", v, f, st.PID)
			}
		},
	}, {
		name: "recorded and ready",
		setup: func(t *testing.T, cfg *config.Config) int {
			res, err := production.Keeper{StateDir: cfg.StateDir}.StartDetached(context.Background(), cfg.Backends["prod"], supervisor.Options{})
			if err != nil || res.State != supervisor.StateReady {
				t.Fatalf("start: %+v %v", res, err)
			}
			return res.PID
		},
		found: production.FoundOwn,
		check: func(t *testing.T, k production.Keeper, prof *config.Profile, before int, v *production.Verification) {
			_, st := k.Look(prof)
			if !v.OK || !v.Adopted || st.PID != before || v.Reply != "READY" {
				t.Errorf("restore %+v; pid %d, was %d: started again", v, st.PID, before)
			}
		},
	}, {
		name: "recorded and stale",
		setup: func(t *testing.T, cfg *config.Config) int {
			rec := supervisor.Record{Schema: supervisor.RecordSchema, Name: "prod", PID: 1 << 22, PGID: 1 << 22, Port: cfg.Backends["prod"].Port, StartedAt: time.Now()}
			if err := supervisor.WriteRecord(cfg.StateDir, rec); err != nil {
				t.Fatal(err)
			}
			return 0
		},
		found: production.FoundStale,
		check: func(t *testing.T, k production.Keeper, prof *config.Profile, _ int, v *production.Verification) {
			f, st := k.Look(prof)
			if !v.OK || v.Adopted || f != production.FoundOwn || st.PID == 1<<22 || !alive(st.PID) {
				t.Errorf("restore %+v; then found %s pid %d", v, f, st.PID)
			}
		},
	}, {
		name: "recorded by another configuration",
		setup: func(t *testing.T, cfg *config.Config) int {
			other := *cfg.Backends["prod"]
			other.Env = map[string]string{"CHANGED": "1"}
			res, err := production.Keeper{StateDir: cfg.StateDir}.StartDetached(context.Background(), &other, supervisor.Options{})
			if err != nil || res.State != supervisor.StateReady {
				t.Fatalf("start: %+v %v", res, err)
			}
			return res.PID
		},
		found: production.FoundForeign,
		check: func(t *testing.T, k production.Keeper, prof *config.Profile, before int, v *production.Verification) {
			f, st := k.Look(prof)
			if f != production.FoundForeign || st.PID != before || !alive(before) {
				t.Errorf("the other configuration's process: found %s pid %d (was %d, alive %v): it was stopped or replaced", f, st.PID, before, alive(before))
			}
			// Starting it is never starting over it: the process and its
			// record stay the other configuration's.
			k.StartVerified(context.Background(), prof, "test")
			if f, st := k.Look(prof); f != production.FoundForeign || st.PID != before || !alive(before) {
				t.Errorf("after StartVerified: found %s pid %d (was %d, alive %v)", f, st.PID, before, alive(before))
			}
		},
	}, {
		name:      "unmanaged",
		unmanaged: true,
		setup:     func(*testing.T, *config.Config) int { return 0 },
		found:     production.FoundUnmanaged,
		check: func(t *testing.T, k production.Keeper, prof *config.Profile, _ int, v *production.Verification) {
			if v.OK || v.Adopted || v.Attempts != 1 {
				t.Errorf("restore of an unmanaged production nobody runs: %+v", v)
			}
			if _, err := supervisor.ReadRecord(k.StateDir, prof.Name); err == nil {
				t.Error("an unmanaged production was started and recorded")
			}
			// Once something answers there, it is verified as it is.
			cmd := exec.Command(testsupport.FakeEngine(t), "--port", portOf(t, prof.BaseURL), "--model", "prod-model", "--reply", "READY")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			deadline := time.Now().Add(10 * time.Second)
			for !k.Verify(context.Background(), prof).OK {
				if time.Now().After(deadline) {
					t.Fatal("the unmanaged production never verified")
				}
				time.Sleep(50 * time.Millisecond)
			}
			if v := k.Restore(context.Background(), prof, 1, nil); !v.OK || v.Adopted || v.Reply != "READY" {
				t.Errorf("restore of an unmanaged production that answers: %+v", v)
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := keeperConfig(t, c.unmanaged, "READY")
			prof := cfg.Backends["prod"]
			k := production.Keeper{StateDir: cfg.StateDir}
			before := c.setup(t, cfg)
			if f, _ := k.Look(prof); f != c.found {
				t.Fatalf("Look: %s, want %s", f, c.found)
			}
			var v *production.Verification
			if c.found != production.FoundForeign {
				v = k.Restore(context.Background(), prof, 1, nil)
			}
			c.check(t, k, prof, before, v)
		})
	}
}

// TestLeaseKeys: the one policy: each endpoint once, nil profiles
// skipped, the accelerator when exclusive.
func TestLeaseKeys(t *testing.T) {
	a := &config.Profile{BaseURL: "http://localhost:9001"}
	b := &config.Profile{BaseURL: "http://127.0.0.1:9001/v1"}
	c := &config.Profile{BaseURL: "http://127.0.0.1:9002"}
	got := production.LeaseKeys(true, a, nil, b, c)
	if len(got) != 3 || got[0] != "accelerator" || got[1] == got[2] {
		t.Errorf("LeaseKeys(exclusive, a, nil, a again, c) = %v", got)
	}
	if got := production.LeaseKeys(false, c); len(got) != 1 || got[0] == "accelerator" {
		t.Errorf("LeaseKeys(shared, c) = %v", got)
	}
}

// Restored means the process hiro started answers: hiro's production
// died and another process (not started by hiro, no record) bound its
// port and answers READY; the restore must not report production
// restored, and says which process holds the port (issue 25).
func TestRestoreRefusesAnImpostor(t *testing.T) {
	cfg := keeperConfig(t, false, "READY")
	prof := cfg.Backends["prod"]
	k := production.Keeper{StateDir: cfg.StateDir}
	res, err := k.StartDetached(context.Background(), prof, supervisor.Options{})
	if err != nil || res.State != supervisor.StateReady {
		t.Fatalf("start: %+v %v", res, err)
	}
	syscall.Kill(-res.PGID, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for alive(res.PID) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	impostor := exec.Command(testsupport.FakeEngine(t), "--port", portOf(t, prof.BaseURL), "--model", "prod-model", "--reply", "READY")
	if err := impostor.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { impostor.Process.Kill(); impostor.Wait() })
	for time.Now().Before(deadline.Add(5*time.Second)) && !impostorAnswers(t, k, prof) {
		time.Sleep(50 * time.Millisecond)
	}
	if ok, _ := k.Attribute(prof); ok {
		t.Fatal("the impostor's listener was attributed to hiro's process group")
	}
	v := k.Restore(context.Background(), prof, 1, nil)
	if v.OK || !strings.Contains(v.Error, "not in the process group hiro started") || !strings.Contains(v.Error, "pid "+strconv.Itoa(impostor.Process.Pid)) {
		t.Errorf("restore with an impostor on the port: %+v", v)
	}
	if v := k.Verify(context.Background(), prof); v.OK {
		t.Errorf("verify with an impostor on the port: %+v", v)
	}
}

// impostorAnswers reports whether something answers ready at prof's
// endpoint (the health check and the probe only, not who holds the port).
func impostorAnswers(t *testing.T, k production.Keeper, prof *config.Profile) bool {
	return supervisor.CheckReady(context.Background(), prof, nil).OK
}
