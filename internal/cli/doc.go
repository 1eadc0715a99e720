// Package cli owns hiro's command line: one file per subcommand
// (cmd_<name>.go), the global flags, the mapping from errors to the
// documented exit codes (exit.go), and the JSON error form of --json mode.
//
// It must not hold domain logic: each subcommand parses its flags, builds
// options and calls a runX(ctx, opts, args) function that delegates to the
// internal package that owns the work. Tests call runX directly or run Main.
package cli
