package stats

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// DefaultResamples is the bootstrap's default number of resamples; the
// least a gate accepts is MinResamples.
const (
	DefaultResamples = 10000
	MinResamples     = 1000
)

// DefaultConfidence is the default one-sided confidence of a bound (95 %).
const DefaultConfidence = 0.95

// DefaultPower is the power the sample-size estimate aims at (80 %).
const DefaultPower = 0.80

// Ratio is one document's share of a micro-averaged measure: the measure
// over a set of documents is sum(Num)/sum(Den) (0 when sum(Den) is 0).
// F1 is 2·matched over predicted+gold; grounding rate grounded over
// predicted; schema-valid rate valid replies over replies.
type Ratio struct {
	Num, Den float64
}

// Micro is the micro-average of rs: sum(Num)/sum(Den), 0 when the
// denominators sum to 0 (as package eval scores an empty set).
func Micro(rs []Ratio) float64 {
	var n, d float64
	for _, r := range rs {
		n += r.Num
		d += r.Den
	}
	if d == 0 {
		return 0
	}
	return n / d
}

// Seed is the bootstrap generator's seed: 16 bytes, the two PCG words.
type Seed [16]byte

// SeedFrom derives a seed from the given parts (the evidence's input
// fingerprints and the measure's name): the first 16 bytes of the SHA-256
// of the parts, each followed by a zero byte. Same parts, same seed.
func SeedFrom(parts ...string) Seed {
	h := sha256.New()
	h.Write([]byte("hiro.stats/seed\x00"))
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	var s Seed
	copy(s[:], h.Sum(nil))
	return s
}

// String is the seed in hex, as the evidence records it.
func (s Seed) String() string { return hex.EncodeToString(s[:]) }

func (s Seed) rng() *rand.PCG {
	return rand.NewPCG(binary.BigEndian.Uint64(s[:8]), binary.BigEndian.Uint64(s[8:]))
}

// index draws a uniform index in [0, n) from the generator (multiply-high
// reduction: its bias, below n/2^64, is negligible).
func index(g *rand.PCG, n int) int {
	hi, _ := bits.Mul64(g.Uint64(), uint64(n))
	return int(hi)
}

// Options are a bootstrap's settings.
type Options struct {
	// Resamples is the number of bootstrap resamples (0: DefaultResamples).
	Resamples int
	// Confidence is each bound's one-sided confidence in (0.5, 1)
	// (0: DefaultConfidence).
	Confidence float64
	// Seed seeds the generator.
	Seed Seed
}

func (o Options) withDefaults() (Options, error) {
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if o.Resamples < MinResamples {
		return o, fmt.Errorf("stats: %d resamples: use at least %d", o.Resamples, MinResamples)
	}
	if !(o.Confidence > 0.5 && o.Confidence < 1) {
		return o, fmt.Errorf("stats: confidence %v: use a fraction between 0.5 and 1 (e.g. 0.95)", o.Confidence)
	}
	return o, nil
}

// Difference is the bootstrap of a paired difference candidate −
// production of a micro-averaged measure.
type Difference struct {
	// Candidate, Production and Estimate (their difference) are the
	// measure on the documents as observed.
	Candidate  float64
	Production float64
	Estimate   float64
	// Lower and Upper are the one-sided bounds at Confidence: the Level
	// and 1−Level quantiles of the resampled differences (the expanded
	// percentile bootstrap, ExpandedLevel; together a two-sided interval
	// at 2·Confidence−1).
	Lower, Upper float64
	// Level is the tail share each bound leaves out of the resampled
	// differences: ExpandedLevel(Confidence, Documents), a little below
	// 1−Confidence.
	Level float64
	// SE is the standard deviation of the resampled differences (the
	// bootstrap standard error).
	SE float64
	// Documents is the number of documents (pairs) resampled.
	Documents int
	// Resamples, Confidence and Seed are the method's settings.
	Resamples  int
	Confidence float64
	Seed       Seed
}

// ErrPairs is returned for paired samples of unequal or zero length.
var ErrPairs = errors.New("stats: paired samples")

// PairedBootstrap resamples documents with replacement (the same
// documents for both sides: the pairing) and recomputes the
// micro-averaged difference Micro(candidate) − Micro(production) each
// time. cand[i] and prod[i] are the same document's shares.
func PairedBootstrap(cand, prod []Ratio, o Options) (Difference, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Difference{}, err
	}
	n := len(cand)
	if n == 0 || n != len(prod) {
		return Difference{}, fmt.Errorf("%w: %d candidate and %d production documents; both sides need the same documents, at least one", ErrPairs, len(cand), len(prod))
	}
	d := Difference{Candidate: Micro(cand), Production: Micro(prod), Documents: n, Resamples: o.Resamples, Confidence: o.Confidence, Seed: o.Seed}
	d.Estimate = d.Candidate - d.Production
	g := o.Seed.rng()
	reps := make([]float64, o.Resamples)
	for b := range reps {
		var cn, cd, pn, pd float64
		for range n {
			i := index(g, n)
			cn += cand[i].Num
			cd += cand[i].Den
			pn += prod[i].Num
			pd += prod[i].Den
		}
		reps[b] = ratio(cn, cd) - ratio(pn, pd)
	}
	sort.Float64s(reps)
	d.Level = ExpandedLevel(o.Confidence, n)
	d.Lower = stat.Quantile(d.Level, stat.Empirical, reps, nil)
	d.Upper = stat.Quantile(1-d.Level, stat.Empirical, reps, nil)
	d.SE = stat.StdDev(reps, nil)
	return d, nil
}

// ExpandedLevel is the tail share a one-sided bound at confidence leaves
// out of n observations' bootstrap distribution, widened for small n
// (Hesterberg, "What Teachers Should Know About the Bootstrap", The
// American Statistician 69(4), 2015, "expanded percentile interval"):
// Φ(−sqrt(n/(n−1))·t_{n−1}(confidence)), t the Student quantile with n−1
// degrees of freedom. The plain percentile bound (share 1−confidence) is
// too narrow at small n on two counts: the bootstrap's spread of a mean is
// sqrt((n−1)/n) times the unbiased standard error, and the normal
// quantile is smaller than Student's. For a mean of normal values at 95 %
// the plain bound's true one-sided level is 10.8 % at 5 observations,
// 5.5 % at 48 and 5.25 % at 96; the expanded bound's is 5 % (the t
// interval's), with the bootstrap's shape kept for skewed measures. At 48
// the share is 0.0450 instead of 0.05. n < 2 (no spread to estimate)
// gives the plain 1−confidence.
func ExpandedLevel(confidence float64, n int) float64 {
	if n < 2 {
		return 1 - confidence
	}
	df := float64(n - 1)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(confidence)
	return distuv.UnitNormal.CDF(-math.Sqrt(float64(n)/df) * t)
}

func ratio(n, d float64) float64 {
	if d == 0 {
		return 0
	}
	return n / d
}

// RatioInterval is the bootstrap of mean(x)/mean(y) for two independent
// samples (e.g. the candidate's and production's throughput per request
// window): each resample draws len(x) from x and len(y) from y with
// replacement. Estimate is the observed ratio; Lower and Upper the
// one-sided bounds at o.Confidence: the expanded percentile bootstrap
// (ExpandedLevel) at the smaller sample's size.
func RatioInterval(x, y []float64, o Options) (Interval, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Interval{}, err
	}
	if len(x) == 0 || len(y) == 0 {
		return Interval{}, fmt.Errorf("stats: ratio of means: %d and %d values; both samples need at least one", len(x), len(y))
	}
	my := stat.Mean(y, nil)
	if my == 0 {
		return Interval{}, errors.New("stats: ratio of means: the second sample's mean is 0")
	}
	iv := Interval{Estimate: stat.Mean(x, nil) / my, Confidence: o.Confidence}
	g := o.Seed.rng()
	reps := make([]float64, o.Resamples)
	for b := range reps {
		var sx, sy float64
		for range x {
			sx += x[index(g, len(x))]
		}
		for range y {
			sy += y[index(g, len(y))]
		}
		r := math.Inf(1)
		if sy != 0 {
			r = (sx / float64(len(x))) / (sy / float64(len(y)))
		}
		reps[b] = r
	}
	sort.Float64s(reps)
	iv.Level = ExpandedLevel(o.Confidence, min(len(x), len(y)))
	iv.Lower = stat.Quantile(iv.Level, stat.Empirical, reps, nil)
	iv.Upper = stat.Quantile(1-iv.Level, stat.Empirical, reps, nil)
	return iv, nil
}

// Interval is an estimate with one-sided bounds at Confidence (each bound
// alone; together a two-sided interval at 2·Confidence−1). Level is the
// tail share each bound leaves out of the resampled values.
type Interval struct {
	Estimate, Lower, Upper float64
	Confidence             float64
	Level                  float64
}
