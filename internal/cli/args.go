package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// needArgs is every command's check of its positional arguments (use it
// instead of cobra.ExactArgs, MinimumNArgs, NoArgs...): between min and max
// arguments (max < 0: no upper bound). Otherwise it returns a usage error
// (exit 2) that names the command, what it needs and an example, e.g.
//
//	backend start: give the name of one backend profile (got 0 arguments), e.g. hiro backend start prod
//
// what completes "give ..."; example is a whole command line. A command
// that takes no arguments is needArgs(0, 0, "", "").
func needArgs(min, max int, what, example string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) >= min && (max < 0 || len(args) <= max) {
			return nil
		}
		name := commandName(c)
		if max == 0 {
			return UsageErrorf("%s: takes no arguments (got %s); see '%s --help'", name, countArgs(args), c.CommandPath())
		}
		msg := fmt.Sprintf("%s: give %s (got %s)", name, what, countArgs(args))
		if example != "" {
			msg += ", e.g. " + example
		}
		return UsageError(fmt.Errorf("%s", msg))
	}
}

// commandName is c's path without the program's name ("backend start").
func commandName(c *cobra.Command) string {
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// countArgs says how many arguments were given, quoting them when there
// are a few: `0 arguments`, `2 arguments: "a" "b"`.
func countArgs(args []string) string {
	s := fmt.Sprintf("%d arguments", len(args))
	if len(args) == 1 {
		s = "1 argument"
	}
	if len(args) == 0 || len(args) > 4 {
		return s
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return s + ": " + strings.Join(q, " ")
}
