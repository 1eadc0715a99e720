// Package journal owns hiro's development journal: the Entry type and its
// published JSON Schema, the journal directory (one JSON file per entry under
// entries/, and published.json with the hash of every published entry), the
// static site built from it (index, entry pages, alias pages, each entry's
// JSON, an Atom feed), the checks run over both, and the mapping from a
// campaign's public evidence to an entry.
//
// It reads evidence (package evidence) but never writes it, and it never
// touches backends, production or the configuration. Everything it renders
// goes through html/template, and Markdown through goldmark with raw HTML
// disabled: entry text can hold model output and quoted sources, which may
// contain markup. What Markdown takes for raw HTML (a tag a writer typed,
// the placeholders of redacted text: <redacted>, <home>) is shown as text.
package journal
