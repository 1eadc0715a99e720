// Package exitcode defines hiro's exit statuses, once (docs/design.md
// "Contracts other tools read"). Package cli maps errors to them; packages
// that record an exit status (qualify's evidence) use the same constants.
//
// It holds constants only and imports nothing.
package exitcode
