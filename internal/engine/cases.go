package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Case is one failure-log case of a case set: a directory with a
// cases.json ({"cases": [...]}) beside the logs it names. Class and Phase
// may list accepted answers separated by "|" (the first preferred);
// RootCauseContains empty means no log line explains the failure. Exit or
// Signal say how the process ended (neither: unknown).
type Case struct {
	Log               string             `json:"log"`
	Engine            string             `json:"engine"`
	Exit              *int               `json:"exit,omitempty"`
	Signal            string             `json:"signal,omitempty"`
	Class             string             `json:"class"`
	Phase             string             `json:"phase"`
	RootCauseContains string             `json:"root_cause_contains,omitempty"`
	Facts             map[string]float64 `json:"facts,omitempty"`
	Source            string             `json:"source,omitempty"`
}

// LoadCaseSet reads dir/cases.json. A missing file gives an error for
// which os.IsNotExist is true; a file with no cases is an error.
func LoadCaseSet(dir string) ([]Case, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		return nil, err
	}
	var doc struct {
		Cases []Case `json:"cases"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "cases.json"), err)
	}
	if len(doc.Cases) == 0 {
		return nil, fmt.Errorf("%s has no cases", filepath.Join(dir, "cases.json"))
	}
	for i, c := range doc.Cases {
		if c.Log == "" || c.Engine == "" || c.Class == "" || c.Phase == "" {
			return nil, fmt.Errorf("%s: case %d: log, engine, class and phase are required", filepath.Join(dir, "cases.json"), i)
		}
	}
	return doc.Cases, nil
}

// Accepts reports whether got is one of the "|"-separated answers in want.
func Accepts(want, got string) bool {
	for _, w := range strings.Split(want, "|") {
		if strings.TrimSpace(w) == got {
			return true
		}
	}
	return false
}

// ExitInfo is how the case's process ended.
func (c Case) ExitInfo() ExitInfo {
	switch {
	case c.Signal != "":
		return Signaled(c.Signal)
	case c.Exit != nil:
		return Exited(*c.Exit)
	}
	return ExitInfo{}
}

// CaseResult is a case's diagnosis checked against its expected answer.
type CaseResult struct {
	Case    Case
	Failure *failure.Failure
	// ClassOK, PhaseOK, RootCauseOK, FactsOK: each part of the answer.
	ClassOK, PhaseOK, RootCauseOK, FactsOK bool
}

// Right reports whether class, phase, root-cause line and facts are all
// as expected.
func (r CaseResult) Right() bool { return r.ClassOK && r.PhaseOK && r.RootCauseOK && r.FactsOK }

// Misses says which parts are wrong ("class got engine_died want
// host_oom; ..."), empty when right.
func (r CaseResult) Misses() string {
	var m []string
	f := r.Failure
	if !r.ClassOK {
		m = append(m, fmt.Sprintf("class got %s want %s", f.Class, r.Case.Class))
	}
	if !r.PhaseOK {
		m = append(m, fmt.Sprintf("phase got %s want %s", f.Phase, r.Case.Phase))
	}
	if !r.RootCauseOK {
		m = append(m, fmt.Sprintf("root cause %q lacks %q", f.RootCause, r.Case.RootCauseContains))
	}
	if !r.FactsOK {
		m = append(m, fmt.Sprintf("facts %v want %v", f.Facts, r.Case.Facts))
	}
	return strings.Join(m, "; ")
}

// Check compares f with the case's expected answer.
func (c Case) Check(f *failure.Failure) CaseResult {
	r := CaseResult{Case: c, Failure: f}
	r.ClassOK = Accepts(c.Class, string(f.Class))
	r.PhaseOK = Accepts(c.Phase, string(f.Phase))
	r.RootCauseOK = f.RootCause != "" && strings.Contains(f.RootCause, c.RootCauseContains)
	r.FactsOK = true
	for k, want := range c.Facts {
		if got, ok := f.Facts[k]; !ok || math.Abs(got-want) > 1e-6 {
			r.FactsOK = false
		}
	}
	return r
}

// RunCaseSet diagnoses every case of the set in dir with Diagnose.
func RunCaseSet(dir string) ([]CaseResult, error) {
	cs, err := LoadCaseSet(dir)
	if err != nil {
		return nil, err
	}
	out := make([]CaseResult, 0, len(cs))
	for _, c := range cs {
		fh, err := os.Open(filepath.Join(dir, c.Log))
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Log, err)
		}
		f, err := Diagnose(fh, c.Engine, c.ExitInfo())
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Log, err)
		}
		out = append(out, c.Check(f))
	}
	return out, nil
}

// Coverage counts cases and right answers per expected class (its first
// accepted answer) and engine kind.
type Coverage struct {
	// Cells maps class → engine kind → counts.
	Cells map[failure.Class]map[string]CoverageCell
}

// CoverageCell is the count of one class x engine cell.
type CoverageCell struct {
	Cases int `json:"cases"`
	Right int `json:"right"`
}

// CoverageOf tallies results.
func CoverageOf(results []CaseResult) Coverage {
	cv := Coverage{Cells: map[failure.Class]map[string]CoverageCell{}}
	for _, r := range results {
		cls := failure.Class(strings.TrimSpace(strings.Split(r.Case.Class, "|")[0]))
		row := cv.Cells[cls]
		if row == nil {
			row = map[string]CoverageCell{}
			cv.Cells[cls] = row
		}
		cell := row[r.Case.Engine]
		cell.Cases++
		if r.Right() {
			cell.Right++
		}
		row[r.Case.Engine] = cell
	}
	return cv
}

// Write prints the table: one row per class of the vocabulary (in
// failure.Classes order, then any other class), one column per engine
// kind, each cell "right/cases" ("-" when no case), and a total row.
func (cv Coverage) Write(w io.Writer) error {
	kinds := Kinds()
	classes := append([]failure.Class{}, failure.Classes...)
	var extra []string
	for c := range cv.Cells {
		if !c.Known() {
			extra = append(extra, string(c))
		}
	}
	sort.Strings(extra)
	for _, c := range extra {
		classes = append(classes, failure.Class(c))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| %-27s |", "class \\ engine (right/cases)")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %-8s |", k)
	}
	fmt.Fprintf(&b, " %-8s |\n|%s|", "all", strings.Repeat("-", 29))
	for range kinds {
		b.WriteString("----------|")
	}
	b.WriteString("----------|\n")
	totals := map[string]CoverageCell{}
	var all CoverageCell
	for _, c := range classes {
		fmt.Fprintf(&b, "| %-27s |", c)
		var rowAll CoverageCell
		for _, k := range kinds {
			cell := cv.Cells[c][k]
			rowAll.Cases += cell.Cases
			rowAll.Right += cell.Right
			t := totals[k]
			t.Cases += cell.Cases
			t.Right += cell.Right
			totals[k] = t
			fmt.Fprintf(&b, " %-8s |", cellText(cell))
		}
		all.Cases += rowAll.Cases
		all.Right += rowAll.Right
		fmt.Fprintf(&b, " %-8s |\n", cellText(rowAll))
	}
	fmt.Fprintf(&b, "| %-27s |", "all")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %-8s |", cellText(totals[k]))
	}
	fmt.Fprintf(&b, " %-8s |\n", cellText(all))
	_, err := io.WriteString(w, b.String())
	return err
}

func cellText(c CoverageCell) string {
	if c.Cases == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", c.Right, c.Cases)
}
