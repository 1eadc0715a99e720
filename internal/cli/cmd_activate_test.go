package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/production"
	"github.com/hiro-dev/hiro/internal/ramp"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

func switchTestConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(dir, "leases"))
	t.Setenv("HIRO_PRODUCTION_DIR", filepath.Join(dir, "production"))
	p := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(p, []byte(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = "llama-server"
port = 18080
model = "m"
`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Nothing to roll back before any activation: exit 1, and in --json the
// refusal is a JSON object.
func TestRollbackWithoutActivationRefused(t *testing.T) {
	cfg := switchTestConfig(t)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "rollback"}, &out, &errb)
	if code != ExitFailed || !strings.Contains(errb.String(), "no activation to roll back") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	code = Run(context.Background(), []string{"--config", cfg, "rollback", "--json"}, &out, &errb)
	var sum switchSummary
	if code != ExitFailed || json.Unmarshal(out.Bytes(), &sum) != nil || sum.Outcome != "refused" || sum.ExitCode != ExitFailed {
		t.Fatalf("exit %d, stdout %q", code, out.String())
	}
}

// A missing evidence folder is bad usage (exit 2), not a refusal.
func TestActivateMissingEvidenceIsUsage(t *testing.T) {
	cfg := switchTestConfig(t)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"--config", cfg, "activate", filepath.Join(t.TempDir(), "nope")}, &out, &errb)
	if code != ExitUsage || !strings.Contains(errb.String(), "activate: evidence") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}

// After an activation, 'hiro backend start NAME' of the active production
// runs its recorded effective profile (the qualified variant's
// arguments), not the profile as the file spells it.
func TestBackendStartRunsTheActiveProductionAsActivated(t *testing.T) {
	fake := buildFakeEngine(t)
	dir := t.TempDir()
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(dir, "leases"))
	t.Setenv("HIRO_STATE_HOME", filepath.Join(dir, "sh"))
	port := cliFreePort(t)
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(`state_dir = "state"
[production]
backend = "prod"
[backends.prod]
engine = "llamacpp"
command = %q
args = ["--port", "%d"]
port = %d
model = "fake-model"
stop_grace = "2s"
`, fake, port, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	eff := cfg.Backends["prod"].Clone()
	eff.Args = append(eff.Args, "--progress-every", "1h")
	if err := production.Append(&production.Record{Kind: production.KindActivate, Outcome: production.OutcomeSwitched, Config: cfg.Path,
		From: production.Snap(cfg.Backends["prod"], "", production.SourceConfiguration), To: production.Snap(eff, "slow-progress", "")}); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runHiro(t, "--config", path, "backend", "start", "prod")
	t.Cleanup(func() { runHiro(t, "--config", path, "backend", "stop", "prod") })
	if code != ExitOK || !strings.Contains(errs, "is the active production (activation 1, variant slow-progress)") {
		t.Fatalf("start: exit %d\n%s\n%s", code, out, errs)
	}
	st, err := supervisor.Status(cfg.StateDir, "prod")
	if err != nil || st.ProfileHash != eff.Hash() {
		t.Fatalf("prod runs profile %s (%v), want the activated %s", st.ProfileHash, err, eff.Hash())
	}
}

// activate and rollback write their journal entry into the
// configuration's <state_dir>/journal, not ./journal of the current
// directory; --journal DIR overrides it and --journal "" writes none.
func TestSwitchJournalIsInStateDir(t *testing.T) {
	cfgPath := switchTestConfig(t)
	t.Chdir(t.TempDir())
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, filepath.Join(cfg.StateDir, "journal")},
		{[]string{"--journal", "elsewhere"}, "elsewhere"},
		{[]string{"--journal", ""}, ""},
	} {
		for _, mk := range []func(*Globals) *cobra.Command{newActivateCmd, newRollbackCmd} {
			g := &Globals{ConfigPath: cfgPath, Stderr: &bytes.Buffer{}, Stdout: &bytes.Buffer{}}
			cmd := mk(g)
			if err := cmd.ParseFlags(tc.args); err != nil {
				t.Fatal(err)
			}
			cmd.PreRun(cmd, nil)
			o := &switchOpts{}
			// The command's own opts are inside its closure: read them back
			// through the flag and the hook's result.
			o.Journal, _ = cmd.Flags().GetString("journal")
			o.journalSet = cmd.Flags().Changed("journal")
			if got := switchOptions(context.Background(), g, o, cfg).JournalDir; got != tc.want {
				t.Errorf("%s %v: journal %q, want %q", cmd.Name(), tc.args, got, tc.want)
			}
		}
	}
	if !filepath.IsAbs(cfg.StateDir) {
		t.Fatalf("state_dir %q is not absolute: the journal would follow the current directory", cfg.StateDir)
	}
}

// 'hiro recover' always says something: with a lease file that turns out
// to hold no campaign, one line that there was nothing to recover.
func TestRecoverSaysNothingToRecover(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HIRO_LEASE_DIR", dir)
	if err := os.WriteFile(filepath.Join(dir, "x.lease"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// No configuration named and none here.
	t.Setenv("HIRO_CONFIG", "")
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"recover"}, &out, &errb)
	if code != 0 || strings.TrimSpace(out.String()+errb.String()) == "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// A --min-requests no clean step can advance on at the margin in force
// is refused (exit 2) before anything is read or started, naming the
// smallest count that can decide; the same count passes the check (it
// then fails later, on the evidence: exit 2 names the evidence, not the
// count), and a wider --margin lowers it. Before, --progressive 25,100
// --min-requests 8 was accepted and its steps held for ever.
func TestActivateRefusesMinRequestsThatCannotDecide(t *testing.T) {
	cfg := switchTestConfig(t)
	ev := filepath.Join(t.TempDir(), "evidence.json")
	if err := os.WriteFile(ev, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Run(context.Background(), append([]string{"--config", cfg, "activate", ev, "--check", "--progressive", "25,100"}, args...), &out, &errb)
		return code, errb.String()
	}
	code, msg := run("--min-requests", "8")
	if code != ExitUsage || !strings.Contains(msg, "min_requests 8 cannot decide at a margin of 0.02") || !strings.Contains(msg, "use --min-requests 456 or more") {
		t.Fatalf("--min-requests 8: exit %d, stderr %q", code, msg)
	}
	if _, msg := run("--min-requests", "456"); strings.Contains(msg, "cannot decide") {
		t.Errorf("--min-requests 456 refused: %q", msg)
	}
	if _, msg := run("--min-requests", "100", "--margin", "0.1"); strings.Contains(msg, "cannot decide") {
		t.Errorf("--min-requests 100 at margin 0.1 refused: %q", msg)
	}
	if code, msg := run("--max-duration", "1s", "--soak", "1m"); code != ExitUsage || !strings.Contains(msg, "below the soak of every step") {
		t.Errorf("--max-duration 1s: exit %d, stderr %q", code, msg)
	}
}

// TestActivateUsageMinRequestsDecides: the usage line's --min-requests
// example is a count the ramp accepts at the default margin (trial 11's
// R5: it showed 150, which the ramp refuses, needing 456).
func TestActivateUsageMinRequestsDecides(t *testing.T) {
	use := newActivateCmd(&Globals{}).Use
	_, after, ok := strings.Cut(use, "--min-requests ")
	if !ok {
		t.Fatalf("activate's usage line names no --min-requests example: %q", use)
	}
	var n int
	if _, err := fmt.Sscanf(after, "%d", &n); err != nil {
		t.Fatalf("activate's usage line: --min-requests %q is not a count: %v", after, err)
	}
	if need := ramp.MinRequestsToDecide(ramp.DefaultMargin); n < need {
		t.Errorf("activate's usage shows --min-requests %d; the ramp needs at least %d at the default margin", n, need)
	}
}
