package account

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"gonum.org/v1/plot"
)

// A failed launch's next steps carry the last attempt's step itself (the
// terminal summary prints no attempt account to point at), and count one
// attempt in the singular.
func TestLaunchNextStepsSayTheStep(t *testing.T) {
	const step = "Another process holds the port: stop it or move the profile's port."
	g := &evidence.Gate{ID: "launch", Kind: "launch", Status: "failed", Attempts: []evidence.Attempt{{Name: "base",
		Failure: &failure.Failure{Class: failure.ClassPortInUse, NextStep: step}}}}
	e := &evidence.Evidence{Verdict: evidence.VerdictNotQualified, Candidate: "cand", Gates: []evidence.Gate{*g}}
	got := strings.Join(nextSteps(e, g), "\n")
	if !strings.Contains(got, "Follow the next step of the last attempt (base, port_in_use): "+step) {
		t.Errorf("next steps lack the attempt's step:\n%s", got)
	}
	if !strings.Contains(got, "The one declared attempt was tried") || strings.Contains(got, "All 1 ") {
		t.Errorf("one attempt is not counted in the singular:\n%s", got)
	}
	g.Attempts = append(g.Attempts, g.Attempts[0])
	if got := strings.Join(nextSteps(e, g), "\n"); !strings.Contains(got, "All 2 declared attempts of the ladder were tried") {
		t.Errorf("two attempts:\n%s", got)
	}
}

// The latency chart is on a log axis and draws a box only for a gate of
// minBoxSamples requests or more (three dots have no quartiles worth a box).
func TestLatencyChartLogAxisAndBoxes(t *testing.T) {
	lat := func(n int) *evidence.RequestStats {
		r := &evidence.RequestStats{}
		for i := 0; i < n; i++ {
			r.LatenciesMS = append(r.LatenciesMS, float64(5+i*400))
		}
		return r
	}
	e := &evidence.Evidence{Gates: []evidence.Gate{
		{ID: "ready", Kind: "ready_control", Requests: lat(1)},
		{ID: "structured", Kind: "structured_control", Requests: lat(3)},
		{ID: "sequential", Kind: "sequential", Requests: lat(20)},
	}}
	p, labels, _, boxes, err := latencyPlot(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) != 3 || boxes != 1 {
		t.Errorf("%d labels, %d boxes; want 3 and 1 (only the 20-request gate)", len(labels), boxes)
	}
	if _, ok := p.Y.Scale.(plot.LogScale); !ok || p.Y.Min <= 0 {
		t.Errorf("y scale %T from %v: want a log scale above 0", p.Y.Scale, p.Y.Min)
	}
	// Whole, wrapped to the column (TestLatencyLabelsAreWhole).
	for _, l := range labels {
		if strings.Contains(l, "…") {
			t.Errorf("label %q is cut", l)
		}
	}
	c, ok, err := latencyChart(e)
	if err != nil || !ok || !strings.Contains(c.Caption, "log scale") {
		t.Errorf("chart %v %v, caption %q", ok, err, c.Caption)
	}
}

// TestLatencyChartAxisHoldsFewRequests (issue 26 F9): a gate of one
// request (102 ms) or a few close together gets an axis padded around
// its points (none on the frame) with at least two labelled ticks, not
// a lone "100" with the dot on the top edge.
func TestLatencyChartAxisHoldsFewRequests(t *testing.T) {
	for _, lats := range [][]float64{{102}, {100, 104, 110}, {6}, {0.4, 2}, {950, 1020}} {
		e := &evidence.Evidence{Gates: []evidence.Gate{{ID: "ready", Kind: "ready_control", Requests: &evidence.RequestStats{LatenciesMS: lats}}}}
		p, _, _, _, err := latencyPlot(e)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := slices.Min(lats), slices.Max(lats)
		if p.Y.Min >= lo/1.2 || p.Y.Max <= hi*1.2 {
			t.Errorf("%v ms: axis %v to %v does not hold the points with room", lats, p.Y.Min, p.Y.Max)
		}
		labelled := 0
		for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			if tk.Label != "" {
				labelled++
			}
		}
		if labelled < 2 {
			t.Errorf("%v ms: %d labelled ticks on %v to %v; want 2 or more", lats, labelled, p.Y.Min, p.Y.Max)
		}
	}
}

// TestLatencyChartAxisTopIsTheDecadeAbove (a newcomer's T9): the axis
// ends at the power of ten above the slowest request, as docs/qualify.md
// says, or just past the slowest where it sits under that power; it was
// padded ×1.5 first, so 980 ms gave an axis to 10000 and an empty decade.
func TestLatencyChartAxisTopIsTheDecadeAbove(t *testing.T) {
	for _, c := range []struct{ slowest, top float64 }{
		{980, 1225}, {102, 1000}, {700, 1000}, {50, 100}, {6, 10}, {1000, 1250}, {1020, 10000},
	} {
		e := &evidence.Evidence{Gates: []evidence.Gate{{ID: "ready", Kind: "ready_control", Requests: &evidence.RequestStats{LatenciesMS: []float64{c.slowest / 3, c.slowest}}}}}
		p, _, _, _, err := latencyPlot(e)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.Y.Max-c.top) > 1e-9*c.top {
			t.Errorf("slowest %v ms: axis top %v, want %v", c.slowest, p.Y.Max, c.top)
		}
	}
}

// Every chart draws chartMargin inside its SVG's view box: the title's
// ascenders, the legend's swatches and the tick labels never touch its
// edge, where a browser font taller or wider than plot's metrics was
// clipped (issue 26: the title's top and the legend's swatches were on
// the view box's edge).
func TestChartsDrawInsideTheirViewBox(t *testing.T) {
	sr := &evidence.SemanticResult{CorpusName: "mini"}
	sr.CandidateScores.F1, sr.ProductionScores.F1 = 0.7, 0.9
	sr.Differences = []evidence.DocDiff{{DocID: "bakery", CandidateF1: 0.4, ProductionF1: 0.7}, {DocID: "bridge", CandidateF1: 0.9, ProductionF1: 0.9}}
	lat := &evidence.RequestStats{}
	for i := range 20 {
		lat.LatenciesMS = append(lat.LatenciesMS, float64(50+i*300))
	}
	e := &evidence.Evidence{Gates: []evidence.Gate{
		{ID: "semantic", Kind: "semantic", Status: evidence.StatusFailed, Semantic: sr},
		{ID: "sequential", Kind: "sequential", Requests: lat},
	}}
	charts, err := Charts(e)
	if err != nil || len(charts) < 3 {
		t.Fatalf("%d charts, %v; want the measures, documents and latency charts", len(charts), err)
	}
	viewBox := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
	point := regexp.MustCompile(`[ML](-?[0-9.]+),(-?[0-9.]+)`)
	path := regexp.MustCompile(` d="([^"]*)"`)
	text := regexp.MustCompile(`(<g transform="rotate\(90\)">\s*)?<text x="(-?[0-9.]+)" y="(-?[0-9.]+)"[^>]*font-size:([0-9.]+)px[^>]*>([^<]*)<`)
	num := func(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }
	const eps = 0.01
	for _, c := range charts {
		svg := string(c.SVG)
		m := viewBox.FindStringSubmatch(svg)
		if m == nil {
			t.Fatalf("%s: no view box", c.Title)
		}
		w, h := num(m[1]), num(m[2])
		paths := path.FindAllStringSubmatch(svg, -1)
		if len(paths) < 2 || paths[0][1] != fmt.Sprintf("M0,0L%g,0L%g,%gL0,%gZ", w, w, h, h) {
			t.Fatalf("%s: the first path is not a ground filling the view box: %v", c.Title, paths[:1])
		}
		for _, p := range paths[1:] {
			for _, q := range point.FindAllStringSubmatch(p[1], -1) {
				if x, y := num(q[1]), num(q[2]); x < chartMargin-eps || x > w-chartMargin+eps || y < chartMargin-eps || y > h-chartMargin+eps {
					t.Errorf("%s: a line at (%g, %g), within %d points of the %gx%g view box's edge", c.Title, x, y, chartMargin, w, h)
				}
			}
		}
		for _, tx := range text.FindAllStringSubmatch(svg, -1) {
			x, y, size := num(tx[2]), num(tx[3]), num(tx[4])
			if tx[1] != "" {
				// The y axis's label, turned a quarter: its baseline is y
				// points from the left edge, its ascenders about 0.75 of
				// the size to the left of it, and x runs up the side.
				if y-0.75*size < chartMargin-eps || x < chartMargin-eps || x > h-chartMargin+eps {
					t.Errorf("%s: the turned text %q (baseline %g from the left, size %g) reaches within %d points of the view box's edge", c.Title, tx[5], y, size, chartMargin)
				}
				continue
			}
			// -y is the baseline from the bottom (the drawing is flipped);
			// the ascenders reach about 0.75 of the size above it.
			if base := -y; x < chartMargin-eps || base+0.75*size > h-chartMargin+eps || base < chartMargin-eps {
				t.Errorf("%s: text %q at x %g, baseline %g (size %g) reaches within %d points of the view box's edge (%gx%g)", c.Title, tx[5], x, base, size, chartMargin, w, h)
			}
		}
	}
}
