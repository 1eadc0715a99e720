// Package prompt owns hiro's versioned prompt templates and the claims
// JSON Schema: the extraction prompt (system and user messages) and the
// readiness prompt. The files beside this one are the single source of the
// layout: package extract renders requests from them and the fixture model
// (train/) is trained on exactly what Render produces. Any change to the
// files is a new version, visible in Hash.
//
// It must not send requests or validate replies.
package prompt

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"strings"
	"text/template"

	"github.com/hiro-dev/hiro/internal/config"
)

// Version names the extraction prompt version; provenance records it.
const Version = "extract-v1"

// ReadyPrompt is the user message of the readiness control; the expected
// reply is ReadyReply. It equals config.DefaultProbePrompt.
const ReadyPrompt = config.DefaultProbePrompt

// ReadyReply is the exact reply (after trimming) the READY control wants.
const ReadyReply = "READY"

// Context window sizes (sentences) around the target sentence.
const (
	ContextBefore = 2
	ContextAfter  = 1
)

//go:embed extract-v1.system.txt
var systemText string

//go:embed extract-v1.user.tmpl
var userTmplText string

//go:embed claims.schema.json
var schemaText []byte

var userTmpl = template.Must(template.New("user").Parse(strings.TrimSuffix(userTmplText, "\n")))

// Input is one extraction request's content.
type Input struct {
	// HeadingPath is the Markdown heading path of the target sentence,
	// outermost first; empty when the document has none.
	HeadingPath []string
	// Before holds up to ContextBefore sentences before the target.
	Before []string
	// Target is the sentence to extract claims from.
	Target string
	// After holds up to ContextAfter sentences after the target.
	After []string
}

// SchemaJSON returns the claims JSON Schema compacted to one line.
func SchemaJSON() json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, schemaText); err != nil {
		panic("prompt: claims.schema.json is not valid JSON: " + err.Error())
	}
	return json.RawMessage(b.Bytes())
}

// System returns the system message.
func System() string { return systemText }

// User renders the user message for in (layout in README.md).
func User(in Input) string {
	oneLine := func(s string) string {
		return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
	}
	join := func(xs []string, sep string) string {
		var parts []string
		for _, x := range xs {
			if x = oneLine(x); x != "" {
				parts = append(parts, x)
			}
		}
		if len(parts) == 0 {
			return "(none)"
		}
		return strings.Join(parts, sep)
	}
	var b strings.Builder
	err := userTmpl.Execute(&b, map[string]string{
		"Schema":  string(SchemaJSON()),
		"Heading": join(in.HeadingPath, " > "),
		"Before":  join(in.Before, " "),
		"Target":  oneLine(in.Target),
		"After":   join(in.After, " "),
	})
	if err != nil {
		panic("prompt: user template: " + err.Error())
	}
	return b.String()
}

// Hash returns the SHA-256 (hex) of the prompt files and schema: it
// changes whenever the prompt or schema changes.
func Hash() string {
	h := sha256.New()
	for _, s := range []string{Version, systemText, userTmplText, string(schemaText)} {
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
