package qualify

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
)

var updatePlanRef = flag.Bool("update-plan-reference", false, "rewrite docs/plan.md from the plan's Go types")

// planReferencePath is the generated page, from this package's folder.
var planReferencePath = filepath.Join("..", "..", "docs", "plan.md")

// TestPlanReferenceIsCurrent: docs/plan.md is what the plan's Go types
// say (keys, TOML types, defaults filled by each kind's Validate, the doc
// comment of each field), so the reference cannot drift from the code.
// Refresh it with: go test ./internal/qualify -run TestPlanReference -update-plan-reference
func TestPlanReferenceIsCurrent(t *testing.T) {
	page := renderPlanReference(t)
	if *updatePlanRef {
		if err := os.WriteFile(planReferencePath, page, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	have, err := os.ReadFile(planReferencePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, page) {
		t.Errorf("docs/plan.md is not what the plan's types say; run: go test ./internal/qualify -run TestPlanReference -update-plan-reference")
	}
	types := typeDocs(t)
	for _, k := range Kinds() {
		if types[reflect.TypeOf(k.New()).Elem().Name()] == "" {
			continue // a kind a test registered
		}
		if !bytes.Contains(have, []byte("## `"+k.Name+"`")) {
			t.Errorf("docs/plan.md has no section for gate kind %s", k.Name)
		}
	}
}

// fieldDocs reads the doc comments of every struct field of this
// package's non-test files: type name → field name → comment (a field
// without one takes the comment of the field before it in a group, as
// "Env sets variables; EnvUnset removes them" covers both).
func fieldDocs(t *testing.T) map[string]map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return true
				}
				m := map[string]string{}
				prev := ""
				for _, fl := range st.Fields.List {
					text := prev
					if fl.Doc != nil {
						text = docParagraph(fl.Doc.Text())
					}
					for _, name := range fl.Names {
						m[name.Name] = text
					}
					prev = text
				}
				out[ts.Name.Name] = m
				return true
			})
		}
	}
	return out
}

// docParagraph joins a comment's lines and keeps its first paragraph.
func docParagraph(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n\n")
	return strings.Join(strings.Fields(s), " ")
}

// tomlType names a Go field type as the plan writes it.
func tomlType(t reflect.Type) string {
	if t == reflect.TypeOf(config.Duration{}) {
		return `duration ("30s")`
	}
	switch t.Kind() {
	case reflect.Pointer:
		return tomlType(t.Elem())
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "float"
	case reflect.Bool:
		return "boolean"
	case reflect.Map:
		return "table of " + tomlType(t.Elem()) + "s"
	case reflect.Slice:
		if e := t.Elem(); e.Kind() == reflect.Struct || (e.Kind() == reflect.Pointer && e.Elem().Kind() == reflect.Struct) {
			return "array of tables"
		}
		return "array of " + tomlType(t.Elem()) + "s"
	case reflect.Struct:
		return "table"
	}
	return t.String()
}

// defaultText renders a default value; "" when v is its type's zero.
func defaultText(v reflect.Value) string {
	if v.IsZero() {
		return ""
	}
	if d, ok := v.Interface().(config.Duration); ok {
		return fmt.Sprintf("`%q`", d.Duration.String())
	}
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.String {
		return fmt.Sprintf("`%q`", v.String())
	}
	return fmt.Sprintf("`%v`", v.Interface())
}

// dependent lists the fields whose default Validate works out from
// other keys (a zero section shows only one case of it).
var dependent = map[string]bool{"LaunchGate.MaxAttempts": true}

// refRow is one key of a table.
type refRow struct{ key, typ, def, meaning string }

// tableRows lists the keys of a struct value (embedded structs inline),
// with the defaults v holds and the doc comments of docs; nested tables
// (a struct, or an array of them) are returned to be rendered after.
func tableRows(v reflect.Value, docs map[string]map[string]string) (rows []refRow, nested []reflect.Type) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			r, n := tableRows(v.Field(i), docs)
			rows, nested = append(rows, r...), append(nested, n...)
			continue
		}
		key := strings.Split(f.Tag.Get("toml"), ",")[0]
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		def := defaultText(v.Field(i))
		if dependent[t.Name()+"."+f.Name] {
			def = "" // worked out from other keys: the meaning says how
		}
		rows = append(rows, refRow{key: key, typ: tomlType(f.Type), def: def, meaning: docs[t.Name()][f.Name]})
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && ft != reflect.TypeOf(config.Duration{}) {
			nested = append(nested, ft)
		}
	}
	return rows, nested
}

// writeTable writes rows as a Markdown table.
func writeTable(b *bytes.Buffer, rows []refRow) {
	b.WriteString("| key | type | default | meaning |\n| --- | --- | --- | --- |\n")
	for _, r := range rows {
		def := r.def
		if def == "" {
			def = "—"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", r.key, r.typ, def, strings.ReplaceAll(r.meaning, "|", `\|`))
	}
}

// renderPlanReference renders docs/plan.md from the registry and types.
func renderPlanReference(t *testing.T) []byte {
	t.Helper()
	docs, types := fieldDocs(t), typeDocs(t)
	var b bytes.Buffer
	b.WriteString(`# Plan reference

<!-- Generated from the plan's Go types (internal/qualify): do not edit.
     go test ./internal/qualify -run TestPlanReference -update-plan-reference -->

A plan (` + "`hiro qualify PLAN.toml`" + `) is a TOML file: the campaign's keys, then one
` + "`[[gates]]`" + ` table per gate, run in order; a gate runs only if every gate before it
passed. Unknown keys are errors, and ` + "`hiro qualify PLAN.toml --check`" + ` lists every
problem without starting or stopping anything. A default is what the key takes when the
plan leaves it out ("—": none, or worked out as the meaning says). Durations are written
as strings such as ` + "`\"90s\"` or `\"5m\"`" + `. Examples: ` + "`examples/demo/plan.toml`" + `,
` + "`examples/seed-replay/plan.toml`" + `, ` + "`examples/activate/plan.toml`" + `.

## The campaign

`)
	rows, _ := tableRows(reflect.ValueOf(Plan{}), docs)
	writeTable(&b, rows)
	b.WriteString("\n## Every gate: `[[gates]]`\n\n")
	spec := GateSpec{}
	rows, _ = tableRows(reflect.ValueOf(spec), docs)
	writeTable(&b, rows)
	fmt.Fprintf(&b, "\nA gate's `timeout` defaults to %q for every kind but `launch` (the sum of its attempts' bounds). ", DefaultGateTimeout.String())
	b.WriteString("The kinds, in the order a plan may use them:\n")
	for _, k := range Kinds() {
		g := k.New()
		if types[reflect.TypeOf(g).Elem().Name()] == "" {
			continue // a kind a test registered
		}
		// Validate fills the defaults; on a zero section it also reports
		// the required keys, which the table leaves at "—".
		v := &Validation{Plan: &Plan{}, Config: &config.Config{}, Spec: &GateSpec{Kind: k.Name}}
		g.Validate(v)
		gv := reflect.ValueOf(g).Elem()
		typeDoc := types[gv.Type().Name()]
		fmt.Fprintf(&b, "\n## `%s`\n\n%s. %s\n\n", k.Name, k.Title, typeDoc)
		rows, nested := tableRows(gv, docs)
		writeTable(&b, rows)
		seen := map[reflect.Type]bool{}
		for len(nested) > 0 {
			nt := nested[0]
			nested = nested[1:]
			if seen[nt] {
				continue
			}
			seen[nt] = true
			r, more := tableRows(reflect.New(nt).Elem(), docs)
			nested = append(nested, more...)
			fmt.Fprintf(&b, "\n`%s` tables (%s):\n\n", nt.Name(), types[nt.Name()])
			writeTable(&b, r)
		}
	}
	return b.Bytes()
}

// typeDocs maps this package's type names to the first paragraph of
// their doc comments.
func typeDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pkgs {
		dp := doc.New(p, "github.com/hiro-dev/hiro/internal/qualify", doc.AllDecls)
		for _, ty := range dp.Types {
			out[ty.Name] = docParagraph(ty.Doc)
		}
	}
	return out
}
