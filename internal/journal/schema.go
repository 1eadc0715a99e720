package journal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	invschema "github.com/invopop/jsonschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SchemaID is the $id of the entry schema; the file is committed at
// schemas/journal-entry.schema.json in the repository.
const SchemaID = "https://github.com/hiro-dev/hiro/schemas/journal-entry.schema.json"

// SchemaJSON returns the JSON Schema (draft 2020-12) of Entry, generated from
// the Go type, indented with two spaces and ending in a newline. It is the
// content of schemas/journal-entry.schema.json (a test keeps them equal).
func SchemaJSON() []byte {
	schemaOnce.Do(func() {
		r := &invschema.Reflector{ExpandedStruct: true}
		s := r.Reflect(&Entry{})
		s.ID = SchemaID
		s.Title = "hiro journal entry"
		s.Description = "One entry of a hiro development journal (internal/journal.Entry)."
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			panic(fmt.Sprintf("journal: marshal schema: %v", err))
		}
		schemaBytes = append(b, '\n')
	})
	return schemaBytes
}

var (
	schemaOnce     sync.Once
	schemaBytes    []byte
	validatorOnce  sync.Once
	validator      *jsonschema.Schema
	validatorError error
)

// entryValidator compiles SchemaJSON once, with format assertions on (so a
// timestamp that is not RFC 3339 date-time fails).
func entryValidator() (*jsonschema.Schema, error) {
	validatorOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON()))
		if err != nil {
			validatorError = fmt.Errorf("journal: parse entry schema: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if err := c.AddResource(SchemaID, doc); err != nil {
			validatorError = fmt.Errorf("journal: load entry schema: %w", err)
			return
		}
		validator, validatorError = c.Compile(SchemaID)
	})
	return validator, validatorError
}

// ValidateJSON checks raw entry JSON against the entry schema. It returns
// nil when valid, or an error listing every violation with its JSON pointer.
func ValidateJSON(data []byte) error {
	v, err := entryValidator()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return v.Validate(doc)
}
