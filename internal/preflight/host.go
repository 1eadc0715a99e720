package preflight

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/doctor"
	"github.com/hiro-dev/hiro/internal/procfs"
	"github.com/hiro-dev/hiro/internal/supervisor"
)

// Host is what a prediction is checked against: the accelerators (memory
// in bytes) with what production holds on each, host memory, the kernel
// and driver, the CPU's instruction sets. A replay loads recorded facts
// of another host (LoadHost).
type Host struct {
	// Source says where the facts come from ("this host", or a file).
	Source  string   `json:"source,omitempty"`
	Devices []Device `json:"devices"`
	// DeviceNote says why Devices is empty (no nvidia-smi, ...).
	DeviceNote string `json:"device_note,omitempty"`
	// AvailableBytes is host memory available (MemAvailable).
	AvailableBytes uint64 `json:"available_bytes"`
	// Kernel is uname's release; WSL says it is a WSL2 kernel.
	Kernel string `json:"kernel"`
	WSL    bool   `json:"wsl"`
	// Driver is the NVIDIA driver version; CUDA the highest CUDA version
	// it supports (nvidia-smi's header).
	Driver string `json:"driver,omitempty"`
	CUDA   string `json:"cuda_version,omitempty"`
	// Arch is Go's name of the CPU architecture; CPUFlags the CPU's
	// instruction-set flags (/proc/cpuinfo "flags").
	Arch     string   `json:"arch,omitempty"`
	CPUFlags []string `json:"cpu_flags,omitempty"`
}

// Device is one accelerator as nvidia-smi reports it.
type Device struct {
	Index int    `json:"index"`
	UUID  string `json:"uuid,omitempty"`
	Name  string `json:"name"`
	// TotalBytes and FreeBytes are its memory.
	TotalBytes uint64 `json:"total_bytes"`
	FreeBytes  uint64 `json:"free_bytes"`
	// ComputeCapability is "major.minor" ("9.0"); empty when unknown.
	ComputeCapability string `json:"compute_capability,omitempty"`
	// MIG says the GPU is partitioned in MIG slices: an engine sees a
	// slice, whose memory the whole GPU's figures do not give.
	MIG bool `json:"mig,omitempty"`
	// ProductionBytes is what production's processes hold on it (what
	// stopping production frees), from nvidia-smi's per-process memory.
	ProductionBytes uint64 `json:"production_bytes,omitempty"`
}

// LoadHost reads recorded host facts (a Host as JSON), for a replay of
// another host's campaign.
func LoadHost(path string) (*Host, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("host facts: %w", err)
	}
	var h Host
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return nil, fmt.Errorf("host facts %s: %w", path, err)
	}
	if h.Source == "" {
		h.Source = "recorded facts " + path
	}
	return &h, nil
}

// CollectHost gathers this host's facts through package doctor and
// nvidia-smi (compute capability, MIG mode, per-process memory by GPU).
// productionPIDs are production's processes (its process tree): the
// memory they hold is what stopping production frees.
func CollectHost(ctx context.Context, o doctor.Options, productionPIDs []int) *Host {
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	if o.Run == nil {
		o.Run = func(ctx context.Context, name string, args ...string) ([]byte, error) {
			ctx, cancel := context.WithTimeout(ctx, doctor.DefaultCommandTimeout)
			defer cancel()
			return exec.CommandContext(ctx, name, args...).CombinedOutput()
		}
	}
	rep := doctor.Collect(ctx, o)
	h := &Host{Source: "this host", AvailableBytes: rep.Memory.AvailableBytes, Kernel: rep.OS.Kernel, WSL: rep.OS.WSL,
		Arch: rep.OS.Arch, CPUFlags: cpuFlags(), DeviceNote: rep.AcceleratorNote}
	for _, a := range rep.Accelerators {
		h.Devices = append(h.Devices, Device{Index: a.Index, Name: a.Name, TotalBytes: uint64(a.MemoryTotalMiB) << 20, FreeBytes: uint64(a.MemoryFreeMiB) << 20})
		h.Driver, h.CUDA = a.Driver, a.CUDA
	}
	if len(h.Devices) == 0 {
		return h
	}
	smi, err := o.LookPath("nvidia-smi")
	if err != nil {
		return h
	}
	if out, err := o.Run(ctx, smi, "--query-gpu=index,uuid,compute_cap,mig.mode.current", "--format=csv,noheader"); err == nil {
		for _, line := range lines(out) {
			f := splitCSV(line)
			if len(f) < 4 {
				continue
			}
			i, err := strconv.Atoi(f[0])
			if err != nil || i < 0 || i >= len(h.Devices) {
				continue
			}
			h.Devices[i].UUID, h.Devices[i].ComputeCapability = f[1], f[2]
			h.Devices[i].MIG = strings.EqualFold(f[3], "Enabled")
		}
	}
	if len(productionPIDs) == 0 {
		return h
	}
	prod := map[int]bool{}
	for _, p := range productionPIDs {
		prod[p] = true
	}
	if out, err := o.Run(ctx, smi, "--query-compute-apps=pid,gpu_uuid,used_memory", "--format=csv,noheader,nounits"); err == nil {
		for _, line := range lines(out) {
			f := splitCSV(line)
			if len(f) < 3 {
				continue
			}
			pid, err1 := strconv.Atoi(f[0])
			mib, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil || !prod[pid] {
				continue
			}
			for i := range h.Devices {
				if h.Devices[i].UUID == f[1] || len(h.Devices) == 1 {
					h.Devices[i].ProductionBytes += uint64(mib) << 20
				}
			}
		}
	}
	return h
}

// Visible applies CUDA_VISIBLE_DEVICES as the engine will: the devices
// it names, in its order, renumbered from 0 (indexes or GPU-/MIG- UUIDs;
// "" or "-1" hides all). A MIG UUID names a slice: the device is kept
// with MIG set, its memory unknown. set says the variable is set at all.
func (h *Host) Visible(value string, set bool) ([]Device, error) {
	if !set {
		return h.Devices, nil
	}
	var out []Device
	for _, tok := range strings.Split(value, ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		if n, err := strconv.Atoi(tok); err == nil {
			if n < 0 {
				break // CUDA stops at the first invalid index
			}
			if n >= len(h.Devices) {
				break
			}
			out = append(out, h.Devices[n])
			continue
		}
		found := false
		for _, d := range h.Devices {
			if d.UUID != "" && (d.UUID == tok || strings.HasPrefix(d.UUID, tok)) {
				out, found = append(out, d), true
				break
			}
		}
		if !found && strings.HasPrefix(tok, "MIG-") {
			return nil, fmt.Errorf("CUDA_VISIBLE_DEVICES names MIG slice %s: its memory is not in nvidia-smi's GPU figures", tok)
		}
		if !found {
			break
		}
	}
	for i := range out {
		out[i].Index = i
	}
	return out, nil
}

func cpuFlags() []string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "flags" {
			return strings.Fields(v)
		}
	}
	return nil
}

func lines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func splitCSV(line string) []string {
	f := strings.Split(line, ",")
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	return f
}

// ForProduction collects this host's facts with the memory held by the
// process group of production's supervisor record (in stateDir, profile
// name: the engine and its runners) as what stopping production frees; a
// production not running under hiro frees nothing that hiro can count.
func ForProduction(ctx context.Context, stateDir, name string) *Host {
	var pids []int
	if name != "" {
		if st, err := supervisor.Status(stateDir, name); err == nil && st.Status == supervisor.StatusRunning && st.PGID > 0 {
			for _, p := range procfs.GroupMembers(st.PGID) {
				pids = append(pids, p.PID)
			}
		}
	}
	return CollectHost(ctx, doctor.Options{}, pids)
}
