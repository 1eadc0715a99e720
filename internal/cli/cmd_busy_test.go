package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/lease"
)

// A campaign, a backend start and an activation refused because another
// hiro holds a lease exit 6 (ExitBusy), not 1 ("not qualified", "failed"):
// a script can tell "try again later" from a verdict. The message names
// the holder and says what to do; nothing is started and no evidence
// folder is made.
func TestRefusedByAHeldLeaseExitsBusy(t *testing.T) {
	if ExitBusy == ExitFailed || ExitBusy == ExitInconclusive || ExitBusy == ExitCritical || ExitBusy == ExitAborted || ExitBusy == ExitUsage {
		t.Fatalf("ExitBusy %d shares another status", ExitBusy)
	}
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	pp, cp := cliFreePort(t), cliFreePort(t)
	cfg := filepath.Join(dir, "hiro.toml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = %[1]q
args = ["--port", "%[2]d"]
port = %[2]d
model = "fake-model"
exclusive_accelerator = true
[backends.cand]
engine = "llamacpp"
command = %[1]q
args = ["--port", "%[3]d"]
port = %[3]d
model = "fake-model"
`, fake, pp, cp)), 0o644))
	plan := filepath.Join(dir, "plan.toml")
	must(t, os.WriteFile(plan, []byte("title = \"busy\"\ncandidate = \"cand\"\nexclusive = true\nevidence_dir = \"evidence\"\n[[gates]]\nid = \"launch\"\nkind = \"launch\"\n"), 0o644))

	ld, err := lease.Dir()
	must(t, err)
	h, err := lease.Acquire(ld, &lease.Lease{Kind: lease.KindCampaign, Campaign: "20261201T000000Z-other-abc123",
		Config: "/elsewhere/hiro.toml", Candidate: "other"}, lease.AcceleratorKey)
	must(t, err)
	defer h.Release()
	holder := fmt.Sprintf("kill -TERM %d", os.Getpid())

	code, out, errs := runHiro(t, "--config", cfg, "qualify", plan)
	if code != ExitBusy {
		t.Errorf("qualify with the accelerator held: exit %d, want %d (busy)\n%s%s", code, ExitBusy, out, errs)
	}
	for _, want := range []string{"campaign 20261201T000000Z-other-abc123", "/elsewhere/hiro.toml", holder, "nothing was started or stopped", "run this again"} {
		if !strings.Contains(errs, want) {
			t.Errorf("qualify's refusal lacks %q:\n%s", want, errs)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "evidence")); len(ents) != 0 {
		t.Errorf("a refused campaign left %d evidence folders", len(ents))
	}

	code, out, errs = runHiro(t, "--config", cfg, "backend", "start", "prod")
	if code != ExitBusy || !strings.Contains(errs, holder) {
		t.Errorf("backend start of an exclusive profile with the accelerator held: exit %d, want %d naming the holder\n%s%s", code, ExitBusy, out, errs)
	}
}

// Two configurations in two folders, each with its own state_dir and a
// production profile named prod on its own port, do not collide: a lease
// is the server's (host and port, lease.ProductionKey), not the profile
// name's nor the user's. The same server named from a third folder,
// under another name, is the same lease and is refused (exit 6, the
// holder named).
func TestLeasesAreTheServersNotTheProfileNames(t *testing.T) {
	fake := buildFakeEngine(t)
	pa, pb := cliFreePort(t), cliFreePort(t)
	write := func(name string, port int) string {
		dir := filepath.Join(t.TempDir(), "team")
		must(t, os.MkdirAll(dir, 0o755))
		cfg := filepath.Join(dir, "hiro.toml")
		must(t, os.WriteFile(cfg, []byte(fmt.Sprintf("state_dir = \"state\"\n[production]\nbackend = %q\n[backends.%s]\nengine = \"llamacpp\"\ncommand = %q\nargs = [\"--port\", \"%d\"]\nport = %d\nmodel = \"fake-model\"\n",
			name, name, fake, port, port)), 0o644))
		return cfg
	}
	a, b, c := write("prod", pa), write("prod", pb), write("main", pa)
	ld, err := lease.Dir()
	must(t, err)
	h, err := lease.Acquire(ld, &lease.Lease{Kind: lease.KindCampaign, Campaign: "20261201T000000Z-cand-aaaaaa", Config: a, Production: "prod", Candidate: "cand"},
		lease.ProductionKey(fmt.Sprintf("http://127.0.0.1:%d", pa)))
	must(t, err)
	defer h.Release()

	code, out, errs := runHiro(t, "--config", b, "backend", "start", "prod")
	t.Cleanup(func() { runHiro(t, "--config", b, "backend", "stop", "prod") })
	if code != ExitOK {
		t.Errorf("prod of another configuration on its own port: exit %d, want 0 (no collision)\n%s%s", code, out, errs)
	}
	code, out, errs = runHiro(t, "--config", c, "backend", "start", "main")
	if code != ExitBusy || !strings.Contains(errs, "campaign 20261201T000000Z-cand-aaaaaa") {
		t.Errorf("the held server under another name: exit %d, want %d naming the campaign\n%s%s", code, ExitBusy, out, errs)
	}
}

// Issue 26 P5: with the demo's campaign running (it shares the
// accelerator: exclusive = false), the seed replay's refusal was one line
// of some 1,200 characters that said an exclusive candidate "waits",
// right after it had not waited, and its script had already started its
// own production. Now 'hiro qualify --check' exits 6 before anything
// starts, and the refusal, like the run's, is three short lines: who
// holds it, what to do (with the command that stops it), and one line of
// why on a host without an accelerator.
func TestCheckSaysBusyBeforeAnythingStarts(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	pp, cp := cliFreePort(t), cliFreePort(t)
	cfg := filepath.Join(dir, "hiro.toml")
	must(t, os.WriteFile(cfg, []byte(fmt.Sprintf(`
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = %[1]q
args = ["--port", "%[2]d"]
port = %[2]d
model = "fake-model"
[backends.cand]
engine = "llamacpp"
command = %[1]q
args = ["--port", "%[3]d"]
port = %[3]d
model = "fake-model"
exclusive_accelerator = true
`, fake, pp, cp)), 0o644))
	plan := filepath.Join(dir, "plan.toml")
	must(t, os.WriteFile(plan, []byte("title = \"seed\"\ncandidate = \"cand\"\nexclusive = true\nevidence_dir = \"evidence\"\n[[gates]]\nid = \"launch\"\nkind = \"launch\"\n"), 0o644))
	ld, err := lease.Dir()
	must(t, err)
	demo, err := lease.Acquire(ld, &lease.Lease{Kind: lease.KindCampaign, Campaign: "20261203T095801Z-candidate-weak-abc123", Config: "/srv/demo/hiro.toml",
		Candidate: "candidate-weak", SharesAccelerator: true}, lease.ProductionKey(fmt.Sprintf("http://127.0.0.1:%d", cliFreePort(t))))
	must(t, err)
	defer demo.Release()
	sh, err := lease.AcquireShared(ld, lease.AcceleratorKey)
	must(t, err)
	defer sh.Release()
	t.Setenv("PATH", t.TempDir()) // no nvidia-smi: a host without an accelerator

	for _, args := range [][]string{{"qualify", plan, "--check"}, {"qualify", plan}} {
		code, out, errs := runHiro(t, append([]string{"--config", cfg}, args...)...)
		name := strings.Join(args[:len(args)-1], " ")
		if len(args) == 3 {
			name += " --check"
		}
		if code != ExitBusy {
			t.Errorf("%s with the demo's campaign running: exit %d, want %d\n%s%s", name, code, ExitBusy, out, errs)
			continue
		}
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		if len(lines) != 3 {
			t.Errorf("%s: %d lines, want 3 (who, what to do, why):\n%s", name, len(lines), errs)
			continue
		}
		for i, want := range [][]string{
			{"the accelerator is held by campaign 20261203T095801Z-candidate-weak-abc123", "candidate-weak", "/srv/demo/hiro.toml"},
			{"nothing was started or stopped", "run this again", fmt.Sprintf("kill -TERM %d", os.Getpid())},
			{"this host has no accelerator", "the machine itself", "exclusive = false", "cannot run at the same time"},
		} {
			for _, w := range want {
				if !strings.Contains(lines[i], w) {
					t.Errorf("%s: line %d lacks %q:\n%s", name, i+1, w, errs)
				}
			}
			if len(lines[i]) > 250 {
				t.Errorf("%s: line %d is %d characters long:\n%s", name, i+1, len(lines[i]), lines[i])
			}
		}
		if strings.Contains(errs, "waits") {
			t.Errorf("%s: the refusal says something waits, though nothing did:\n%s", name, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, "evidence")); err == nil {
			t.Errorf("%s: a refused campaign made its evidence folder", name)
		}
	}
}
