package ramp

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
)

// spread draws n latencies around a median of 900 ms, log-normal with a
// log spread of 0.6: extraction requests on a CPU engine, whose
// documents differ in length (trial 11's ramp, the same model on both
// sides).
func spread(r *rand.Rand, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 900 * math.Exp(0.6*r.NormFloat64())
	}
	return xs
}

func fromLatencies(xs []float64) Sample {
	var s Sample
	for _, ms := range xs {
		s.Add(false, time.Duration(ms*float64(time.Millisecond)), true, false)
	}
	return s
}

// TestLatencyHoldSaysWhatItWaitsFor: a step whose latency check cannot
// decide yet (about 60 requests a side of widely spread latencies, the
// same model on both sides) says the shift, its interval, the floor and
// about how many candidate requests would pass it; that many requests of
// the same spread do pass it. With too few successful requests a side
// the hold says the test's minimum. A shift above the floor says no
// count passes it.
func TestLatencyHoldSaysWhatItWaitsFor(t *testing.T) {
	p := Policy{Steps: []float64{0.5, 1}, MinRequests: 12, Margin: 0.5, Soak: config.Duration{Duration: time.Second}}
	if err := p.Fill(); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(11, 6))
	cand, prod := spread(r, 4000), spread(r, 4000)
	d := Decide(p, Input{Share: 0.5, Elapsed: time.Minute, Candidate: fromLatencies(cand[:62]), Production: fromLatencies(prod[:52]), Look: lookAt(62)})
	if d.Action != evidence.RampHold || !strings.Contains(d.Reason, "latency: candidate median ") || !strings.Contains(d.Reason, "it passes once the upper bound is within the floor of ") {
		t.Fatalf("62 and 52 spread requests: %s (%s), want a latency hold that names its interval and floor", d.Action, d.Reason)
	}
	m := regexp.MustCompile(`would pass from about (\d+) candidate requests`).FindStringSubmatch(d.Reason)
	if m == nil {
		t.Fatalf("the hold does not say how many requests would decide: %s", d.Reason)
	}
	n, _ := strconv.Atoi(m[1])
	if n <= 62 || n > 1500 {
		t.Fatalf("about %d candidate requests to decide, want more than the 62 seen and a count a ramp can reach", n)
	}
	np := n * 52 / 62
	d = Decide(p, Input{Share: 0.5, Elapsed: time.Minute, Candidate: fromLatencies(cand[:n]), Production: fromLatencies(prod[:np]), Look: lookAt(n)})
	if lat := d.Checks[len(d.Checks)-1]; lat.Measure != MeasureLatency || lat.Outcome != Passed {
		t.Errorf("at the %d candidate (%d production) requests the hold named, latency %s: %+v (%s)", n, np, lat.Outcome, lat, d.Reason)
	}

	d = Decide(p, Input{Share: 0.5, Elapsed: time.Minute, Candidate: fromLatencies(cand[:62]), Production: fromLatencies(prod[:5]), Look: lookAt(62)})
	if want := "latency: 62 successful candidate and 5 production requests; the test reads at least 10 a side"; !strings.Contains(d.Reason, want) {
		t.Errorf("too few a side: %s, want %q", d.Reason, want)
	}
	slower := make([]float64, 62)
	for i := range slower {
		slower[i] = cand[i] + 300
	}
	d = Decide(p, Input{Share: 0.5, Elapsed: time.Minute, Candidate: fromLatencies(slower), Production: fromLatencies(prod[:52]), Look: lookAt(62)})
	if d.Action != evidence.RampHold || !strings.Contains(d.Reason, "at the shift seen no count of requests would pass it") {
		t.Errorf("a shift above the floor, held: %s", d.Reason)
	}
}

// TestHoldBetweenLooksSaysItsLook: trial 11's status showed "candidate 62
// requests ... hold (inconclusive: latency)" where the checks were those
// of the look at 32 (a look comes when the candidate's requests doubled):
// between looks the hold's reason names the look it is and the count of
// the next.
func TestHoldBetweenLooksSaysItsLook(t *testing.T) {
	p := Policy{Steps: []float64{0.5, 1}, MinRequests: 12, Margin: 0.5, Soak: config.Duration{Duration: time.Second}}
	if err := p.Fill(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 6))
	cand, prod := spread(rng, 62), spread(rng, 52)
	t0 := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	r := New(p, "cand", "prod", t0)
	feed := func(side int, ms []float64) {
		for _, x := range ms {
			r.Observe(r.Step(), side, false, time.Duration(x*float64(time.Millisecond)), false, false)
		}
	}
	feed(SideCandidate, cand[:32])
	feed(SideProduction, prod[:27])
	d := r.Tick(t0.Add(2*time.Second), "")
	if d.Action != evidence.RampHold || !strings.HasPrefix(d.Reason, "inconclusive: latency: ") {
		t.Fatalf("the look at 32: %s (%s), want an inconclusive latency hold", d.Action, d.Reason)
	}
	if h := r.Result().History[0]; h.Reason != d.Reason {
		t.Errorf("at the look's own count the reason is the look's: %q, want %q", h.Reason, d.Reason)
	}
	feed(SideCandidate, cand[32:])
	feed(SideProduction, prod[27:])
	h := r.Result().History[0]
	if want := d.Reason + " (look 1, at 32 candidate requests; the next look at 64)"; h.Candidate.Requests != 62 || h.Reason != want {
		t.Errorf("status at %d candidate requests: %q, want %q", h.Candidate.Requests, h.Reason, want)
	}
}
