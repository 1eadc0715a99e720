// Package redact is the one redaction step every public output of hiro
// passes through: the public evidence (evidence.json), report.md, and the
// journal (entry JSON, copied evidence, every page of the site). A user's
// own terminal output (diagnose --json, backend status) is not public and
// is not redacted.
//
// What it removes:
//   - secrets registered at run time with Add (environment values of
//     backend profiles and launch variants, values following secret-looking
//     flags, API keys read from an env variable or a file), wherever they
//     appear, also in their JSON- and HTML-escaped forms;
//   - arguments that follow secret-looking flags (--api-key, --hf-token,
//     --token, --password, --secret, --auth..., --access-token, also in the
//     --flag=value form);
//   - well-known token shapes in free text: OpenAI-style keys (sk-...),
//     Hugging Face tokens (hf_...), "Bearer ..." credentials, and
//     key/value pairs whose key looks secret (vLLM's echo of its non-default
//     args: 'api_key': ['...'], HF_TOKEN=..., "token": "...");
//   - local paths under the user's home and the folders registered with
//     AddPath (the configuration's folder, the state folder), replaced by
//     placeholders (<home>, <project>, ...) so that a root-cause line keeps
//     its meaning ("<home>/models/x/config.json not found").
//
// Every secret is replaced by Placeholder ("<redacted>"). The package keeps
// one process-wide registry (Default); callers register what they learn
// (Add, AddPath, AddEnv, AddArgs) and outputs call String, Value, Text,
// Markdown or HTML at the point where public bytes are written. Markdown
// (report.md) writes placeholders as code spans (`<project>`), which read
// the same in a terminal and rendered; HTML writes them escaped.
//
// It owns no file and no output of its own, and must not import any other
// hiro package (everything that writes public bytes imports it).
package redact
