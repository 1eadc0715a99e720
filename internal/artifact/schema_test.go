package artifact

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var update = flag.Bool("update", false, "rewrite schemas/artifact-manifest.schema.json from the Go type")

// schemaFile is the published schema, relative to this package.
var schemaFile = filepath.Join("..", "..", "schemas", "artifact-manifest.schema.json")

// TestSchemaFileUpToDate regenerates the JSON Schema from Manifest and
// compares it with the committed file; run with -update to refresh it.
func TestSchemaFileUpToDate(t *testing.T) {
	got, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(schemaFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeAtomic(schemaFile, got); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/artifact -run TestSchemaFileUpToDate -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: the Manifest type changed; run go test ./internal/artifact -run TestSchemaFileUpToDate -update and commit it", schemaFile)
	}
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource(SchemaURL, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(SchemaURL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPinnedManifestValidatesAgainstSchema pins a real directory (plain and
// Hugging Face cache) and validates the written JSON against the published
// schema; a manifest with a branch name or an unknown key must not.
func TestPinnedManifestValidatesAgainstSchema(t *testing.T) {
	s := compileSchema(t)
	plain, _ := plainDir(t)
	_, snap, _ := hfCache(t)
	for _, dir := range []string{plain, snap} {
		m, err := Pin(context.Background(), dir, testRepo, testRev, PinOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(doc); err != nil {
			t.Errorf("%s manifest does not validate: %v\n%s", m.Layout, err, b)
		}
		for name, edit := range map[string]func(map[string]any){
			"branch revision": func(v map[string]any) { v["revision"] = "main" },
			"unknown key":     func(v map[string]any) { v["extra"] = 1 },
			"short sha256":    func(v map[string]any) { v["files"].([]any)[0].(map[string]any)["sha256"] = "abc" },
			"no files":        func(v map[string]any) { delete(v, "files") },
		} {
			var v map[string]any
			json.Unmarshal(b, &v)
			edit(v)
			bad, _ := json.Marshal(v)
			doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(bad))
			if s.Validate(doc) == nil {
				t.Errorf("schema accepts a manifest with %s", name)
			}
		}
	}
}
