package doctor

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultCommandTimeout bounds each command doctor runs (nvidia-smi,
// version queries).
const DefaultCommandTimeout = 10 * time.Second

// Report is what `hiro doctor --json` prints.
type Report struct {
	OS     OSInfo `json:"os"`
	CPU    CPU    `json:"cpu"`
	Memory Memory `json:"memory"`
	// Disks has one entry per path asked for, in order.
	Disks []Disk `json:"disks"`
	// Accelerators are the GPUs nvidia-smi lists; empty when it is absent.
	Accelerators []Accelerator `json:"accelerators"`
	// AcceleratorNote says why the list is empty ("nvidia-smi not found
	// on PATH") or what went wrong running it.
	AcceleratorNote string `json:"accelerator_note,omitempty"`
	// GPUProcesses are the processes holding GPU memory (nvidia-smi
	// --query-compute-apps); empty when none or nvidia-smi is absent.
	GPUProcesses []GPUProcess `json:"gpu_processes"`
	// GPUProcessNote says what went wrong listing them, when it did.
	GPUProcessNote string `json:"gpu_process_note,omitempty"`
	// Engines are the engines looked for, found or not.
	Engines []Engine `json:"engines"`
}

// OSInfo is the operating system and kernel.
type OSInfo struct {
	// Name is PRETTY_NAME from /etc/os-release ("Debian GNU/Linux 12").
	Name string `json:"name"`
	// GOOS and Arch are Go's names ("linux", "amd64").
	GOOS string `json:"goos"`
	Arch string `json:"arch"`
	// Kernel is uname's release ("6.1.0-18-amd64").
	Kernel string `json:"kernel"`
	// WSL is true under Windows Subsystem for Linux (kernel name has
	// "microsoft"), where pinned memory and UVA may be unavailable.
	WSL bool `json:"wsl"`
}

// CPU is the processor model and the logical cores hiro may use.
type CPU struct {
	Model string `json:"model"`
	Cores int    `json:"cores"`
}

// Memory is host memory in bytes (/proc/meminfo).
type Memory struct {
	TotalBytes     uint64 `json:"total_bytes"`
	AvailableBytes uint64 `json:"available_bytes"`
}

// Disk is the free space of one path's file system (statfs).
type Disk struct {
	Path       string `json:"path"`
	TotalBytes uint64 `json:"total_bytes,omitempty"`
	FreeBytes  uint64 `json:"free_bytes,omitempty"`
	// Error says why the path could not be measured (missing path).
	Error string `json:"error,omitempty"`
	// CreatedLater marks a folder hiro creates when it first needs it
	// (Options.StatePaths) that does not exist yet: not an error; its
	// space is that of MeasuredAt, the nearest folder above it that exists.
	CreatedLater bool   `json:"created_later,omitempty"`
	MeasuredAt   string `json:"measured_at,omitempty"`
	// AlsoPaths are the other paths asked for that lie on the same file
	// system (same statfs file system id and size): one disk is listed
	// once.
	AlsoPaths []string `json:"also_paths,omitempty"`
	fsid      [2]int32
}

// Accelerator is one GPU as nvidia-smi reports it. Memory in MiB.
type Accelerator struct {
	Index          int    `json:"index"`
	Name           string `json:"name"`
	MemoryTotalMiB int    `json:"memory_total_mib"`
	MemoryFreeMiB  int    `json:"memory_free_mib"`
	Driver         string `json:"driver_version"`
	// CUDA is the highest CUDA version the driver supports, from the
	// nvidia-smi header ("12.4"); empty when unknown.
	CUDA string `json:"cuda_version,omitempty"`
}

// GPUProcess is one process holding GPU memory, as `nvidia-smi
// --query-compute-apps=pid,process_name,used_memory` reports it. In a
// container the PID is the host's and the name may be empty.
type GPUProcess struct {
	PID  int    `json:"pid"`
	Name string `json:"process_name"`
	// UsedMemoryMiB is the GPU memory it holds, MiB; -1 when nvidia-smi
	// cannot say ("[N/A]", e.g. under MIG or without permission).
	UsedMemoryMiB int `json:"used_memory_mib"`
}

// String is "pid 4084 python3 (141612 MiB)".
func (p GPUProcess) String() string {
	s := "pid " + strconv.Itoa(p.PID)
	if p.Name != "" {
		s += " " + p.Name
	}
	if p.UsedMemoryMiB >= 0 {
		s += " (" + strconv.Itoa(p.UsedMemoryMiB) + " MiB)"
	} else {
		s += " (memory unknown)"
	}
	return s
}

// Engine is an inference engine looked for on PATH.
type Engine struct {
	// Kind is the engine kind ("ollama", "llamacpp", "vllm", "sglang").
	Kind string `json:"kind"`
	// Command is the executable looked for; Path where it was found.
	Command string `json:"command"`
	Path    string `json:"path,omitempty"`
	Found   bool   `json:"found"`
	// Version as the engine reports it (for a Go-built Ollama, the module
	// version from the binary's build info, since /api/version says 0.0.0).
	Version string `json:"version,omitempty"`
	// VersionSource is the command that gave Version.
	VersionSource string `json:"version_source,omitempty"`
	// Note says what went wrong asking for the version.
	Note string `json:"note,omitempty"`
	// Also is, for Ollama found on PATH, the other binary that
	// scripts/install-ollama.sh built ($GOPATH/bin/ollama, or
	// HIRO_OLLAMA) when it is not the one on PATH: the examples put that
	// folder first on PATH, so they run it, not Path.
	Also string `json:"also,omitempty"`
}

// Options tune Collect.
type Options struct {
	// DiskPaths are measured in order (configuration disk_paths, state dir).
	DiskPaths []string
	// StatePaths are those of DiskPaths that hiro creates when it first
	// needs them (state_dir): missing, they are measured on the nearest
	// folder above them that exists, and are not an error.
	StatePaths []string
	// LookPath finds commands; default exec.LookPath.
	LookPath func(string) (string, error)
	// Run runs a command and returns its combined output; default runs
	// it with DefaultCommandTimeout. Tests replace it.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Collect gathers the report. It never fails as a whole: a fact that
// cannot be read is left empty with a note.
func Collect(ctx context.Context, o Options) Report {
	o = o.withDefaults()
	var r Report
	r.OS = osInfo()
	r.CPU = CPU{Model: cpuModel(), Cores: runtime.NumCPU()}
	r.Memory = memory()
	r.Disks = disks(o.DiskPaths, o.StatePaths)
	r.Accelerators, r.AcceleratorNote = accelerators(ctx, o)
	if len(r.Accelerators) > 0 {
		r.GPUProcesses, r.GPUProcessNote = gpuProcesses(ctx, o)
	}
	r.Engines = engines(ctx, o)
	if r.Accelerators == nil {
		r.Accelerators = []Accelerator{}
	}
	if r.GPUProcesses == nil {
		r.GPUProcesses = []GPUProcess{}
	}
	return r
}

func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, DefaultCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	return cmd.CombinedOutput()
}

func osInfo() OSInfo {
	o := OSInfo{GOOS: runtime.GOOS, Arch: runtime.GOARCH}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		o.Name = osReleaseName(b)
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		o.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	o.WSL = strings.Contains(strings.ToLower(o.Kernel), "microsoft")
	return o
}

// osReleaseName returns PRETTY_NAME (else NAME) of an os-release file.
func osReleaseName(b []byte) string {
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			vals[k] = strings.Trim(v, `"'`)
		}
	}
	if v := vals["PRETTY_NAME"]; v != "" {
		return v
	}
	return vals["NAME"]
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	return parseCPUModel(b)
}

// parseCPUModel returns the first "model name" of /proc/cpuinfo (x86),
// else "Model"/"CPU part" lines (Arm).
func parseCPUModel(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name", "Model", "cpu model":
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memory() Memory {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return Memory{}
	}
	return parseMeminfo(b)
}

// parseMeminfo reads MemTotal and MemAvailable (kB) into bytes.
func parseMeminfo(b []byte) Memory {
	var m Memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemTotal:":
			m.TotalBytes = n * 1024
		case "MemAvailable:":
			m.AvailableBytes = n * 1024
		}
	}
	return m
}

// disks measures each path once and lists each file system once: a path
// repeated (after cleaning) is dropped, and a path on a file system already
// listed is added to that entry's AlsoPaths.
func disks(paths, statePaths []string) []Disk {
	var out []Disk
	seen := map[string]bool{}
	later := map[string]bool{}
	for _, p := range statePaths {
		later[filepath.Clean(p)] = true
	}
next:
	for _, p := range paths {
		c := filepath.Clean(p)
		if seen[c] {
			continue
		}
		seen[c] = true
		d := disk(c)
		if d.Error != "" && later[c] {
			d = createdLater(c)
		}
		if d.Error == "" {
			for i := range out {
				o := &out[i]
				if o.Error == "" && o.fsid == d.fsid && o.TotalBytes == d.TotalBytes {
					o.AlsoPaths = append(o.AlsoPaths, c)
					continue next
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// createdLater measures a folder hiro will create on the nearest folder
// above it that exists.
func createdLater(p string) Disk {
	for up := filepath.Dir(p); ; up = filepath.Dir(up) {
		if d := disk(up); d.Error == "" {
			d.Path, d.CreatedLater, d.MeasuredAt = p, true, up
			return d
		}
		if up == filepath.Dir(up) {
			return disk(p)
		}
	}
}

func disk(p string) Disk {
	d := Disk{Path: p}
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		d.Error = err.Error()
		if errors.Is(err, unix.ENOENT) {
			d.Error = "path does not exist"
		}
		return d
	}
	d.fsid = st.Fsid.Val
	d.TotalBytes = st.Blocks * uint64(st.Bsize)
	d.FreeBytes = st.Bavail * uint64(st.Bsize)
	return d
}

func accelerators(ctx context.Context, o Options) ([]Accelerator, string) {
	smi, err := o.LookPath("nvidia-smi")
	if err != nil {
		return nil, "nvidia-smi not found on PATH: no NVIDIA accelerator visible"
	}
	out, err := o.Run(ctx, smi, "--query-gpu=name,memory.total,memory.free,driver_version", "--format=csv,noheader,nounits")
	if err != nil {
		return nil, "nvidia-smi --query-gpu failed: " + strings.TrimSpace(firstLine(out)+" "+err.Error())
	}
	gpus, err := ParseQueryGPU(out)
	if err != nil {
		return nil, err.Error()
	}
	if hdr, err := o.Run(ctx, smi); err == nil {
		cuda := ParseCUDAVersion(hdr)
		for i := range gpus {
			gpus[i].CUDA = cuda
		}
	}
	return gpus, ""
}

// ParseQueryGPU parses the output of `nvidia-smi
// --query-gpu=name,memory.total,memory.free,driver_version
// --format=csv,noheader,nounits`: one GPU per line, memory in MiB.
func ParseQueryGPU(out []byte) ([]Accelerator, error) {
	var gpus []Accelerator
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) != 4 {
			return nil, errors.New("nvidia-smi --query-gpu: unexpected line (want name, memory.total, memory.free, driver_version): " + line)
		}
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		total, err1 := strconv.Atoi(f[1])
		free, err2 := strconv.Atoi(f[2])
		if err1 != nil || err2 != nil {
			return nil, errors.New("nvidia-smi --query-gpu: memory is not a number of MiB: " + line)
		}
		gpus = append(gpus, Accelerator{Index: len(gpus), Name: f[0], MemoryTotalMiB: total, MemoryFreeMiB: free, Driver: f[3]})
	}
	return gpus, nil
}

// queryComputeApps is the nvidia-smi query for the processes holding GPU
// memory.
const queryComputeApps = "--query-compute-apps=pid,process_name,used_memory"

func gpuProcesses(ctx context.Context, o Options) ([]GPUProcess, string) {
	smi, err := o.LookPath("nvidia-smi")
	if err != nil {
		return nil, "nvidia-smi not found on PATH"
	}
	out, err := o.Run(ctx, smi, queryComputeApps, "--format=csv,noheader,nounits")
	if err != nil {
		return nil, "nvidia-smi --query-compute-apps failed: " + strings.TrimSpace(firstLine(out)+" "+err.Error())
	}
	ps, err := ParseComputeApps(out)
	if err != nil {
		return nil, err.Error()
	}
	return ps, ""
}

// ParseComputeApps parses the output of `nvidia-smi
// --query-compute-apps=pid,process_name,used_memory
// --format=csv,noheader,nounits`: one process per line, memory in MiB
// ("[N/A]" gives -1). A process name holding commas is kept whole. Empty
// output (no process holds memory) gives none; a line without a numeric
// pid is an error.
func ParseComputeApps(out []byte) ([]GPUProcess, error) {
	var ps []GPUProcess
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "No running") {
			continue
		}
		f := strings.Split(line, ",")
		if len(f) < 3 {
			return nil, errors.New("nvidia-smi --query-compute-apps: unexpected line (want pid, process_name, used_memory): " + line)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			return nil, errors.New("nvidia-smi --query-compute-apps: pid is not a number: " + line)
		}
		used, err := strconv.Atoi(strings.TrimSpace(f[len(f)-1]))
		if err != nil {
			used = -1
		}
		name := strings.TrimSpace(strings.Join(f[1:len(f)-1], ","))
		ps = append(ps, GPUProcess{PID: pid, Name: name, UsedMemoryMiB: used})
	}
	return ps, nil
}

var reCUDA = regexp.MustCompile(`CUDA Version:\s*([0-9][0-9.]*)`)

// ParseCUDAVersion returns the "CUDA Version: X.Y" of plain nvidia-smi's
// header, or "".
func ParseCUDAVersion(out []byte) string {
	if m := reCUDA.FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// engineProbe says how to find one engine and ask its version.
type engineProbe struct {
	kind, command string
	args          []string
}

var probes = []engineProbe{
	{"ollama", "ollama", []string{"--version"}},
	{"llamacpp", "llama-server", []string{"--version"}},
	{"vllm", "vllm", []string{"--version"}},
	{"sglang", "python3", []string{"-c", "import sglang; print(sglang.__version__)"}},
}

var (
	reGoModVersion = regexp.MustCompile(`(?m)^\s*mod\s+github\.com/ollama/ollama\s+(\S+)`)
	reVersionWord  = regexp.MustCompile(`(?i)version\s*(?:is|:)?\s*v?([0-9][0-9A-Za-z.+-]*)`)
	reBareVersion  = regexp.MustCompile(`^v?([0-9]+\.[0-9]+[0-9A-Za-z.+-]*)$`)
)

func engines(ctx context.Context, o Options) []Engine {
	var out []Engine
	for _, p := range probes {
		e := Engine{Kind: p.kind, Command: p.command}
		path, err := o.LookPath(p.command)
		if err != nil && p.kind == "ollama" {
			path, err = goBinOllama(o)
		}
		if err != nil {
			e.Note = p.command + " not found on PATH"
			out = append(out, e)
			continue
		}
		e.Path = path
		if p.kind == "sglang" {
			// python3 on PATH says nothing about sglang: found only when
			// the import works.
			e.Command = "python3 -c 'import sglang'"
			b, err := o.Run(ctx, path, p.args...)
			if err != nil {
				e.Path = ""
				e.Note = "python module sglang not found"
				out = append(out, e)
				continue
			}
			e.Found, e.Version, e.VersionSource = true, strings.TrimSpace(lastLine(b)), "python3 -c 'import sglang; print(sglang.__version__)'"
			out = append(out, e)
			continue
		}
		e.Found = true
		if p.kind == "ollama" {
			e.Also = otherOllama(o, path)
		}
		if p.kind == "ollama" {
			if b, err := o.Run(ctx, "go", "version", "-m", path); err == nil {
				if m := reGoModVersion.FindSubmatch(b); m != nil {
					e.Version, e.VersionSource = string(m[1]), "go version -m "+path
				}
			}
		}
		if e.Version == "" {
			b, err := o.Run(ctx, path, p.args...)
			if v := ParseVersion(b); v != "" {
				e.Version, e.VersionSource = v, p.command+" "+strings.Join(p.args, " ")
			} else if err != nil {
				e.Note = strings.TrimSpace(firstLine(b) + " " + err.Error())
			}
		}
		out = append(out, e)
	}
	return out
}

// goBinOllama finds the Ollama that scripts/install-ollama.sh builds into
// $(go env GOPATH)/bin, or $HIRO_OLLAMA.
// otherOllama is the install script's Ollama when it is another binary
// than onPath (symbolic links resolved); "" when it is the same or absent.
func otherOllama(o Options, onPath string) string {
	g, err := goBinOllama(o)
	if err != nil {
		return ""
	}
	a, errA := filepath.EvalSymlinks(onPath)
	b, errB := filepath.EvalSymlinks(g)
	if errA != nil || errB != nil || a == b {
		return ""
	}
	return g
}

func goBinOllama(o Options) (string, error) {
	if p := os.Getenv("HIRO_OLLAMA"); p != "" {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	p := filepath.Join(gopath, "bin", "ollama")
	if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
		return p, nil
	}
	return "", os.ErrNotExist
}

// ParseVersion finds a version in a --version output: "version: b4600",
// "ollama version is 0.6.5", "0.8.4". A "0.0.0" (a Go build without a
// version stamp) is skipped when another version follows.
func ParseVersion(b []byte) string {
	var found string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if m := reVersionWord.FindStringSubmatch(line); m != nil {
			if m[1] != "0.0.0" || found == "" {
				found = m[1]
			}
			if found != "0.0.0" {
				return found
			}
			continue
		}
		if m := reBareVersion.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return found
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
