package qualify

import (
	"path/filepath"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/atomicfile"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/redact"
)

// buildReport records the plan's own words in the evidence (Intent) and
// returns the campaign's account as the evidence stores it. The account
// itself is package account's Build: report.md, the journal entry and the
// terminal all render it, so they say the same things in the same words.
// plan may be nil (recovery): the intent already recorded is kept.
func buildReport(e *evidence.Evidence, plan *Plan) evidence.Report {
	if plan != nil {
		e.Intent = planIntent(plan)
	}
	return account.Build(e).Report()
}

// planIntent is the plan's own account (summary and decisions). The
// campaign records it from its first save, so that evidence finalized by
// recovery after hiro was killed keeps it.
func planIntent(plan *Plan) *evidence.Intent {
	in := &evidence.Intent{Summary: plan.Summary}
	in.Decisions = append(in.Decisions, plan.Decisions...)
	for _, g := range plan.Gates {
		if d, ok := g.Gate.(interface{ Decisions() []string }); ok {
			in.Decisions = append(in.Decisions, d.Decisions()...)
		}
	}
	return in
}

// Markdown renders report.md (package account's Markdown of e).
func Markdown(e *evidence.Evidence) string { return account.Markdown(e) }

// writeMarkdown writes report.md. It is public: rendered from the public
// copy, then redacted as a whole (package redact) at the point where its
// bytes are written.
func writeMarkdown(dir string, e *evidence.Evidence) error {
	return atomicfile.WriteFile(filepath.Join(dir, evidence.ReportFile), redact.Markdown([]byte(Markdown(e.Public()))), 0o644)
}
