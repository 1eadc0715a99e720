package ramp

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/stats"
)

// Defaults of Policy.
const (
	// DefaultSoak is the least time a step serves before it may advance.
	DefaultSoak = 5 * time.Minute
	// DefaultMinRequests is the floor of the default of
	// Policy.MinRequests: the default is the larger of it and
	// MinRequestsToDecide(margin), the fewest at which a step with no
	// failed request can pass its error-rate check (456 at the default
	// 2-point margin).
	DefaultMinRequests = 150
	// DefaultMaxDurationFactor makes the default of Policy.MaxDuration:
	// the soak times the number of steps times this factor (5 steps of
	// 5 minutes: 4 h 10 min), at least DefaultMaxDurationFloor. A ramp still ramping then is reversed: the
	// old backend serves every request again, with that reason.
	DefaultMaxDurationFactor = 10
	// DefaultMaxDurationFloor is the least default of Policy.MaxDuration
	// (short soaks: a ramp of two 10 s steps is bounded at 1 h, not 200 s).
	DefaultMaxDurationFloor = time.Hour
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
	// MaxDuration bounds the whole ramp: one still ramping this long
	// after its start is reversed (0: DefaultMaxDurationFactor × Soak ×
	// the number of steps, at least DefaultMaxDurationFloor), so a ramp whose traffic stopped or whose
	// checks cannot decide does not hold for ever.
	MaxDuration config.Duration `json:"max_duration,omitempty"`
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
	if p.Margin == 0 {
		p.Margin = DefaultMargin
	}
	if !(p.Margin > 0 && p.Margin < 1) {
		return fmt.Errorf("ramp margin %v: use a fraction in (0, 1), e.g. 0.02", p.Margin)
	}
	if p.MinRequests == 0 {
		p.MinRequests = max(DefaultMinRequests, MinRequestsToDecide(p.Margin))
	}
	if p.MinRequests < 1 {
		return fmt.Errorf("ramp min_requests %d: use at least 1 (default %d)", p.MinRequests, max(DefaultMinRequests, MinRequestsToDecide(p.Margin)))
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
	if p.MaxDuration.Duration < 0 {
		return fmt.Errorf("ramp max_duration %s: use a positive duration, e.g. 2h, or none for the default (%d × soak × steps, at least %s)", p.MaxDuration.Duration, DefaultMaxDurationFactor, DefaultMaxDurationFloor)
	}
	if p.MaxDuration.Duration == 0 {
		p.MaxDuration.Duration = max(DefaultMaxDurationFloor, time.Duration(DefaultMaxDurationFactor*len(p.Steps))*p.Soak.Duration)
	}
	if p.MaxDuration.Duration < p.Soak.Duration*time.Duration(len(p.Steps)) {
		return fmt.Errorf("ramp max_duration %s is below the soak of every step (%d × %s = %s): the ramp would be reversed before it could complete; use at least %s, or leave it out (default %d × soak × steps)",
			p.MaxDuration.Duration, len(p.Steps), p.Soak.Duration, p.Soak.Duration*time.Duration(len(p.Steps)), p.Soak.Duration*time.Duration(len(p.Steps)), DefaultMaxDurationFactor)
	}
	return nil
}

// CheckDecidable refuses a policy (filled) whose MinRequests is below
// MinRequestsToDecide at its margin: a step cannot advance on that many
// candidate requests however clean they are, so the count it says it
// waits for would not be what it waits for. The error names the count,
// what a clean step of that many requests shows, and the smallest count
// that can decide. 'hiro activate --progressive' checks it before
// anything starts.
func (p Policy) CheckDecidable() error {
	least := MinRequestsToDecide(p.Margin)
	if p.MinRequests >= least {
		return nil
	}
	k := lookAt(p.MinRequests)
	_, hi, _ := stats.ClopperPearson(0, p.MinRequests, 1-2*LookAlpha(k)/3)
	return fmt.Errorf("ramp min_requests %d cannot decide at a margin of %.3g: even with none of %d candidate requests failed, the error rate is shown below %.3f only, and the limit is production's rate + %.3g; "+
		"a step with no failed request passes from %d requests: use --min-requests %d or more (or leave it out: the default is %d), or a wider --margin",
		p.MinRequests, p.Margin, p.MinRequests, hi, p.Margin, least, least, max(DefaultMinRequests, least))
}

// lookAt is the look a step has reached by n candidate requests, counted
// high: its looks at 1, 2, 4, … (each time the count doubled) and the
// one at the soak's end (Ramp.Tick).
func lookAt(n int) int {
	return bits.Len(uint(max(n, 1))) + 1
}

// MinRequestsToDecide is the fewest candidate requests at which a step
// with none failed can pass its error-rate check at margin (a fraction):
// the Clopper-Pearson upper bound of 0 failures in n, at the look that n
// requests have reached (lookAt, LookAlpha split between three checks:
// error rate, invalid rate, latency), within the margin. Below it the
// check is inconclusive whatever the traffic says (0 failures in 8 show
// a rate below 0.62 only). 456 at the default 2-point margin, 84 at 10
// points.
func MinRequestsToDecide(margin float64) int {
	passes := func(n int) bool {
		_, hi, err := stats.ClopperPearson(0, n, 1-2*LookAlpha(lookAt(n))/3)
		return err == nil && hi <= margin
	}
	n, _ := firstPassing(0, 1, passes)
	return n
}

// firstPassing is the smallest count in (lo, maxToDecide] at which
// passes holds, for a passes that stays true from some count on: it
// doubles from hi until passes holds, then bisects. ok is false (and the
// count maxToDecide) when not even maxToDecide passes.
func firstPassing(lo, hi int, passes func(int) bool) (n int, ok bool) {
	for !passes(hi) {
		if hi >= maxToDecide {
			return maxToDecide, false
		}
		lo, hi = hi, min(2*hi, maxToDecide)
	}
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; passes(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
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
