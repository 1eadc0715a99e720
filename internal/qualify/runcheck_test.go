package qualify_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Issue 25, item 9: what a run tripped on after production was stopped
// for it (an unmanaged candidate, a candidate's api_key_env unset, its
// port held; production's key file absent) is refused by --check and by
// the run, exit 2, naming the configuration's key, before anything is
// started or stopped: production, running under hiro's record, keeps
// the same process, and no evidence or lease is left.
func TestRunCheckRefusesBeforeProductionIsStopped(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	e.startProduction()
	os.Unsetenv("HIRO_TEST_UNSET_KEY")
	candSection := "[backends.cand]\nengine = \"vllm\"\ncommand = \"" + fakeEngine + "\""
	prodSection := "[backends.prod]\nengine = \"llamacpp\"\n"
	cases := []struct {
		name     string
		from, to string // the configuration's edit ("" for none)
		want     string
	}{
		{"unmanaged candidate", candSection, "[backends.cand]\nengine = \"vllm\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:" + strconv.Itoa(e.candPort) + "\"\n#",
			"backends.cand.unmanaged: candidate cand is unmanaged: hiro never starts it, so the plan's launch gate (gates[0]) cannot launch it"},
		{"candidate key unset", candSection, candSection + "\napi_key_env = \"HIRO_TEST_UNSET_KEY\"",
			"backends.cand.api_key_env: environment variable HIRO_TEST_UNSET_KEY is not set or empty; export it with the server's API key, before running the campaign: without it hiro cannot reach candidate cand"},
		{"production key file absent", prodSection, prodSection + "api_key_file = \"absent.key\"\n",
			"backends.prod.api_key_file: cannot read the API key"},
		{"candidate port held", "", "", "backends.cand.port: candidate cand's address 127.0.0.1:" + strconv.Itoa(e.candPort) + " is already in use"},
		{"candidate already running", "", "", "backends.cand: candidate cand is already running (pid "},
		// About the candidate, apart (trial 10 Q2: "; production as
		// recorded in state home ..." read as a second problem).
		{"candidate already running, state home", "", "", "(nothing was started or stopped). (This state home, "},
		{"candidate already running, production named", "", "", " records prod as production; only if cand is production under another state home, run this with HIRO_STATE_HOME set to that one instead of stopping it.)"},
	}
	prodPID := func() int {
		t.Helper()
		st, err := supervisor.Status(e.cfg.StateDir, "prod")
		if err != nil || st.Status != supervisor.StatusRunning {
			t.Fatalf("production has no running record: %+v %v", st, err)
		}
		return st.PID
	}
	pid := prodPID()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := e.cfgPath
			if tc.from != "" {
				b, _ := os.ReadFile(e.cfgPath)
				if !strings.Contains(string(b), tc.from) {
					t.Fatalf("the configuration has no %q to edit", tc.from)
				}
				cfg = filepath.Join(e.dir, "hiro-"+strings.ReplaceAll(tc.name, " ", "-")+".toml")
				must(t, os.WriteFile(cfg, []byte(strings.Replace(string(b), tc.from, tc.to, 1)), 0o644))
			}
			plan := filepath.Join(e.dir, "plan-"+strings.ReplaceAll(tc.name, " ", "-")+".toml")
			must(t, os.WriteFile(plan, []byte("title = \"Refused\"\nconfig = \""+filepath.Base(cfg)+"\"\ncandidate = \"cand\"\nexclusive = true\n[[gates]]\nkind = \"launch\"\n"), 0o644))
			if tc.name == "candidate port held" {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(e.candPort))
				must(t, err)
				defer l.Close()
			}
			if strings.HasPrefix(tc.name, "candidate already running") {
				// Started by hand, as a user trying it first would: the
				// launch gate refused it only after the evidence folder
				// was made (exit 3).
				if code, out, errs := runHiro(t, e, "backend", "start", "cand"); code != 0 {
					t.Fatalf("backend start cand: exit %d\n%s%s", code, out, errs)
				}
				defer runHiro(t, e, "backend", "stop", "cand")
			}
			for _, args := range [][]string{{"qualify", "--check", plan}, {"qualify", plan}} {
				code, _, stderr := runHiro(t, e, args...)
				if code != 2 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, cfg) {
					t.Fatalf("hiro %s: exit %d, stderr %.800q; want exit 2 naming %s and %q", strings.Join(args, " "), code, stderr, cfg, tc.want)
				}
			}
			if !e.productionReady() {
				t.Fatal("production is not serving after a refused plan")
			}
			if p := prodPID(); p != pid {
				t.Fatalf("production runs as pid %d, was %d: it was stopped for a refused plan", p, pid)
			}
		})
	}
	// --out naming a file: refused before anything starts (it was exit 3,
	// "aborted", from mkdir after production was stopped).
	notDir := filepath.Join(e.dir, "afile")
	must(t, os.WriteFile(notDir, []byte("x"), 0o644))
	plan := filepath.Join(e.dir, "plan-out.toml")
	must(t, os.WriteFile(plan, []byte("title = \"Out\"\nconfig = \""+filepath.Base(e.cfgPath)+"\"\ncandidate = \"cand\"\nexclusive = true\n[[gates]]\nkind = \"launch\"\n"), 0o644))
	if code, _, stderr := runHiro(t, e, "qualify", "--out", notDir, plan); code != 2 || !strings.Contains(stderr, "--out "+notDir+" is a file") {
		t.Errorf("qualify --out FILE: exit %d, stderr %.400q; want exit 2 saying it is a file", code, stderr)
	}
	if p := prodPID(); p != pid {
		t.Fatalf("production runs as pid %d, was %d: it was stopped for --out FILE", p, pid)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "evidence")); !os.IsNotExist(err) {
		t.Errorf("a refused plan wrote evidence")
	}
	if ls, _ := qualify.Leases(e.leaseDir); len(ls) != 0 {
		t.Errorf("a refused plan took a lease")
	}
}

// portTaker is a gate kind that, run before the launch gate, binds the
// candidate's port: a process that takes it after the plan was checked.
type portTaker struct{}

func (portTaker) Validate(*qualify.Validation)                       {}
func (portTaker) Bound(*qualify.Handle, time.Duration) time.Duration { return time.Minute }
func (portTaker) Run(_ context.Context, h *qualify.Handle, _ *evidence.Gate) error {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(h.Candidate.Port))
	if err != nil {
		return err
	}
	takenPorts = append(takenPorts, l)
	return nil
}

var takenPorts []net.Listener

func init() {
	qualify.RegisterKind(qualify.Kind{Name: "test_take_port", Rank: 25, Title: "Takes the candidate's port", New: func() qualify.Gate { return &portTaker{} }})
}

// The candidate's port taken after the plan was checked, before the
// exclusive launch: production is not stopped for a launch that would
// fail port_in_use; the campaign is aborted naming the port and its
// holder, and production keeps its process.
func TestPortTakenBeforeTheLaunchLeavesProductionServing(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	e.startProduction()
	st, err := supervisor.Status(e.cfg.StateDir, "prod")
	must(t, err)
	t.Cleanup(func() {
		for _, l := range takenPorts {
			l.Close()
		}
		takenPorts = nil
	})
	out := runPlan(t, e, e.writePlan("exclusive = true\n[[gates]]\nkind = \"test_take_port\"\n[[gates]]\nkind = \"launch\"\n"))
	ev := out.Evidence
	if out.ExitCode != qualify.ExitAborted || !strings.Contains(ev.TerminationReason, "production prod was not stopped") ||
		!strings.Contains(ev.TerminationReason, "127.0.0.1:"+strconv.Itoa(e.candPort)+" is already in use") {
		t.Fatalf("exit %d, termination %q; want aborted, production not stopped, the port named", out.ExitCode, ev.TerminationReason)
	}
	if ev.Production.Stopped {
		t.Error("the evidence says production was stopped")
	}
	if now, err := supervisor.Status(e.cfg.StateDir, "prod"); err != nil || now.PID != st.PID || !e.productionReady() {
		t.Errorf("production is not the process that served before (pid %d, now %+v, %v)", st.PID, now, err)
	}
}
