// Package corpus owns hiro's documents and frozen corpora: reading plain
// text and Markdown documents with stable ids, splitting them into
// sentences (github.com/neurosnap/sentences, its English training data)
// with byte spans (counted from the first byte of the text as read; a
// leading UTF-8 BOM is in no sentence but counts, see Split) and Markdown
// heading paths, the text normalisation that
// quote matching and scoring share, and the frozen corpus format (docs/,
// gold.jsonl, manifest.json with the SHA-256 of every file) with its
// importer for the Factcheck-GPT benchmark and its verifier.
//
// The project's own corpus, corpora/hiro-mini (five short documents
// written for hiro: plain text and Markdown with headings and lists,
// numbers and dates, one hostile document with markup and instructions),
// has 32 gold claims and is what unit tests use. After editing it, reseal
// it with: go test ./internal/corpus -run TestMiniCorpusFrozen -update
//
// It must not send requests, render prompts or score claims: package
// extract renders and validates, package eval scores.
package corpus
