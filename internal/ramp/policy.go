package ramp

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
)

// Defaults of Policy.
const (
	// DefaultSoak is the least time a step serves before it may advance.
	DefaultSoak = 5 * time.Minute
	// DefaultMinRequests is the fewest candidate requests a step advances
	// on, a floor only: with the correction for repeated looks
	// (LookAlpha) a clean step becomes conclusive at a 2-point margin at
	// its look at 512 requests (about 435 needed there).
	DefaultMinRequests = 150
	// DefaultMargin is how much worse than production's the candidate's
	// error and invalid rates may be (a fraction: 0.02 is two points).
	DefaultMargin = 0.02
	// DefaultLatencyFloorMS and DefaultLatencyFloorShare make the latency
	// effect-size floor: a shift of the candidate's end-to-end latency
	// over production's counts only above the larger of 50 ms and 25 % of
	// production's median.
	DefaultLatencyFloorMS    = 50
	DefaultLatencyFloorShare = 0.25
	// DefaultConfidence is the one-sided confidence of every check.
	DefaultConfidence = 0.95
	// MinLatencySamples is the fewest successful requests per side the
	// latency test reads; with fewer it is inconclusive.
	MinLatencySamples = 10
	// MaxLatencySamples bounds the latencies kept per side and step (a
	// uniform reservoir): the rank test's pairwise differences stay at
	// most MaxLatencySamples² values.
	MaxLatencySamples = 500
)

// DefaultSteps are the shares of `hiro activate --progressive` without a
// list: 1, 5, 25, 50 and 100 %.
var DefaultSteps = []float64{0.01, 0.05, 0.25, 0.5, 1}

// Policy is a progressive activation's settings (the router's ramp
// command body).
type Policy struct {
	// Steps are the candidate's shares of production's requests, step by
	// step: increasing fractions in (0, 1], the last 1.
	Steps []float64 `json:"steps"`
	// Soak is the least time a step serves (0: DefaultSoak).
	Soak config.Duration `json:"soak,omitempty"`
	// MinRequests is the fewest candidate requests a step advances on
	// (0: DefaultMinRequests).
	MinRequests int `json:"min_requests,omitempty"`
	// Margin is the margin of the error and invalid rates (0:
	// DefaultMargin).
	Margin float64 `json:"margin,omitempty"`
	// LatencyFloorMS and LatencyFloorShare set the latency floor (0: the
	// defaults).
	LatencyFloorMS    float64 `json:"latency_floor_ms,omitempty"`
	LatencyFloorShare float64 `json:"latency_floor_share,omitempty"`
	// StepTimeout, when set, reverses a step still inconclusive after
	// this long (0: a step holds until it decides or is stopped).
	StepTimeout config.Duration `json:"step_timeout,omitempty"`
}

// Fill sets the defaults and checks the values; errors name the setting
// and say what to use.
func (p *Policy) Fill() error {
	if len(p.Steps) == 0 {
		p.Steps = append([]float64(nil), DefaultSteps...)
	}
	if err := checkSteps(p.Steps); err != nil {
		return err
	}
	if p.Soak.Duration == 0 {
		p.Soak.Duration = DefaultSoak
	}
	if p.Soak.Duration < 0 {
		return fmt.Errorf("ramp soak %s: use a positive duration, e.g. 5m", p.Soak.Duration)
	}
	if p.MinRequests == 0 {
		p.MinRequests = DefaultMinRequests
	}
	if p.MinRequests < 1 {
		return fmt.Errorf("ramp min_requests %d: use at least 1 (default %d)", p.MinRequests, DefaultMinRequests)
	}
	if p.Margin == 0 {
		p.Margin = DefaultMargin
	}
	if !(p.Margin > 0 && p.Margin < 1) {
		return fmt.Errorf("ramp margin %v: use a fraction in (0, 1), e.g. 0.02", p.Margin)
	}
	if p.LatencyFloorMS == 0 {
		p.LatencyFloorMS = DefaultLatencyFloorMS
	}
	if p.LatencyFloorShare == 0 {
		p.LatencyFloorShare = DefaultLatencyFloorShare
	}
	if p.LatencyFloorMS < 0 || p.LatencyFloorShare < 0 {
		return fmt.Errorf("ramp latency floor %v ms, share %v: use positive values", p.LatencyFloorMS, p.LatencyFloorShare)
	}
	if p.StepTimeout.Duration < 0 {
		return fmt.Errorf("ramp step_timeout %s: use a positive duration, or none", p.StepTimeout.Duration)
	}
	return nil
}

func checkSteps(steps []float64) error {
	prev := 0.0
	for i, s := range steps {
		if !(s > prev && s <= 1) {
			return fmt.Errorf("ramp step %d (%v): steps are increasing shares in (0, 1] (percentages in (0, 100] on the command line), e.g. 1,5,25,100", i+1, s)
		}
		prev = s
	}
	if prev != 1 {
		return fmt.Errorf("ramp steps %v: the last step is 100 %% (share 1): the ramp ends with the candidate serving every request", steps)
	}
	return nil
}

// ParseSteps reads the command line's list of percentages ("1,5,25,100")
// into shares (0.01, 0.05, 0.25, 1).
func ParseSteps(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSuffix(strings.TrimSpace(f), "%")
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("--progressive %q: %q is not a percentage; give increasing percentages ending at 100, e.g. 1,5,25,100", s, f)
		}
		out = append(out, v/100)
	}
	if err := checkSteps(out); err != nil {
		return nil, fmt.Errorf("--progressive %q: %w", s, err)
	}
	return out, nil
}

// Bucket places a client key in [0, 1): FNV-1a of salt and key, mixed
// by SplitMix64's finalizer (FNV alone leaves the high bits of keys that
// differ in their last byte close together). The ramp's salt: a client is
// not the first one moved in every ramp.
func Bucket(salt, key string) float64 {
	h := fnv.New64a()
	h.Write([]byte(salt))
	h.Write([]byte{0})
	h.Write([]byte(key))
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return float64(z>>11) / (1 << 53)
}

// ToCandidate reports whether the client with key goes to the candidate
// at share. Monotone in share: a client moved at one step stays moved at
// every later (larger) step, so one conversation does not bounce between
// the two backends while the ramp advances.
func ToCandidate(salt, key string, share float64) bool {
	return Bucket(salt, key) < share
}
