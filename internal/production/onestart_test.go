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
// start of an engine is recorded, detached and verified one way.
func TestOnlyTheKeeperStartsProcesses(t *testing.T) {
	if callers := supervisorCallers(t, "Start"); len(callers) != 1 || !inKeeper(callers[0]) {
		t.Errorf("supervisor.Start is called from %v; want only internal/production/keeper.go (call production.Keeper instead)", callers)
	}
}

// TestOnlyTheKeeperStopsRecordedProcesses: outside tests, a recorded
// process is stopped (supervisor.StopRecorded by name, StopRecord by its
// record) by the keeper alone: 'hiro backend stop', the router, the
// campaign and its recovery call Keeper.StopRecorded or StopRecord.
func TestOnlyTheKeeperStopsRecordedProcesses(t *testing.T) {
	for _, fn := range []string{"StopRecorded", "StopRecord"} {
		callers := supervisorCallers(t, fn)
		var outside []string
		for _, c := range callers {
			if !inKeeper(c) {
				outside = append(outside, c)
			}
		}
		if len(outside) > 0 || len(callers) == 0 {
			t.Errorf("supervisor.%s is called from %v; want only internal/production/keeper.go (call production.Keeper.%s instead)", fn, callers, fn)
		}
	}
}

func inKeeper(caller string) bool {
	return strings.HasPrefix(caller, filepath.Join("internal", "production", "keeper.go")+":")
}

// supervisorCallers returns where (file:line:column, relative to the
// module) a Go file of the module under cmd/ or internal/, tests left
// out, calls supervisor.<fn>.
func supervisorCallers(t *testing.T, fn string) []string {
	t.Helper()
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
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == fn {
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
	return callers
}
