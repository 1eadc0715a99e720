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
//
// Cases captured on a GPU machine (examples/gpu/results) may also say
// where the engine served: ServingDevice is the device kind the ready
// verdict must name (DeviceCPU, DeviceGPU, DevicePartial) when the engine
// became ready; RequiresAccelerator means the expected Class and Phase are
// those of a profile with requires_accelerator (a CPU fallback is a
// failure), and without it the verdict is ready on ServingDevice; Ready
// means the engine became ready and no failure is expected (Class and
// Phase empty).
type Case struct {
	Log                 string             `json:"log"`
	Engine              string             `json:"engine"`
	Exit                *int               `json:"exit,omitempty"`
	Signal              string             `json:"signal,omitempty"`
	Class               string             `json:"class,omitempty"`
	Phase               string             `json:"phase,omitempty"`
	RootCauseContains   string             `json:"root_cause_contains,omitempty"`
	Facts               map[string]float64 `json:"facts,omitempty"`
	Source              string             `json:"source,omitempty"`
	Ready               bool               `json:"ready,omitempty"`
	RequiresAccelerator bool               `json:"requires_accelerator,omitempty"`
	ServingDevice       string             `json:"serving_device,omitempty"`
	// How says how the failure was produced.
	How string `json:"how,omitempty"`
}

// PrereqCase is an expected answer of the prereq gate on captured host
// output (cases.json's "prereq" list): with nvidia-smi printing the files
// named (relative to the case set), the gate fails with Class, and its
// failure's facts (numbers) or detail (strings) hold Facts.
type PrereqCase struct {
	Evidence          string         `json:"evidence,omitempty"`
	NvidiaSMIQueryGPU string         `json:"nvidia_smi_query_gpu"`
	NvidiaSMIQueryApp string         `json:"nvidia_smi_query_apps"`
	Gate              string         `json:"gate"`
	Class             string         `json:"class"`
	Facts             map[string]any `json:"facts,omitempty"`
	How               string         `json:"how,omitempty"`
}

// CaseFile is a whole cases.json: the log cases and the prereq cases.
type CaseFile struct {
	Cases  []Case       `json:"cases"`
	Prereq []PrereqCase `json:"prereq,omitempty"`
}

// LoadCaseSet reads dir/cases.json and returns its log cases. A missing
// file gives an error for which os.IsNotExist is true; a file with no
// cases is an error.
func LoadCaseSet(dir string) ([]Case, error) {
	f, err := LoadCaseFile(dir)
	if err != nil {
		return nil, err
	}
	return f.Cases, nil
}

// LoadCaseFile reads dir/cases.json whole (the one loader of case sets).
// Errors: as LoadCaseSet, and a case lacking log, engine, or class and
// phase (unless ready), a serving device of another kind than cpu, gpu or
// partial, a prereq case lacking its nvidia-smi files or class.
func LoadCaseFile(dir string) (CaseFile, error) {
	path := filepath.Join(dir, "cases.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return CaseFile{}, err
	}
	var doc CaseFile
	if err := json.Unmarshal(b, &doc); err != nil {
		return CaseFile{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Cases) == 0 {
		return CaseFile{}, fmt.Errorf("%s has no cases", path)
	}
	for i, c := range doc.Cases {
		if c.Log == "" || c.Engine == "" || (!c.Ready && (c.Class == "" || c.Phase == "")) {
			return CaseFile{}, fmt.Errorf("%s: case %d: log, engine, class and phase are required (class and phase not with \"ready\": true)", path, i)
		}
		switch c.ServingDevice {
		case "", DeviceCPU, DeviceGPU, DevicePartial:
		default:
			return CaseFile{}, fmt.Errorf("%s: case %d: serving_device %q: use cpu, gpu or partial", path, i, c.ServingDevice)
		}
	}
	for i, p := range doc.Prereq {
		if p.NvidiaSMIQueryGPU == "" || p.NvidiaSMIQueryApp == "" || p.Class == "" {
			return CaseFile{}, fmt.Errorf("%s: prereq %d: nvidia_smi_query_gpu, nvidia_smi_query_apps and class are required", path, i)
		}
	}
	return doc, nil
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
	// Device is the serving device the log showed (CheckDiagnosis).
	Device ServingDevice
	// ClassOK, PhaseOK, RootCauseOK, FactsOK, DeviceOK: each part of the
	// answer (all true for the failure of a Ready case, which expects
	// none; DeviceOK true when the case names no device).
	ClassOK, PhaseOK, RootCauseOK, FactsOK, DeviceOK bool
}

// Right reports whether class, phase, root-cause line, facts and serving
// device are all as expected.
func (r CaseResult) Right() bool {
	return r.ClassOK && r.PhaseOK && r.RootCauseOK && r.FactsOK && r.DeviceOK
}

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
	if !r.DeviceOK {
		m = append(m, fmt.Sprintf("serving device got %q want %s", r.Device.Kind, r.Case.ServingDevice))
	}
	return strings.Join(m, "; ")
}

// CheckDiagnosis compares a diagnosis of the case's log (made with
// DiagnoseOptions.RequiresAccelerator as the case says) with its expected
// answer: the failure as Check does (none expected of a Ready case), and
// the serving device.
func (c Case) CheckDiagnosis(d Diagnosis) CaseResult {
	r := CaseResult{Case: c, Failure: d.Failure, ClassOK: true, PhaseOK: true, RootCauseOK: true, FactsOK: true}
	if !c.Ready {
		r = c.Check(d.Failure)
	}
	r.Device = d.Device
	r.DeviceOK = c.ServingDevice == "" || d.Device.Kind == c.ServingDevice
	return r
}

// Check compares f with the case's expected answer (class, phase, root
// cause, facts; the serving device is CheckDiagnosis's).
func (c Case) Check(f *failure.Failure) CaseResult {
	r := CaseResult{Case: c, Failure: f, DeviceOK: true}
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

// RunCaseSet diagnoses every case of the set in dir with DiagnoseLog
// (with requires_accelerator where the case says so).
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
		d, err := DiagnoseLog(fh, c.Engine, DiagnoseOptions{Exit: c.ExitInfo(), RequiresAccelerator: c.RequiresAccelerator})
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Log, err)
		}
		out = append(out, c.CheckDiagnosis(d))
	}
	return out, nil
}

// Coverage counts cases and right answers per expected class (its first
// accepted answer) and engine kind.
type Coverage struct {
	// Cells maps class → engine kind → counts.
	Cells map[failure.Class]map[string]CoverageCell
	// Confidence counts the failure verdicts (Ready cases aside) per
	// confidence, with how many got the class right.
	Confidence map[failure.Confidence]ConfidenceCell `json:"confidence"`
	// ConfidentWrong counts the verdicts said with strong confidence whose
	// class is wrong: the worst outcome.
	ConfidentWrong int `json:"confident_wrong"`
}

// ConfidenceCell counts the verdicts of one confidence.
type ConfidenceCell struct {
	Cases      int `json:"cases"`
	ClassRight int `json:"class_right"`
}

// CoverageCell is the count of one class x engine cell.
type CoverageCell struct {
	Cases int `json:"cases"`
	Right int `json:"right"`
}

// CoverageReady is the row of Coverage.Cells that counts the cases whose
// engine became ready (Case.Ready: no failure expected, right when the
// verdict is ready on the expected serving device). It is no failure
// class; Write prints it as "ready (no failure)" when it has cases.
const CoverageReady failure.Class = "ready"

// CoverageOf tallies results: every case counts once, under its expected
// class, or under CoverageReady when its engine became ready, so the
// cells add up to len(results).
func CoverageOf(results []CaseResult) Coverage {
	cv := Coverage{Cells: map[failure.Class]map[string]CoverageCell{}, Confidence: map[failure.Confidence]ConfidenceCell{}}
	for _, r := range results {
		cv.countConfidence(r)
		cls := failure.Class(strings.TrimSpace(strings.Split(r.Case.Class, "|")[0]))
		if r.Case.Ready {
			cls = CoverageReady
		}
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

// countConfidence tallies r's verdict under its confidence (not for a
// Ready case, which expects no failure).
func (cv *Coverage) countConfidence(r CaseResult) {
	if r.Case.Ready || r.Failure == nil {
		return
	}
	c := cv.Confidence[r.Failure.Confidence]
	c.Cases++
	if r.ClassOK {
		c.ClassRight++
	} else if r.Failure.Confidence == failure.ConfidenceStrong {
		cv.ConfidentWrong++
	}
	cv.Confidence[r.Failure.Confidence] = c
}

// ConfidenceText says the share of strong verdicts and their accuracy,
// and the confident-wrong count: "strong 80/100 (80%), class right on
// 78 (97.5%); weak 15 (class right on 12); none 5 (class right on 2);
// confident-wrong 2".
func (cv Coverage) ConfidenceText() string {
	total := 0
	for _, c := range cv.Confidence {
		total += c.Cases
	}
	s := cv.Confidence[failure.ConfidenceStrong]
	w, n := cv.Confidence[failure.ConfidenceWeak], cv.Confidence[failure.ConfidenceNone]
	return fmt.Sprintf("strong %d/%d (%s), class right on %d (%s); weak %d (class right on %d); none %d (class right on %d); confident-wrong %d",
		s.Cases, total, percent(s.Cases, total), s.ClassRight, percent(s.ClassRight, s.Cases), w.Cases, w.ClassRight,
		n.Cases, n.ClassRight, cv.ConfidentWrong)
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// kindsWithCases returns the engine kinds that have a case, sorted.
func (cv Coverage) kindsWithCases() []string {
	seen := map[string]bool{}
	for _, row := range cv.Cells {
		for k := range row {
			seen[k] = true
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Write prints the table: one row per class of the vocabulary (in
// failure.Classes order, then any other class), a "ready (no failure)" row
// when some case became ready, one column per engine kind that has a
// case, each cell "right/cases" ("-" when no case), and a total row
// counting every case.
func (cv Coverage) Write(w io.Writer) error {
	kinds := cv.kindsWithCases()
	classes := append([]failure.Class{}, failure.Classes...)
	var extra []string
	for c := range cv.Cells {
		if !c.Known() && c != CoverageReady {
			extra = append(extra, string(c))
		}
	}
	sort.Strings(extra)
	for _, c := range extra {
		classes = append(classes, failure.Class(c))
	}
	if len(cv.Cells[CoverageReady]) > 0 {
		classes = append(classes, CoverageReady)
	}
	w8 := 8 // cell width: the longest kind name, at least 8
	for _, k := range kinds {
		w8 = max(w8, len(k))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| %-27s |", "class \\ engine (right/cases)")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %-*s |", w8, k)
	}
	fmt.Fprintf(&b, " %-*s |\n|%s|", w8, "all", strings.Repeat("-", 29))
	dashes := strings.Repeat("-", w8+2) + "|"
	for range kinds {
		b.WriteString(dashes)
	}
	b.WriteString(dashes + "\n")
	totals := map[string]CoverageCell{}
	var all CoverageCell
	for _, c := range classes {
		label := string(c)
		if c == CoverageReady {
			label = "ready (no failure)"
		}
		fmt.Fprintf(&b, "| %-27s |", label)
		var rowAll CoverageCell
		for _, k := range kinds {
			cell := cv.Cells[c][k]
			rowAll.Cases += cell.Cases
			rowAll.Right += cell.Right
			t := totals[k]
			t.Cases += cell.Cases
			t.Right += cell.Right
			totals[k] = t
			fmt.Fprintf(&b, " %-*s |", w8, cellText(cell))
		}
		all.Cases += rowAll.Cases
		all.Right += rowAll.Right
		fmt.Fprintf(&b, " %-*s |\n", w8, cellText(rowAll))
	}
	fmt.Fprintf(&b, "| %-27s |", "all")
	for _, k := range kinds {
		fmt.Fprintf(&b, " %-*s |", w8, cellText(totals[k]))
	}
	fmt.Fprintf(&b, " %-*s |\n", w8, cellText(all))
	_, err := io.WriteString(w, b.String())
	return err
}

func cellText(c CoverageCell) string {
	if c.Cases == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", c.Right, c.Cases)
}
