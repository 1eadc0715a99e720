package houserules

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// houseFloors reads the picture of the house in docs/design.md ("The
// house"): its "floor N  pkg pkg ... | note" lines, as package (module
// relative: internal/x, or cmd/x) → floor.
func houseFloors(t *testing.T, root string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^floor (\d+)\s+([^|]*)`)
	floors := map[string]int{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "## ") {
			in = l == "## The house"
			continue
		}
		m := line.FindStringSubmatch(l)
		if !in || m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		for _, p := range strings.Fields(m[2]) {
			if !strings.HasPrefix(p, "cmd/") {
				p = "internal/" + p
			}
			if _, dup := floors[p]; dup {
				t.Errorf("design.md \"The house\": %s is on two floors", p)
			}
			floors[p] = n
		}
	}
	if len(floors) == 0 {
		t.Fatal(`docs/design.md has no "floor N  packages" lines under "## The house"`)
	}
	return floors
}

// TestHouseFloors: the picture of the house in docs/design.md is true of
// the code: every package it shows exists, and each imports (go list,
// non-test code) only packages it shows on lower floors; a package it
// does not show is not checked (add it to the picture when it matters).
func TestHouseFloors(t *testing.T) {
	root := repoRoot(t)
	floors := houseFloors(t, root)
	pkgs := listPackages(t, root)
	for p, n := range floors {
		info, ok := pkgs[p]
		if !ok {
			t.Errorf("design.md \"The house\" shows %s on floor %d: not a package of the module", p, n)
			continue
		}
		for _, q := range info.imports {
			if m, shown := floors[q]; shown && m >= n {
				t.Errorf("%s (floor %d) imports %s (floor %d): an import goes down only; fix the code or the picture in docs/design.md \"The house\"", p, n, q, m)
			}
		}
	}
}
