// Package evidence owns the evidence document of a qualification campaign
// (docs/design.md "Evidence" and "Contracts other tools read"): its Go types,
// the JSON Schema generated from them (schemas/evidence.schema.json), the
// atomic writer, and the public copy that leaves out local paths,
// environment values and per-file hashes.
//
// Gate results are typed (results.go; schema v2). Load and Validate still
// read v1 documents (the journal keeps them), upgrading v1's untyped gate
// results to the typed fields.
//
// It must not run gates or start processes: package qualify fills it.
package evidence
