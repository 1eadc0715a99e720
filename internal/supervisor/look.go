package supervisor

import (
	"fmt"
	"os"
	"path/filepath"

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
