package qualify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/redact"
)

// TestRegisterSecretsInheritEnv: the values a profile's inherit_env
// variables have in hiro's environment reach the server, so
// RegisterSecrets registers them with redact by AddEnv's rule (a
// secret-looking name's value of 4 bytes or more, any other value of 12
// or more that is no number or path); a 1-3 byte value and an unset
// variable register nothing.
func TestRegisterSecretsInheritEnv(t *testing.T) {
	t.Setenv("HIRO_T_WEIRD_SECRET", "zebra-PASSWORD-42")
	t.Setenv("HIRO_T_DB_PASS", "hunter2")
	t.Setenv("HIRO_T_OPAQUE", "opaque-inherited-value-77")
	t.Setenv("HIRO_T_SHORT_TOKEN", "q7")
	t.Setenv("HIRO_T_DEVICES", "0,1,2,3,4,5,6,7")
	os.Unsetenv("HIRO_T_UNSET_SECRET")
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "hiro.toml")
	must(t, os.WriteFile(cfgPath, []byte(`state_dir = "state"
[backends.a]
engine = "llamacpp"
command = "/bin/true"
port = 18080
model = "m"
inherit_env = ["HIRO_T_WEIRD_SECRET", "HIRO_T_SHORT_TOKEN", "HIRO_T_UNSET_SECRET", "HIRO_T_DEVICES"]
[backends.b]
engine = "vllm"
command = "/bin/true"
port = 18081
model = "m"
inherit_env = ["HIRO_T_DB_PASS", "HIRO_T_OPAQUE"]
`), 0o644))
	cfg, err := config.Load(cfgPath)
	must(t, err)
	text := "ERROR RuntimeError: CUDA error: out of memory (credential zebra-PASSWORD-42, pass hunter2, opaque-inherited-value-77) on devices 0,1,2,3,4,5,6,7 q7"
	if got := redact.String(text); got != text {
		t.Fatalf("redacted before registration (the test plants nothing): %s", got)
	}
	qualify.RegisterSecrets(cfg)
	got := redact.String(text)
	for _, s := range []string{"zebra-PASSWORD-42", "hunter2", "opaque-inherited-value-77"} {
		if strings.Contains(got, s) {
			t.Errorf("inherited value %q not redacted: %s", s, got)
		}
	}
	for _, keep := range []string{"0,1,2,3,4,5,6,7", " q7", "out of memory"} {
		if !strings.Contains(got, keep) {
			t.Errorf("%q (no credential) redacted: %s", keep, got)
		}
	}
}

// TestInheritedSecretsNeverReachPublicOutput: a candidate whose profile
// passes WEIRD_SECRET, DB_PASS, PGPASSWORD and MYSQL_PWD (short values, the
// names database clients read) through inherit_env fails with a log line
// quoting their values (the root cause). A campaign, journal add and journal
// build run as real hiro processes; no public byte of the evidence folder,
// the journal or the site holds any value (evidence.private.json, the
// owner's 0600 file, keeps the log as it was).
func TestInheritedSecretsNeverReachPublicOutput(t *testing.T) {
	secrets := map[string]string{"WEIRD_SECRET": "zebra-PASSWORD-42", "DB_PASS": "hunter2secret", "PGPASSWORD": "pgs3cret9", "MYSQL_PWD": "myPw77x"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	logPath := filepath.Join(t.TempDir(), "oom.log")
	must(t, os.WriteFile(logPath, []byte("INFO 05-01 10:00:00 Starting vLLM API server\n"+
		"ERROR 05-01 10:00:01 RuntimeError: CUDA error: out of memory (credential zebra-PASSWORD-42, pass hunter2secret, pg pgs3cret9, mysql myPw77x)\n"), 0o644))
	e := newEnv(t, []string{"--replay", logPath, "--exit", "1", "--health-style", "vllm", "--load-time", "30s"},
		`inherit_env = ["WEIRD_SECRET", "DB_PASS", "PGPASSWORD", "MYSQL_PWD"]`+"\n", nil)
	e.startProduction()
	plan := e.writePlan(`
[[gates]]
id = "launch"
kind = "launch"

[[gates]]
id = "ready"
kind = "ready_control"
`)
	code, stdout, stderr := runHiro(t, e, "qualify", plan, "--json")
	if code != 1 {
		t.Fatalf("qualify exit %d, want 1 (not qualified)\n%s\n%s", code, stdout, stderr)
	}
	evDir := onlyCampaign(t, filepath.Join(e.dir, "evidence"))
	priv, err := os.ReadFile(filepath.Join(evDir, "evidence.private.json"))
	must(t, err)
	if !strings.Contains(string(priv), "zebra-PASSWORD-42") {
		t.Fatalf("the engine's log line is not in the private evidence: the test plants nothing\n%s", priv)
	}
	journalDir, site := filepath.Join(e.dir, "journal"), filepath.Join(e.dir, "site")
	if code, out, errs := runHiro(t, e, "journal", "--journal", journalDir, "add", filepath.Join(evDir, "evidence.json")); code != 0 {
		t.Fatalf("journal add: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runHiro(t, e, "journal", "--journal", journalDir, "build", "--out", site); code != 0 {
		t.Fatalf("journal build: exit %d\n%s\n%s", code, out, errs)
	}
	var public []string
	for _, root := range []string{evDir, journalDir, site} {
		must(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() && fi.Name() != "evidence.private.json" {
				public = append(public, p)
			}
			return err
		}))
	}
	sawRootCause := false
	for _, p := range public {
		b, err := os.ReadFile(p)
		must(t, err)
		for k, v := range secrets {
			if strings.Contains(string(b), v) {
				t.Errorf("%s holds %s's value %q", p, k, v)
			}
		}
		sawRootCause = sawRootCause || strings.Contains(string(b), "out of memory (credential ")
	}
	if !sawRootCause {
		t.Errorf("no public file quotes the failure line: the test checks nothing (files %v)", public)
	}
}
