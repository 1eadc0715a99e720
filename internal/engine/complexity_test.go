package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// maxComplexity is the bound on the cyclomatic complexity of every
// function of this package (issue 22: the decision is a table walked by
// a short loop, not a branch per fix).
const maxComplexity = 15

// cyclomatic is a function's cyclomatic complexity as gocyclo counts it:
// 1, plus one per if, for, range, non-default case or select clause, and
// per && and ||.
func cyclomatic(fn *ast.FuncDecl) int {
	c := 1
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			c++
		case *ast.CaseClause:
			if x.List != nil {
				c++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				c++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				c++
			}
		}
		return true
	})
	return c
}

// TestCyclomaticComplexity fails when a function of the package (tests
// aside) is more complex than maxComplexity. Tracker.Classify measured 94
// before the classifier became a table.
func TestCyclomaticComplexity(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			seen++
			if c := cyclomatic(fn); c > maxComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d, above %d: make the decision a table entry or split the function",
					fset.Position(fn.Pos()), fn.Name.Name, c, maxComplexity)
			}
		}
	}
	if seen < 50 {
		t.Fatalf("measured %d functions: the package's files were not found", seen)
	}
}

// TestCyclomaticCounts checks the counter on known shapes, so that the
// bound above cannot pass by counting nothing.
func TestCyclomaticCounts(t *testing.T) {
	src := `package p
func a() {}
func b(x int) int { if x > 0 && x < 9 || x == 20 { return 1 }; for i := 0; i < x; i++ {}; switch x { case 1: case 2: default: }; return 0 }`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 1, "b": 7}
	for _, d := range f.Decls {
		fn := d.(*ast.FuncDecl)
		if got := cyclomatic(fn); got != want[fn.Name.Name] {
			t.Errorf("cyclomatic(%s) = %d, want %d", fn.Name.Name, got, want[fn.Name.Name])
		}
	}
}
