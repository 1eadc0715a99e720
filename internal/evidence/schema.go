package evidence

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"
	jsv "github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaPath is where the generated schema is committed, relative to the
// module root.
const SchemaPath = "schemas/evidence.schema.json"

// JSONSchema returns the evidence JSON Schema generated from the Go types
// (fields without omitempty are required), indented, with a final newline.
func JSONSchema() []byte {
	r := &jsonschema.Reflector{ExpandedStruct: true}
	s := r.Reflect(&Evidence{})
	s.ID = "https://hiro.dev/schemas/evidence.schema.json"
	s.Title = "hiro campaign evidence (" + SchemaID + ")"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// Validate checks doc (a JSON document) against the evidence schema.
func Validate(doc []byte) error {
	sch, err := compile()
	if err != nil {
		return err
	}
	v, err := jsv.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("evidence is not JSON: %w", err)
	}
	return sch.Validate(v)
}

func compile() (*jsv.Schema, error) {
	raw, err := jsv.UnmarshalJSON(bytes.NewReader(JSONSchema()))
	if err != nil {
		return nil, err
	}
	c := jsv.NewCompiler()
	if err := c.AddResource("evidence.schema.json", raw); err != nil {
		return nil, err
	}
	return c.Compile("evidence.schema.json")
}
