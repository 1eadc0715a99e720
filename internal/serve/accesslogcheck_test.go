package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
)

// TestCheckAccessLog: "-" and "off" need nothing; a path in an existing
// folder is created; a missing folder, a file where the folder should be
// and a folder where the file should be are configuration errors naming
// serve.access_log.
func TestCheckAccessLog(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain")
	os.WriteFile(file, nil, 0o600)
	for _, c := range []struct{ path, want string }{
		{"-", ""}, {"off", ""}, {filepath.Join(dir, "access.log"), ""},
		{filepath.Join(dir, "no", "x.log"), "does not exist; create it"},
		{filepath.Join(file, "x.log"), "is not a folder"},
		{dir, "cannot open"},
	} {
		cfg := &config.Config{Path: "/etc/hiro.toml", Serve: config.Serve{AccessLog: c.path}}
		err := checkAccessLog(cfg)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.path, err)
			}
			continue
		}
		var ce *config.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "/etc/hiro.toml: serve.access_log: ") {
			t.Errorf("%s: error %v, want one naming serve.access_log with %q", c.path, err, c.want)
		} else if !errors.As(err, &ce) {
			t.Errorf("%s: %T is not a *config.Error", c.path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "access.log")); err != nil {
		t.Errorf("the access log was not created: %v", err)
	}
}
