package cli

import (
	"fmt"
	"os"
	"testing"

	"github.com/hiro-dev/hiro/internal/testsupport"
)

// TestMain gives the package's tests a private lease folder, so that
// tests starting backends never share leases with the user's or with
// another test run on the same machine. Afterwards it removes what the
// tests built (testsupport.Cleanup) and fails the run when it is still
// there.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hiro-cli-leases-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("HIRO_LEASE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	if err := testsupport.Cleanup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}
