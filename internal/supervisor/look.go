package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
)

// CommandPath resolves a managed profile's command as Start would (a bare
// name through the PATH the engine gets, then hiro's; a relative path
// from the profile's working directory) and checks that it is an
// executable file. Plan checks call it so that a command that does not
// exist is refused before anything is stopped.
func CommandPath(p *config.Profile) (string, error) {
	if p.Command == "" {
		return "", fmt.Errorf("profile %s has no command", p.Name)
	}
	path, err := lookCommand(p.Command, p.Environ(os.LookupEnv))
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(path) && p.Workdir != "" {
		path = filepath.Join(p.Workdir, path)
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return "", err
	case st.IsDir():
		return "", fmt.Errorf("%s is a directory", path)
	case st.Mode()&0o111 == 0:
		return "", fmt.Errorf("%s is not executable", path)
	}
	return path, nil
}

// CommandFix says what to do about err, CommandPath's error for p: for a
// bare name that no folder of the PATH searched holds, the likely fix is
// to install the engine or put its folder on PATH (for Ollama, the
// project's scripts/install-ollama.sh and GOPATH/bin), not to edit the
// profile; for a path, fix backends.NAME.command.
func CommandFix(p *config.Profile, err error) string {
	if strings.Contains(p.Command, "/") || !errors.Is(err, exec.ErrNotFound) {
		return fmt.Sprintf("fix backends.%s.command", p.Name)
	}
	path := os.Getenv("PATH")
	for _, kv := range p.Environ(os.LookupEnv) {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	fix := fmt.Sprintf("no folder of the PATH searched (%s) holds %s: install it or put its folder on PATH", path, p.Command)
	if p.Engine == "ollama" && filepath.Base(p.Command) == "ollama" {
		fix += " (Ollama: ./scripts/install-ollama.sh builds it into $(go env GOPATH)/bin; then export PATH=\"$(go env GOPATH)/bin:$PATH\")"
	}
	return fix + fmt.Sprintf(", or give its full path in backends.%s.command", p.Name)
}
