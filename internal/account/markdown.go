package account

import (
	"fmt"
	"strings"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/redact"
)

// Markdown renders the account of e as report.md: the same sections, in the
// same words, as the journal entry made from the same evidence.
func Markdown(e *evidence.Evidence) string {
	a := Build(e)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", md(a.Title))
	fmt.Fprintf(&b, "%s · campaign `%s` · exit %d · %s\n\n", md(a.Subtitle), e.ID, e.ExitCode, e.StartedAt.UTC().Format("2006-01-02 15:04 MST"))
	b.WriteString("## Executive summary\n\n" + md(a.Summary) + "\n\n")
	b.WriteString("## Work completed\n\n")
	for _, s := range a.Sections {
		fmt.Fprintf(&b, "### %s\n\n*%s*\n\n", md(s.Title), md(s.Status))
		for _, it := range s.Items {
			b.WriteString("- " + md(it) + "\n")
		}
		b.WriteString("\n")
		if s.Markdown != "" {
			b.WriteString(s.Markdown + "\n")
		}
	}
	if len(a.Decisions) > 0 {
		b.WriteString("## Decisions and reasoning\n\n")
		for _, d := range a.Decisions {
			b.WriteString("- " + md(d) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("## Validation and evidence\n\n| Check | Status | Result |\n| --- | --- | --- |\n")
	for _, v := range a.Validation {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", cellText(v.Check), StatusText(v.Status), cellText(v.Result))
	}
	b.WriteString("\n")
	if len(a.NotTested) > 0 {
		b.WriteString("## What was not tested\n\n")
		for _, n := range a.NotTested {
			b.WriteString("- " + md(n) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString("## Current state\n\n" + md(a.CurrentState) + "\n\n")
	if len(a.NextSteps) > 0 {
		b.WriteString("## Next steps\n\n")
		for _, s := range a.NextSteps {
			b.WriteString("- " + md(s) + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Machine-readable evidence: `%s` (schema `%s`).\n", evidence.PublicFile, e.Schema)
	return b.String()
}

// StatusText is a validation status in words: "passed", "failed", "not run".
func StatusText(s string) string { return strings.ReplaceAll(s, "_", " ") }

// md keeps model or log text from becoming markup: outside code spans,
// "<" and ">" are written as entities, except that a placeholder of
// package redact ("<project>", "<redacted>") is written as a code span, which
// reads the same in a terminal and in rendered Markdown; inside a code span
// (literal text) nothing changes.
func md(s string) string {
	if !strings.ContainsAny(s, "<>") {
		return s
	}
	var b strings.Builder
	code := 0 // backtick run length of the open code span, 0 outside
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '`':
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			switch {
			case code == 0 && redact.ClosesCodeSpan(s[i+n:], n):
				code = n
			case code == n:
				code = 0
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		case code > 0:
			b.WriteByte(c)
		case c == '<':
			if end := strings.IndexByte(s[i:], '>'); end > 0 && redact.IsPlaceholder(s[i:i+end+1]) {
				b.WriteString("`" + s[i:i+end+1] + "`")
				i += end + 1
				continue
			}
			b.WriteString("&lt;")
		case c == '>':
			b.WriteString("&gt;")
		default:
			b.WriteByte(c)
		}
		i++
	}
	return b.String()
}

// Terminal is the account's short form for the terminal after a campaign:
// the verdict, the summary and the validation table, one line per gate.
func Terminal(e *evidence.Evidence) string {
	a := Build(e)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n%s\n\n", a.Subtitle, a.Summary)
	w, sw := 0, 0
	for _, v := range a.Validation {
		w = max(w, len([]rune(v.Check)))
		sw = max(sw, len(StatusText(v.Status)))
	}
	for _, v := range a.Validation {
		fmt.Fprintf(&b, "  %-*s  %-*s  %s\n", w, v.Check, sw, StatusText(v.Status), v.Result)
	}
	if len(a.NextSteps) > 0 {
		b.WriteString("\nnext steps:\n")
		for _, s := range a.NextSteps {
			b.WriteString("  - " + s + "\n")
		}
	}
	return b.String()
}
