package qualify

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// Bounds of request gate parameters.
const (
	MaxGateRequests  = 10000
	MaxGateMaxTokens = 1 << 20
	MaxConcurrency   = 1024
)

// RequestParams are the keys every request gate shares: the reply bound
// and the per-request timeout. Kinds embed it.
type RequestParams struct {
	// MaxTokens bounds each reply; 0 takes the kind's default.
	MaxTokens int `toml:"max_tokens"`
	// RequestTimeout bounds each request; 0 takes DefaultRequestTimeout.
	RequestTimeout config.Duration `toml:"request_timeout"`
}

// validate checks the numbers and fills the defaults (maxTokens is the
// kind's default reply bound).
func (r *RequestParams) validate(v *Validation, maxTokens int) {
	switch {
	case r.MaxTokens < 0 || r.MaxTokens > MaxGateMaxTokens:
		v.Errorf("max_tokens", "%d: use 1 to %d tokens (leave it out for the default %d)", r.MaxTokens, MaxGateMaxTokens, maxTokens)
	case r.MaxTokens == 0:
		r.MaxTokens = maxTokens
	}
	switch {
	case r.RequestTimeout.Duration < 0:
		v.Errorf("request_timeout", "%s is negative; give a positive bound such as \"60s\" (leave it out for %s)", r.RequestTimeout.Duration, DefaultRequestTimeout)
	case r.RequestTimeout.Duration == 0:
		r.RequestTimeout.Duration = DefaultRequestTimeout
	}
}

// validateCount checks a request count and fills its default.
func validateCount(v *Validation, key string, n *int, dflt, max int) {
	switch {
	case *n == 0 && v.Spec != nil && v.Spec.keys[key]:
		v.Errorf(key, "0: use 1 to %d, or leave the key out for the default %d", max, dflt)
	case *n == 0:
		*n = dflt
	case *n < 1 || *n > max:
		v.Errorf(key, "%d: use 1 to %d", *n, max)
	}
}

// recordOverload puts cl's busy-answer counters (429/503 retries) into
// stats when there were any: gates count a request that succeeded after
// retries as a success and report the retries here.
func recordOverload(stats *evidence.RequestStats, cl *llm.Client) {
	st := cl.Stats()
	if st.Retries() == 0 && st.OverloadGaveUp == 0 {
		return
	}
	stats.Overload = &evidence.OverloadStats{Retried429: int(st.Retried429), Retried503: int(st.Retried503),
		SucceededAfterRetry: int(st.SucceededAfterRetry), GaveUp: int(st.OverloadGaveUp), RetryWaitMS: st.RetryWaitMS}
}

// requestFailure classifies a request error (package engine decides the
// class) and adds the engine's exit and log tail when it has exited.
func requestFailure(h *Handle, err error, structured bool) *failure.Failure {
	re := engine.RequestError{Message: err.Error(), Structured: structured}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		re.StatusCode, re.Message = ae.StatusCode, ae.Message
	}
	f := &failure.Failure{Phase: failure.PhaseInference, RootCause: err.Error()}
	if r, _ := h.Ready(); r != nil && r.Proc != nil {
		select {
		case <-r.Proc.Exited():
			re.Exited = true
			x := r.Proc.ExitInfo()
			f.ExitCode = x.Code
			f.Signal = x.Signal
			f.LogTail = r.Proc.Tracker().Tail()
		default:
		}
	}
	f.Class = engine.ClassifyRequest(re)
	return f
}

// logLineMatching returns the last line of the candidate's log that
// matches pattern, or "".
func logLineMatching(h *Handle, pattern string) string {
	r, _ := h.Ready()
	if r == nil || r.Proc == nil {
		return ""
	}
	re := regexp.MustCompile(pattern)
	b, err := os.ReadFile(r.Proc.LogPath())
	if err != nil {
		return ""
	}
	lines := strings.Split(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if re.MatchString(lines[i]) {
			return strings.TrimSpace(lines[i])
		}
	}
	return ""
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentiles computes nearest-rank p50/p95/p99 and max of xs.
func percentiles(xs []float64) *evidence.Percentiles {
	if len(xs) == 0 {
		return nil
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return round3(s[i])
	}
	return &evidence.Percentiles{P50: rank(50), P95: rank(95), P99: rank(99), Max: round3(s[len(s)-1])}
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// rounded is xs to the microsecond, in order: the per-request samples the
// evidence keeps (RequestStats.LatenciesMS, TTFTsMS).
func rounded(xs []float64) []float64 {
	if len(xs) == 0 {
		return nil
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = round3(x)
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// controlSentences are the built-in inputs of the request gates: short,
// self-contained sentences with names, numbers and dates, written for
// hiro (not from any evaluation corpus).
var controlSentences = []string{
	"Marie Curie won the Nobel Prize in Physics in 1903.",
	"The Danube flows through ten countries, including Austria and Hungary.",
	"In 2019 the company opened a second factory in Porto with 450 workers.",
	"Mount Kilimanjaro, the highest mountain in Africa, rises 5,895 metres above sea level.",
	"The library was founded in 1753 and holds about 25 million items.",
}

// requestMessages is request i of a gate: the plan's prompt, else the
// product's extraction prompt on a control sentence.
func requestMessages(userPrompt string, i int) []llm.Message {
	if userPrompt != "" {
		return []llm.Message{{Role: "user", Content: userPrompt}}
	}
	s := controlSentences[i%len(controlSentences)]
	return []llm.Message{{Role: "system", Content: prompt.System()}, {Role: "user", Content: prompt.User(prompt.Input{Target: s})}}
}

// loadSchema reads and compiles a JSON Schema file ("" is the product's
// claims schema).
func loadSchema(path string) (json.RawMessage, *jsv.Schema, error) {
	raw := prompt.SchemaJSON()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, err
		}
		raw = b
	}
	doc, err := jsv.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("not JSON: %v", err)
	}
	comp := jsv.NewCompiler()
	if err := comp.AddResource("schema.json", doc); err != nil {
		return nil, nil, err
	}
	sch, err := comp.Compile("schema.json")
	if err != nil {
		return nil, nil, fmt.Errorf("does not compile: %v", oneLine(err.Error()))
	}
	return raw, sch, nil
}

// validateReply parses text as JSON and validates it against sch.
func validateReply(sch *jsv.Schema, text string) error {
	v, err := jsv.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("does not validate: %s", oneLine(err.Error()))
	}
	return nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func addDistinct(xs *[]string, s string) {
	for _, x := range *xs {
		if x == s {
			return
		}
	}
	if len(*xs) < 10 {
		*xs = append(*xs, truncate(s, 300))
	}
}
