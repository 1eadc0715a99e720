package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Globals holds the flags every subcommand shares.
type Globals struct {
	// ConfigPath is the hiro configuration file (--config, $HIRO_CONFIG,
	// default "hiro.toml").
	ConfigPath string
	// JSON asks for machine-readable output; errors are then JSON objects too.
	JSON bool
	// Stdout and Stderr are where the command writes; tests replace them.
	Stdout io.Writer
	Stderr io.Writer
}

// commandFactories is filled by each cmd_*.go file's init function through
// registerCommand, so adding a subcommand never edits this file.
var commandFactories []func(g *Globals) *cobra.Command

// beforeCommand hooks run before every subcommand (e.g. restoring a
// production left down by a killed hiro). They receive the command about
// to run.
var beforeCommand []func(g *Globals, c *cobra.Command) error

// registerCommand adds a subcommand constructor to the root command.
func registerCommand(f func(g *Globals) *cobra.Command) {
	commandFactories = append(commandFactories, f)
}

// NewRoot builds the root command with every registered subcommand.
func NewRoot(g *Globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "hiro",
		Short:         "Supervise local inference servers, qualify backends with evidence, extract grounded claims",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(g.Stdout)
	root.SetErr(g.Stderr)
	defCfg := os.Getenv("HIRO_CONFIG")
	if defCfg == "" {
		defCfg = "hiro.toml"
	}
	root.PersistentFlags().StringVar(&g.ConfigPath, "config", defCfg, "hiro configuration file (TOML); also $HIRO_CONFIG")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return UsageError(fmt.Errorf("%s: %w (see '%s --help')", c.CommandPath(), err, c.CommandPath()))
	})
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		for _, h := range beforeCommand {
			if err := h(g, c); err != nil {
				return err
			}
		}
		return nil
	}
	for _, f := range commandFactories {
		root.AddCommand(f(g))
	}
	return root
}

// Main runs hiro with args and returns the exit status. SIGINT and SIGTERM
// cancel the one root context that every long operation takes, with the
// cause "interrupted by SIGINT" (context.Cause). Later signals are caught
// too, so that work that must finish (restoring production) is not cut.
func Main(args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for s := range sigs {
			n++
			name := "SIGTERM"
			if s == os.Interrupt {
				name = "SIGINT"
			}
			if n == 1 {
				cancel(&InterruptError{Signal: name})
				continue
			}
			fmt.Fprintf(os.Stderr, "hiro: %s again: still finishing (restoring production where needed); hiro exits when done\n", name)
		}
	}()
	return Run(ctx, args, os.Stdout, os.Stderr)
}

// InterruptError is the cause of the root context's cancellation when a
// signal arrived.
type InterruptError struct{ Signal string }

func (e *InterruptError) Error() string { return "interrupted by " + e.Signal }

// Run is Main with explicit context and writers, for tests.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	g := &Globals{Stdout: stdout, Stderr: stderr}
	root := NewRoot(g)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err != nil {
		code := ExitCode(err)
		var ee *ExitError
		if errors.As(err, &ee) && ee.Err == nil {
			return code
		}
		if code == ExitFailed && !errors.As(err, &ee) && isCobraUsage(err) {
			code = ExitUsage
		}
		reportError(g, err, code)
		return code
	}
	return ExitOK
}

// isCobraUsage recognises cobra's own argument errors (unknown command,
// wrong number of arguments), which are usage errors.
func isCobraUsage(err error) bool {
	m := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "unknown flag", "unknown shorthand", "invalid argument", "required flag"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// reportError prints err to stderr, as {"error": ..., "exit_code": ...} in
// --json mode.
func reportError(g *Globals, err error, code int) {
	if g.JSON {
		b, _ := json.Marshal(map[string]any{"error": err.Error(), "exit_code": code})
		fmt.Fprintln(g.Stderr, string(b))
		return
	}
	fmt.Fprintf(g.Stderr, "hiro: %v\n", err)
}
