// Package eval owns the deterministic scoring of extracted claims against
// a frozen corpus's gold claims: token-overlap similarity, one-to-one
// matching, precision, coverage, F1, grounding rate, schema-valid rate and
// duplicate rate, overall and per document, as a Report whose JSON is
// byte-identical for the same inputs.
//
// It reads claims.jsonl and stats.json as written by package extract (by
// their JSON field names, without importing it) and must not send
// requests or change any file.
package eval
