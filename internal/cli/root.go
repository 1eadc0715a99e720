package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/version"
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

// defaultConfigPath is the configuration read when neither --config nor
// $HIRO_CONFIG names one (relative to the working folder).
const defaultConfigPath = "hiro.toml"

// self is the command line a user types to reach this configuration again,
// for hints ("stop it with: ..."): plain "hiro" when the configuration is
// the default or comes from $HIRO_CONFIG, else "hiro --config PATH" with the
// path made absolute and quoted for a POSIX shell.
func (g *Globals) self() string {
	if g.ConfigPath == "" || g.ConfigPath == defaultConfigPath || g.ConfigPath == os.Getenv("HIRO_CONFIG") {
		return "hiro"
	}
	p, err := filepath.Abs(g.ConfigPath)
	if err != nil {
		p = g.ConfigPath
	}
	return "hiro --config " + shellquote.Quote(p)
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
		Version:       version.Get().Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// --version prints what 'hiro version' prints.
	root.SetVersionTemplate(version.Get().String())
	root.SetOut(g.Stdout)
	root.SetErr(g.Stderr)
	defCfg := os.Getenv("HIRO_CONFIG")
	if defCfg == "" {
		defCfg = defaultConfigPath
	}
	root.PersistentFlags().StringVar(&g.ConfigPath, "config", defCfg, "hiro configuration file (TOML); also $HIRO_CONFIG")
	root.SetFlagErrorFunc(flagError)
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if c.Annotations[annotationNoHooks] != "" {
			return nil
		}
		if err := namedConfigMissing(g, c); err != nil {
			return err
		}
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
	requireSubcommand(root)
	wrapHelp(root)
	return root
}

// namedConfigMissing refuses, before any hook or command runs, a
// configuration named with --config or $HIRO_CONFIG that does not exist:
// bad usage, with the message config.Load gives. Only the default
// hiro.toml may be absent (doctor and journal then go on without one).
// Every command reads the configuration, if only for what it knows to be
// secret (registerConfigSecrets), so none may go on as if none had been
// named: 'hiro --config typo.toml status' asked the router and said none
// was running.
func namedConfigMissing(g *Globals, c *cobra.Command) error {
	named := os.Getenv("HIRO_CONFIG") != ""
	if f := c.Flag("config"); f != nil && f.Changed {
		named = true
	}
	if !named || c.Name() == "help" || strings.HasPrefix(c.CommandPath(), "hiro completion") {
		return nil // help reads no configuration
	}
	if _, err := os.Stat(g.ConfigPath); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := config.Load(g.ConfigPath); errors.Is(err, config.ErrNotFound) {
		return UsageError(fmt.Errorf("%s: %w", strings.TrimPrefix(c.CommandPath(), "hiro "), err))
	}
	return nil
}

// helpWidth is the widest line of a command's long help.
const helpWidth = 80

// wrapHelp wraps every command's long help at helpWidth, so text built
// from constants of other packages (eval's similarity, corpus's selection
// rule) reads like the rest.
func wrapHelp(c *cobra.Command) {
	c.Long = wrapText(c.Long, helpWidth)
	if !c.HasParent() {
		// The flags' descriptions too (pflag wraps them at words when told
		// a width; cobra's default template does not tell it one).
		c.SetUsageTemplate(strings.ReplaceAll(c.UsageTemplate(), "FlagUsages | trimTrailingWhitespaces",
			fmt.Sprintf("FlagUsagesWrapped %d | trimTrailingWhitespaces", helpWidth)))
	}
	for _, sub := range c.Commands() {
		wrapHelp(sub)
	}
}

// wrapText wraps s at width. A paragraph of plain lines (no indentation,
// no list marker) with a line too long, or a stub (a short line the next
// word would have fitted after), is reflowed as one; other lines longer than width are
// broken at spaces, keeping their indentation on continuation lines. A
// single word longer than width stays whole.
func wrapText(s string, width int) string {
	lines := strings.Split(s, "\n")
	var out []string
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && plainLine(lines[j]) {
			j++
		}
		if j > i+1 && (anyLonger(lines[i:j], width) || hasStub(lines[i:j], width)) {
			out = append(out, wrapLine(strings.Join(lines[i:j], " "), width)...)
			i = j
			continue
		}
		if j == i {
			j = i + 1
		}
		for _, l := range lines[i:j] {
			out = append(out, wrapLine(l, width)...)
		}
		i = j
	}
	return strings.Join(out, "\n")
}

// plainLine reports whether l is running text a paragraph may reflow: not
// blank, not indented, not a list item.
func plainLine(l string) bool {
	t := strings.TrimSpace(l)
	return t != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t") &&
		!strings.HasPrefix(t, "- ") && !strings.HasPrefix(t, "* ")
}

// hasStub reports whether a line of the paragraph ls is shorter than half
// of width while the next line's first word would have fitted after it.
func hasStub(ls []string, width int) bool {
	for i := 0; i+1 < len(ls); i++ {
		n := len([]rune(ls[i]))
		if n < width/2 && !strings.HasSuffix(ls[i], ":") && n+1+len([]rune(strings.Fields(ls[i+1])[0])) <= width {
			return true
		}
	}
	return false
}

func anyLonger(ls []string, width int) bool {
	for _, l := range ls {
		if len([]rune(l)) > width {
			return true
		}
	}
	return false
}

// wrapLine breaks l at spaces into lines of at most width, each carrying
// l's indentation.
func wrapLine(l string, width int) []string {
	if len([]rune(l)) <= width {
		return []string{l}
	}
	indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
	var out []string
	cur := indent
	for _, w := range strings.Fields(l) {
		switch {
		case cur == indent:
			cur += w
		case len([]rune(cur))+1+len([]rune(w)) <= width:
			cur += " " + w
		default:
			out = append(out, cur)
			cur = indent + w
		}
	}
	return append(out, cur)
}

// annotationNoHooks, set in a command's Annotations, skips the
// beforeCommand hooks (e.g. 'hiro version' never restores production).
const annotationNoHooks = "hiro:no-hooks"

// annotationRunsItself marks a command that has subcommands and still
// runs by itself (see requireSubcommand).
const annotationRunsItself = "hiro:runs-itself"

// requireSubcommand makes every group command (one with subcommands, such
// as 'hiro backend') run without a subcommand a usage error: its usage goes
// to stderr and the exit status is 2. A command annotated
// annotationRunsItself runs by itself and also has subcommands ('hiro
// extract' and 'hiro extract merge'), and is left as it is.
func requireSubcommand(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() && sub.Annotations[annotationRunsItself] == "" {
			sub.Args = cobra.ArbitraryArgs
			sub.RunE = func(c *cobra.Command, args []string) error {
				c.SetOut(c.ErrOrStderr())
				_ = c.Usage()
				if len(args) > 0 {
					return UsageErrorf("%s: unknown command %q; the commands are listed above", commandName(c), args[0])
				}
				return UsageErrorf("%s: give a command; the commands are listed above", commandName(c))
			}
			requireSubcommand(sub)
		}
	}
}

// Main runs hiro with args and returns the exit status. SIGINT, SIGTERM
// and SIGHUP (the terminal closed, the ssh session dropped) cancel the one
// root context that every long operation takes, with the cause
// "interrupted by SIGHUP" (context.Cause), so that a campaign aborts and
// restores production instead of dying with its candidate running. 'hiro
// serve' takes SIGHUP for itself (it reopens its logs: see hupReopens).
// Later signals are caught too, so that work that must finish (restoring
// production) is not cut. SIGPIPE is caught and dropped: a reader of
// stdout or stderr that goes away ('hiro qualify ... 2>&1 | head') makes
// those writes fail, never ends hiro mid-campaign.
func Main(args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// Without a channel for SIGPIPE, Go ends the program on a write to a
	// broken pipe on fd 1 or 2. Notify (not Ignore) so that the engines
	// hiro starts get SIGPIPE's default back on exec.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		n := 0
		for s := range sigs {
			if s == syscall.SIGHUP && hupReopens.Load() {
				continue // hiro serve's own: reopen its logs
			}
			n++
			name := signalName(s)
			if n == 1 {
				cancel(&InterruptError{Signal: name})
				continue
			}
			fmt.Fprintln(os.Stderr, againLine(name, finishingFor(args)))
		}
	}()
	return Run(ctx, args, os.Stdout, os.Stderr)
}

// annotationFinishing is a command's annotation saying what it still
// finishes after the first signal cancelled it ("restoring production
// where needed"); the second signal's line says it (againLine). A
// command without one touches no production: the line names nothing.
const annotationFinishing = "hiro:finishing"

// finishingFor is the annotationFinishing of the command args run, ""
// when it has none or args name no command.
func finishingFor(args []string) string {
	root := NewRoot(&Globals{Stdout: io.Discard, Stderr: io.Discard})
	c, _, err := root.Find(args)
	if err != nil || c == nil {
		return ""
	}
	return c.Annotations[annotationFinishing]
}

// againLine is what a second signal prints: hiro keeps finishing, and
// what, when the command said (finishingFor).
func againLine(signal, finishing string) string {
	if finishing == "" {
		return fmt.Sprintf("hiro: %s again: still finishing; hiro exits when done", signal)
	}
	return fmt.Sprintf("hiro: %s again: still finishing (%s); hiro exits when done", signal, finishing)
}

// hupReopens is set by 'hiro serve', for which SIGHUP reopens the logs
// instead of cancelling the root context.
var hupReopens atomic.Bool

// signalName is "SIGINT", "SIGTERM" or "SIGHUP".
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "SIGTERM"
}

// InterruptError is the cause of the root context's cancellation when a
// signal arrived.
type InterruptError struct{ Signal string }

func (e *InterruptError) Error() string { return "interrupted by " + e.Signal }

// Run is Main with explicit context and writers, for tests.
//
// Everything the command prints passes through the one redaction
// (redact.Writer: registered secrets, bearer keys, token shapes; paths
// kept), so an engine's failure line or an error quoting a key never
// reaches a terminal or a CI log in clear.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rout, rerr := redact.NewWriter(stdout), redact.NewWriter(stderr)
	defer rerr.Flush()
	defer rout.Flush()
	stdout, stderr = rout, rerr
	g := &Globals{Stdout: stdout, Stderr: stderr}
	// Endpoint warnings (a key over plain http, a key file others can
	// read) go to this run's stderr, once each per run: a line, or under
	// --json one JSON object per line {"warning": ..., "key": ...}.
	text := llm.PrintWarning(stderr)
	defer llm.SetWarnings(func(w llm.Warning) {
		if !g.JSON {
			text(w)
			return
		}
		b, _ := json.Marshal(map[string]string{"warning": redact.Secrets(w.Msg), "key": w.Key})
		fmt.Fprintln(stderr, string(b))
	})()
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
		if errors.Is(err, syscall.EPIPE) {
			// The reader of the output went away ('hiro ... | head'):
			// what it did not read is not an error worth a message.
			return code
		}
		if f := root.PersistentFlags().Lookup("config"); f != nil && !f.Changed {
			err = explainConfigFromEnv(err, g.ConfigPath)
		}
		reportError(g, explainMissingPath(err), code)
		return code
	}
	return ExitOK
}

// explainConfigFromEnv rewords err's "configuration file not found"
// when the path came from $HIRO_CONFIG (no --config): the user may not know
// the variable is set. Other errors are returned as they are.
func explainConfigFromEnv(err error, path string) error {
	env := os.Getenv("HIRO_CONFIG")
	var ce *config.Error
	if env == "" || env != path || !errors.As(err, &ce) || !errors.Is(ce, config.ErrNotFound) || ce.File != path {
		return err
	}
	msg := "configuration file not found; the path came from the environment variable HIRO_CONFIG: correct or unset HIRO_CONFIG, or pass --config FILE (examples/hiro.toml is a starting point)"
	return &rewordedError{msg: strings.Replace(err.Error(), ce.Msg, msg, 1), err: err}
}

// explainMissingPath rewords the Go runtime's "open PATH: no such file or
// directory" (and stat's, lstat's...) inside err's message as hiro's own
// "PATH: not found (no such file or folder); check the path", whatever
// command read the path, so a typo in an input never reaches the user as
// a raw system call. Other errors are returned as they are.
func explainMissingPath(err error) error {
	var pe *fs.PathError
	if !errors.As(err, &pe) || !errors.Is(pe.Err, fs.ErrNotExist) {
		return err
	}
	msg, raw := err.Error(), pe.Error()
	if !strings.Contains(msg, raw) {
		return err
	}
	said := pe.Path + ": not found (no such file or folder); check the path"
	if dup := pe.Path + ": " + raw; strings.Contains(msg, dup) {
		raw = dup // "input X: stat X: ..." names X once
	}
	return &rewordedError{msg: strings.Replace(msg, raw, said, 1), err: err}
}

// rewordedError is err with another message.
type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }

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
