// Package prompt owns hiro's versioned extraction prompt and the claims
// JSON Schema as the rest of hiro sees them: package extract renders
// requests through it, the qualification gates use it for their control
// requests, and evidence fingerprints it (Hash). The texts themselves are
// the files the fixture model was trained on (internal/fixture/prompt/),
// so that the model and the product can never disagree on the layout.
//
// It must not send requests or validate replies.
package prompt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/fixture"
)

// Version names the extraction prompt version; provenance records it.
// Any change to the texts or the layout is a new version.
const Version = "extract-v1"

// ReadyPrompt is the user message of the readiness control; the expected
// reply is ReadyReply. It equals config.DefaultProbePrompt.
const ReadyPrompt = config.DefaultProbePrompt

// ReadyReply is the exact reply (after trimming) the READY control wants.
const ReadyReply = "READY"

// Context window sizes (sentences) around the target sentence. The
// fixture model was trained with up to 3 on each side.
const (
	ContextBefore = 2
	ContextAfter  = 1
)

// Input is one extraction request's content.
type Input struct {
	// HeadingPath is the Markdown heading path of the target sentence,
	// outermost first; empty when the document has none.
	HeadingPath []string
	// Before holds up to ContextBefore sentences before the target.
	Before []string
	// Target is the sentence to extract claims from, verbatim: quotes are
	// copied from it byte for byte.
	Target string
	// After holds up to ContextAfter sentences after the target.
	After []string
}

// SchemaJSON returns the claims JSON Schema, compact:
// {"claims":[{"text":...,"quote":...}]}.
func SchemaJSON() json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(fixture.ClaimsSchema)); err != nil {
		panic("prompt: the claims schema is not valid JSON: " + err.Error())
	}
	return json.RawMessage(b.Bytes())
}

// System returns the system message.
func System() string { return fixture.ExtractionSystemMessage }

// User renders the user message for in. Newlines inside a sentence are
// replaced by spaces (the layout is line-based); nothing else is changed.
func User(in Input) string {
	flat := func(xs []string) []string {
		out := make([]string, 0, len(xs))
		for _, x := range xs {
			if x = oneLine(x); x != "" {
				out = append(out, x)
			}
		}
		return out
	}
	return fixture.ExtractionUserMessage(flat(in.HeadingPath), flat(in.Before), oneLine(in.Target), flat(in.After))
}

func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// Hash returns the SHA-256 (hex) of the prompt version, texts and schema:
// it changes whenever the prompt or schema changes.
func Hash() string {
	h := sha256.New()
	for _, s := range []string{Version, fixture.ExtractionSystemMessage, fixture.ExtractionInstructions, fixture.ClaimsSchema,
		User(Input{HeadingPath: []string{"H"}, Before: []string{"B"}, Target: "T", After: []string{"A"}})} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// SchemaHash returns the SHA-256 (hex) of the compacted claims schema.
func SchemaHash() string {
	s := sha256.Sum256(SchemaJSON())
	return hex.EncodeToString(s[:])
}
