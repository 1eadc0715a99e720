// Package evidence owns the evidence document of a qualification campaign
// (docs/design.md "Evidence" and "Contracts other tools read"): its Go types,
// the JSON Schema generated from them (schemas/evidence.schema.json), the
// atomic writer, and the public copy that leaves out local paths,
// environment values and per-file hashes.
//
// Gate results are typed (results.go; since schema v2). The format is v3
// (SchemaID); Load and Validate still read v2 documents (v3 only adds
// optional fields; schema_v2.json is v2's schema, frozen) and v1 documents
// (the journal keeps them), upgrading v1's untyped gate results to the
// typed fields.
//
// It must not run gates or start processes: package qualify fills it.
package evidence
