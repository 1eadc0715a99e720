package journal

import (
	"bytes"
	"html"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// rawHTMLRenderer renders whatever Markdown parses as raw HTML as the text
// it is, escaped: the placeholders of package redact (<redacted>, <home>,
// <project>, ...), which entries are stored with, and any tag a writer
// typed (<details>, <script>, an HTML snippet in prose). goldmark without
// raw HTML writes "<!-- raw HTML omitted -->" in their place, so the text
// vanished from the page without a word ("Key: and Bearer and
// /secret/path"; a new user's "<details>" paragraph, issue 26 P7). No
// markup from an entry is ever rendered as markup; only an HTML comment
// (<!-- ... -->), a note the writer hid on purpose, is left out.
type rawHTMLRenderer struct{}

// RegisterFuncs implements renderer.NodeRenderer.
func (rawHTMLRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindRawHTML, renderRawHTMLAsText)
	reg.Register(ast.KindHTMLBlock, renderHTMLBlockAsText)
}

// rawHTMLRendering is rawHTMLRenderer at a priority ahead of goldmark's
// HTML renderer (1000), so its functions replace goldmark's.
var rawHTMLRendering = util.Prioritized(rawHTMLRenderer{}, 100)

// renderRawHTMLAsText writes an inline tag (<b>, </b>, <redacted>) as its
// text, escaped, where it stood.
func renderRawHTMLAsText(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.RawHTML)
	if n.Segments.Len() > 0 {
		if first := n.Segments.At(0); isComment(first.Value(source)) {
			return ast.WalkSkipChildren, nil
		}
	}
	for i := 0; i < n.Segments.Len(); i++ {
		seg := n.Segments.At(i)
		_, _ = w.WriteString(html.EscapeString(string(seg.Value(source))))
	}
	return ast.WalkSkipChildren, nil
}

// isComment reports whether raw HTML is an HTML comment (<!-- ... -->):
// the one kind a writer means to hide, so it is left out of the page.
func isComment(raw []byte) bool { return bytes.HasPrefix(raw, []byte("<!--")) }

// renderHTMLBlockAsText writes an HTML block (a line opening with a tag,
// such as "<redacted>", "<home>/models/x" or "<details>", and the lines
// after it up to a blank line, or a <script> ... </script> block) as a
// paragraph of its text, escaped, its line breaks kept; a comment block
// is left out.
func renderHTMLBlockAsText(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.HTMLBlock)
	var text []byte
	for i := 0; i < n.Lines().Len(); i++ {
		line := n.Lines().At(i)
		text = append(text, line.Value(source)...)
	}
	if n.HasClosure() {
		text = append(text, n.ClosureLine.Value(source)...)
	}
	if n.HTMLBlockType == ast.HTMLBlockType2 {
		return ast.WalkContinue, nil // a comment: the writer's note to self
	}
	lines := strings.Split(string(bytes.TrimSpace(text)), "\n")
	for i, l := range lines {
		lines[i] = html.EscapeString(strings.TrimRight(l, "\r"))
	}
	_, _ = w.WriteString("<p>" + strings.Join(lines, "<br>\n") + "</p>\n")
	return ast.WalkContinue, nil
}
