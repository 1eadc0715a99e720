package account

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/stats"
)

// Chart is one picture of the account: an SVG document (no XML prolog, so
// it can sit inline in HTML) with a title and a caption in words. Every
// label in the SVG is escaped by the SVG writer (html.EscapeString).
type Chart struct {
	Title   string
	Caption string
	SVG     []byte
}

// Chart colours: candidate and production, the same on every chart.
var (
	candidateColor  = color.RGBA{R: 0xd9, G: 0x5f, B: 0x02, A: 0xff}
	productionColor = color.RGBA{R: 0x1b, G: 0x6a, B: 0xa5, A: 0xff}
)

// Charts draws the pictures of a campaign: for each semantic gate that
// ran, candidate against production per measure and per document; for
// the request gates, the distribution of end-to-end latency per gate
// (from the per-request samples of the evidence). Nothing is drawn for
// what the evidence does not hold.
func Charts(e *evidence.Evidence) ([]Chart, error) {
	var out []Chart
	for i := range e.Gates {
		g := &e.Gates[i]
		if g.Semantic == nil || !Ran(g.Status) {
			continue
		}
		if len(g.Semantic.Comparisons) > 0 {
			c, err := forestChart(gateTitle(g), g.Semantic)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		c, err := measuresChart(gateTitle(g), g.Semantic)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
		if len(g.Semantic.Differences) > 0 {
			c, err := documentsChart(gateTitle(g), g.Semantic)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	if c, ok, err := latencyChart(e); err != nil {
		return nil, err
	} else if ok {
		out = append(out, c)
	}
	return out, nil
}

// pairChart draws grouped bars, candidate beside production, per label.
func pairChart(title, ylabel string, labels []string, cand, prod []float64, ymax float64) ([]byte, error) {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Min = 0
	if ymax > 0 {
		p.Y.Max = ymax
	}
	if ymax > 1 {
		// A rate: the axis leaves room above 1 for the legend, but its
		// ticks stop at 1 (no value reads 1.2).
		p.Y.Tick.Marker = plot.TickerFunc(func(_, _ float64) []plot.Tick {
			var ts []plot.Tick
			for i := 0; i <= 10; i++ {
				v := float64(i) / 10
				t := plot.Tick{Value: v}
				if i%2 == 0 {
					t.Label = strconv.FormatFloat(v, 'f', 1, 64)
				}
				ts = append(ts, t)
			}
			return ts
		})
	}
	w := vg.Points(14)
	bc, err := plotter.NewBarChart(plotter.Values(cand), w)
	if err != nil {
		return nil, err
	}
	bc.Color, bc.LineStyle.Width, bc.Offset = candidateColor, 0, -w/2
	bp, err := plotter.NewBarChart(plotter.Values(prod), w)
	if err != nil {
		return nil, err
	}
	bp.Color, bp.LineStyle.Width, bp.Offset = productionColor, 0, w/2
	p.Add(bc, bp, plotter.NewGrid())
	p.Legend.Add("candidate", bc)
	p.Legend.Add("production", bp)
	p.Legend.Top = true
	p.NominalX(labels...)
	// Room for the outer bars and, above the data, for the legend.
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4
	width := vg.Length(max(360, 90*len(labels)))
	return render(p, width, 240)
}

func measuresChart(gate string, sr *evidence.SemanticResult) (Chart, error) {
	c, p := sr.CandidateScores, sr.ProductionScores
	labels := []string{"precision", "coverage", "F1", "grounding", "schema-valid", "duplicates"}
	cand := []float64{c.Precision, c.Coverage, c.F1, c.GroundingRate, sr.CandidateStats.SchemaValidRate, c.DuplicateRate}
	prod := []float64{p.Precision, p.Coverage, p.F1, p.GroundingRate, sr.ProductionStats.SchemaValidRate, p.DuplicateRate}
	svg, err := pairChart(gate+": measures", "rate", labels, cand, prod, 1.25)
	if err != nil {
		return Chart{}, err
	}
	return Chart{Title: gate + ": candidate and production per measure", SVG: svg,
		Caption: fmt.Sprintf("Each measure on corpus %s, candidate (orange) beside production (blue); higher is better except duplicates.", sr.CorpusName)}, nil
}

// The documents chart is laid out for the journal's column (48rem less
// its padding: 546 points at 1280 px, 262 at 390): a fixed width
// whatever the number of documents, one row of docRowHeight points per
// document drawn, at most maxDocRows rows.
const (
	docChartWidth = 320
	docRowHeight  = 14
	maxDocRows    = 40
	// docChartFrame is the height of everything but the rows: a title of
	// two lines, the F1 axis and the legend under it.
	docChartFrame = 110
)

// docRows are the documents the chart draws, in the order drawn (the
// largest drop first), with the words saying which they are: all of them
// up to maxDocRows; past it, those whose F1 differs, or the maxDocRows
// that differ most when more differ (the report's table lists the
// largest differences by name).
type docRows struct {
	rows    []evidence.DocDiff
	title   string // after "GATE: "
	caption string // what the rows are, the caption's start
	rest    string // a sentence on the documents not drawn, or ""
}

func documentRows(corpus string, ds []evidence.DocDiff) docRows {
	n := len(ds)
	var out docRows
	differ := 0
	for _, d := range ds {
		if d.DeltaF1 != 0 {
			differ++
		}
	}
	switch {
	case n <= maxDocRows:
		out.rows = append(out.rows, ds...)
		out.title = "F1 per document"
		out.caption = fmt.Sprintf("F1 of each of the %s of corpus %s", Plural(n, "document", "documents"), corpus)
	case differ == 0:
		out.rows = append(out.rows, ds[:maxDocRows]...)
		out.title = fmt.Sprintf("F1 of the first %d of %d documents (none differs)", maxDocRows, n)
		out.caption = fmt.Sprintf("F1 of the first %d of the %d documents of corpus %s", maxDocRows, n, corpus)
		out.rest = fmt.Sprintf(" No document's F1 differs between the two sides; the other %d are not drawn.", n-maxDocRows)
	default:
		byGap := append([]evidence.DocDiff{}, ds...)
		sort.SliceStable(byGap, func(i, j int) bool { return math.Abs(byGap[i].DeltaF1) > math.Abs(byGap[j].DeltaF1) })
		k := min(differ, maxDocRows)
		out.rows = byGap[:k]
		if differ <= maxDocRows {
			out.title = fmt.Sprintf("F1 of the %d of %d documents that differ", k, n)
			out.caption = fmt.Sprintf("F1 of the %d of the %d documents of corpus %s whose F1 differs between the two sides", k, n, corpus)
			out.rest = fmt.Sprintf(" The other %d score the same on both.", n-k)
		} else {
			out.title = fmt.Sprintf("F1 of the %d of %d documents that differ most", k, n)
			out.caption = fmt.Sprintf("F1 of the %d of the %d documents of corpus %s whose F1 differs most between the two sides", k, n, corpus)
			out.rest = fmt.Sprintf(" The other %d differ by %.3f or less.", n-k, math.Abs(byGap[k].DeltaF1))
		}
	}
	// Largest drop on top, then the corpus's order.
	sort.SliceStable(out.rows, func(i, j int) bool { return out.rows[i].DeltaF1 < out.rows[j].DeltaF1 })
	return out
}

// documentsChart draws F1 per document as a dot plot, one row per
// document (see documentRows for which): production's F1 as a blue
// ring, the candidate's as an orange dot, a grey line between them,
// the largest drop on top; docChartWidth wide and docRowHeight a row.
func documentsChart(gate string, sr *evidence.SemanticResult) (Chart, error) {
	sel := documentRows(sr.CorpusName, sr.Differences)
	p, legend, err := documentsPlot(gate+": "+sel.title, sel.rows)
	if err != nil {
		return Chart{}, err
	}
	svg, err := renderBelow(p, legend, docChartWidth, vg.Length(docChartFrame+docRowHeight*len(sel.rows)))
	if err != nil {
		return Chart{}, err
	}
	return Chart{Title: gate + ": " + sel.title, SVG: svg,
		Caption: sel.caption + ": production's (blue ring) and the candidate's (orange dot) on the document's row, the largest drop on top." + sel.rest}, nil
}

// thickRing is draw.RingGlyph with a line of 1.5 points (the ring's
// 0.5 point line is lost at the page's scale).
type thickRing struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (thickRing) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// docLabelRunes is the longest document id drawn whole; a longer one is
// cut with an ellipsis (the report's table names it in full).
const docLabelRunes = 28

func documentsPlot(title string, rows []evidence.DocDiff) (*plot.Plot, *plot.Legend, error) {
	p := newPlot()
	p.Title.Text = title
	p.X.Label.Text = "F1"
	n := len(rows)
	labels := make([]string, n)
	g := plotter.NewGrid()
	g.Horizontal.Color = color.Gray{Y: 0xe4}
	p.Add(g)
	var cand, prod plotter.XYs
	for i, d := range rows {
		y := float64(n - 1 - i) // first row on top
		labels[n-1-i] = truncate(d.DocID, docLabelRunes)
		l, err := plotter.NewLine(plotter.XYs{{X: d.ProductionF1, Y: y}, {X: d.CandidateF1, Y: y}})
		if err != nil {
			return nil, nil, err
		}
		l.LineStyle.Width, l.LineStyle.Color = vg.Points(1.5), color.Gray{Y: 0xa0}
		p.Add(l)
		cand = append(cand, plotter.XY{X: d.CandidateF1, Y: y})
		prod = append(prod, plotter.XY{X: d.ProductionF1, Y: y})
	}
	legend := newLegend()
	if err := addGlyphs(p, &legend, glyphSeries{prod, productionColor, thickRing{}, 4, "production"},
		glyphSeries{cand, candidateColor, draw.CircleGlyph{}, 3, "candidate"}); err != nil {
		return nil, nil, err
	}
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min, p.X.Max = 0, 1
	p.X.Tick.Marker = plot.TickerFunc(func(_, _ float64) []plot.Tick {
		var ts []plot.Tick
		for i := 0; i <= 5; i++ {
			v := float64(i) / 5
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 1, 64)})
		}
		return ts
	})
	return p, &legend, nil
}

// forestChart draws the comparisons as a forest plot: one row per gated
// measure, its difference (candidate − production) as a dot between its
// one-sided bounds, zero as a thin line and −margin as a dashed one.
func forestChart(gate string, sr *evidence.SemanticResult) (Chart, error) {
	p := plot.New()
	p.Title.Text = gate + ": difference to production"
	p.X.Label.Text = "candidate - production"
	n := len(sr.Comparisons)
	labels := make([]string, n)
	lo, hi := -sr.Tolerance, 0.0
	var words []string
	for i, c := range sr.Comparisons {
		y := float64(n - 1 - i) // first measure on top
		labels[n-1-i] = MeasureName(c.Measure)
		bar, err := plotter.NewLine(plotter.XYs{{X: c.Lower, Y: y}, {X: c.Upper, Y: y}})
		if err != nil {
			return Chart{}, err
		}
		bar.LineStyle.Width, bar.LineStyle.Color = vg.Points(2), forestColor(c.Outcome)
		dot, err := plotter.NewScatter(plotter.XYs{{X: c.Difference, Y: y}})
		if err != nil {
			return Chart{}, err
		}
		dot.GlyphStyle.Color, dot.GlyphStyle.Radius, dot.GlyphStyle.Shape = forestColor(c.Outcome), vg.Points(3.5), draw.CircleGlyph{}
		p.Add(bar, dot)
		lo, hi = min(lo, c.Lower), max(hi, c.Upper)
		words = append(words, fmt.Sprintf("%s %s (%s to %s, %s)", MeasureName(c.Measure), stats.Signed(c.Difference, 3), stats.Signed(c.Lower, 3), stats.Signed(c.Upper, 3), c.Outcome))
	}
	pad := (hi - lo) * 0.1
	if pad == 0 {
		pad = 0.01
	}
	// The margin's legend goes under the plot (renderBelow): drawn on
	// the data it sat on the zero line, which is the right edge whenever
	// the candidate is no better than production.
	legend := newLegend()
	for _, v := range []struct {
		x      float64
		dashed bool
	}{{0, false}, {-sr.Tolerance, true}} {
		l, err := plotter.NewLine(plotter.XYs{{X: v.x, Y: -0.5}, {X: v.x, Y: float64(n) - 0.5}})
		if err != nil {
			return Chart{}, err
		}
		l.LineStyle.Width, l.LineStyle.Color = vg.Points(1), color.Gray{Y: 0x60}
		if v.dashed {
			l.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			legend.Add("margin "+stats.Signed(-sr.Tolerance, 2), l)
		}
		p.Add(l)
	}
	p.Add(plotter.NewGrid())
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min, p.X.Max = lo-pad, hi+pad
	// Under the plot, on the side away from the zero line.
	legend.Left = (0-p.X.Min)/(p.X.Max-p.X.Min) > 0.5
	svg, err := renderBelow(p, &legend, 420, vg.Length(106+40*n))
	if err != nil {
		return Chart{}, err
	}
	conf := "one-sided"
	if sr.Method != nil {
		conf = fmt.Sprintf("%.0f %% one-sided", 100*sr.Method.Confidence)
	}
	return Chart{Title: gate + ": difference to production with its bounds", SVG: svg,
		Caption: fmt.Sprintf("Each gated measure's difference, candidate - production, between its %s bounds (paired bootstrap over the %s); the dashed line is the margin %s: a bar wholly right of it passes, wholly left fails, across it cannot decide. %s.",
			conf, Plural(len(sr.Differences), "document", "documents"), stats.Signed(-sr.Tolerance, 2), upperFirst(joinSemi(words)))}, nil
}

// forestColor is a comparison's colour by outcome.
func forestColor(outcome string) color.Color {
	switch outcome {
	case evidence.StatusPassed:
		return productionColor
	case evidence.StatusFailed:
		return color.RGBA{R: 0xb2, G: 0x18, B: 0x2b, A: 0xff}
	}
	return candidateColor
}

// minBoxSamples is the fewest samples a gate's latency box is drawn for:
// quartiles of fewer points say nothing a person cannot see in the dots.
const minBoxSamples = 5

// latencyChart draws the samples of end-to-end latency per request gate
// that kept its samples, with a box (quartiles, whiskers) for a gate of
// minBoxSamples or more, on a log axis (a 6 ms READY and a 2 s extraction
// share one chart).
func latencyChart(e *evidence.Evidence) (Chart, bool, error) {
	p, labels, parts, _, err := latencyPlot(e)
	if err != nil || len(labels) == 0 {
		return Chart{}, false, err
	}
	svg, err := render(p, latencyWidth(len(labels)), latencyHeight)
	if err != nil {
		return Chart{}, false, err
	}
	return Chart{Title: "Serving: end-to-end latency per request", SVG: svg,
		Caption: "Every request of the serving gates (client clock, request sent to last token received), one dot each, on a log scale; the box spans the quartiles (gates of " +
			fmt.Sprint(minBoxSamples) + " requests or more). " + strings.Join(parts, "; ") + "."}, true, nil
}

// The latency chart is 150 points a gate wide (360 at least) and
// latencyHeight tall; a gate's label is wrapped to its column's width
// on the drawn chart less latencyLabelGap points.
const (
	latencyHeight   = 260
	latencyLabelGap = 8
)

func latencyWidth(gates int) vg.Length { return vg.Length(max(360, 150*gates)) }

// latencyLabel is a gate's name under its column, whole: its title
// wrapped at words into at most two lines of width; failing that its id
// (the gate's own short name, its plan.toml id), wrapped the same. No
// name is cut: the caption names every gate by its title.
func latencyLabel(sty text.Style, g *evidence.Gate, width vg.Length) string {
	fits := func(lines []string) bool {
		for _, l := range lines {
			if sty.Width(l) > width {
				return false
			}
		}
		return len(lines) <= 2
	}
	if lines := wrapWords(sty, gateTitle(g), width); fits(lines) {
		return strings.Join(lines, "\n")
	}
	return strings.Join(wrapWords(sty, g.ID, width), "\n")
}

// wrapWords breaks s at white space into lines no wider than width in
// sty; a word wider than width is a line of its own, never cut.
func wrapWords(sty text.Style, s string, width vg.Length) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case sty.Width(line+" "+w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// latencyPlot builds latencyChart's plot; boxes counts the gates drawn
// with a box.
func latencyPlot(e *evidence.Evidence) (p *plot.Plot, labels, parts []string, boxes int, err error) {
	p = newPlot()
	var gates []*evidence.Gate
	for i := range e.Gates {
		if g := &e.Gates[i]; g.Requests != nil && len(g.Requests.LatenciesMS) > 0 {
			gates = append(gates, g)
		}
	}
	p.Title.Text = "End-to-end latency per request"
	p.Y.Label.Text = "ms (log scale)"
	lowest, highest := math.Inf(1), 0.0
	for _, g := range gates {
		x := float64(len(labels))
		vals := make(plotter.Values, len(g.Requests.LatenciesMS))
		for k, v := range g.Requests.LatenciesMS {
			vals[k] = math.Max(v, 0.01) // a log axis has no 0
			lowest, highest = math.Min(lowest, vals[k]), math.Max(highest, vals[k])
		}
		if len(vals) >= minBoxSamples {
			b, err := plotter.NewBoxPlot(vg.Points(28), x, vals)
			if err != nil {
				return nil, nil, nil, 0, err
			}
			b.FillColor = color.RGBA{R: 0xf3, G: 0xd9, B: 0xc4, A: 0xff}
			p.Add(b)
			boxes++
		}
		pts := make(plotter.XYs, len(vals))
		for k, v := range vals {
			pts[k].X, pts[k].Y = x, v
		}
		s, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		s.GlyphStyle.Color, s.GlyphStyle.Radius, s.GlyphStyle.Shape = candidateColor, vg.Points(2), draw.CircleGlyph{}
		p.Add(s)
		labels = append(labels, "") // once the axes are set (below)
		parts = append(parts, fmt.Sprintf("%s: %s", gateTitle(g), Plural(len(vals), "request", "requests")))
	}
	if len(labels) == 0 {
		return p, nil, nil, 0, nil
	}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	// The axis runs from the power of ten below the data to the one above
	// it, with room on both sides: a point is never on the frame, and at
	// least two ticks are labelled (one request of 102 ms: 10 to 1000).
	p.Y.Min, p.Y.Max = decadeBelow(lowest/1.5), latencyTop(highest)
	p.Add(plotter.NewGrid())
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4
	column := columnWidth(p, latencyWidth(len(labels)), latencyHeight)
	for i, g := range gates {
		labels[i] = latencyLabel(p.X.Tick.Label, g, column-latencyLabelGap)
	}
	p.NominalX(labels...)
	return p, labels, parts, boxes, nil
}

// columnWidth is the distance, in points, between two nominal x values
// of p drawn by render on a w×h chart (its y axis set: it takes its
// part of the width).
func columnWidth(p *plot.Plot, w, h vg.Length) vg.Length {
	c := draw.Crop(draw.New(vgsvg.New(w, h)), chartMargin, -chartMargin, chartMargin, -chartMargin)
	dc := p.DataCanvas(c)
	trX, _ := p.Transforms(&dc)
	return trX(1) - trX(0)
}

// latencyTop is the latency axis's top for the slowest request: the
// power of ten at or above it, or a tenth of a decade past it (×1.25)
// where it is closer to that power than that, so that its dot is not on
// the frame. 980 ms gives 1225, not a whole empty decade to 10000.
func latencyTop(highest float64) float64 {
	return math.Max(decadeAbove(highest), highest*latencyRoom)
}

// latencyRoom is the least room, as a factor, above the slowest request.
const latencyRoom = 1.25

// decadeBelow is the largest power of ten at or below x (x > 0);
// decadeAbove the smallest at or above it.
func decadeBelow(x float64) float64 { return math.Pow(10, math.Floor(math.Log10(x))) }
func decadeAbove(x float64) float64 { return math.Pow(10, math.Ceil(math.Log10(x))) }

// chartMargin is the blank border, in points, between the SVG's view box
// and what the plot draws: the title's ascenders, the legend's swatches
// and the tick labels stay inside the view box even where the browser's
// font is taller or wider than the metrics plot measured with (a
// fallback for Liberation Sans), instead of touching its edge and being
// clipped (issue 26).
const chartMargin = 8

// newPlot is plot.New with its text in Liberation Sans (sans), so that
// what is measured to wrap a label is what is drawn.
func newPlot() *plot.Plot {
	p := plot.New()
	sans(p)
	return p
}

// sans puts p's text in Liberation Sans like the pages around it
// (plot's default is the serif).
func sans(p *plot.Plot) {
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Variant = "Sans"
	}
}

// newLegend is a legend for renderBelow: Liberation Sans at 10 points,
// its entries right-aligned (Left false).
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font.Variant, l.TextStyle.Font.Size = "Sans", vg.Points(10)
	return l
}

// legendGap is the room, in points, between a plot and the legend
// renderBelow draws under it.
const legendGap = 4

// render writes p as an SVG of w×h points without the XML prolog, its
// text in Liberation Sans (sans), its title wrapped at words to the
// width, drawn chartMargin inside the view box on a white ground that
// fills it.
func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	return renderBelow(p, nil, w, h)
}

// renderBelow is render with legend (when not nil) drawn in a band
// under the plot instead of on its data, where it can sit on a line
// or a point.
func renderBelow(p *plot.Plot, legend *plot.Legend, w, h vg.Length) ([]byte, error) {
	sans(p)
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	drawChart(draw.Crop(dc, chartMargin, -chartMargin, chartMargin, -chartMargin), p, legend)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, err
	}
	out := b.Bytes()
	if i := bytes.Index(out, []byte("<svg")); i > 0 {
		out = out[i:]
	}
	return out, nil
}

// drawChart draws p on c with its title wrapped at words to c's width,
// and legend (when not nil) in a band at c's bottom, which it returns
// (the zero rectangle without a legend); p gets the rest of c.
func drawChart(c draw.Canvas, p *plot.Plot, legend *plot.Legend) (band vg.Rectangle) {
	if t := p.Title.Text; t != "" {
		p.Title.Text = strings.Join(wrapWords(p.Title.TextStyle, t, c.Size().X), "\n")
	}
	if legend != nil {
		lh := legend.Rectangle(c).Size().Y
		if lh > 0 {
			bc := draw.Crop(c, 0, 0, 0, lh-c.Size().Y)
			legend.Draw(bc)
			band = bc.Rectangle
			c = draw.Crop(c, 0, 0, lh+legendGap, 0)
		}
	}
	p.Draw(c)
	return band
}

// RampChart draws a progressive activation over time (from the ramp's
// Series): the candidate's share of production's requests as a step
// line, and each side's error rate per look as dots, all on one 0–1
// axis against minutes since the ramp started. ok is false when the
// record holds no series (written before it existed).
func RampChart(r *evidence.RampResult) (c Chart, ok bool, err error) {
	if r == nil || len(r.Series) == 0 {
		return Chart{}, false, nil
	}
	p := plot.New()
	p.Title.Text = "Progressive ramp: share and error rate"
	p.X.Label.Text = "minutes since the ramp started"
	p.Y.Label.Text = "fraction (square-root scale)"
	minutes := func(at time.Time) float64 { return at.Sub(r.StartedAt).Minutes() }
	first := 0.0
	if len(r.Steps) > 0 {
		first = r.Steps[0]
	}
	share := plotter.XYs{{X: 0, Y: first}}
	var cand, prod plotter.XYs
	worst := 0.0
	for _, q := range r.Series {
		x := minutes(q.At)
		// The share held until this look, then the share it set.
		share = append(share, plotter.XY{X: x, Y: share[len(share)-1].Y}, plotter.XY{X: x, Y: q.Share})
		if v, ok := q.ErrorRate(true); ok {
			cand = append(cand, plotter.XY{X: x, Y: v})
			worst = max(worst, v)
		}
		if v, ok := q.ErrorRate(false); ok {
			prod = append(prod, plotter.XY{X: x, Y: v})
		}
	}
	sl, err := plotter.NewLine(share)
	if err != nil {
		return Chart{}, false, err
	}
	sl.LineStyle.Width, sl.LineStyle.Color = vg.Points(2), color.Gray{Y: 0x30}
	p.Add(plotter.NewGrid(), sl)
	// The legend sits in a band under the plot: on the data it covered
	// the share line where the ramp reaches 1 and the dots at 0.
	legend := newLegend()
	legend.Add("candidate's share", sl)
	// Production's dots are rings drawn over the candidate's, so both
	// show where they meet (at 0, most looks).
	if err := addGlyphs(p, &legend, glyphSeries{cand, candidateColor, draw.CircleGlyph{}, 2.5, "candidate error rate"},
		glyphSeries{prod, productionColor, draw.RingGlyph{}, 3.5, "production error rate"}); err != nil {
		return Chart{}, false, err
	}
	// A square-root axis: a 1 % step and a 5 % one stand apart from 0
	// and from each other; ticks at the planned shares.
	p.Y.Scale = sqrtScale{}
	p.Y.Min, p.Y.Max = 0, 1
	ticks := []float64{0, 1}
	for _, v := range r.Steps {
		ticks = append(ticks, v)
	}
	p.Y.Tick.Marker = plot.TickerFunc(func(_, _ float64) []plot.Tick {
		var ts []plot.Tick
		for _, v := range ticks {
			ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 3, 64)})
		}
		return ts
	})
	p.X.Min = 0
	svg, err := renderBelow(p, &legend, 520, 300)
	if err != nil {
		return Chart{}, false, err
	}
	end := "is ramping"
	if r.State != evidence.RampRamping {
		end = r.State
		if r.Reason != "" {
			end += " (" + r.Reason + ")"
		}
	}
	span := minutes(r.Series[len(r.Series)-1].At)
	return Chart{Title: "Progressive ramp: share and error rate over time", SVG: svg,
		Caption: fmt.Sprintf("The share of production's requests sent to %s (dark line) at each of its %s, and each side's error rate among the requests answered between two looks (%s orange dots, %s blue rings), on a square-root scale with ticks at the planned shares, over %.1f minutes; the ramp %s. The worst look's candidate error rate was %.3f.",
			r.Candidate, Plural(len(r.Series), "look", "looks"), r.Candidate, r.Production, span, end, worst)}, true, nil
}

// sqrtScale is a square-root axis (plot.Normalizer): small fractions
// (a 1 % share, a 2 % error rate) get room without a log axis's trouble
// with 0.
type sqrtScale struct{}

// Normalize maps x in [min, max] to [0, 1] on a square-root scale.
func (sqrtScale) Normalize(min, max, x float64) float64 {
	lo, hi := math.Sqrt(math.Max(min, 0)), math.Sqrt(math.Max(max, 0))
	if hi == lo {
		return 0
	}
	return (math.Sqrt(math.Max(x, 0)) - lo) / (hi - lo)
}

// glyphSeries is one scatter series of a chart: its points, the glyph's
// colour, shape and radius (points), and its legend label.
type glyphSeries struct {
	pts   plotter.XYs
	col   color.Color
	shape draw.GlyphDrawer
	r     vg.Length
	label string
}

// addGlyphs adds each series with points to p as a scatter, in order
// (a later one is drawn over an earlier), and to legend; a series
// without points is left out of both.
func addGlyphs(p *plot.Plot, legend *plot.Legend, ss ...glyphSeries) error {
	for _, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = s.col, s.r, s.shape
		p.Add(sc)
		legend.Add(s.label, sc)
	}
	return nil
}
