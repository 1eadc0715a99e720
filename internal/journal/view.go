package journal

import (
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/yuin/goldmark"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// Template data. Every string field is plain text that html/template
// escapes; only the template.HTML fields (goldmark output) and the
// stylesheet are trusted.

type siteView struct {
	Title string
	CSS   template.CSS
}

type pageData struct {
	Site      siteView
	Root      string // "" at the site root, "../" in entries/
	PageTitle string
	Canonical string
	Entries   []*entryView
	Entry     *entryView
}

type aliasData struct {
	Title     string
	Target    string
	Canonical string
}

type entryView struct {
	Slug, Title, Subtitle string
	Datetime, Date        string
	Lede                  string
	Summary               []string
	Body                  template.HTML
	Sections              []sectionView
	Decisions             []Decision
	Validation            []rowView
	CurrentState          []string
	NextSteps             []string
	NotTested             []string
	Charts                []chartView
	Revisions             []revisionView
	Aliases               []string
	Evidence              string
	Tally                 tally
	Newer, Older          *linkView
}

type sectionView struct {
	Title, Status, Tone string
	Items               []string
	Body                template.HTML
}

// chartView is one picture: an SVG drawn by package account from the
// entry's evidence (trusted: made by the SVG writer, which escapes every
// label) with its title and caption (plain text).
type chartView struct {
	Title, Caption string
	SVG            template.HTML
}

type rowView struct {
	Check, Label, Tone string
	// Result holds the result's lines, shown one under another.
	Result []string
}

type revisionView struct {
	Datetime, Date, Note string
}

type linkView struct{ Slug, Title string }

// tally counts validation rows by status.
type tally struct{ Passed, Failed, Inconclusive, NotRun int }

func (t tally) Any() bool { return t.Passed+t.Failed+t.Inconclusive+t.NotRun > 0 }

// displayTime is how a time reads on a page, in the zone it was written
// in: "2025-06-12 18:30 +02:00", or "2025-06-13 08:00 UTC".
func displayTime(t time.Time) string {
	if _, off := t.Zone(); off == 0 {
		return t.Format("2006-01-02 15:04") + " UTC"
	}
	return t.Format("2006-01-02 15:04 -07:00")
}

func (b *builder) entryView(md goldmark.Markdown, i int) (*entryView, error) {
	e := b.entries[i]
	v := &entryView{
		Slug: e.Slug, Title: e.Title, Subtitle: e.Subtitle,
		Datetime: e.Timestamp.Format(time.RFC3339), Date: displayTime(e.Timestamp),
		Summary:      paragraphs(e.Summary),
		Decisions:    e.Decisions,
		CurrentState: paragraphs(e.CurrentState),
		NextSteps:    e.NextSteps,
		NotTested:    e.NotTested,
		Aliases:      e.Aliases,
	}
	if len(v.Summary) > 0 {
		v.Lede = v.Summary[0]
	}
	var err error
	if v.Body, err = renderMarkdown(md, e.Body); err != nil {
		return nil, fmt.Errorf("%s: body: %w", e.Path, err)
	}
	for k, s := range e.Sections {
		sv := sectionView{Title: s.Title, Status: s.Status, Tone: Tone(s.Status), Items: s.Items}
		if sv.Body, err = renderMarkdown(md, s.Body); err != nil {
			return nil, fmt.Errorf("%s: sections[%d].body: %w", e.Path, k, err)
		}
		v.Sections = append(v.Sections, sv)
	}
	for _, r := range e.Validation {
		v.Validation = append(v.Validation, rowView{Check: r.Check, Label: strings.ReplaceAll(r.Status, "_", " "), Tone: Tone(r.Status), Result: lines(r.Result)})
		switch r.Status {
		case StatusPassed:
			v.Tally.Passed++
		case StatusFailed:
			v.Tally.Failed++
		case StatusNotRun:
			v.Tally.NotRun++
		case StatusInconclusive:
			v.Tally.Inconclusive++
		}
	}
	for _, r := range e.Revisions {
		v.Revisions = append(v.Revisions, revisionView{Datetime: r.Timestamp.Format(time.RFC3339), Date: displayTime(r.Timestamp), Note: r.Note})
	}
	if e.Evidence != "" {
		v.Evidence = e.Evidence
		if !strings.Contains(e.Evidence, "://") {
			v.Evidence = "../" + e.Evidence // relative to the journal root; the page is in entries/
			if v.Charts, err = b.charts(e.Evidence); err != nil {
				return nil, fmt.Errorf("%s: pictures of %s: %w", e.Path, e.Evidence, err)
			}
		}
	}
	if e.Ramp != nil {
		c, ok, err := account.RampChart(e.Ramp)
		if err != nil {
			return nil, fmt.Errorf("%s: picture of the ramp: %w", e.Path, err)
		}
		if ok {
			v.Charts = append(v.Charts, chartView{Title: c.Title, Caption: c.Caption, SVG: readableSVG(string(c.SVG))})
		}
	}
	if i > 0 {
		v.Newer = &linkView{b.entries[i-1].Slug, b.entries[i-1].Title}
	}
	if i+1 < len(b.entries) {
		v.Older = &linkView{b.entries[i+1].Slug, b.entries[i+1].Title}
	}
	return v, nil
}

// paragraphs splits plain text on blank lines and joins each paragraph's
// lines with a space.
func paragraphs(s string) []string {
	var out []string
	for _, p := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n\n") {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// lines splits text into its non-empty lines, each trimmed.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Tone is the CSS class a status is shown in, read from its words:
// "na" (not run, skipped, withheld), "bad" (failed, error, aborted), "warn"
// (not qualified, partial, warning) or "ok" (passed, completed, verified,
// restored, qualified). Anything else is "na".
func Tone(status string) string {
	s := strings.ToLower(strings.ReplaceAll(status, "_", " "))
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(s, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("not run", "skipped", "withheld", "not authorized", "pending"):
		return "na"
	case has("fail", "error", "abort", "critical", "broken"):
		return "bad"
	case has("not qualified", "partial", "warn", "degraded", "but not", "inconclusive"):
		return "warn"
	case has("pass", "complete", "verified", "restored", "qualified", "done") || slices.Contains(strings.Fields(s), "ok"):
		return "ok"
	}
	return "na"
}

// charts draws the pictures of the campaign whose public evidence is at
// rel in the journal (package account's Charts).
func (b *builder) charts(rel string) ([]chartView, error) {
	ev, err := evidence.Load(filepath.Join(b.dir, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no pictures; Check reports the missing file
	}
	if err != nil {
		return nil, err
	}
	cs, err := account.Charts(ev)
	if err != nil {
		return nil, err
	}
	out := make([]chartView, len(cs))
	for i, c := range cs {
		out[i] = chartView{Title: c.Title, Caption: c.Caption, SVG: readableSVG(string(c.SVG))}
	}
	return out, nil
}

// readableShare is the least share of its drawn size a chart is shown at
// (its letters are 10 points: 85 % keeps them at 11 px or more); on a
// narrower column (a phone) the chart scrolls sideways in its figure, as
// a wide table does, instead of shrinking its text to 4 px.
const readableShare = 0.85

// svgWidth is the opening of the SVG writer's picture: its width in points.
var svgWidth = regexp.MustCompile(`^(\s*<svg)( width="([0-9.]+)pt")`)

// readableSVG is svg (trusted: made by package account's SVG writer) with
// a CSS min-width of readableShare of its width (1 pt = 4/3 px).
func readableSVG(svg string) template.HTML {
	m := svgWidth.FindStringSubmatchIndex(svg)
	if m == nil {
		return template.HTML(svg)
	}
	pt, err := strconv.ParseFloat(svg[m[6]:m[7]], 64)
	if err != nil {
		return template.HTML(svg)
	}
	style := fmt.Sprintf(` style="min-width:%dpx"`, int(math.Round(pt*4/3*readableShare)))
	return template.HTML(svg[:m[3]] + style + svg[m[3]:])
}
