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
		Short: "Start, stop and inspect the inference servers of backend profiles",
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

// backendLoadConfig loads g.ConfigPath for a command about profile name
// ("" for every recorded backend); a bad configuration is a usage error
// (exit 2) whose message names the key. A half-written other profile does
// not block the command: it is left out and named on stderr with its
// errors (config.LoadAbout).
func backendLoadConfig(g *Globals, what, name string) (*config.Config, error) {
	cfg, skipped, err := config.LoadAbout(g.ConfigPath, name)
	if err != nil {
		return nil, UsageError(fmt.Errorf("%s: %w", what, err))
	}
	for _, s := range skipped {
		fmt.Fprintf(g.Stderr, "%s: warning: profile %s left out, its configuration does not load (fix it before you use it):\n", what, s.Name)
		for _, e := range s.Errors {
			fmt.Fprintf(g.Stderr, "  %s\n", e)
		}
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
