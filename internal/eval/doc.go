// Package eval owns the deterministic scoring of extracted claims against
// a frozen corpus's gold claims: token-overlap similarity, one-to-one
// matching, precision, coverage, F1, grounding rate, schema-valid rate and
// duplicate rate, overall and per document, as a Report whose JSON is
// byte-identical for the same inputs.
//
// Documents the run beside the claims file has no finished record of (its
// progress.jsonl: another shard's, an unfinished run) are reported as
// Missing and left out of the scores unless Options.ScoreMissing. Claim
// lines after progress.jsonl's last checkpoint (a document written in part
// by a killed run) are not scored. A stats.json whose claim, checkpoint or
// byte counts disagree with the files beside it (a later run was killed
// before rewriting it) is not used: the schema-valid rate stays null and
// Report.StatsIgnored says why.
//
// Claims files are read strictly (ClaimLineShape): a line that is not a
// claim object, lacks the document id or the text, has a field of the
// wrong type or a span outside its document is an error naming the file
// and the line, never scored with zero values.
//
// It reads claims.jsonl, stats.json and progress.jsonl as written by package extract (by
// their JSON field names, without importing it) and must not send
// requests or change any file.
package eval
