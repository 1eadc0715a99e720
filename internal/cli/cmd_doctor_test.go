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

	"github.com/hiro-dev/hiro/internal/doctor"
	"github.com/hiro-dev/hiro/internal/doctor/doctortest"
)

// TestDoctorBusyGPU runs 'hiro doctor' against a fake nvidia-smi printing
// what the H200 printed while a Python process held its memory: the GPU
// line and the process holding the memory are listed, in text and JSON.
func TestDoctorBusyGPU(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("..", "..", "examples", "gpu", "results", "failures"))
	doctortest.FakeNvidiaSMI(t, doctortest.SMI{
		QueryGPU:  filepath.Join(dir, "busy.query-gpu.csv"),
		QueryApps: filepath.Join(dir, "busy.query-apps.csv"),
		Plain:     filepath.Join(dir, "busy.nvidia-smi.txt"),
	})
	// No configuration named and none here: host facts only.
	t.Setenv("HIRO_CONFIG", "")
	t.Chdir(t.TempDir())
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"doctor"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"0: NVIDIA H200, 143771 MiB total, 1536 MiB free, driver 580.159.04, CUDA 13.0",
		"gpu memory held by  pid 4084 python3 (141612 MiB)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := Run(context.Background(), []string{"doctor", "--json"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var r doctor.Report
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if len(r.GPUProcesses) != 1 || r.GPUProcesses[0].PID != 4084 || r.GPUProcesses[0].UsedMemoryMiB != 141612 {
		t.Errorf("gpu_processes %+v", r.GPUProcesses)
	}
}

// A suggested command names a path a shell reads back whole: the key file
// of a configuration in a folder with a space is quoted in chmod 600.
func TestDoctorQuotesSuggestedPaths(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sp ace é")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "key.txt")
	cfg := filepath.Join(dir, "hiro.toml")
	os.WriteFile(key, []byte("sk-quoted-path-test-key\n"), 0o644)
	os.WriteFile(cfg, []byte("[backends.remote]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:1\"\nmodel = \"m\"\napi_key_file = \"key.txt\"\n"), 0o644)
	code, out, errs := runHiro(t, "--config", cfg, "doctor")
	if want := "chmod 600 '" + key + "'"; !strings.Contains(out+errs, want) {
		t.Fatalf("exit %d: output lacks %s:\n%s%s", code, want, out, errs)
	}
}

// A configuration named on the command line must exist: doctor refuses a
// missing one as every other command does (exit 2, the same message),
// instead of reporting the host as if none had been named.
func TestDoctorNamedConfigMissing(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexist.toml")
	code, out, errs := runHiro(t, "--config", missing, "doctor")
	want := missing + ": configuration file not found"
	if code != ExitUsage || !strings.Contains(errs, "hiro: doctor: "+want) || out != "" {
		t.Fatalf("exit %d, want %d and %q\nstdout:\n%s\nstderr:\n%s", code, ExitUsage, want, out, errs)
	}
	if code, _, errs := runHiro(t, "--config", missing, "backend", "status"); code != ExitUsage || !strings.Contains(errs, want) {
		t.Fatalf("backend status: exit %d: %s", code, errs)
	}
	t.Setenv("HIRO_CONFIG", missing)
	if code, _, errs := runHiro(t, "doctor"); code != ExitUsage || !strings.Contains(errs, "HIRO_CONFIG") {
		t.Fatalf("doctor with HIRO_CONFIG missing: exit %d: %s", code, errs)
	}
}

// A configuration named with --config or HIRO_CONFIG that does not exist
// is bad usage for every command, with the message the backend commands
// give, before the command does anything: status asked the router and
// said none was running (exit 1), recover and journal went on without it.
// Only the default hiro.toml may be absent; help needs none.
func TestNamedConfigMissingEveryCommand(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HIRO_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("HIRO_LEASE_DIR", filepath.Join(dir, "leases"))
	t.Setenv("HIRO_CONFIG", "")
	t.Chdir(dir)
	missing := filepath.Join(dir, "nonexist.toml")
	for _, c := range []struct {
		name string
		args []string
	}{{"status", []string{"status"}}, {"recover", []string{"recover"}}, {"journal", []string{"journal", "list"}},
		{"diagnose", []string{"diagnose", os.DevNull, "--engine", "vllm"}}, {"backend status", []string{"backend", "status"}}} {
		args := c.args
		code, out, errs := runHiro(t, append([]string{"--config", missing}, args...)...)
		want := "hiro: " + c.name + ": " + missing + ": configuration file not found; pass --config FILE"
		if code != ExitUsage || !strings.HasPrefix(errs, want) || out != "" {
			t.Errorf("--config missing %v: exit %d, stdout %q, stderr %q; want exit %d and %q", args, code, out, errs, ExitUsage, want)
		}
	}
	if code, out, errs := runHiro(t, "--config", missing, "help", "status"); code != ExitOK || !strings.Contains(out, "control socket") {
		t.Errorf("help with --config missing: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// No configuration named and no hiro.toml here: status asks the router.
	if code, _, errs := runHiro(t, "status"); code != ExitFailed || !strings.Contains(errs, "no hiro serve is running") {
		t.Errorf("status without a configuration: exit %d, stderr %q; want exit %d, no router running", code, errs, ExitFailed)
	}
	t.Setenv("HIRO_CONFIG", missing)
	if code, _, errs := runHiro(t, "status"); code != ExitUsage || !strings.Contains(errs, "hiro: status: "+missing+": configuration file not found; the path came from the environment variable HIRO_CONFIG") {
		t.Errorf("status with HIRO_CONFIG missing: exit %d, stderr %q", code, errs)
	}
}

// A profile whose api_key_file is missing, empty or more than one line
// gets a doctor warning naming the profile, the file and what to do (in
// text and JSON, exit 0 like every warning); a good key file, a key from
// the environment and no key get none.
func TestDoctorWarnsUnusableKeyFile(t *testing.T) {
	t.Setenv("HIRO_TEST_DOCTOR_KEY", "sk-from-env")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "empty.key"), []byte("\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "two.key"), []byte("sk-a\nsk-b\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "good.key"), []byte("sk-good\n"), 0o600)
	cfg := filepath.Join(dir, "hiro.toml")
	var b strings.Builder
	for _, p := range []struct{ name, extra string }{
		{"gone", `api_key_file = "gone.key"`}, {"empty", `api_key_file = "empty.key"`}, {"two", `api_key_file = "two.key"`},
		{"good", `api_key_file = "good.key"`}, {"envkey", `api_key_env = "HIRO_TEST_DOCTOR_KEY"`}, {"nokey", ""},
	} {
		fmt.Fprintf(&b, "[backends.%s]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:1\"\nmodel = \"m\"\n%s\n", p.name, p.extra)
	}
	os.WriteFile(cfg, []byte(b.String()), 0o644)
	code, out, errs := runHiro(t, "--config", cfg, "doctor")
	gone := filepath.Join(dir, "gone.key")
	for _, want := range []string{
		"warning: key file " + gone + " of profile gone does not exist: every command that reaches its server will fail; put the server's API key in it alone on one line and make it yours alone (chmod 600 " + gone + "), or fix api_key_file in [backends.gone] (backends.gone.api_key_file)",
		"key file " + filepath.Join(dir, "empty.key") + " of profile empty is empty:",
		"key file " + filepath.Join(dir, "two.key") + " of profile two holds more than one line:",
	} {
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d: output lacks %q:\n%s%s", code, want, out, errs)
		}
	}
	if strings.Contains(out, "profile good ") || strings.Contains(out, "profile envkey ") || strings.Contains(out, "profile nokey ") || strings.Count(out, "warning:") != 3 {
		t.Errorf("a usable key gets a warning:\n%s", out)
	}
	code, out, _ = runHiro(t, "--config", cfg, "doctor", "--json")
	var r struct {
		Warnings []struct{ Key, Message string } `json:"warnings"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &r) != nil || len(r.Warnings) != 3 || r.Warnings[1].Key != "backends.gone.api_key_file" {
		t.Errorf("--json: exit %d, warnings %+v", code, r.Warnings)
	}
}
