package account

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/hiro-dev/hiro/internal/evidence"
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

func documentsChart(gate string, sr *evidence.SemanticResult) (Chart, error) {
	var labels []string
	var cand, prod []float64
	for _, d := range sr.Differences {
		labels = append(labels, truncate(d.DocID, 18))
		cand = append(cand, d.CandidateF1)
		prod = append(prod, d.ProductionF1)
	}
	svg, err := pairChart(gate+": F1 per document", "F1", labels, cand, prod, 1.25)
	if err != nil {
		return Chart{}, err
	}
	return Chart{Title: gate + ": F1 per document", SVG: svg,
		Caption: fmt.Sprintf("F1 of each of the %s of corpus %s, candidate beside production.", Plural(len(labels), "document", "documents"), sr.CorpusName)}, nil
}

// forestChart draws the comparisons as a forest plot: one row per gated
// measure, its difference (candidate − production) as a dot between its
// one-sided bounds, zero as a thin line and −margin as a dashed one.
func forestChart(gate string, sr *evidence.SemanticResult) (Chart, error) {
	p := plot.New()
	p.Title.Text = gate + ": difference to production"
	p.X.Label.Text = "candidate − production"
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
		words = append(words, fmt.Sprintf("%s %+.3f (%+.3f to %+.3f, %s)", MeasureName(c.Measure), c.Difference, c.Lower, c.Upper, c.Outcome))
	}
	pad := (hi - lo) * 0.1
	if pad == 0 {
		pad = 0.01
	}
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
			p.Legend.Add(fmt.Sprintf("margin −%.2f", sr.Tolerance), l)
		}
		p.Add(l)
	}
	p.Add(plotter.NewGrid())
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.X.Min, p.X.Max = lo-pad, hi+pad
	p.Legend.Top = true
	svg, err := render(p, 420, vg.Length(90+40*n))
	if err != nil {
		return Chart{}, err
	}
	conf := "one-sided"
	if sr.Method != nil {
		conf = fmt.Sprintf("%.0f %% one-sided", 100*sr.Method.Confidence)
	}
	return Chart{Title: gate + ": difference to production with its bounds", SVG: svg,
		Caption: fmt.Sprintf("Each gated measure's difference, candidate − production, between its %s bounds (paired bootstrap over the %s); the dashed line is the margin −%.2f: a bar wholly right of it passes, wholly left fails, across it cannot decide. %s.",
			conf, Plural(len(sr.Differences), "document", "documents"), sr.Tolerance, upperFirst(joinSemi(words)))}, nil
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
	svg, err := render(p, vg.Length(max(360, 150*len(labels))), 260)
	if err != nil {
		return Chart{}, false, err
	}
	return Chart{Title: "Serving: end-to-end latency per request", SVG: svg,
		Caption: "Every request of the serving gates (client clock, request sent to last token received), one dot each, on a log scale; the box spans the quartiles (gates of " +
			fmt.Sprint(minBoxSamples) + " requests or more). " + strings.Join(parts, "; ") + "."}, true, nil
}

// latencyPlot builds latencyChart's plot; boxes counts the gates drawn
// with a box.
func latencyPlot(e *evidence.Evidence) (p *plot.Plot, labels, parts []string, boxes int, err error) {
	p = plot.New()
	p.Title.Text = "End-to-end latency per request"
	p.Y.Label.Text = "ms (log scale)"
	lowest, highest := math.Inf(1), 0.0
	for i := range e.Gates {
		g := &e.Gates[i]
		if g.Requests == nil || len(g.Requests.LatenciesMS) == 0 {
			continue
		}
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
		// 150 points a column, Sans at 10 points: 20 characters fit
		// without touching the next label.
		labels = append(labels, truncate(gateTitle(g), 19)) // 19 and the ellipsis
		parts = append(parts, fmt.Sprintf("%s: %s", gateTitle(g), Plural(len(vals), "request", "requests")))
	}
	if len(labels) == 0 {
		return p, nil, nil, 0, nil
	}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	// The axis runs from the power of ten below the data to the one above
	// it, with room on both sides: a point is never on the frame, and at
	// least two ticks are labelled (one request of 102 ms: 10 to 1000).
	p.Y.Min, p.Y.Max = decadeBelow(lowest/1.5), decadeAbove(highest*1.5)
	p.Add(plotter.NewGrid())
	p.NominalX(labels...)
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4
	return p, labels, parts, boxes, nil
}

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

// render writes p as an SVG of w×h points without the XML prolog, its
// text in Liberation Sans like the pages around it (plot's default is
// the serif), drawn chartMargin inside the view box on a white ground
// that fills it.
func render(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Variant = "Sans"
	}
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	p.Draw(draw.Crop(dc, chartMargin, -chartMargin, chartMargin, -chartMargin))
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
	p.Legend.Add("candidate's share", sl)
	// Production's dots are rings drawn over the candidate's, so both
	// show where they meet (at 0, most looks).
	for _, s := range []struct {
		pts   plotter.XYs
		col   color.Color
		shape draw.GlyphDrawer
		r     vg.Length
		label string
	}{{cand, candidateColor, draw.CircleGlyph{}, 2.5, "candidate error rate"}, {prod, productionColor, draw.RingGlyph{}, 3.5, "production error rate"}} {
		if len(s.pts) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(s.pts)
		if err != nil {
			return Chart{}, false, err
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = s.col, vg.Points(float64(s.r)), s.shape
		p.Add(sc)
		p.Legend.Add(s.label, sc)
	}
	p.Legend.Top, p.Legend.Left = true, true
	// A square-root axis: a 1 % step and a 5 % one stand apart from 0
	// and from each other; ticks at the planned shares.
	p.Y.Scale = sqrtScale{}
	p.Y.Min, p.Y.Max = 0, 1.6 // room above 1 for the legend
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
	svg, err := render(p, 520, 280)
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
