package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// backendLogsOpts are the flags of 'hiro backend logs'.
type backendLogsOpts struct {
	Tail int
}

func newBackendLogsCmd(g *Globals) *cobra.Command {
	o := &backendLogsOpts{}
	cmd := &cobra.Command{
		Use:   "logs NAME [--tail N]",
		Short: "Print a backend's log (stdout and stderr of its latest attempt)",
		Long: `Print the log of backend NAME: the running one's (from its record), else the
latest attempt's log file in the state directory (<state_dir>/logs/NAME-*.log).

Exit status: 0 printed; 1 no log for NAME; 2 bad usage or configuration (NAME
is not a backend profile of the configuration).`,
		Args: needArgs(1, 1, "the name of one backend profile", "hiro backend logs prod --tail 50"),
		RunE: func(c *cobra.Command, args []string) error {
			return runBackendLogs(g, o, args[0])
		},
	}
	cmd.Flags().IntVar(&o.Tail, "tail", 0, "print only the last N lines (0: all)")
	describeFlag(cmd, "tail", "a whole number of lines", "50")
	return cmd
}

func runBackendLogs(g *Globals, o *backendLogsOpts, name string) error {
	if o.Tail < 0 {
		return UsageErrorf("backend logs: --tail %d: must be 0 (all) or more", o.Tail)
	}
	cfg, err := backendLoadConfig(g, "backend logs")
	if err != nil {
		return err
	}
	if _, err := cfg.Backend(name); err != nil {
		return UsageError(fmt.Errorf("backend logs: %w", err))
	}
	path := ""
	if r, err := supervisor.ReadRecord(cfg.StateDir, name); err == nil {
		path = r.LogPath
	} else if !errors.Is(err, supervisor.ErrNoRecord) {
		return err
	}
	if path == "" {
		matches, _ := filepath.Glob(filepath.Join(cfg.StateDir, "logs", name+"-*.log"))
		if len(matches) == 0 {
			return FailedError(fmt.Errorf("backend logs: no log of %s in %s; start it with 'hiro backend start %s'", name, filepath.Join(cfg.StateDir, "logs"), shellquote.Quote(name)))
		}
		sort.Strings(matches) // names end in a sortable UTC time
		path = matches[len(matches)-1]
	}
	f, err := os.Open(path)
	if err != nil {
		return FailedError(fmt.Errorf("backend logs: %w", err))
	}
	defer f.Close()
	if o.Tail == 0 {
		_, err = io.Copy(g.Stdout, f)
		return err
	}
	ring := make([]string, 0, o.Tail)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if len(ring) == o.Tail {
			ring = ring[1:]
		}
		ring = append(ring, sc.Text())
	}
	for _, l := range ring {
		fmt.Fprintln(g.Stdout, l)
	}
	return sc.Err()
}
