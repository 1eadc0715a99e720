package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Flag annotations read by flagError when a flag's value does not parse
// (set them with describeFlag).
const (
	annotationFlagWhat    = "hiro:what"
	annotationFlagExample = "hiro:example"
)

// describeFlag says what flag name of c takes, for the message of a value
// that does not parse: `--tail: "abc" is not <what>; e.g. --tail <example>`.
func describeFlag(c *cobra.Command, name, what, example string) {
	f := c.Flags().Lookup(name)
	if f == nil {
		panic("describeFlag: no flag --" + name)
	}
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[annotationFlagWhat] = []string{what}
	f.Annotations[annotationFlagExample] = []string{example}
}

// flagError is the root's flag error function: a usage error (exit 2)
// prefixed by the command's name (without "hiro", which the report adds).
// A value that does not parse says what the flag takes and an example
// instead of the parser's error.
func flagError(c *cobra.Command, err error) error {
	name := commandName(c)
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		f := ive.GetFlag()
		what, example := flagKind(f)
		if a := f.Annotations[annotationFlagWhat]; len(a) == 1 {
			what = a[0]
		}
		if a := f.Annotations[annotationFlagExample]; len(a) == 1 {
			example = a[0]
		}
		return UsageErrorf("%s: --%s: %q is not %s; e.g. --%s %s", name, f.Name, ive.GetValue(), what, f.Name, example)
	}
	return UsageError(fmt.Errorf("%s: %w (see '%s --help')", name, err, c.CommandPath()))
}

// flagKind says what a flag of f's type takes, with an example value.
func flagKind(f *pflag.Flag) (what, example string) {
	def := f.DefValue
	pick := func(fallback string) string {
		if def == "" || def == "0" || def == "0s" || def == "[]" {
			return fallback
		}
		return def
	}
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "a whole number", pick("10")
	case "float32", "float64":
		return "a number", pick("0.5")
	case "duration":
		return "a duration (a number with a unit: ms, s, m, h)", pick("30s")
	case "bool":
		return "true or false", "true"
	}
	return "a valid value", pick("VALUE")
}
