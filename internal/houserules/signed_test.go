package houserules

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSignedNumbersUseOneHelper: hiro prints one minus sign, ASCII's
// hyphen-minus, in every signed number of its prose (report.md, the
// journal, the terminal; issue 26 N1: "between -0.068 and -0.022 ...
// holds the margin −0.05"). No string literal of non-test code holds the
// Unicode minus sign (U+2212), and none formats a signed float with a
// "%+" verb: stats.Signed is the one helper that writes the sign.
func TestSignedNumbersUseOneHelper(t *testing.T) {
	root := repoRoot(t)
	plusVerb := regexp.MustCompile(`%\+[0-9.*]*[eEfFgG]`)
	checked := 0
	for _, path := range sourceFiles(t, root) {
		rel, _ := filepath.Rel(root, path)
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || !(strings.HasPrefix(rel, "internal/") || strings.HasPrefix(rel, "cmd/")) {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			if strings.ContainsRune(s, '\u2212') {
				t.Errorf("%s: a string holds the Unicode minus sign (U+2212): write ASCII's '-' (stats.Signed for a signed number): %.80s", fset.Position(lit.Pos()), s)
			}
			if m := plusVerb.FindString(s); m != "" {
				t.Errorf("%s: %q formats a signed number; use stats.Signed, the one helper that writes the sign", fset.Position(lit.Pos()), m)
			}
			return true
		})
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked: the walk lost the source tree", checked)
	}
}
