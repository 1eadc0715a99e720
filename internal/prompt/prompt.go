package prompt

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/hiro-dev/hiro/internal/config"
)

// The prompt texts, embedded from texts/. They are the product's; the
// fixture models were trained on exactly these bytes (train/train_fixture.py
// reads the same files through the internal/fixture/prompt link), so any
// change is a new Version and changes Hash.
var (
	// SystemText is the extraction system message (texts/system.txt).
	//go:embed texts/system.txt
	SystemText string
	// InstructionsText opens the extraction user message
	// (texts/instructions.txt).
	//go:embed texts/instructions.txt
	InstructionsText string
	// ClaimsSchemaText is the JSON Schema of an extraction reply exactly as
	// it appears in the user message (texts/schema.json):
	// {"claims":[{"text":...,"quote":...}]}, text before quote. SchemaJSON
	// is its compacted form, for response_format.
	//go:embed texts/schema.json
	ClaimsSchemaText string
	// ReadyText is the readiness control prompt as the training files hold
	// it (texts/ready.txt); trimmed, it equals ReadyPrompt.
	//go:embed texts/ready.txt
	ReadyText string
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
	if err := json.Compact(&b, []byte(ClaimsSchemaText)); err != nil {
		panic("prompt: the claims schema is not valid JSON: " + err.Error())
	}
	return json.RawMessage(b.Bytes())
}

// System returns the system message.
func System() string { return SystemText }

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
	return Layout(flat(in.HeadingPath), flat(in.Before), oneLine(in.Target), flat(in.After))
}

// The labels of Layout's own lines, as they open each part of the user
// message: a claim holding one is the prompt's scaffolding copied into a
// reply (package extract rejects it).
const (
	LabelSchema         = "JSON Schema:"
	LabelHeadingPath    = "Heading path:"
	LabelContextBefore  = "Context before:"
	LabelTargetSentence = "Target sentence:"
	LabelContextAfter   = "Context after:"
)

// Labels lists Layout's labels in the order the message has them.
var Labels = []string{LabelSchema, LabelHeadingPath, LabelContextBefore, LabelTargetSentence, LabelContextAfter}

// Layout renders the extraction user message exactly in the layout the
// fixture models were trained on (lines joined with "\n", no trailing
// newline):
//
//	<InstructionsText>
//
//	JSON Schema:
//	<ClaimsSchemaText>
//
//	Heading path: <h1 > h2 > ...>      ("(none)" when empty)
//	Context before:
//	<one line per sentence>             ("(none)" when empty)
//	Target sentence:
//	<sentence, verbatim>
//	Context after:
//	<one line per sentence>             ("(none)" when empty)
//
// Nothing is trimmed or rewritten (User flattens newlines first): the model
// copies quotes from the sentence byte for byte. The models were trained
// with up to 3 context sentences on each side, about 1,500 bytes of source
// in all; the trained reply is {"claims":[...]} with one claim per clause
// of the target sentence (split at "; "), none for a question.
func Layout(headingPath, before []string, sentence string, after []string) string {
	var b strings.Builder
	b.WriteString(InstructionsText)
	b.WriteString("\n\n" + LabelSchema + "\n")
	b.WriteString(ClaimsSchemaText)
	b.WriteString("\n\n" + LabelHeadingPath + " ")
	if len(headingPath) == 0 {
		b.WriteString("(none)")
	} else {
		b.WriteString(strings.Join(headingPath, " > "))
	}
	b.WriteString("\n" + LabelContextBefore + "\n")
	writeLines(&b, before)
	b.WriteString("\n" + LabelTargetSentence + "\n")
	b.WriteString(sentence)
	b.WriteString("\n" + LabelContextAfter + "\n")
	writeLines(&b, after)
	return b.String()
}

func writeLines(b *strings.Builder, lines []string) {
	if len(lines) == 0 {
		b.WriteString("(none)")
		return
	}
	b.WriteString(strings.Join(lines, "\n"))
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
	for _, s := range []string{Version, SystemText, InstructionsText, ClaimsSchemaText,
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

// ParseUser reads an extraction user message back into its Input: the
// inverse of User for a message in Layout's form. ok is false when user is
// not such a message (another prompt, another schema, a changed layout):
// the parsed Input, laid out again, must give user byte for byte. The
// router's shadow traffic uses it to validate the replies to hiro's own
// extraction requests against the sentence they were asked about.
func ParseUser(user string) (in Input, ok bool) {
	head := InstructionsText + "\n\nJSON Schema:\n" + ClaimsSchemaText + "\n\nHeading path: "
	rest, found := strings.CutPrefix(user, head)
	if !found {
		return Input{}, false
	}
	heading, rest, found := strings.Cut(rest, "\nContext before:\n")
	if !found {
		return Input{}, false
	}
	before, rest, found := strings.Cut(rest, "\nTarget sentence:\n")
	if !found {
		return Input{}, false
	}
	i := strings.LastIndex(rest, "\nContext after:\n")
	if i < 0 {
		return Input{}, false
	}
	target, after := rest[:i], rest[i+len("\nContext after:\n"):]
	lines := func(s, sep string) []string {
		if s == "(none)" {
			return nil
		}
		return strings.Split(s, sep)
	}
	in = Input{HeadingPath: lines(heading, " > "), Before: lines(before, "\n"), Target: target, After: lines(after, "\n")}
	if Layout(in.HeadingPath, in.Before, in.Target, in.After) != user {
		return Input{}, false
	}
	return in, true
}

// SystemHash returns the SHA-256 (hex) of the extraction system message
// (SystemText): a chat request whose system message has this hash is
// hiro's extraction request.
func SystemHash() string {
	s := sha256.Sum256([]byte(SystemText))
	return hex.EncodeToString(s[:])
}
