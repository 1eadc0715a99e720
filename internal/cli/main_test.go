package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain gives the package's tests a private lease folder, so that
// tests starting backends never share leases with the user's or with
// another test run on the same machine. Afterwards it removes what the
// tests built (the fake engine under a hiro-cli-fake-* folder of the
// system temp directory) and fails the run when it is still there.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hiro-cli-leases-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HIRO_LEASE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	if fakePath != "" {
		fdir := filepath.Dir(fakePath)
		if err := os.RemoveAll(fdir); err != nil {
			fmt.Fprintf(os.Stderr, "removing %s: %v\n", fdir, err)
			code = 1
		}
		if _, err := os.Stat(fdir); err == nil {
			fmt.Fprintf(os.Stderr, "test cleanup: %s is still there\n", fdir)
			code = 1
		}
	}
	os.Exit(code)
}
