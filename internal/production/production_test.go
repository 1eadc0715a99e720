package production_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

const cfgText = `state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = "llama-server"
args = ["--port", "9001"]
port = 9001
model = "prod-model"
config_files = ["launcher.sh"]
[backends.cand]
engine = "vllm"
command = "vllm"
args = ["serve", "m"]
port = 9002
model = "cand-model"
`

func setup(t *testing.T) *config.Config {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HIRO_PRODUCTION_DIR", filepath.Join(dir, "private"))
	t.Setenv("HIRO_KEY_DIR", filepath.Join(dir, "keys"))
	p := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(p, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "launcher.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// variant returns cand with a launch variant's environment and arguments.
func variant(cfg *config.Config) *config.Profile {
	p := cfg.Backends["cand"].Clone()
	p.Env["VLLM_USE_V2_MODEL_RUNNER"] = "0"
	p.Args = append(p.Args, "--enforce-eager")
	return p
}

func TestResolveConfigurationThenActivationRecord(t *testing.T) {
	cfg := setup(t)
	a, err := production.Resolve(cfg)
	if err != nil || a == nil {
		t.Fatalf("resolve: %v %v", a, err)
	}
	if a.Name != "prod" || a.Seq != 0 || a.Source != production.SourceConfiguration {
		t.Fatalf("before any activation: %+v, want the configuration's prod", a.Snapshot)
	}
	want, _ := production.ConfigHash(cfg.Backends["prod"])
	if a.ConfigHash != want {
		t.Fatalf("config hash %s, want %s", a.ConfigHash, want)
	}

	// A failed switch does not change production.
	eff := variant(cfg)
	failed := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeFailed, Config: cfg.Path,
		From: &a.Snapshot, To: production.Snap(eff, "v1-runner", "activation")}
	if err := production.Append(failed); err != nil {
		t.Fatal(err)
	}
	if n := production.Name(cfg); n != "prod" {
		t.Fatalf("after a failed switch production is %q, want prod", n)
	}

	ok := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: cfg.Path,
		From: &a.Snapshot, To: production.Snap(eff, "v1-runner", "activation 2"), StartedAt: time.Now()}
	if err := production.Append(ok); err != nil {
		t.Fatal(err)
	}
	if ok.Seq != 2 {
		t.Fatalf("seq %d, want 2", ok.Seq)
	}
	a, err = production.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "cand" || a.Seq != 2 || a.Variant != "v1-runner" {
		t.Fatalf("after activation: %+v (seq %d), want cand v1-runner seq 2", a.Snapshot, a.Seq)
	}
	// The effective profile runs: the variant's env and args, not the file's.
	p, err := production.ProfileFor(cfg, "cand")
	if err != nil {
		t.Fatal(err)
	}
	if p.Env["VLLM_USE_V2_MODEL_RUNNER"] != "0" || p.Args[len(p.Args)-1] != "--enforce-eager" {
		t.Fatalf("ProfileFor(cand) = env %v args %v, want the variant's", p.Env, p.Args)
	}
	if p.Hash() != eff.Hash() {
		t.Fatal("ProfileFor(cand) is not the recorded effective profile")
	}
	// Another profile is the file's.
	if q, _ := production.ProfileFor(cfg, "prod"); q.Hash() != cfg.Backends["prod"].Hash() {
		t.Fatal("ProfileFor(prod) should be the configuration's profile")
	}

	// Records are private: 0600 in a 0700 folder.
	st, err := os.Stat(ok.Path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("record mode %v (%v), want 0600", st.Mode().Perm(), err)
	}
	dst, _ := os.Stat(filepath.Dir(ok.Path))
	if dst.Mode().Perm() != 0o700 {
		t.Fatalf("record folder mode %v, want 0700", dst.Mode().Perm())
	}
	h, _ := production.History(cfg.Path)
	if len(h) != 2 || h[0].Outcome != production.OutcomeFailed || h[1].Seq != 2 {
		t.Fatalf("history %+v", h)
	}
}

func TestCheckNamesTheChangedField(t *testing.T) {
	cfg := setup(t)
	snap := production.Snap(variant(cfg), "v1-runner", "activation 1")
	if _, err := snap.Check(cfg, "production cand"); err != nil {
		t.Fatalf("unchanged configuration refused: %v", err)
	}
	// The user edits the profile in the file: its model changes.
	cfg.Backends["cand"].Model = "other-model"
	_, err := snap.Check(cfg, "production cand")
	var me *production.MismatchError
	if !errors.As(err, &me) || me.Field != "backends.cand.model" {
		t.Fatalf("err = %v, want a mismatch naming backends.cand.model", err)
	}
	// A config file of the production changes.
	cfg = setup(t)
	psnap := production.Snap(cfg.Backends["prod"], "", production.SourceConfiguration)
	launcher := cfg.Backends["prod"].ConfigFiles[0]
	if err := os.WriteFile(launcher, []byte("#!/bin/sh\nexec other\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = psnap.Check(cfg, "production prod")
	if !errors.As(err, &me) || me.Field != "config_files["+launcher+"]" {
		t.Fatalf("err = %v, want a mismatch naming the launcher", err)
	}
}

func TestLockIsExclusive(t *testing.T) {
	cfg := setup(t)
	l, err := production.TryLock(cfg.Path, "activate test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = production.TryLock(cfg.Path, "second")
	var be *production.BusyError
	if !errors.As(err, &be) || be.PID != os.Getpid() || be.What != "activate test" {
		t.Fatalf("second lock: %v, want BusyError naming pid %d", err, os.Getpid())
	}
	l.Unlock()
	l2, err := production.TryLock(cfg.Path, "third")
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
}

func TestIntentsAcrossConfigurations(t *testing.T) {
	cfg := setup(t)
	in := &production.Intent{Config: cfg.Path, Kind: production.KindActivate, PID: 1}
	if err := production.WriteIntent(in); err != nil {
		t.Fatal(err)
	}
	ins, err := production.Intents()
	if err != nil || len(ins) != 1 || ins[0].Config != cfg.Path {
		t.Fatalf("intents %v %v", ins, err)
	}
	// An intent is not a record.
	if h, err := production.History(cfg.Path); err != nil || len(h) != 0 {
		t.Fatalf("history %v %v", h, err)
	}
	if err := production.RemoveIntent(cfg.Path); err != nil {
		t.Fatal(err)
	}
	if ins, _ := production.Intents(); len(ins) != 0 {
		t.Fatalf("intent left: %v", ins)
	}
}

// A production record planted by another user is never acted on: neither
// one in the user's folder nor a whole record folder another user made.
// Before, with HOME unset the folder was a predictable one under /tmp with
// no owner check, and a planted record named production.
func TestRecordsOfAnotherUserAreRefused(t *testing.T) {
	cfg := setup(t)
	a, err := production.Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	planted := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: cfg.Path,
		From: &a.Snapshot, To: production.Snap(variant(cfg), "v1-runner", "activation"), StartedAt: time.Now()}
	if err := production.Append(planted); err != nil {
		t.Fatal(err)
	}
	testsupport.GiveToNobody(t, planted.Path)
	if a, err := production.Resolve(cfg); err == nil || !strings.Contains(err.Error(), planted.Path) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("a record owned by nobody: resolve = %+v, %v; want it refused, named", a, err)
	}
	if err := os.Lchown(planted.Path, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Dir(planted.Path)
	testsupport.GiveToNobody(t, folder)
	_, err = production.Resolve(cfg)
	if err == nil || !strings.Contains(err.Error(), folder) || !strings.Contains(err.Error(), "production record folder") {
		t.Fatalf("a record folder owned by nobody: %v; want it refused, named", err)
	}
	if _, err := production.TryLock(cfg.Path, "test"); err == nil {
		t.Fatal("the lock was taken in a folder owned by nobody")
	}
}

// With HOME unset (a service unit) the production folder is the password
// database's home, or an error naming HIRO_STATE_HOME: never a shared
// temporary folder.
func TestDirWithoutHomeIsNotShared(t *testing.T) {
	for _, v := range []string{"HIRO_PRODUCTION_DIR", "HIRO_LEASE_DIR", "HIRO_STATE_HOME", "XDG_STATE_HOME", "HOME"} {
		t.Setenv(v, "")
	}
	d, err := production.Dir()
	if err != nil {
		if !strings.Contains(err.Error(), "HIRO_STATE_HOME") {
			t.Fatalf("error does not say what to set: %v", err)
		}
		return
	}
	if strings.HasPrefix(d, os.TempDir()) || !filepath.IsAbs(d) {
		t.Fatalf("with HOME unset the production folder is %s: a shared folder", d)
	}
}

// TestSwitchedElsewhere (issue 26 G11): a second configuration file
// naming the same production switched it to cand; records are kept per
// file, so the first file still resolves to prod, and SwitchedElsewhere
// names that switch (what 'hiro serve' warns of at start). Once the
// second file rolls back to prod, there is nothing to warn of.
func TestSwitchedElsewhere(t *testing.T) {
	cfg := setup(t)
	p2 := filepath.Join(filepath.Dir(cfg.Path), "hiro2.toml")
	must(t, os.WriteFile(p2, []byte(cfgText), 0o644))
	cfg2, err := config.Load(p2)
	must(t, err)
	a, err := production.Resolve(cfg)
	must(t, err)
	if r := production.SwitchedElsewhere(cfg, a); r != nil {
		t.Fatalf("before any switch: %+v", r)
	}
	a2, err := production.Resolve(cfg2)
	must(t, err)
	sw := &production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: cfg2.Path,
		From: &a2.Snapshot, To: production.Snap(cfg2.Backends["cand"], "base", "activation"), StartedAt: time.Now(), FinishedAt: time.Now()}
	must(t, production.Append(sw))
	if a, _ := production.Resolve(cfg); a.Name != "prod" {
		t.Fatalf("the first file resolves to %s, want prod (records are per file)", a.Name)
	}
	r := production.SwitchedElsewhere(cfg, a)
	if r == nil || r.Config != cfg2.Path || r.To.Name != "cand" || r.Path != sw.Path {
		t.Fatalf("switched elsewhere: %+v, want the second file's switch to cand", r)
	}
	back := &production.Record{Kind: production.KindRollback, Outcome: production.OutcomeSwitched, Config: cfg2.Path,
		From: sw.To, To: &a2.Snapshot, StartedAt: time.Now(), FinishedAt: time.Now()}
	must(t, production.Append(back))
	if r := production.SwitchedElsewhere(cfg, a); r != nil {
		t.Fatalf("after the second file's rollback to prod: %+v, want nothing", r)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
