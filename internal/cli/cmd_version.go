package cli

import (
	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/version"
)

func init() { registerCommand(newVersionCmd) }

func newVersionCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print hiro's version, VCS revision and time, and Go version",
		Long: `Print the version of this hiro, the VCS revision and commit time it was
built from (stamped by scripts/build.sh; Go's build information otherwise),
and the Go toolchain and platform. 'hiro --version' prints the same.

Exit status: 0.`,
		Args:        needArgs(0, 0, "", ""),
		Annotations: map[string]string{annotationNoHooks: "true"},
		RunE: func(c *cobra.Command, _ []string) error {
			if g.JSON {
				return backendPrintJSON(g, version.Get())
			}
			_, err := c.OutOrStdout().Write([]byte(version.Get().String()))
			return err
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print one JSON object")
	return cmd
}
