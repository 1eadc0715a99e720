package evidence

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hiro-dev/hiro/internal/failure"
)

// SchemaPath is where the generated schema is committed, relative to the
// module root.
const SchemaPath = "schemas/evidence.schema.json"

// JSONSchema returns the evidence JSON Schema generated from the Go types
// (fields without omitempty are required), indented, with a final newline.
func JSONSchema() []byte {
	r := &jsonschema.Reflector{ExpandedStruct: true, Mapper: vocabulary}
	s := r.Reflect(&Evidence{})
	s.ID = SchemaURL
	s.Title = "hiro campaign evidence (" + SchemaID + ")"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// vocabulary gives the failure vocabulary's types their enums (docs/design.md
// "Failure vocabulary"): a class or phase outside it does not validate.
func vocabulary(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeOf(failure.Class("")):
		s := &jsonschema.Schema{Type: "string", Description: "failure class (docs/design.md vocabulary)"}
		for _, c := range failure.Classes {
			s.Enum = append(s.Enum, string(c))
		}
		return s
	case reflect.TypeOf(failure.Confidence("")):
		s := &jsonschema.Schema{Type: "string", Description: "how well a rule explains the failure (docs/failure-classes.md, Confidence)"}
		for _, c := range failure.Confidences {
			s.Enum = append(s.Enum, string(c))
		}
		return s
	case reflect.TypeOf(failure.Phase("")):
		s := &jsonschema.Schema{Type: "string", Description: "engine phase (docs/design.md vocabulary)"}
		for _, p := range failure.Phases {
			s.Enum = append(s.Enum, string(p))
		}
		return s
	}
	return nil
}

// schemaV1 and schemaV2 are the v1 and v2 schemas as they were published
// (frozen: never regenerated), to validate documents of those versions
// (the journal keeps them).
var (
	//go:embed schema_v1.json
	schemaV1 []byte
	//go:embed schema_v2.json
	schemaV2 []byte
)

// SchemaURL is the $id of the evidence JSON Schema (JSONSchema), by which
// validation errors name it.
const SchemaURL = "https://hiro.dev/schemas/evidence.schema.json"

// ErrNotEvidence is wrapped by Validate when doc is not hiro evidence at all:
// not JSON, not an object, or a "schema" key other than SchemaID or
// an older version's (an artifact manifest, a backend record, any other JSON).
var ErrNotEvidence = errors.New("not hiro evidence")

// passEvidence says what to pass instead of a document that is not evidence.
const passEvidence = "pass the " + PublicFile + " that hiro qualify wrote in a campaign's folder (<evidence folder>/<campaign id>/" + PublicFile + ")"

// Validate checks doc (a JSON document) against the evidence schema of its
// own "schema" id: this format's, or v2's or v1's (as published) for a
// document of that version. A document
// that is not evidence (see ErrNotEvidence) is said so, with what its
// "schema" key holds and what was expected; one that is evidence but does
// not match its schema gets the schema's id and the places that differ.
func Validate(doc []byte) error {
	v, err := jsv.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("%w: not a JSON object (%v), want one with \"schema\": %q; %s", ErrNotEvidence, err, SchemaID, passEvidence)
	}
	head, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("%w: not a JSON object, want one with \"schema\": %q; %s", ErrNotEvidence, SchemaID, passEvidence)
	}
	id, _ := head["schema"].(string)
	text := JSONSchema()
	switch {
	case id == SchemaV1:
		text = schemaV1
	case id == SchemaV2:
		text = schemaV2
	case id != SchemaID:
		got := "has no \"schema\" key"
		if v, ok := head["schema"]; ok {
			b, _ := json.Marshal(v)
			got = fmt.Sprintf("has \"schema\": %s", b)
		}
		return fmt.Errorf("%w: the document %s, want %q (or %q, %q); %s", ErrNotEvidence, got, SchemaID, SchemaV2, SchemaV1, passEvidence)
	}
	sch, err := compile(text)
	if err != nil {
		return err
	}
	if err := sch.Validate(v); err != nil {
		var ve *jsv.ValidationError
		if errors.As(err, &ve) {
			// The library's first line names the schema by its URL; the
			// rest is one line per place that differs.
			_, detail, _ := strings.Cut(ve.Error(), "\n")
			return fmt.Errorf("evidence (%s) does not match its schema %s: %s", id, SchemaURL, strings.TrimSpace(detail))
		}
		return err
	}
	return nil
}

func compile(text []byte) (*jsv.Schema, error) {
	raw, err := jsv.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, err
	}
	c := jsv.NewCompiler()
	if err := c.AddResource(SchemaURL, raw); err != nil {
		return nil, err
	}
	return c.Compile(SchemaURL)
}
