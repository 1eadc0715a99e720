package houserules

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docPath is a docs page named in running text ("see docs/serve.md"),
// mdLink a Markdown link to a file of the repository, with its anchor.
var (
	docPath = regexp.MustCompile(`docs/[A-Za-z0-9_./-]+\.md`)
	mdLink  = regexp.MustCompile(`\]\(([^)#:\s]+)(#[^)\s]*)?\)`)
)

// notCitations are docs/*.md strings the pages use as examples of a
// user's own files, not as pages of this manual.
var notCitations = map[string]string{
	"docs/library.md": "docs/corpus.md: a corpus document's id is its path without the extension",
}

// Every docs page the README, DEVELOPERS.md or a docs page cites exists,
// and every Markdown link to a file of the repository resolves (its
// #anchor, into a Markdown file, names one of that file's headings): a
// new user found docs/shadow.md citing a docs/statistics.md that never
// existed (issue 26 P10).
func TestDocsCiteExistingPages(t *testing.T) {
	root := repoRoot(t)
	pages, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	pages = append(pages, filepath.Join(root, "README.md"), filepath.Join(root, "DEVELOPERS.md"))
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) map[string]bool {
		if a, ok := anchorsOf[path]; ok {
			return a
		}
		a := map[string]bool{}
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "#") {
				a[anchor(strings.TrimSpace(strings.TrimLeft(l, "#")))] = true
			}
		}
		anchorsOf[path] = a
		return a
	}
	cited := 0
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		rel, _ := filepath.Rel(root, p)
		lineOf := func(off int) int { return strings.Count(s[:off], "\n") + 1 }
		for _, m := range docPath.FindAllStringIndex(s, -1) {
			name := s[m[0]:m[1]]
			if _, ok := notCitations[name]; ok {
				continue
			}
			cited++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(name))); err != nil {
				t.Errorf("%s:%d cites %s, which does not exist", rel, lineOf(m[0]), name)
			}
		}
		for _, m := range mdLink.FindAllStringSubmatchIndex(s, -1) {
			target := s[m[2]:m[3]]
			cited++
			path := filepath.Join(filepath.Dir(p), filepath.FromSlash(target))
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s:%d links %s, which does not exist", rel, lineOf(m[0]), target)
				continue
			}
			if m[4] >= 0 && strings.HasSuffix(target, ".md") {
				if a := s[m[4]+1 : m[5]]; !anchors(path)[a] {
					t.Errorf("%s:%d links %s#%s, which is no heading's anchor there", rel, lineOf(m[0]), target, a)
				}
			}
		}
	}
	if cited < 50 {
		t.Errorf("only %d page citations found: the scanner no longer sees them", cited)
	}
}
