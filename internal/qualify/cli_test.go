package qualify_test

import (
	"bytes"
	"os/exec"
	"testing"
)

// runHiro runs the built hiro binary with the env's configuration and
// lease directory; it returns the exit code, stdout and stderr.
func runHiro(t *testing.T, e *env, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(hiroBin, append([]string{"--config", e.cfgPath}, args...)...)
	cmd.Env = append(cmd.Environ(), "HIRO_LEASE_DIR="+e.leaseDir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}
