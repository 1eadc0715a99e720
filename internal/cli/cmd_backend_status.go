package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/supervisor"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func newBackendStatusCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [NAME] [--json]",
		Short: "Show the backends hiro started and whether they still run",
		Long: `List the backends recorded in the state directory (or only NAME), each checked
against the running processes: "running" when the recorded pid is alive, leads
the recorded process group and has the recorded start time; "stale" (with the
reason) when the process is gone or its pid now belongs to another process.
A stale record is never trusted.

Exit status: 0 listed (with NAME: it is running); 1 NAME is not running
(no record, or a stale one); 2 bad usage or configuration.`,
		Args: needArgs(0, 1, "at most one backend profile name, none for every backend", "hiro backend status prod"),
		RunE: func(c *cobra.Command, args []string) error {
			name := ""
			if len(args) == 1 {
				name = args[0]
			}
			return runBackendStatus(g, name)
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print JSON: an array of records, or one object with NAME (errors too)")
	return cmd
}

func runBackendStatus(g *Globals, name string) error {
	cfg, err := backendLoadConfig(g, "backend status", name)
	if err != nil {
		return err
	}
	var sts []supervisor.RecordStatus
	if name != "" {
		st, err := supervisor.Status(cfg.StateDir, name)
		if err != nil {
			return FailedError(fmt.Errorf("backend status: %w", err))
		}
		sts = []supervisor.RecordStatus{st}
	} else if sts, err = supervisor.StatusAll(cfg.StateDir); err != nil {
		return fmt.Errorf("backend status: %w", err)
	}
	if g.JSON {
		var v any = sts
		if name != "" {
			v = sts[0]
		} else if sts == nil {
			v = []supervisor.RecordStatus{}
		}
		if err := backendPrintJSON(g, v); err != nil {
			return err
		}
	} else {
		printStatus(g, sts, cfg.BackendNames())
	}
	if name != "" && sts[0].Status != supervisor.StatusRunning {
		return Silent(ExitFailed)
	}
	return nil
}

func printStatus(g *Globals, sts []supervisor.RecordStatus, profiles []string) {
	if len(sts) == 0 {
		fmt.Fprintf(g.Stdout, "no backend started by hiro is recorded (profiles: %v)\n", profiles)
		return
	}
	tw := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tPID\tPGID\tPROCS\tURL\tMODEL\tUP\tLOG")
	for _, s := range sts {
		up := "-"
		if s.Status == supervisor.StatusRunning {
			up = time.Since(s.StartedAt).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", s.Name, s.Status, s.PID, s.PGID, s.ProcessesInGroup, s.BaseURL, s.Model, up, s.LogPath)
	}
	tw.Flush()
	for _, s := range sts {
		if s.Status == supervisor.StatusStale {
			fmt.Fprintf(g.Stdout, "%s: stale record: %s; not trusted (remove it with 'hiro backend stop %s')\n", s.Name, termtext.Escape(s.Reason), shellquote.Quote(s.Name))
		}
	}
}
