package qualify_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// TestSecretsNeverReachPublicOutput plants secrets in every input a
// campaign reads (production's profile env, the candidate's env and
// arguments, a launch variant's env and arguments, the engine's echo of
// its arguments in the log, the user's home and project folders in
// paths), runs the campaign, adds it to a journal and builds the site, all
// as real hiro processes, then reads every public byte.
func TestSecretsNeverReachPublicOutput(t *testing.T) {
	secrets := map[string]string{
		"production env HF_TOKEN":        "hf_ProdProfileSecretAAAA0001",
		"production env (opaque value)":  "opaque-prod-value-4242",
		"candidate env HF_TOKEN":         "hf_CandProfileSecretBBBB0002",
		"candidate env CAND_PASSWORD":    "pw-cand-77",
		"candidate --api-key":            "sk-CandArgSecretCCCCCCCC0003",
		"candidate --hf-token":           "cand-hf-token-opaque-0004",
		"variant env HF_TOKEN":           "hf_VariantEnvSecretDDDD0005",
		"variant env (opaque value)":     "variant-opaque-secret-0006",
		"variant args_set --api-key":     "sk-VariantArgSecretEEEEEE0007",
		"variant args_append --hf-token": "variant-token-opaque-0008",
	}
	e := newEnv(t, []string{"--api-key", secrets["candidate --api-key"], "--hf-token", secrets["candidate --hf-token"], "--health-style", "vllm", "--load-time", "30s", "--exit", "1", "--exit-after", "300ms"},
		`[backends.cand.env]
HF_TOKEN = "`+secrets["candidate env HF_TOKEN"]+`"
CAND_PASSWORD = "`+secrets["candidate env CAND_PASSWORD"]+`"
`, nil)
	// Production's profile env: append to the configuration.
	f, err := os.OpenFile(e.cfgPath, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString(`[backends.prod.env]
HF_TOKEN = "` + secrets["production env HF_TOKEN"] + `"
PROD_OPAQUE = "` + secrets["production env (opaque value)"] + `"
`)
	must(t, err)
	must(t, f.Close())
	e.reload()
	e.startProduction()
	plan := e.writePlan(`
[[gates]]
id = "launch"
kind = "launch"
[[gates.variants]]
name = "with-token"
reason = "documented fallback: pass the token explicitly"
env = { HF_TOKEN = "` + secrets["variant env HF_TOKEN"] + `", VARIANT_OPAQUE = "` + secrets["variant env (opaque value)"] + `" }
args_set = { "--api-key" = "` + secrets["variant args_set --api-key"] + `" }
args_append = ["--hf-token", "` + secrets["variant args_append --hf-token"] + `"]

[[gates]]
id = "ready"
kind = "ready_control"
`)
	t.Setenv("HOME", e.dir) // the project lives under the user's home
	code, stdout, stderr := runHiro(t, e, "qualify", plan, "--json")
	if code != 1 {
		t.Fatalf("qualify exit %d, want 1 (not qualified)\n%s\n%s", code, stdout, stderr)
	}
	evDir := onlyCampaign(t, filepath.Join(e.dir, "evidence"))
	priv, err := evidence.Load(filepath.Join(evDir, evidence.PrivateFile))
	must(t, err)
	// The secrets did reach the campaign (the test plants what it checks).
	privBytes, _ := os.ReadFile(filepath.Join(evDir, evidence.PrivateFile))
	if !strings.Contains(string(privBytes), secrets["candidate --api-key"]) {
		t.Fatalf("the engine's echo of --api-key is not in the private log tail: the test plants nothing\n%s", privBytes)
	}
	if len(priv.Gates[0].Attempts) != 2 {
		t.Fatalf("want 2 attempts, got %+v", priv.Gates[0].Attempts)
	}

	journalDir := filepath.Join(e.dir, "journal")
	site := filepath.Join(e.dir, "site")
	if code, out, errs := runHiro(t, e, "journal", "--journal", journalDir, "add", filepath.Join(evDir, evidence.PublicFile)); code != 0 {
		t.Fatalf("journal add: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runHiro(t, e, "journal", "--journal", journalDir, "build", "--out", site); code != 0 {
		t.Fatalf("journal build: exit %d\n%s\n%s", code, out, errs)
	}

	public := []string{filepath.Join(evDir, evidence.PublicFile), filepath.Join(evDir, evidence.ReportFile)}
	for _, root := range []string{journalDir, site} {
		must(t, filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
			if err == nil && fi.Mode().IsRegular() {
				public = append(public, p)
			}
			return err
		}))
	}
	if len(public) < 6 {
		t.Fatalf("too few public files to check: %v", public)
	}
	for _, p := range public {
		b, err := os.ReadFile(p)
		must(t, err)
		for what, s := range secrets {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds the %s secret %q", p, what, s)
			}
		}
		if strings.Contains(string(b), e.dir) {
			t.Errorf("%s holds the local path %s", p, e.dir)
		}
	}
	report, _ := os.ReadFile(filepath.Join(evDir, evidence.ReportFile))
	if !strings.Contains(string(report), "redacted") {
		t.Errorf("report.md shows no redaction placeholder: the secrets were dropped some other way?\n%s", report)
	}
	// Private files: the owner's alone.
	for p, want := range map[string]os.FileMode{evDir: 0o700, filepath.Join(evDir, evidence.PrivateFile): 0o600} {
		fi, err := os.Stat(p)
		must(t, err)
		if fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", p, fi.Mode().Perm(), want)
		}
	}
}

// onlyCampaign returns the one campaign directory under root.
func onlyCampaign(t *testing.T, root string) string {
	t.Helper()
	ents, err := os.ReadDir(root)
	must(t, err)
	var dirs []string
	for _, d := range ents {
		if d.IsDir() {
			dirs = append(dirs, filepath.Join(root, d.Name()))
		}
	}
	if len(dirs) != 1 {
		t.Fatalf("want one campaign under %s, got %v", root, dirs)
	}
	return dirs[0]
}

// reload reads the configuration again after the test changed it.
func (e *env) reload() {
	e.t.Helper()
	cfg, err := config.Load(e.cfgPath)
	if err != nil {
		e.t.Fatal(err)
	}
	e.cfg = cfg
}
