package production_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestOnlyTheKeeperStartsProcesses: outside tests, supervisor.Start is
// called by the keeper alone (internal/production/keeper.go): every
// start of an engine is recorded, detached and verified one way. The scan
// reads every Go file of the module under cmd/ and internal/.
func TestOnlyTheKeeperStartsProcesses(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var callers []string
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Start" {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "supervisor" {
						rel, _ := filepath.Rel(root, path)
						callers = append(callers, rel+":"+strings.TrimPrefix(fset.Position(call.Pos()).String(), path+":"))
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(callers) != 1 || !strings.HasPrefix(callers[0], filepath.Join("internal", "production", "keeper.go")+":") {
		t.Errorf("supervisor.Start is called from %v; want only internal/production/keeper.go (call production.Keeper instead)", callers)
	}
}
