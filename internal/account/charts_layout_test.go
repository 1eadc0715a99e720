package account

import (
	"fmt"
	"html"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// journalColumnPt is the journal page's column in points: 48rem less
// 2 × 1.25rem of padding at 16 px, 728 px (style.css's .wrap), × 3/4.
const journalColumnPt = 546

// svgText is one <text> of a chart: its left x and baseline (points up
// from the bottom: plot draws flipped), font size and content (as the
// SVG holds it, escaped).
type svgText struct {
	x, base, size float64
	s             string
}

var (
	svgTextRE = regexp.MustCompile(`<text x="(-?[0-9.]+)" y="(-?[0-9.]+)"[^>]*font-size:([0-9.]+)px[^>]*>([^<]*)<`)
	svgSizeRE = regexp.MustCompile(`<svg width="([0-9.]+)pt" height="([0-9.]+)pt"`)
	svgPathRE = regexp.MustCompile(`<path d="M(-?[0-9.]+),(-?[0-9.]+)L(-?[0-9.]+),(-?[0-9.]+)" style="([^"]*)"`)
)

func atof(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

func svgTexts(svg string) []svgText {
	var out []svgText
	for _, m := range svgTextRE.FindAllStringSubmatch(svg, -1) {
		out = append(out, svgText{x: atof(m[1]), base: -atof(m[2]), size: atof(m[3]), s: m[4]})
	}
	return out
}

func svgSize(t *testing.T, svg string) (w, h float64) {
	t.Helper()
	m := svgSizeRE.FindStringSubmatch(svg)
	if m == nil {
		t.Fatalf("no <svg width height> in %.200s", svg)
	}
	return atof(m[1]), atof(m[2])
}

// docs is n documents of which the first differ have F1 lower on the
// candidate's side, by 0.001·(i+1) (the last of them differs most).
func docs(n, differ int) []evidence.DocDiff {
	out := make([]evidence.DocDiff, n)
	for i := range out {
		d := evidence.DocDiff{DocID: fmt.Sprintf("doc-%03d", i), ProductionF1: 0.9, CandidateF1: 0.9}
		if i < differ {
			d.DeltaF1 = -0.001 * float64(i+1)
			d.CandidateF1 = 0.9 + d.DeltaF1
		}
		out[i] = d
	}
	return out
}

// The documents chart is laid out for the journal's column whatever the
// number of documents (issue 26 F14: 48 documents were a 4320 × 240 pt
// sliver, 40 px tall on the page): the same width, inside the column,
// for 3 documents or 500; one row per document drawn, each at least 12
// points from the next (16 px at 1280 px wide, 13 at 390); past
// maxDocRows only the documents that differ (most), which the title
// says, so the height is bounded too.
func TestDocumentsChartFitsTheColumn(t *testing.T) {
	for _, tc := range []struct {
		n, differ int
		drawn     []int // the documents drawn, top to bottom
		title     string
	}{
		{3, 1, []int{0, 1, 2}, "F1 per document"},
		{48, 32, seq(31, 0), "F1 of the 32 of 48 documents that differ"},
		{500, 500, seq(499, 460), "F1 of the 40 of 500 documents that differ most"},
		{60, 0, seq(0, 39), "F1 of the first 40 of 60 documents (none differs)"},
	} {
		name := fmt.Sprintf("%d documents, %d differ", tc.n, tc.differ)
		sr := &evidence.SemanticResult{CorpusName: "c", Differences: docs(tc.n, tc.differ)}
		c, err := documentsChart("G", sr)
		if err != nil {
			t.Fatal(err)
		}
		if c.Title != "G: "+tc.title {
			t.Errorf("%s: title %q, want %q", name, c.Title, "G: "+tc.title)
		}
		svg := string(c.SVG)
		w, h := svgSize(t, svg)
		if w != docChartWidth || w > journalColumnPt {
			t.Errorf("%s: %g pt wide; want %d, within the journal's column (%d pt) whatever the number of documents", name, w, docChartWidth, journalColumnPt)
		}
		if limit := float64(docChartFrame + docRowHeight*maxDocRows); h > limit {
			t.Errorf("%s: %g pt tall, over the bound %g", name, h, limit)
		}
		var rows []svgText
		for _, tx := range svgTexts(svg) {
			if strings.HasPrefix(tx.s, "doc-") {
				rows = append(rows, tx)
			}
		}
		// Top to bottom: the baselines fall.
		slices.SortFunc(rows, func(a, b svgText) int { return int(math.Copysign(1, b.base-a.base)) })
		var got []string
		cramped := false
		for i, r := range rows {
			got = append(got, r.s)
			if i > 0 && rows[i-1].base-r.base < 12 && !cramped {
				t.Errorf("%s: rows %q and %q are %.1f pt apart; want 12 or more", name, rows[i-1].s, r.s, rows[i-1].base-r.base)
				cramped = true // once a chart
			}
		}
		var want []string
		for _, i := range tc.drawn {
			want = append(want, fmt.Sprintf("doc-%03d", i))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: rows top to bottom\n%v\nwant\n%v", name, got, want)
		}
	}
}

// seq is from, from±1, …, to.
func seq(from, to int) []int {
	var out []int
	for i := from; ; {
		out = append(out, i)
		if i == to {
			return out
		}
		if to > from {
			i++
		} else {
			i--
		}
	}
}

// The latency chart names every gate whole under its column, never cut
// with an ellipsis (issue 26 F14: "Structured-output c…"): the title
// wrapped at words, or the gate's id when the title needs more than two
// lines; and the labels of neighbouring columns do not touch.
func TestLatencyLabelsAreWhole(t *testing.T) {
	lat := &evidence.RequestStats{LatenciesMS: []float64{30, 900, 2000, 3100, 4000}}
	long := "A burst of concurrent extraction requests against the candidate's endpoint at its planned peak"
	e := &evidence.Evidence{Gates: []evidence.Gate{
		{ID: "ready", Title: "READY control", Requests: lat},
		{ID: "structured", Title: "Structured-output control", Requests: lat},
		{ID: "sequential", Title: "Twenty sequential requests", Requests: lat},
		{ID: "burst", Title: long, Requests: lat},
	}}
	_, labels, _, _, err := latencyPlot(e)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"READY control", "Structured-output control", "Twenty sequential requests", "burst"}
	for i, l := range labels {
		if got := strings.ReplaceAll(l, "\n", " "); got != want[i] {
			t.Errorf("label %d %q, want %q (whole, wrapped at words)", i, l, want[i])
		}
		if n := strings.Count(l, "\n"); n > 1 {
			t.Errorf("label %q has %d lines, want 2 at most", l, n+1)
		}
	}
	c, ok, err := latencyChart(e)
	if err != nil || !ok {
		t.Fatalf("latency chart: %v %v", ok, err)
	}
	svg := string(c.SVG)
	if strings.Contains(svg, "…") {
		t.Error("the latency chart cuts a label with an ellipsis")
	}
	sty := newPlot().X.Tick.Label
	lines := map[float64][]svgText{} // by baseline: each line of the labels
	for _, tx := range svgTexts(svg) {
		for _, l := range labels {
			if slices.Contains(strings.Split(l, "\n"), html.UnescapeString(tx.s)) {
				lines[tx.base] = append(lines[tx.base], tx)
			}
		}
	}
	if len(lines) == 0 {
		t.Fatal("no label line found in the SVG")
	}
	for base, row := range lines {
		slices.SortFunc(row, func(a, b svgText) int { return int(math.Copysign(1, a.x-b.x)) })
		for i := 1; i < len(row); i++ {
			end := row[i-1].x + float64(sty.Width(html.UnescapeString(row[i-1].s)))
			if row[i].x < end+4 {
				t.Errorf("labels %q (ends at %.1f) and %q (starts at %.1f) touch on the line at %.1f", row[i-1].s, end, row[i].s, row[i].x, base)
			}
		}
	}
}

// The forest plot's legend for the margin sits under the plot, away from
// the zero line (issue 26 F14: "margin -0.05" sat on the zero line, the
// right edge when the candidate is no better): its box neither spans the
// zero line's x nor reaches the height of its lower end, whichever side
// of the chart zero is on.
func TestForestLegendClearOfTheZeroLine(t *testing.T) {
	for _, cm := range []evidence.Comparison{
		{Measure: "f1", Difference: -0.114, Lower: -0.145, Upper: -0.085, Outcome: evidence.StatusFailed},
		{Measure: "f1", Difference: 0.2, Lower: 0.15, Upper: 0.25, Outcome: evidence.StatusPassed},
	} {
		sr := &evidence.SemanticResult{Tolerance: 0.05, Comparisons: []evidence.Comparison{cm,
			{Measure: "grounding_rate", Outcome: evidence.StatusPassed}}}
		c, err := forestChart("G", sr)
		if err != nil {
			t.Fatal(err)
		}
		svg := string(c.SVG)
		var zero, thumb []float64 // x1, y1, x2, y2
		for _, m := range svgPathRE.FindAllStringSubmatch(svg, -1) {
			x1, y1, x2, y2, style := atof(m[1]), atof(m[2]), atof(m[3]), atof(m[4]), m[5]
			if !strings.Contains(style, "stroke:#606060") {
				continue
			}
			switch dashed := strings.Contains(style, "dasharray"); {
			case !dashed && x1 == x2:
				zero = []float64{x1, min(y1, y2), x2, max(y1, y2)}
			case dashed && y1 == y2:
				thumb = []float64{min(x1, x2), y1, max(x1, x2), y2}
			}
		}
		var label *svgText
		for _, tx := range svgTexts(svg) {
			if tx.s == "margin -0.05" {
				label = &tx
			}
		}
		if zero == nil || thumb == nil || label == nil {
			t.Fatalf("difference %+.3f: zero line %v, legend swatch %v, legend text %v: want all three", cm.Difference, zero, thumb, label)
		}
		sty := newLegend().TextStyle
		left := min(thumb[0], label.x)
		right := max(thumb[2], label.x+float64(sty.Width(label.s)))
		top := max(thumb[1], label.base+label.size)
		if zero[0] >= left && zero[0] <= right {
			t.Errorf("difference %+.3f: the legend spans x %.1f to %.1f, over the zero line at x %.1f", cm.Difference, left, right, zero[0])
		}
		if top >= zero[1] {
			t.Errorf("difference %+.3f: the legend reaches up to %.1f, beside the zero line (from %.1f up)", cm.Difference, top, zero[1])
		}
	}
}

// The ramp chart's legend sits in a band under the plot, below the x
// axis's label, not on the data: inside the plot it covered the share
// line where a completed ramp reaches 1 (issue 26, S15).
func TestRampLegendUnderThePlot(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)
	r := &evidence.RampResult{Candidate: "next", Production: "prod", Steps: []float64{0.01, 0.05, 0.25, 1}, State: evidence.RampCompleted, StartedAt: t0}
	for i, share := range []float64{0.01, 0.05, 0.25, 1, 1} {
		r.Series = append(r.Series, evidence.RampPoint{At: t0.Add(time.Duration(30*(i+1)) * time.Second), Share: share,
			CandidateRequests: int(share * 200), ProductionRequests: 200 - int(share*200), CandidateErrors: i % 2})
	}
	c, ok, err := RampChart(r)
	if err != nil || !ok {
		t.Fatalf("RampChart: ok %v err %v", ok, err)
	}
	var axis *svgText
	legend := map[string]*svgText{}
	for _, tx := range svgTexts(string(c.SVG)) {
		switch tx.s {
		case "minutes since the ramp started":
			axis = &tx
		case "candidate&#39;s share", "candidate's share", "candidate error rate", "production error rate":
			legend[tx.s] = &tx
		}
	}
	if axis == nil || len(legend) != 3 {
		t.Fatalf("x axis label %v, legend texts %v: want the axis label and the three entries", axis, legend)
	}
	for s, tx := range legend {
		if tx.base+tx.size > axis.base {
			t.Errorf("legend %q reaches up to %.1f, above the x axis label's baseline %.1f: it is on the plot", s, tx.base+tx.size, axis.base)
		}
	}
}
