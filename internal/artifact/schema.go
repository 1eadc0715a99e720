package artifact

import (
	"encoding/json"

	"github.com/invopop/jsonschema"
)

// SchemaURL is the $id of the manifest's JSON Schema, published in the
// repository as schemas/artifact-manifest.schema.json.
const SchemaURL = "https://github.com/hiro-dev/hiro/schemas/artifact-manifest.schema.json"

// JSONSchema returns the JSON Schema (draft 2020-12) of Manifest, generated
// from the Go type with github.com/invopop/jsonschema: unknown keys are not
// allowed, and every key except dir and files[].mtime is required. The bytes
// are indented JSON with a trailing newline, exactly the committed file.
func JSONSchema() ([]byte, error) {
	r := &jsonschema.Reflector{ExpandedStruct: true}
	s := r.Reflect(&Manifest{})
	s.ID = SchemaURL
	s.Title = "hiro artifact manifest"
	s.Description = "A model artifact pinned to an immutable upstream revision: every file's path, size and SHA-256, and one digest over them (" + SchemaID + ")."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
