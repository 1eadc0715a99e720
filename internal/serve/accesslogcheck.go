package serve

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

// checkAccessLog checks, in New (before anything starts), that [serve]
// access_log (a file path; "-" and "off" need nothing) can be opened for
// appending: its folder exists and the file is writable. It creates the
// file (empty) when missing, as the router would. The error is a
// *config.Error naming the configuration file and serve.access_log and
// saying what to do, so that `hiro serve` exits 2 (configuration) rather
// than failing after start.
func checkAccessLog(cfg *config.Config) error {
	path := cfg.Serve.AccessLog
	if path == "" || path == "-" || path == "off" {
		return nil
	}
	bad := func(format string, a ...any) error {
		return &config.Error{File: cfg.Path, Key: "serve.access_log", Msg: fmt.Sprintf(format, a...)}
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("the folder %s (for %s) does not exist; create it (mkdir -p %s) or change the path (\"-\" for stderr, \"off\" for none)", dir, path, shellquote.Quote(dir))
	case err != nil:
		return bad("cannot use the folder %s (for %s): %v; fix its permissions or change the path", dir, path, err)
	case !st.IsDir():
		return bad("%s (the folder for %s) is not a folder; change the path", dir, path)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return bad("cannot open %s for appending: %v; make it writable or change the path (\"-\" for stderr, \"off\" for none)", path, err)
	}
	return f.Close()
}
