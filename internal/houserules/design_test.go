package houserules

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the repository's root, two folders above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// sourceFiles walks the repository's Go and Markdown files, leaving out
// hidden folders and the ones git ignores for builds (.bin, .hiro, .gpu).
func sourceFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".sh") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// headings returns docs/design.md's headings by their text and by their
// GitHub anchor (lower case, spaces as hyphens, punctuation dropped).
func headings(t *testing.T, root string) (byText, byAnchor map[string]bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byText, byAnchor = map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		byText[h] = true
		byAnchor[anchor(h)] = true
	}
	return byText, byAnchor
}

var anchorDrop = regexp.MustCompile(`[^a-z0-9 _-]`)

func anchor(h string) string {
	return strings.ReplaceAll(anchorDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
}

// citedSections reads the section names cited right after "design.md" at
// s[i:]: `design.md "A"`, `design.md, "A", "B" and "C"`, across a comment's
// line break (the markers // and # are skipped), or a link's #anchor.
// It returns the quoted names and the anchor ("" when none).
func citedSections(s string) (names []string, anchorRef string) {
	if strings.HasPrefix(s, "#") {
		end := strings.IndexAny(s, ") \n\t`\"")
		if end < 0 {
			end = len(s)
		}
		return nil, s[1:end]
	}
	skip := func(s string, seps bool) string {
		for {
			switch {
			case s == "":
				return s
			case strings.HasPrefix(s, "//"):
				s = s[2:]
			case strings.ContainsRune(" \t\n#(", rune(s[0])) && !(s[0] == '#' && !seps):
				s = s[1:]
			case seps && (s[0] == ',' || s[0] == ';'):
				s = s[1:]
			case seps && strings.HasPrefix(s, "and "):
				s = s[4:]
			default:
				return s
			}
		}
	}
	rest := skip(strings.TrimPrefix(s, ")"), true)
	for strings.HasPrefix(rest, `"`) {
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			break
		}
		names = append(names, rest[1:1+end])
		rest = skip(rest[2+end:], true)
	}
	return names, ""
}

// Every citation of a design section names a heading docs/design.md has,
// so a renamed or removed section fails here, not in a reader's head.
func TestDesignReferencesNameHeadings(t *testing.T) {
	root := repoRoot(t)
	byText, byAnchor := headings(t, root)
	cited := 0
	for _, path := range sourceFiles(t, root) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		rel, _ := filepath.Rel(root, path)
		if filepath.Dir(rel) == filepath.Join("internal", "houserules") {
			continue // this package's own examples of the forms
		}
		for off := 0; ; {
			i := strings.Index(s[off:], "design.md")
			if i < 0 {
				break
			}
			at := off + i + len("design.md")
			off = at
			line := strings.Count(s[:at], "\n") + 1
			names, a := citedSections(s[at:])
			for _, n := range names {
				cited++
				if !byText[n] {
					t.Errorf("%s:%d cites design.md %q, which is no heading of docs/design.md", rel, line, n)
				}
			}
			if a != "" {
				cited++
				if !byAnchor[a] {
					t.Errorf("%s:%d links design.md#%s, which is no heading's anchor in docs/design.md", rel, line, a)
				}
			}
		}
	}
	if cited < 10 {
		t.Errorf("only %d design-section citations found: the scanner no longer sees them", cited)
	}
}

// The citation reader takes the forms the code uses, and only those.
func TestCitedSections(t *testing.T) {
	cases := []struct {
		in    string
		names []string
		a     string
	}{
		{` "Extraction"). Documents`, []string{"Extraction"}, ""},
		{`, "Plan",` + "\n// " + `"Gate", "Production guard", "Evidence"): it`, []string{"Plan", "Gate", "Production guard", "Evidence"}, ""},
		{`  "Evidence" and "Contracts other tools read"`, []string{"Evidence", "Contracts other tools read"}, ""},
		{"\n// \"Failure vocabulary\")", []string{"Failure vocabulary"}, ""},
		{`) "Failure vocabulary".`, []string{"Failure vocabulary"}, ""},
		{" vocabulary)", nil, ""},
		{"#failure-vocabulary) says", nil, "failure-vocabulary"},
	}
	for _, c := range cases {
		names, a := citedSections(c.in)
		if strings.Join(names, "|") != strings.Join(c.names, "|") || a != c.a {
			t.Errorf("citedSections(%q) = %q, %q; want %q, %q", c.in, names, a, c.names, c.a)
		}
	}
}

var testName = regexp.MustCompile("`(Test[A-Z][A-Za-z0-9_]*)`")
var testFunc = regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)

// Every test the README or a docs/ page names exists, so a page's "the
// tests that hold this page" cannot point at a renamed or deleted test.
func TestDocsNameExistingTests(t *testing.T) {
	root := repoRoot(t)
	defined := map[string]bool{}
	var pages []string
	for _, path := range sourceFiles(t, root) {
		if strings.HasSuffix(path, "_test.go") {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
				defined[m[1]] = true
			}
		}
	}
	pages, _ = filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"))
	named := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		for _, m := range testName.FindAllStringSubmatch(string(b), -1) {
			named++
			if !defined[m[1]] {
				t.Errorf("%s names %s, which no _test.go file defines", rel, m[1])
			}
		}
	}
	if named < 50 {
		t.Errorf("only %d test names found in the docs: the pages lost their test lists", named)
	}
}

// The README is a front door: at most 150 lines, and it links every page
// of the manual in docs/, so no page is orphaned.
func TestReadmeIsAFrontDoor(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := strings.Count(readme, "\n"); n > 150 {
		t.Errorf("README.md has %d lines; at most 150 (move the detail into a docs/ page)", n)
	}
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, p := range pages {
		link := "(docs/" + filepath.Base(p) + ")"
		if !strings.Contains(readme, link) {
			t.Errorf("README.md does not link %s", link)
		}
	}
}
