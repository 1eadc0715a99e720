package evidence

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"

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
	s.ID = "https://hiro.dev/schemas/evidence.schema.json"
	s.Title = "hiro campaign evidence (" + SchemaID + ")"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// vocabulary gives the failure vocabulary's types their enums (DESIGN.md
// "Failure vocabulary"): a class or phase outside it does not validate.
func vocabulary(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeOf(failure.Class("")):
		s := &jsonschema.Schema{Type: "string", Description: "failure class (DESIGN.md vocabulary)"}
		for _, c := range failure.Classes {
			s.Enum = append(s.Enum, string(c))
		}
		return s
	case reflect.TypeOf(failure.Phase("")):
		s := &jsonschema.Schema{Type: "string", Description: "engine phase (DESIGN.md vocabulary)"}
		for _, p := range failure.Phases {
			s.Enum = append(s.Enum, string(p))
		}
		return s
	}
	return nil
}

// schemaV1 is the v1 schema as it was published, to validate v1 documents
// (the journal keeps them).
//
//go:embed schema_v1.json
var schemaV1 []byte

// Validate checks doc (a JSON document) against the evidence schema of its
// own "schema" id: this format's, or v1's for a v1 document.
func Validate(doc []byte) error {
	var head struct {
		Schema string `json:"schema"`
	}
	_ = json.Unmarshal(doc, &head)
	text := JSONSchema()
	if head.Schema == SchemaV1 {
		text = schemaV1
	}
	sch, err := compile(text)
	if err != nil {
		return err
	}
	v, err := jsv.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("evidence is not JSON: %w", err)
	}
	return sch.Validate(v)
}

func compile(text []byte) (*jsv.Schema, error) {
	raw, err := jsv.UnmarshalJSON(bytes.NewReader(text))
	if err != nil {
		return nil, err
	}
	c := jsv.NewCompiler()
	if err := c.AddResource("evidence.schema.json", raw); err != nil {
		return nil, err
	}
	return c.Compile("evidence.schema.json")
}
