package journal

import (
	"bytes"
	"html"
	"regexp"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"

	"github.com/hiro-dev/hiro/internal/redact"
)

// placeholderRenderer renders the placeholders of package redact
// (<redacted>, <home>, <project>, ...) that Markdown parses as raw HTML
// as the text they are: entries are stored redacted, and goldmark, with
// raw HTML disabled, would otherwise write "<!-- raw HTML omitted -->" in
// their place ("Key: and Bearer and /secret/path" on the page). Any other
// raw HTML is still omitted.
type placeholderRenderer struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (placeholderRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTMLPlaceholder)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlockPlaceholder)
}

// placeholderRendering is placeholderRenderer at a priority ahead of
// goldmark's HTML renderer (1000), so its functions replace goldmark's.
var placeholderRendering = util.Prioritized(placeholderRenderer{}, 100)

func renderRawHTMLPlaceholder(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	var raw []byte
	for i := 0; i < n.Segments.Len(); i++ {
		seg := n.Segments.At(i)
		raw = append(raw, seg.Value(source)...)
	}
	if redact.IsPlaceholder(string(raw)) {
		_, _ = w.WriteString(html.EscapeString(string(raw)))
	} else {
		_, _ = w.WriteString("<!-- raw HTML omitted -->")
	}
	return ast.WalkSkipChildren, nil
}

// leadingTag is the tag an HTML block of CommonMark's kind 7 opens with
// (a line such as "<redacted>" or "<home>/models/x" alone).
var leadingTag = regexp.MustCompile(`^[ \t]*(<[A-Za-z][A-Za-z0-9-]*>)`)

// renderHTMLBlockPlaceholder writes an HTML block that opens with a
// placeholder (a paragraph whose first line starts with one) as a
// paragraph of its text, escaped; any other HTML block is omitted, as
// goldmark does without raw HTML.
func renderHTMLBlockPlaceholder(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	n := node.(*ast.HTMLBlock)
	var text []byte
	for i := 0; i < n.Lines().Len(); i++ {
		line := n.Lines().At(i)
		text = append(text, line.Value(source)...)
	}
	m := leadingTag.FindSubmatch(text)
	if m == nil || !redact.IsPlaceholder(string(m[1])) {
		if entering || n.HasClosure() {
			_, _ = w.WriteString("<!-- raw HTML omitted -->\n")
		}
		return ast.WalkContinue, nil
	}
	if entering {
		_, _ = w.WriteString("<p>" + html.EscapeString(string(bytes.TrimSpace(text))) + "</p>\n")
	}
	return ast.WalkContinue, nil
}
