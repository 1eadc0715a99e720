package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// backendLogsOpts are the flags of 'hiro backend logs'.
type backendLogsOpts struct {
	Tail int
	Raw  bool
}

func newBackendLogsCmd(g *Globals) *cobra.Command {
	o := &backendLogsOpts{}
	cmd := &cobra.Command{
		Use:   "logs NAME [--tail N] [--raw]",
		Short: "Print a backend's log (stdout and stderr of its latest attempt)",
		Long: `Print the log of backend NAME: the running one's (from its record), else the
latest attempt's log file in the state directory (<state_dir>/logs/NAME-*.log).

An engine writes its log, not hiro: control bytes in it (ESC, BEL, carriage
return...), C1 controls and invalid UTF-8 are printed as visible escapes
(\x1b, \x07, \u009b, \xff), line by line, so that a log cannot set the
window title, clear the screen or move the cursor; tabs and newlines are kept.
--raw prints the log's bytes as they are, for piping into another tool
(hiro backend logs prod --raw | less -R).

Exit status: 0 printed; 1 no log for NAME; 2 bad usage or configuration (NAME
is not a backend profile of the configuration).`,
		Args: needArgs(1, 1, "the name of one backend profile", "hiro backend logs prod --tail 50"),
		RunE: func(c *cobra.Command, args []string) error {
			return runBackendLogs(g, o, args[0])
		},
	}
	cmd.Flags().IntVar(&o.Tail, "tail", 0, "print only the last N lines (0: all)")
	cmd.Flags().BoolVar(&o.Raw, "raw", false, "print the log's bytes as they are, control bytes and escape sequences included (default: as visible escapes)")
	describeFlag(cmd, "tail", "a whole number of lines", "50")
	return cmd
}

func runBackendLogs(g *Globals, o *backendLogsOpts, name string) error {
	if o.Tail < 0 {
		return UsageErrorf("backend logs: --tail %d: must be 0 (all) or more", o.Tail)
	}
	cfg, err := backendLoadConfig(g, "backend logs", name)
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
	return printLog(g.Stdout, f, o.Tail, o.Raw)
}

// printLog copies the log r to w, only its last tail lines unless tail is
// 0, each line passed through termtext.Escape unless raw.
func printLog(w io.Writer, r io.Reader, tail int, raw bool) error {
	if tail == 0 && raw {
		_, err := io.Copy(w, r)
		return err
	}
	bw := bufio.NewWriter(w)
	put := func(line string) {
		if !raw {
			line = termtext.Escape(line)
		}
		bw.WriteString(line)
	}
	var ring []string
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if tail == 0 {
				put(line)
			} else {
				if len(ring) == tail {
					ring = ring[1:]
				}
				ring = append(ring, line)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			bw.Flush()
			return FailedError(fmt.Errorf("backend logs: %w", err))
		}
	}
	for _, l := range ring {
		put(l)
	}
	if n := len(ring); n > 0 && !strings.HasSuffix(ring[n-1], "\n") {
		bw.WriteString("\n") // --tail printed whole lines before: keep the last one ended
	}
	return bw.Flush()
}
