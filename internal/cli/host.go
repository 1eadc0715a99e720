package cli

import (
	"os"
	"runtime"
)

// hostFingerprint returns the host facts recorded in campaign evidence.
func hostFingerprint() map[string]any {
	h, _ := os.Hostname()
	return map[string]any{"os": runtime.GOOS, "arch": runtime.GOARCH, "cpus": runtime.NumCPU(), "hostname": h}
}
