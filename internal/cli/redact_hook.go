package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/qualify"
)

func init() { beforeCommand = append(beforeCommand, registerConfigSecrets) }

// registerConfigSecrets tells package redact, before any command runs,
// what the configuration knows to be secret or local (profiles' env
// values, secret-looking arguments, API keys, the project's folders), so
// that every public output of every command (the journal's too) is
// redacted with that knowledge. A configuration that is absent or does not
// load is ignored here: the commands that need it say so themselves.
func registerConfigSecrets(g *Globals, c *cobra.Command) error {
	if _, err := os.Stat(g.ConfigPath); err != nil {
		return nil
	}
	// LoadAbout: a half-written profile must not cost the others' secrets
	// their redaction (its own values are not read).
	if cfg, _, err := config.LoadAbout(g.ConfigPath, ""); err == nil {
		qualify.RegisterSecrets(cfg)
	}
	return nil
}
