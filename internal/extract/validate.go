package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/prompt"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// Reason codes of rejects. A reject carries one or more Reasons.
const (
	// Document level: the document is not processed.
	ReasonNotUTF8         = "not_utf8"
	ReasonEmptyDocument   = "empty_document"
	ReasonDocumentTooLong = "document_too_long"
	// Request level: no valid reply could be had for a sentence.
	ReasonRequestTooLong = "request_too_long"
	ReasonRequestFailed  = "request_failed"
	// Reply level: the whole reply is unusable.
	ReasonNotJSON = "not_json"
	// ReasonTruncated: the server cut the reply at max_tokens
	// (finish_reason "length"), whether or not its JSON parses.
	ReasonTruncated = "truncated"
	// ReasonFiltered: the server's content filter stopped the reply
	// (finish_reason "content_filter"), whether or not its JSON parses.
	ReasonFiltered = "filtered"
	ReasonSchema   = "schema"
	// Claim level: one claim of a reply is rejected, the others stand.
	ReasonQuoteNotFound = "quote_not_found"
	ReasonNumber        = "number_not_in_source"
	ReasonDate          = "date_not_in_source"
	ReasonDuplicate     = "duplicate"
	ReasonTooShort      = "too_short"
	ReasonTooLong       = "too_long"
	// ReasonControlChar: the claim text holds a control character (C0,
	// DEL or C1: NUL, ESC, tab, a line feed or carriage return...) or a
	// line or paragraph separator (U+2028, U+2029): a claim is one line;
	// or a Unicode format character (category Cf: the bidirectional overrides
	// and isolates such as U+202E, zero-width space, word joiner, byte
	// order mark, soft hyphen; a zero-width joiner or non-joiner only
	// where no script needs it); or its quote holds a control character
	// other than tab, newline and carriage return.
	ReasonControlChar = "control_character"
)

// Reason is one validator's finding: a stable Code (the Reason* constants)
// and a Detail for people.
type Reason struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

func (r Reason) String() string { return r.Code + ": " + r.Detail }

// Length bounds of a claim (the claims schema sets none). They are the
// defaults of Validator.
const (
	// DefaultMinClaimTokens: a claim needs a subject and a predicate.
	DefaultMinClaimTokens = 2
	// DefaultMaxClaimRunes bounds the claim text: an atomic claim is one
	// short sentence.
	DefaultMaxClaimRunes = 400
)

// Validator checks replies. The zero value is not usable; NewValidator
// compiles the claims schema of package prompt.
type Validator struct {
	schema *jsonschema.Schema
	// MinClaimTokens and MaxClaimRunes are the length bounds (tokens as
	// corpus.Tokens counts them; runes of the trimmed text).
	MinClaimTokens int
	MaxClaimRunes  int
}

// NewValidator compiles prompt.SchemaJSON() and sets default bounds.
func NewValidator() (*Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(prompt.SchemaJSON()))
	if err != nil {
		return nil, fmt.Errorf("claims schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("claims.schema.json", doc); err != nil {
		return nil, fmt.Errorf("claims schema: %w", err)
	}
	s, err := c.Compile("claims.schema.json")
	if err != nil {
		return nil, fmt.Errorf("claims schema: %w", err)
	}
	return &Validator{schema: s, MinClaimTokens: DefaultMinClaimTokens, MaxClaimRunes: DefaultMaxClaimRunes}, nil
}

// Source is what a reply is checked against.
type Source struct {
	// Sentence is the target sentence exactly as in the document; quotes
	// must be found in it. SentenceStart is its byte offset in the
	// document (quote spans are made document-relative with it).
	Sentence      string
	SentenceStart int
	// Window is the text a claim may draw numbers and dates from: the
	// heading path, the sentences before, the target and those after.
	Window string
}

// Candidate is one claim of a reply that passed every per-claim check.
type Candidate struct {
	// Index is the claim's position in the reply's claims array.
	Index int
	Text  string
	Quote string
	// QuoteStart and QuoteEnd are the quote's byte span in the document.
	QuoteStart, QuoteEnd int
	// Match is corpus.MatchExact or corpus.MatchNormalized.
	Match string
	// Key is corpus.NormalizeClaim(Text), the duplicate key.
	Key string
}

// ItemReject is one claim of a reply that failed a check.
type ItemReject struct {
	Index   int
	Text    string
	Quote   string
	Reasons []Reason
}

// Outcome is the validation of one reply.
type Outcome struct {
	// ReplyReasons is non-empty when the reply as a whole is unusable (not
	// JSON, or failing the schema outside a single claim); then Good and
	// Bad are empty.
	ReplyReasons []Reason
	// SchemaValid is true when the reply parsed and validated against the
	// schema in full (the schema-valid rate counts these).
	SchemaValid bool
	Good        []Candidate
	Bad         []ItemReject
}

// Clean reports whether nothing in the reply was rejected.
func (o *Outcome) Clean() bool { return len(o.ReplyReasons) == 0 && len(o.Bad) == 0 }

// Reasons returns every reason of the outcome, claim reasons prefixed by
// the claim's position, for the repair turn and for people.
func (o *Outcome) Reasons() []string {
	var out []string
	for _, r := range o.ReplyReasons {
		out = append(out, r.String())
	}
	for _, b := range o.Bad {
		for _, r := range b.Reasons {
			out = append(out, fmt.Sprintf("claim %d (%q): %s", b.Index+1, b.Text, r.String()))
		}
	}
	return out
}

// FinishLength is the finish_reason of a reply cut at max_tokens;
// FinishContentFilter of one a server's moderation stopped (the OpenAI
// API's values, which vLLM, SGLang and gateways in front of them use).
const (
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// Validate checks one raw reply against src. finish is the server's
// finish_reason: a reply cut at max_tokens (FinishLength) is rejected as a
// whole (ReasonTruncated, not schema-valid) even when its JSON parses, and
// gets the repair path like any failed reply; so is a reply a content
// filter stopped (FinishContentFilter: ReasonFiltered). It never fails:
// every problem is a Reason in the Outcome.
func (v *Validator) Validate(raw, finish string, src Source) Outcome {
	var o Outcome
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(raw))
	if finish == FinishLength {
		// A reply cut at max_tokens is never accepted, even when what
		// arrived happens to parse (the cut fell in trailing white space,
		// or after a complete object): claims may be missing or cut.
		detail := "the reply was cut at max_tokens (finish_reason \"length\") before the JSON ended"
		if err == nil {
			detail = "the reply was cut at max_tokens (finish_reason \"length\"); its JSON parses, but claims may be missing or cut"
		}
		o.ReplyReasons = []Reason{{Code: ReasonTruncated, Detail: detail + "; raise --max-tokens (the gate's max_tokens) or ask for fewer claims"}}
		return o
	}
	if finish == FinishContentFilter {
		// What arrived before the filter stopped it is not the reply.
		o.ReplyReasons = []Reason{{Code: ReasonFiltered, Detail: "the server's content filter stopped the reply (finish_reason \"content_filter\"): claims may be missing or cut; the sentence or its context tripped the endpoint's moderation (check the gateway's filter settings for this model)"}}
		return o
	}
	if err != nil {
		o.ReplyReasons = []Reason{{Code: ReasonNotJSON, Detail: "the reply is not a JSON document: " + shortErr(err)}}
		return o
	}
	itemSchema := map[int][]Reason{}
	if err := v.schema.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			o.ReplyReasons = []Reason{{Code: ReasonSchema, Detail: err.Error()}}
			return o
		}
		var whole []Reason
		for _, leaf := range leaves(ve) {
			loc := leaf.InstanceLocation
			msg := fmt.Sprintf("at /%s: %s", strings.Join(loc, "/"), leaf.ErrorKind.LocalizedString(printer))
			if len(loc) >= 2 && loc[0] == "claims" {
				if i, err := strconv.Atoi(loc[1]); err == nil {
					itemSchema[i] = append(itemSchema[i], Reason{Code: ReasonSchema, Detail: msg})
					continue
				}
			}
			whole = append(whole, Reason{Code: ReasonSchema, Detail: msg})
		}
		if len(whole) > 0 {
			o.ReplyReasons = whole
			return o
		}
	} else {
		o.SchemaValid = true
	}
	// The structure is valid (possibly but for some items): decode the
	// claims leniently, items with schema errors are rejected as such.
	var rc struct {
		Claims []json.RawMessage `json:"claims"`
	}
	if err := json.Unmarshal([]byte(raw), &rc); err != nil {
		o.ReplyReasons = []Reason{{Code: ReasonSchema, Detail: err.Error()}}
		o.SchemaValid = false
		return o
	}
	seen := map[string]int{}
	for i, item := range rc.Claims {
		var c struct {
			Text  any `json:"text"`
			Quote any `json:"quote"`
		}
		_ = json.Unmarshal(item, &c)
		text, _ := c.Text.(string)
		quote, _ := c.Quote.(string)
		if rs, bad := itemSchema[i]; bad {
			o.Bad = append(o.Bad, ItemReject{Index: i, Text: text, Quote: quote, Reasons: rs})
			continue
		}
		cand, rs := v.checkClaim(text, quote, src)
		cand.Index = i
		if len(rs) == 0 {
			if j, dup := seen[cand.Key]; dup {
				rs = append(rs, Reason{Code: ReasonDuplicate, Detail: fmt.Sprintf("same claim as claim %d of this reply", j+1)})
			}
		}
		if len(rs) > 0 {
			o.Bad = append(o.Bad, ItemReject{Index: i, Text: text, Quote: quote, Reasons: rs})
			continue
		}
		seen[cand.Key] = i
		o.Good = append(o.Good, cand)
	}
	return o
}

// checkClaim runs the per-claim validators: length bounds, quote found in
// the sentence, numbers and dates found in the window.
func (v *Validator) checkClaim(text, quote string, src Source) (Candidate, []Reason) {
	var rs []Reason
	text = strings.TrimSpace(text)
	c := Candidate{Text: text, Quote: quote, Key: corpus.NormalizeClaim(text)}
	if n := len(corpus.Tokens(text)); n < v.MinClaimTokens {
		rs = append(rs, Reason{Code: ReasonTooShort, Detail: fmt.Sprintf("the claim has %s; a claim needs at least %d", termtext.Plural(n, "word", "words"), v.MinClaimTokens)})
	}
	if n := utf8.RuneCountInString(text); n > v.MaxClaimRunes {
		rs = append(rs, Reason{Code: ReasonTooLong, Detail: fmt.Sprintf("the claim has %d characters; at most %d", n, v.MaxClaimRunes)})
	}
	if why, bad := controlChar(text, ""); bad {
		rs = append(rs, Reason{Code: ReasonControlChar, Detail: "claim: " + why + "; a claim is one line of plain text"})
	} else if why, bad := lineSeparator(text); bad {
		rs = append(rs, Reason{Code: ReasonControlChar, Detail: "claim: " + why + "; a claim is one line of plain text"})
	} else if why, bad := formatChar(text); bad {
		rs = append(rs, Reason{Code: ReasonControlChar, Detail: "claim: " + why + "; a claim is plain text, shown as it reads"})
	}
	if why, bad := controlChar(quote, "\t\n\r"); bad {
		rs = append(rs, Reason{Code: ReasonControlChar, Detail: "quote: " + why + "; a quote is plain text"})
	}
	// The document is data: a claim must be a statement, and neither it
	// nor its quote may speak to the model.
	if why, bad := Malformed(text); bad {
		rs = append(rs, Reason{Code: ReasonMalformed, Detail: why})
	}
	if why, bad := PromptLayout(text); bad {
		rs = append(rs, Reason{Code: ReasonPromptLayout, Detail: why})
	}
	if why, bad := AddressesModel(text); bad {
		rs = append(rs, Reason{Code: ReasonAddressesModel, Detail: "claim: " + why})
	} else if why, bad := AddressesModel(quote); bad {
		rs = append(rs, Reason{Code: ReasonAddressesModel, Detail: "quote: " + why})
	}
	if s, e, kind, ok := corpus.FindQuote(src.Sentence, quote); ok {
		c.QuoteStart, c.QuoteEnd, c.Match = src.SentenceStart+s, src.SentenceStart+e, kind
	} else {
		rs = append(rs, Reason{Code: ReasonQuoteNotFound, Detail: fmt.Sprintf("the quote %q is not in the target sentence, exactly or up to white space and case", quote)})
	}
	if missing := missingNumbers(text, src.Window); len(missing) > 0 {
		rs = append(rs, Reason{Code: ReasonNumber, Detail: "numbers not in the source: " + strings.Join(missing, ", ")})
	}
	if missing := missingMonths(text, src.Window); len(missing) > 0 {
		rs = append(rs, Reason{Code: ReasonDate, Detail: "months not in the source: " + strings.Join(missing, ", ")})
	}
	return c, rs
}

// controlChar reports the first control character (category Cc: C0
// U+0000-U+001F, DEL U+007F, C1 U+0080-U+009F) in s that is not in
// allowed, as "U+0000 (NUL) at byte 12".
func controlChar(s, allowed string) (string, bool) {
	for i, r := range s {
		if unicode.Is(unicode.Cc, r) && !strings.ContainsRune(allowed, r) {
			name := map[rune]string{0: "NUL", 0x1b: "ESC", '\r': "carriage return", '\n': "line feed", '\t': "tab", 0x7f: "DEL", '\f': "form feed", '\v': "vertical tab", 8: "backspace", 0x85: "next line"}[r]
			if name == "" {
				name = "control character"
			}
			return fmt.Sprintf("U+%04X (%s) at byte %d", r, name, i), true
		}
	}
	return "", false
}

// lineSeparator reports Unicode's line and paragraph separators (U+2028,
// U+2029: categories Zl and Zp, line breaks that are no control
// character) in s, as "U+2028 (line separator) at byte 7".
func lineSeparator(s string) (string, bool) {
	for i, r := range s {
		switch r {
		case 0x2028:
			return fmt.Sprintf("U+2028 (line separator) at byte %d", i), true
		case 0x2029:
			return fmt.Sprintf("U+2029 (paragraph separator) at byte %d", i), true
		}
	}
	return "", false
}

// formatChar reports the first Unicode format character (category Cf) in
// s, as "U+202E (right-to-left override) at byte 20": it changes how text
// is shown (reversed, hidden, joined) without being seen. A zero-width
// non-joiner or joiner is kept where a script needs it: between two
// letters or marks of a script written with joining forms (Arabic,
// Persian, the Indic scripts: not Latin, Greek or Cyrillic), and a joiner
// inside an emoji sequence.
func formatChar(s string) (string, bool) {
	for i, r := range s {
		if !unicode.Is(unicode.Cf, r) {
			continue
		}
		if r == 0x200c || r == 0x200d {
			prev, _ := utf8.DecodeLastRuneInString(s[:i])
			next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
			if joiningScript(prev) && joiningScript(next) {
				continue
			}
			if r == 0x200d && (unicode.Is(unicode.So, prev) || unicode.Is(unicode.Sk, prev) || prev == 0xfe0f) && unicode.Is(unicode.So, next) {
				continue
			}
		}
		name := formatNames[r]
		if name == "" {
			name = "format character"
		}
		return fmt.Sprintf("U+%04X (%s) at byte %d", r, name, i), true
	}
	return "", false
}

// joiningScript reports a letter or mark of a script other than Latin,
// Greek, Cyrillic and the common characters: one where a zero-width
// (non-)joiner can change the shape of a word.
func joiningScript(r rune) bool {
	if !unicode.IsLetter(r) && !unicode.IsMark(r) {
		return false
	}
	return !unicode.In(r, unicode.Latin, unicode.Greek, unicode.Cyrillic, unicode.Common, unicode.Inherited) || unicode.IsMark(r) && !unicode.In(r, unicode.Latin)
}

var formatNames = map[rune]string{
	0x00ad: "soft hyphen", 0x061c: "Arabic letter mark", 0x180e: "Mongolian vowel separator",
	0x200b: "zero-width space", 0x200c: "zero-width non-joiner", 0x200d: "zero-width joiner",
	0x200e: "left-to-right mark", 0x200f: "right-to-left mark",
	0x202a: "left-to-right embedding", 0x202b: "right-to-left embedding", 0x202c: "pop directional formatting",
	0x202d: "left-to-right override", 0x202e: "right-to-left override",
	0x2060: "word joiner", 0x2066: "left-to-right isolate", 0x2067: "right-to-left isolate",
	0x2068: "first strong isolate", 0x2069: "pop directional isolate", 0xfeff: "byte order mark",
}

var (
	reNumber = regexp.MustCompile(`\d+(?:[.,:/]\d+)*`)
	reMonth  = regexp.MustCompile(`\b(?:January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\b`)
)

// numberKey normalises a number as written: thousands separators (a comma
// between digits) are dropped, so "2,340" and "2340" are the same number.
func numberKey(s string) string { return strings.ReplaceAll(s, ",", "") }

// missingNumbers returns the numbers of claim (digit runs with their
// separators, "1,200", "3.6", "16/10/1898") whose normalised form is not
// among the numbers of src, and not a part of one ("16" inside "16.5" is
// not enough: it must be a whole number there or a part split by a
// separator, e.g. "1898" of "16/10/1898"). Sorted, without repeats.
func missingNumbers(claim, src string) []string {
	have := map[string]bool{}
	for _, n := range reNumber.FindAllString(src, -1) {
		have[numberKey(n)] = true
		for _, part := range strings.FieldsFunc(n, func(r rune) bool { return r == '.' || r == ',' || r == ':' || r == '/' }) {
			have[part] = true
		}
	}
	var missing []string
	seen := map[string]bool{}
	for _, n := range reNumber.FindAllString(claim, -1) {
		k := numberKey(strings.TrimRight(n, ".,:/"))
		if !have[k] && !seen[k] {
			seen[k] = true
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	return missing
}

// missingMonths returns month names (capitalised, full or abbreviated) in
// claim that the source does not contain, case-insensitively.
func missingMonths(claim, src string) []string {
	lsrc := strings.ToLower(src)
	var missing []string
	seen := map[string]bool{}
	for _, m := range reMonth.FindAllString(claim, -1) {
		if !seen[m] && !strings.Contains(lsrc, strings.ToLower(m)) {
			seen[m] = true
			missing = append(missing, m)
		}
	}
	sort.Strings(missing)
	return missing
}

// printer renders schema errors in English.
var printer = message.NewPrinter(language.English)

// leaves returns the innermost errors of a validation error tree.
func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

// shortErr is err's message cut to one line of at most 200 bytes.
func shortErr(err error) string {
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
