package shadow

import (
	"strings"
	"sync"

	jsv "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/eval"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/prompt"
)

// Kinds of request a pair is scored as.
const (
	KindExtraction = "extraction"
	KindStructured = "structured"
	KindText       = "text"
)

// request is what scoring reads of a mirrored request.
type request struct {
	kind   string
	src    extract.Source // extraction: what the claims are checked against
	schema *jsv.Schema    // structured: the response_format schema
}

// classify reads a request body: an extraction request is a chat whose
// system message is the extraction prompt's (prompt.SystemText, the text
// prompt.SystemHash hashes) and whose user message is in the extraction
// layout (prompt.ParseUser); a structured request has a response_format
// of type json_schema whose schema compiles; anything else is text.
// body must not change while the request is in use (src may point into
// it).
func classify(body []byte) request {
	v := gjson.Parse(view(body))
	var system, user string
	var haveSystem, haveUser bool
	v.Get("messages").ForEach(func(_, m gjson.Result) bool {
		switch role := m.Get("role").String(); {
		case role == "system" && !haveSystem:
			system, haveSystem = m.Get("content").String(), true
		case role == "user" && !haveUser:
			user, haveUser = m.Get("content").String(), true
		}
		return !haveSystem || !haveUser
	})
	if haveSystem && haveUser && system == prompt.SystemText {
		if in, ok := prompt.ParseUser(user); ok {
			parts := append(append(append([]string{}, in.HeadingPath...), in.Before...), in.Target)
			parts = append(parts, in.After...)
			return request{kind: KindExtraction, src: extract.Source{Sentence: in.Target, Window: strings.Join(parts, "\n")}}
		}
	}
	if rf := v.Get("response_format"); rf.Get("type").String() == "json_schema" {
		if s := rf.Get("json_schema.schema"); s.IsObject() {
			if sch, err := schemas.compile(s.Raw); err == nil {
				return request{kind: KindStructured, schema: sch}
			}
		}
	}
	return request{kind: KindText}
}

// schemaCache holds the schemas of recent structured requests, compiled
// once (a schema's compilation is most of a structured pair's cost, and
// one application sends the same schema again and again): at most
// schemaCacheSize, all dropped when full. A schema that does not compile
// is compiled again each time.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*jsv.Schema
}

const schemaCacheSize = 64

var schemas = &schemaCache{m: map[string]*jsv.Schema{}}

func (c *schemaCache) compile(raw string) (*jsv.Schema, error) {
	c.mu.Lock()
	sch := c.m[raw]
	c.mu.Unlock()
	if sch != nil {
		return sch, nil
	}
	sch, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= schemaCacheSize {
		clear(c.m)
	}
	c.m[strings.Clone(raw)] = sch
	c.mu.Unlock()
	return sch, nil
}

func compileSchema(raw string) (*jsv.Schema, error) {
	doc, err := jsv.UnmarshalJSON(strings.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsv.NewCompiler()
	if err := c.AddResource("request.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("request.json")
}

// validJSON reports whether text parses and validates against s.
func validJSON(s *jsv.Schema, text string) bool {
	doc, err := jsv.UnmarshalJSON(strings.NewReader(text))
	return err == nil && s.Validate(doc) == nil
}

// claimScore is one extraction reply validated: its claims, those whose
// quote is in the sentence (grounded), those every validator accepted,
// and whether the reply validated against the claims schema.
type claimScore struct {
	claims, grounded, accepted int
	schemaValid                bool
	texts                      []string // accepted claims' texts, for matching
}

// scoreClaims validates an extraction reply with the same validators as
// `hiro extract` (a reply cut at max_tokens is rejected whole).
func scoreClaims(v *extract.Validator, r reply, src extract.Source) claimScore {
	o := v.Validate(r.text, r.finish, src)
	cs := claimScore{claims: len(o.Good) + len(o.Bad), accepted: len(o.Good), schemaValid: o.SchemaValid}
	cs.grounded = len(o.Good)
	for _, b := range o.Bad {
		grounded := true
		for _, rs := range b.Reasons {
			if rs.Code == extract.ReasonQuoteNotFound || rs.Code == extract.ReasonSchema {
				grounded = false
			}
		}
		if grounded {
			cs.grounded++
		}
	}
	for _, g := range o.Good {
		cs.texts = append(cs.texts, g.Text)
	}
	return cs
}

// matched is how many of the candidate's accepted claims match
// production's one to one (package eval's similarity and threshold).
func matched(cand, prod []string) int {
	return len(eval.Match(cand, prod, eval.DefaultThreshold))
}

// normalized is text as agreement compares it: corpus.Tokens joined.
func normalized(s string) string { return strings.Join(corpus.Tokens(s), " ") }
