// Package account turns a campaign's evidence into its account: the one
// story that report.md, the journal entry and the terminal tell, in the
// same words (STYLE.md, "One picture of a fact").
//
// Build is the only function that decides what the account says: the
// summary, the work completed (a section per gate that ran, and what the
// production guard did, which is not a gate), the decisions, the
// validation table, what was not tested, the current state and the next
// steps. Markdown renders an Account for report.md; package journal maps
// the same Account onto an entry. Failure renders one engine failure
// (class, phase, root cause, how it ended, facts, next step) for every
// printer. Charts draws the pictures of the journal page (SVG, gonum/plot).
//
// It reads evidence (package evidence) and the engines' next steps
// (package engine); it writes nothing and owns no file: callers write,
// through their own redaction step.
package account
