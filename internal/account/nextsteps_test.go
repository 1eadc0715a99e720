package account

import (
	"slices"
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
	for _, l := range labels {
		if len([]rune(l)) > 20 {
			t.Errorf("label %q is longer than a column holds", l)
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
