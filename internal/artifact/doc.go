// Package artifact pins and verifies model artifacts: a local directory of
// model files (weight shards in safetensors or GGUF, config, tokenizer and
// chat template files) tied to an immutable upstream revision.
//
// It owns:
//   - the manifest format ("hiro.artifact/v1": repository id, 40-hex commit,
//     every file's relative path, bytes and SHA-256, one digest over all of
//     it) and its JSON Schema (schemas/artifact-manifest.schema.json, generated
//     from the Manifest type by JSONSchema);
//   - Pin, which walks a directory and hashes every file in parallel (bounded
//     by runtime.NumCPU), and Verify, which reports missing, changed and extra
//     files against a manifest;
//   - the Hugging Face cache layout (models--ORG--NAME/snapshots/REV/ whose
//     files are symlinks into blobs/), including the cross-check of a blob
//     named by its SHA-256 against the hash of its content;
//   - atomic manifest files (Write: temp file in the same directory, fsync,
//     rename) and strict loading (Load: unknown keys, a bad revision or a
//     digest that does not match the content are errors).
//
// The qualification "artifact" gate calls Verify and records Report.Digest in
// the evidence; the CLI (internal/cli/cmd_artifact.go) calls Pin, Write and
// Verify.
//
// It must not touch anything else: it never writes into the artifact
// directory or the Hugging Face cache (it only reads them), never downloads,
// never follows a symlink out of the directory (out of the repository's cache
// directory for the Hugging Face layout), and knows nothing of backends,
// plans or evidence beyond returning a Report.
package artifact
