package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
)

func init() { registerCommand(newBackendCmd) }

func newBackendCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backend",
		Short: "Start, stop and inspect inference servers defined by backend profiles",
		Long: `A backend profile ([backends.NAME] in the configuration) says how to run one
inference server. 'start' launches it in its own process group with only the
profile's environment, waits until it is really ready (alive, health, the
expected model id, one real completion) and leaves it running, recorded in the
state directory; 'stop', 'status' and 'logs' act on that record later.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error { return c.Help() },
	}
	cmd.AddCommand(newBackendStartCmd(g), newBackendStopCmd(g), newBackendStatusCmd(g), newBackendLogsCmd(g))
	return cmd
}

// backendLoadConfig loads g.ConfigPath; a bad configuration is a usage error
// (exit 2) whose message names the key.
func backendLoadConfig(g *Globals, what string) (*config.Config, error) {
	cfg, err := config.Load(g.ConfigPath)
	if err != nil {
		return nil, UsageError(fmt.Errorf("%s: %w", what, err))
	}
	return cfg, nil
}

// backendPrintJSON writes v as one indented JSON object and a newline.
func backendPrintJSON(g *Globals, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(g.Stdout, string(b))
	return err
}
