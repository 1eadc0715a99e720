package houserules

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/hiro-dev/hiro/"

// pkgInfo is what go list says of one package.
type pkgInfo struct {
	deps    []string // every package it imports, transitively (go list -deps)
	imports []string // its direct imports, non-test code only
	tests   []string // its tests' direct imports
}

// listPackages runs go list once over the module.
func listPackages(t *testing.T, root string) map[string]pkgInfo {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: the import rules need go list")
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}|{{join .Deps ","}}|{{join .Imports ","}}|{{join .TestImports ","}},{{join .XTestImports ","}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkgInfo{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "|")
		if len(f) != 4 {
			t.Fatalf("go list line %q", l)
		}
		own := func(s string) []string {
			var r []string
			for _, p := range strings.Split(s, ",") {
				if strings.HasPrefix(p, module) {
					r = append(r, strings.TrimPrefix(p, module))
				}
			}
			return r
		}
		pkgs[strings.TrimPrefix(f[0], module)] = pkgInfo{deps: own(f[1]), imports: own(f[2]), tests: own(f[3])}
	}
	return pkgs
}

// testSupport says whether p is a package made for tests (testsupport,
// or one whose name ends in "test": ollamatest, tlstest, doctortest).
func testSupport(p string) bool {
	base := filepath.Base(p)
	return base == "testsupport" || strings.HasSuffix(base, "test")
}

// importRule is one "must not import" line of a doc.go, as a check.
type importRule struct {
	file   string // the doc file holding the line, from the repository root
	phrase string // a piece of that line, to find it
	check  func(pkgs map[string]pkgInfo) []string
}

// notImporting: pkg does not import any of these, even through another.
func notImporting(pkg string, banned ...string) func(map[string]pkgInfo) []string {
	return func(pkgs map[string]pkgInfo) []string {
		info, ok := pkgs[pkg]
		if !ok {
			return []string{pkg + " is not a package of the module"}
		}
		var bad []string
		for _, d := range info.deps {
			for _, b := range banned {
				if d == b {
					bad = append(bad, pkg+" imports "+d)
				}
			}
		}
		return bad
	}
}

// importingOnly: pkg imports no hiro package but these.
func importingOnly(pkg string, allowed ...string) func(map[string]pkgInfo) []string {
	return func(pkgs map[string]pkgInfo) []string {
		info, ok := pkgs[pkg]
		if !ok {
			return []string{pkg + " is not a package of the module"}
		}
		var bad []string
	deps:
		for _, d := range info.deps {
			for _, a := range allowed {
				if d == a {
					continue deps
				}
			}
			bad = append(bad, pkg+" imports "+d)
		}
		return bad
	}
}

// importedByTestsOnly: no package's own code imports pkg, but packages
// made for tests; withTests also bans its tests' imports.
func importedByTestsOnly(pkg string, withTests bool) func(map[string]pkgInfo) []string {
	return func(pkgs map[string]pkgInfo) []string {
		var bad []string
		for name, info := range pkgs {
			for _, i := range info.imports {
				if i == pkg && !(testSupport(name) && !withTests) {
					bad = append(bad, name+" imports "+pkg)
				}
			}
			if withTests {
				for _, i := range info.tests {
					if i == pkg {
						bad = append(bad, name+"'s tests import "+pkg)
					}
				}
			}
		}
		sort.Strings(bad)
		return bad
	}
}

// importedOnlyBy: no package's own code imports pkg but these (tests
// may).
func importedOnlyBy(pkg string, allowed ...string) func(map[string]pkgInfo) []string {
	return func(pkgs map[string]pkgInfo) []string {
		var bad []string
	next:
		for name, info := range pkgs {
			for _, a := range allowed {
				if name == a {
					continue next
				}
			}
			for _, i := range info.imports {
				if i == pkg {
					bad = append(bad, name+" imports "+pkg)
				}
			}
		}
		sort.Strings(bad)
		return bad
	}
}

// importRules has one row per "must not import" line of the packages'
// doc comments; TestImportRulesCoverEveryDocLine keeps it so.
var importRules = []importRule{
	{"internal/config/doc.go", "therefore never import config", notImporting("internal/engine", "internal/config")},
	{"internal/engine/doc.go", "never import config", notImporting("internal/engine", "internal/config")},
	{"internal/eval/doc.go", "without importing it", notImporting("internal/eval", "internal/extract")},
	{"internal/fixture/doc.go", "prompt must not import this package", notImporting("internal/prompt", "internal/fixture")},
	{"internal/prompt/doc.go", "it must not import the", notImporting("internal/prompt", "internal/fixture")},
	{"internal/redact/doc.go", "must not import any other", importingOnly("internal/redact")},
	{"internal/shellquote/doc.go", "must not import any other", importingOnly("internal/shellquote")},
	{"internal/termtext/doc.go", "must not import any other", importingOnly("internal/termtext")},
	{"internal/exitcode/doc.go", "imports nothing", importingOnly("internal/exitcode")},
	{"internal/private/private.go", "imports no other hiro", importingOnly("internal/private", "internal/shellquote")},
	{"internal/stats/doc.go", "imports no other hiro", importingOnly("internal/stats")},
	{"internal/shadow/doc.go", "must not import the router", notImporting("internal/shadow", "internal/serve")},
	{"internal/ramp/doc.go", "must not import the router", notImporting("internal/ramp", "internal/serve")},
	{"internal/testsupport/doc.go", "imported by tests only", importedByTestsOnly("internal/testsupport", false)},
	{"internal/tlstest/doc.go", "imported only by tests", importedByTestsOnly("internal/tlstest", false)},
	{"internal/houserules/doc.go", "must not be imported by anything", importedByTestsOnly("internal/houserules", true)},
	{"internal/control/doc.go", "must not import serve, qualify or activation", notImporting("internal/control", "internal/serve", "internal/qualify", "internal/activation")},
	{"internal/serve/doc.go", "must not be imported by any package but cli", importedOnlyBy("internal/serve", "internal/cli")},
	{"internal/lease/doc.go", "must not import supervisor (procfs", notImporting("internal/lease", "internal/supervisor")},
	{"internal/procfs/doc.go", "imports no other hiro package", importingOnly("internal/procfs")},
}

// Every "must not import" line of a doc comment holds.
func TestImportRules(t *testing.T) {
	pkgs := listPackages(t, repoRoot(t))
	for _, r := range importRules {
		for _, bad := range r.check(pkgs) {
			t.Errorf("%s (%q): %s", r.file, r.phrase, bad)
		}
	}
}

// importLine finds the lines of a package comment that promise something
// about imports.
var importLine = regexp.MustCompile(`(?i)(must not|never|not) (be )?import|imports? (no|nothing)|without importing|imported (by tests only|only by tests)`)

// Each such line of a doc comment is a row of importRules (a new promise
// without a row fails here), and each row's line still exists.
func TestImportRulesCoverEveryDocLine(t *testing.T) {
	root := repoRoot(t)
	rows := map[string]int{}
	for _, r := range importRules {
		b, err := os.ReadFile(filepath.Join(root, r.file))
		if err != nil {
			t.Errorf("row %q: %v", r.phrase, err)
			continue
		}
		if !strings.Contains(string(b), r.phrase) {
			t.Errorf("%s no longer says %q: update its row of importRules", r.file, r.phrase)
		}
		rows[r.file]++
	}
	files, _ := filepath.Glob(filepath.Join(root, "internal", "*", "*.go"))
	more, _ := filepath.Glob(filepath.Join(root, "cmd", "*", "*.go"))
	for _, f := range append(files, more...) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		head, _, found := strings.Cut(string(b), "\npackage ")
		if !found {
			continue
		}
		n := 0
		for _, l := range strings.Split(head, "\n") {
			if strings.HasPrefix(l, "//") && importLine.MatchString(l) {
				n++
			}
		}
		rel, _ := filepath.Rel(root, f)
		if n != rows[rel] {
			t.Errorf("%s has %d import promise line(s) in its package comment, importRules %d rows for it", rel, n, rows[rel])
		}
	}
}

// The rule checks find what they are for, on a made-up module.
func TestImportRuleChecksFindViolations(t *testing.T) {
	pkgs := map[string]pkgInfo{
		"internal/a":        {deps: []string{"internal/b", "internal/c"}, imports: []string{"internal/b"}},
		"internal/b":        {deps: []string{"internal/c"}, imports: []string{"internal/c"}, tests: []string{"internal/t"}},
		"internal/c":        {},
		"internal/t":        {},
		"internal/sometest": {imports: []string{"internal/t"}},
	}
	if bad := notImporting("internal/a", "internal/c")(pkgs); len(bad) != 1 {
		t.Errorf("a transitive import is not seen: %v", bad)
	}
	if bad := notImporting("internal/c", "internal/a")(pkgs); len(bad) != 0 {
		t.Errorf("a clean package is blamed: %v", bad)
	}
	if bad := importingOnly("internal/a", "internal/b")(pkgs); len(bad) != 1 || bad[0] != "internal/a imports internal/c" {
		t.Errorf("importingOnly: %v", bad)
	}
	if bad := importedByTestsOnly("internal/t", false)(pkgs); len(bad) != 0 {
		t.Errorf("tests and test-support packages may import a test package: %v", bad)
	}
	if bad := importedByTestsOnly("internal/c", false)(pkgs); len(bad) != 1 {
		t.Errorf("a product import of a test package is not seen: %v", bad)
	}
	if bad := importedByTestsOnly("internal/t", true)(pkgs); len(bad) != 2 {
		t.Errorf("withTests: %v", bad)
	}
	if bad := importedOnlyBy("internal/c", "internal/b")(pkgs); len(bad) != 0 {
		t.Errorf("importedOnlyBy: the allowed importer is blamed: %v", bad)
	}
	if bad := importedOnlyBy("internal/b", "internal/c")(pkgs); len(bad) != 1 || bad[0] != "internal/a imports internal/b" {
		t.Errorf("importedOnlyBy: %v", bad)
	}
}

// docLong lists the doc.go files over 40 lines whose packages are being
// cut by other work now; each is reported, not failed, until it is cut.
var docLong = map[string]string{}

// A doc.go says what the package owns, what it must not touch and its API
// in a few lines: at most 40.
func TestDocGoIsShort(t *testing.T) {
	root := repoRoot(t)
	files, _ := filepath.Glob(filepath.Join(root, "internal", "*", "doc.go"))
	more, _ := filepath.Glob(filepath.Join(root, "cmd", "*", "doc.go"))
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		n := bytes.Count(b, []byte("\n"))
		switch why, exempt := docLong[rel]; {
		case n <= 40 && exempt:
			t.Logf("%s is %d lines now: its docLong entry can go", rel, n)
		case n > 40 && exempt:
			t.Logf("%s is %d lines (over 40): %s", rel, n, why)
		case n > 40:
			t.Errorf("%s is %d lines; at most 40 (what it owns, what it must not touch, its API; the rest goes to docs/)", rel, n)
		}
	}
}
