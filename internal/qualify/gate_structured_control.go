package qualify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/llm"
)

// KindStructuredControl sends requests with a JSON Schema response_format.
const KindStructuredControl = "structured_control"

// DefaultStructuredRequests is a structured_control gate's request count.
const DefaultStructuredRequests = 3

func init() {
	RegisterKind(Kind{Name: KindStructuredControl, Rank: 50, Title: "Structured-output control", NeedsCandidate: true, New: func() Gate { return &StructuredControlGate{} }})
}

// StructuredControlGate is a structured_control gate's section: requests
// with a JSON Schema as response_format, every reply parsed and validated
// client-side. Its result is an evidence.RequestStats with the schema
// accepted and valid counts recorded separately.
type StructuredControlGate struct {
	plainBound
	RequestParams
	// Requests is how many to send; default DefaultStructuredRequests.
	Requests int `toml:"requests"`
	// Schema is a JSON Schema file (relative to the plan); default the
	// product's claims schema.
	Schema string `toml:"schema"`
	// Prompt is the user message; default the extraction prompt on the
	// built-in control sentences.
	Prompt string `toml:"prompt"`
}

// Validate checks the counts and that the schema file exists and compiles.
func (g *StructuredControlGate) Validate(v *Validation) {
	g.RequestParams.validate(v, DefaultRequestMaxTokens)
	validateCount(v, "requests", &g.Requests, DefaultStructuredRequests, MaxGateRequests)
	if g.Schema != "" {
		g.Schema = v.Resolve(g.Schema)
		if _, _, err := loadSchema(g.Schema); err != nil && !v.Spec.Skip {
			v.Errorf("schema", "%s: %v; point schema at a JSON Schema file (relative to the plan)", g.Schema, err)
		}
	}
}

// Fingerprint records the schema file's digest.
func (g *StructuredControlGate) Fingerprint(fp *evidence.Fingerprints) {
	if g.Schema == "" {
		return
	}
	if d, err := fileDigest(g.Schema); err == nil {
		fp.Schemas = d
		fp.Files[g.Schema] = d
	}
}

// Run sends the requests; a refusal, a crash or an invalid reply fails it.
func (g *StructuredControlGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	cl, model, err := h.Client()
	if err != nil {
		return err
	}
	raw, sch, err := loadSchema(g.Schema)
	if err != nil {
		return harnessErr("schema %s: %v", g.Schema, err)
	}
	accepted, valid := 0, 0
	stats := &evidence.RequestStats{SchemaAccepted: &accepted, SchemaValid: &valid}
	eg.Requests = stats
	defer recordOverload(stats, cl)
	var ttft, lat []float64
	var rejected, failOpen, crashed []error
	zero := 0.0
	for i := 0; i < g.Requests; i++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		stats.Count++
		t0 := time.Now()
		reply, err := cl.Chat(ctx, llm.Request{Model: model, Messages: requestMessages(g.Prompt, i), MaxTokens: g.MaxTokens,
			Temperature: &zero, Schema: raw, SchemaName: "claims", Timeout: g.RequestTimeout.Duration})
		h.Waited(t0)
		if err != nil {
			stats.Errors++
			var ae *llm.APIError
			if errors.As(err, &ae) && ae.StatusCode >= 400 && ae.StatusCode < 500 {
				rejected = append(rejected, err)
			} else {
				crashed = append(crashed, err)
			}
			addDistinct(&stats.ErrorMessages, err.Error())
			continue
		}
		accepted++
		ttft = append(ttft, ms(reply.TTFT))
		lat = append(lat, ms(reply.Latency))
		stats.Samples = append(stats.Samples, truncate(reply.Text, 500))
		if verr := validateReply(sch, reply.Text); verr != nil {
			why := verr.Error()
			if reply.FinishReason == "length" {
				why += " (finish_reason length: cut off by max_tokens)"
			}
			failOpen = append(failOpen, errors.New(why))
			addDistinct(&stats.ErrorMessages, "reply invalid: "+why)
			continue
		}
		valid++
	}
	stats.TTFT, stats.Latency = percentiles(ttft), percentiles(lat)
	stats.TTFTsMS, stats.LatenciesMS = rounded(ttft), rounded(lat)
	switch {
	case len(crashed) > 0:
		eg.Failure = requestFailure(h, crashed[0], true)
		return fmt.Errorf("%d of %d structured requests got no valid answer from the server: %s", len(crashed), stats.Count, crashed[0])
	case len(rejected) > 0:
		eg.Failure = requestFailure(h, rejected[0], true)
		eg.Failure.LogTail, eg.Failure.ExitCode, eg.Failure.Signal = nil, nil, ""
		return fmt.Errorf("the server rejected the schema in %d of %d requests: %s", len(rejected), stats.Count, rejected[0])
	case len(failOpen) > 0:
		root := failOpen[0].Error()
		if line := logLineMatching(h, `(?i)grammar`); line != "" {
			root = line
		}
		eg.Failure = &failure.Failure{Class: failure.ClassStructuredOutputFailOpen, Phase: failure.PhaseInference, RootCause: root}
		return fmt.Errorf("the server accepted the schema but %d of %d replies do not validate (fail-open): %s", len(failOpen), stats.Count, failOpen[0])
	}
	return nil
}
