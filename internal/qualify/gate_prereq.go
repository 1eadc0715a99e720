package qualify

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hiro-dev/hiro/internal/doctor"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// KindPrereq checks host facts before anything is launched.
const KindPrereq = "prereq"

// MaxDiskGiB is the largest min_free_gib a disk requirement takes: 2^30
// GiB, one exbibyte, more than any file system holds.
const MaxDiskGiB = 1 << 30

func init() {
	RegisterKind(Kind{Name: KindPrereq, Rank: 10, Title: "Host prerequisites", New: func() Gate { return &PrereqGate{} }})
}

// PrereqGate is a prereq gate's section: host facts (from package doctor)
// the candidate needs. Its result is one evidence.Check per requirement.
type PrereqGate struct {
	plainBound
	// Accelerator is what the GPUs must offer; nil checks none.
	Accelerator *AcceleratorReq `toml:"accelerator"`
	// Disks want free space on named paths (relative to the plan).
	Disks []DiskReq `toml:"disks"`
	// Commands must run and succeed.
	Commands []CommandReq `toml:"commands"`
	// Files must exist (relative to the plan).
	Files []string `toml:"files"`
}

// AcceleratorReq is what the prereq gate wants of the accelerators
// (read through nvidia-smi).
type AcceleratorReq struct {
	// NamePattern is a regular expression the GPU name must match.
	NamePattern string `toml:"name_pattern"`
	// Count is the minimum number of GPUs; default 1.
	Count int `toml:"count"`
	// MinFreeMiB is the minimum free memory on each GPU, MiB.
	MinFreeMiB int `toml:"min_free_mib"`
}

// DiskReq wants MinFreeGiB free on the filesystem holding Path.
type DiskReq struct {
	// Path is a path on the filesystem to check (relative to the plan).
	Path string `toml:"path"`
	// MinFreeGiB is the free space wanted there, GiB.
	MinFreeGiB float64 `toml:"min_free_gib"`
}

// CommandReq is a command that must succeed; VersionPattern, when set, is a
// regular expression its output must match. When Run[0] is a Go program
// whose build information has a module version, a last line "build info:
// version vX.Y.Z" is added to the output the pattern sees: a Go-installed
// Ollama says "version is 0.0.0" while its build info says v0.6.5 (the
// version 'hiro doctor' reports).
type CommandReq struct {
	// Name labels the check in the evidence ("ollama version").
	Name string `toml:"name"`
	// Run is the command and its arguments, run without a shell.
	Run []string `toml:"run"`
	// VersionPattern is a regular expression the output must match.
	VersionPattern string `toml:"version_pattern"`
}

// Validate checks patterns and numbers, names commands and resolves paths.
func (g *PrereqGate) Validate(v *Validation) {
	for i, c := range g.Commands {
		if len(c.Run) == 0 || c.Run[0] == "" {
			v.Errorf(fmt.Sprintf("commands[%d].run", i), "missing; give the command as a list, e.g. [\"nvidia-smi\"]")
		}
		if c.VersionPattern != "" {
			if _, err := regexp.Compile(c.VersionPattern); err != nil {
				v.Errorf(fmt.Sprintf("commands[%d].version_pattern", i), "not a regular expression: %v", err)
			}
		}
		if c.Name == "" && len(c.Run) > 0 {
			g.Commands[i].Name = c.Run[0]
		}
	}
	if a := g.Accelerator; a != nil {
		if a.NamePattern != "" {
			if _, err := regexp.Compile(a.NamePattern); err != nil {
				v.Errorf("accelerator.name_pattern", "not a regular expression: %v", err)
			}
		}
		if a.Count < 0 || a.Count > 1024 {
			v.Errorf("accelerator.count", "%d: use 1 to 1024 GPUs (0 or absent means 1)", a.Count)
		}
		if a.Count == 0 {
			a.Count = 1
		}
		if a.MinFreeMiB < 0 || a.MinFreeMiB > 1<<24 {
			v.Errorf("accelerator.min_free_mib", "%d: use 0 to %d MiB", a.MinFreeMiB, 1<<24)
		}
	}
	for i := range g.Files {
		if g.Files[i] == "" {
			v.Errorf(fmt.Sprintf("files[%d]", i), "empty path; name a file (relative to the plan)")
		}
		g.Files[i] = v.Resolve(g.Files[i])
	}
	for i := range g.Disks {
		d := &g.Disks[i]
		if d.Path == "" {
			v.Errorf(fmt.Sprintf("disks[%d].path", i), "missing; name a path on the file system to measure")
		}
		if math.IsNaN(d.MinFreeGiB) || math.IsInf(d.MinFreeGiB, 0) || d.MinFreeGiB < 0 || d.MinFreeGiB > MaxDiskGiB {
			v.Errorf(fmt.Sprintf("disks[%d].min_free_gib", i), "%v: use a number of GiB from 0 to %d (1 EiB)", d.MinFreeGiB, MaxDiskGiB)
		}
		d.Path = v.Resolve(d.Path)
	}
}

// Run checks every requirement; the gate fails when any check does.
func (g *PrereqGate) Run(ctx context.Context, h *Handle, eg *evidence.Gate) error {
	var failed []string
	add := func(ch evidence.Check) {
		eg.Checks = append(eg.Checks, ch)
		if ch.Status != evidence.StatusPassed {
			failed = append(failed, ch.Name+": "+ch.Detail)
		}
	}
	if a := g.Accelerator; a != nil {
		ch, f := checkAccelerator(ctx, a)
		add(ch)
		eg.Failure = f
	}
	for _, d := range g.Disks {
		add(checkDisk(d))
	}
	for _, cmd := range g.Commands {
		add(checkCommand(ctx, cmd))
	}
	for _, f := range g.Files {
		ch := evidence.Check{Name: "file " + f, Status: evidence.StatusPassed}
		if st, err := os.Stat(f); err != nil {
			ch.Status, ch.Detail = evidence.StatusFailed, "missing: "+err.Error()
		} else {
			ch.Detail = fmt.Sprintf("present, %d bytes", st.Size())
		}
		add(ch)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %s failed: %s", len(failed), termtext.Plural(len(eg.Checks), "check", "checks"), strings.Join(failed, "; "))
	}
	return nil
}

// checkAccelerator compares doctor's accelerators with the requirement.
// A failed check comes with its failure: accelerator_busy when a GPU that
// matches has the memory asked for but other processes hold it (named
// from nvidia-smi --query-compute-apps: pid, process, MiB), otherwise
// accelerator_unavailable (no GPU, none matching, or too small).
func checkAccelerator(ctx context.Context, a *AcceleratorReq) (evidence.Check, *failure.Failure) {
	ch := evidence.Check{Name: "accelerator"}
	gpus, note := doctor.Accelerators(ctx, doctor.Options{})
	if len(gpus) == 0 {
		ch.Status, ch.Detail = evidence.StatusFailed, note
		if note == "" {
			ch.Detail = "nvidia-smi lists no GPU"
		}
		return ch, prereqFailure(failure.ClassAcceleratorUnavailable, ch.Detail, nil, nil)
	}
	var re *regexp.Regexp
	if a.NamePattern != "" {
		re = regexp.MustCompile(a.NamePattern)
	}
	var ok, seen []string
	matching, bigEnough, bestFree := 0, 0, -1
	for _, gpu := range gpus {
		seen = append(seen, fmt.Sprintf("%s (%d MiB free)", gpu.Name, gpu.MemoryFreeMiB))
		ch.Output += fmt.Sprintf("%s, %d, %d, %s\n", gpu.Name, gpu.MemoryTotalMiB, gpu.MemoryFreeMiB, gpu.Driver)
		if re != nil && !re.MatchString(gpu.Name) {
			continue
		}
		matching++
		if gpu.MemoryTotalMiB >= a.MinFreeMiB {
			bigEnough++
			bestFree = max(bestFree, gpu.MemoryFreeMiB)
		}
		if gpu.MemoryFreeMiB >= a.MinFreeMiB {
			ok = append(ok, gpu.Name)
		}
	}
	if len(ok) >= a.Count {
		ch.Status, ch.Detail = evidence.StatusPassed, strings.Join(seen, ", ")
		return ch, nil
	}
	ch.Status = evidence.StatusFailed
	ch.Detail = fmt.Sprintf("want %d GPU(s) matching %q with %d MiB free, found %s", a.Count, a.NamePattern, a.MinFreeMiB, strings.Join(seen, ", "))
	if matching < a.Count || bigEnough < a.Count {
		return ch, prereqFailure(failure.ClassAcceleratorUnavailable, ch.Detail, nil, nil)
	}
	// The GPUs are there and large enough: their memory is held.
	facts := map[string]float64{"free_mib_wanted": float64(a.MinFreeMiB), "free_mib": float64(bestFree)}
	detail := map[string]any{}
	procs, pnote := doctor.GPUProcesses(ctx, doctor.Options{})
	switch {
	case pnote != "":
		ch.Detail += "; the processes holding GPU memory are unknown: " + pnote
	case len(procs) == 0:
		ch.Detail += "; nvidia-smi lists no process holding GPU memory (another container or VM may hold it)"
	default:
		sort.SliceStable(procs, func(i, j int) bool { return procs[i].UsedMemoryMiB > procs[j].UsedMemoryMiB })
		names := make([]string, len(procs))
		for i, p := range procs {
			names[i] = p.String()
			ch.Output += fmt.Sprintf("held by %d, %s, %d\n", p.PID, p.Name, p.UsedMemoryMiB)
		}
		ch.Detail += "; GPU memory held by " + strings.Join(names, ", ")
		top := procs[0]
		facts["holder_pid"] = float64(top.PID)
		if top.UsedMemoryMiB >= 0 {
			facts["holder_used_mib"] = float64(top.UsedMemoryMiB)
		}
		detail["holder_process"] = top.Name
		detail["holders"] = procs
	}
	return ch, prereqFailure(failure.ClassAcceleratorBusy, ch.Detail, facts, detail)
}

// prereqFailure is the prereq gate's failure record: phase prereq, the
// check's detail as root cause, the class's next step.
func prereqFailure(class failure.Class, root string, facts map[string]float64, detail map[string]any) *failure.Failure {
	f := &failure.Failure{Class: class, Phase: failure.PhasePrereq, RootCause: "accelerator: " + root, Facts: facts, NextStep: engine.NextStep(class)}
	if len(detail) > 0 {
		f.Detail = detail
	}
	return f
}

// checkDisk compares doctor's free space of d.Path with the requirement.
func checkDisk(d DiskReq) evidence.Check {
	ch := evidence.Check{Name: "disk " + d.Path}
	dk := doctor.DiskOf(d.Path)
	if dk.Error != "" {
		ch.Status, ch.Detail = evidence.StatusFailed, dk.Error
		return ch
	}
	free := float64(dk.FreeBytes) / (1 << 30)
	ch.Detail = fmt.Sprintf("%.1f GiB free, want ≥ %s GiB", free, gib(d.MinFreeGiB))
	ch.Status = evidence.StatusPassed
	if free < d.MinFreeGiB {
		ch.Status = evidence.StatusFailed
	}
	return ch
}

// gib writes a requirement in GiB as written, with at least one decimal
// (1.0, 0.05, 2.5).
func gib(v float64) string {
	t := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(t, ".") {
		t += ".0"
	}
	return t
}

func checkCommand(ctx context.Context, cr CommandReq) evidence.Check {
	ch := evidence.Check{Name: "command " + cr.Name}
	cmd := exec.CommandContext(ctx, cr.Run[0], cr.Run[1:]...)
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	ch.Output = truncate(string(out), 4000)
	if err != nil {
		ch.Status, ch.Detail = evidence.StatusFailed, fmt.Sprintf("%s: %s", strings.Join(cr.Run, " "), firstLine(string(out), err.Error()))
		return ch
	}
	if cr.VersionPattern != "" {
		// A Go program built with 'go install module@version' reports
		// 0.0.0 (no version stamp) while its build info holds the real
		// module version ('hiro doctor' reports that one): the pattern
		// also sees it, as a line "build info: version vX.Y.Z".
		text := string(out)
		bi := buildInfoVersion(cr.Run[0])
		if bi != "" {
			text += "\nbuild info: version " + bi
		}
		m := regexp.MustCompile(cr.VersionPattern).FindString(text)
		if m == "" {
			ch.Status, ch.Detail = evidence.StatusFailed, fmt.Sprintf("output does not match %q: %s", cr.VersionPattern, firstLine(string(out), ""))
			if bi != "" {
				ch.Detail += " (build info: version " + bi + ")"
			}
			return ch
		}
		ch.Detail = m
		if bi != "" && !strings.Contains(m, bi) {
			ch.Detail += " (build info: version " + bi + ")"
		}
	} else {
		ch.Detail = firstLine(string(out), "ok")
	}
	ch.Status = evidence.StatusPassed
	return ch
}

// buildInfoVersion is the main module's version in the Go build
// information of the program prog (looked up on PATH), "" when it is not a
// Go program or has no real version ("(devel)", none).
func buildInfoVersion(prog string) string {
	path, err := exec.LookPath(prog)
	if err != nil {
		return ""
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return ""
	}
	return bi.Main.Version
}

func firstLine(s, dflt string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return truncate(l, 300)
		}
	}
	return dflt
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
