package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fixtures are what nvidia-smi printed on the H200 machine
// (hiro doctor --json was run there once; doctor-h200.json is its output).
func TestParseNvidiaSMIFixtures(t *testing.T) {
	gpus, err := ParseQueryGPU(readFixture(t, "nvidia-smi-query-gpu-h200.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus) != 1 {
		t.Fatalf("%d GPUs, want 1", len(gpus))
	}
	g := gpus[0]
	if g.Name != "NVIDIA H200" || g.MemoryTotalMiB != 143771 || g.MemoryFreeMiB != 143156 || g.Driver != "580.159.04" {
		t.Errorf("%+v", g)
	}
	if v := ParseCUDAVersion(readFixture(t, "nvidia-smi-h200.txt")); v != "13.0" {
		t.Errorf("CUDA version %q, want 13.0", v)
	}
}

func TestParseQueryGPUMultiAndBad(t *testing.T) {
	gpus, err := ParseQueryGPU([]byte("NVIDIA GeForce RTX 4090, 24564, 23000, 550.54.14\nNVIDIA GeForce RTX 3090, 24576, 100, 550.54.14\n"))
	if err != nil || len(gpus) != 2 || gpus[1].Index != 1 || gpus[1].MemoryFreeMiB != 100 {
		t.Fatalf("%+v %v", gpus, err)
	}
	if _, err := ParseQueryGPU([]byte("NVIDIA H200, [N/A], 1, 580\n")); err == nil {
		t.Error("a non-numeric memory must be an error")
	}
}

func TestCollectWithFakeCommands(t *testing.T) {
	smi := readFixture(t, "nvidia-smi-h200.txt")
	query := readFixture(t, "nvidia-smi-query-gpu-h200.csv")
	o := Options{
		DiskPaths: []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")},
		LookPath: func(name string) (string, error) {
			switch name {
			case "nvidia-smi", "ollama", "llama-server":
				return "/usr/bin/" + name, nil
			}
			return "", errors.New("not found")
		},
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			switch {
			case name == "/usr/bin/nvidia-smi" && len(args) == 0:
				return smi, nil
			case name == "/usr/bin/nvidia-smi" && strings.HasPrefix(args[0], "--query-compute-apps="):
				return nil, nil // no process holds memory
			case name == "/usr/bin/nvidia-smi":
				return query, nil
			case name == "go":
				return []byte("/usr/bin/ollama: go1.24.1\n\tpath\tgithub.com/ollama/ollama\n\tmod\tgithub.com/ollama/ollama\tv0.6.5\th1:abc=\n"), nil
			case name == "/usr/bin/llama-server":
				return []byte("version: 4600 (1d1e6a90)\nbuilt with cc (GCC) 12.2.0 for x86_64-linux-gnu\n"), nil
			}
			return nil, errors.New("unexpected command " + name)
		},
	}
	r := Collect(context.Background(), o)
	if len(r.Accelerators) != 1 || r.Accelerators[0].CUDA != "13.0" {
		t.Errorf("accelerators %+v (%s)", r.Accelerators, r.AcceleratorNote)
	}
	if r.GPUProcesses == nil || len(r.GPUProcesses) != 0 || r.GPUProcessNote != "" {
		t.Errorf("gpu processes %+v (%s), want an empty list", r.GPUProcesses, r.GPUProcessNote)
	}
	if len(r.Disks) != 2 || r.Disks[0].FreeBytes == 0 || r.Disks[1].Error == "" {
		t.Errorf("disks %+v", r.Disks)
	}
	byKind := map[string]Engine{}
	for _, e := range r.Engines {
		byKind[e.Kind] = e
	}
	if e := byKind["ollama"]; !e.Found || e.Version != "v0.6.5" || !strings.HasPrefix(e.VersionSource, "go version -m") {
		t.Errorf("ollama %+v", e)
	}
	if e := byKind["llamacpp"]; !e.Found || e.Version != "4600" {
		t.Errorf("llama-server %+v", e)
	}
	if e := byKind["vllm"]; e.Found {
		t.Errorf("vllm found: %+v", e)
	}
	if r.CPU.Cores < 1 || r.Memory.TotalBytes == 0 || r.OS.Kernel == "" {
		t.Errorf("host facts %+v %+v %+v", r.CPU, r.Memory, r.OS)
	}
}

func TestNoNvidiaSMI(t *testing.T) {
	r := Collect(context.Background(), Options{
		LookPath: func(string) (string, error) { return "", errors.New("not found") },
		Run:      func(context.Context, string, ...string) ([]byte, error) { return nil, errors.New("no") },
	})
	if len(r.Accelerators) != 0 || !strings.Contains(r.AcceleratorNote, "nvidia-smi not found") {
		t.Errorf("%+v %q", r.Accelerators, r.AcceleratorNote)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{
		"ollama version is 0.6.5\n": "0.6.5",
		"Warning: could not connect to a running Ollama instance\nWarning: client version is 0.0.0\n": "0.0.0",
		"0.8.4\n":                    "0.8.4",
		"version: 4600 (1d1e6a90)\n": "4600",
		"":                           "",
	} {
		if got := ParseVersion([]byte(in)); got != want {
			t.Errorf("ParseVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParsers(t *testing.T) {
	if n := osReleaseName([]byte("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")); n != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("os-release %q", n)
	}
	if m := parseCPUModel([]byte("processor\t: 0\nmodel name\t: AMD EPYC 7763 64-Core Processor\n")); m != "AMD EPYC 7763 64-Core Processor" {
		t.Errorf("cpu %q", m)
	}
	if m := parseMeminfo([]byte("MemTotal:       24683620 kB\nMemFree:  1 kB\nMemAvailable:   23584820 kB\n")); m.TotalBytes != 24683620*1024 || m.AvailableBytes != 23584820*1024 {
		t.Errorf("meminfo %+v", m)
	}
}

// A path given twice, or two paths on one file system, list one disk.
func TestDisksListedOnce(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "state")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	got := disks([]string{dir, dir + "/", sub, filepath.Join(dir, "missing")}, nil)
	if len(got) != 2 {
		t.Fatalf("got %d disks, want 2 (one file system, one missing path): %+v", len(got), got)
	}
	if got[0].Path != dir || len(got[0].AlsoPaths) != 1 || got[0].AlsoPaths[0] != sub {
		t.Errorf("first disk %+v: want %s with also %s", got[0], dir, sub)
	}
	if got[1].Error != "path does not exist" {
		t.Errorf("missing path: %+v", got[1])
	}
}

// Without sglang, doctor says the Python module is missing, not python3.
func TestSGLangModuleMissing(t *testing.T) {
	r := Collect(context.Background(), Options{
		LookPath: func(name string) (string, error) {
			if name == "python3" {
				return "/usr/bin/python3", nil
			}
			return "", errors.New("not found")
		},
		Run: func(context.Context, string, ...string) ([]byte, error) {
			return []byte("ModuleNotFoundError: No module named 'sglang'"), errors.New("exit status 1")
		},
	})
	for _, e := range r.Engines {
		switch e.Kind {
		case "sglang":
			if e.Found || e.Note != "python module sglang not found" {
				t.Errorf("sglang: %+v", e)
			}
		case "vllm":
			if e.Found || e.Note != "vllm not found on PATH" {
				t.Errorf("vllm: %+v", e)
			}
		}
	}
}

// A state folder hiro creates on first use is not a problem while it does
// not exist: it is measured on the nearest folder above it that exists.
// A configured disk path that is missing still says so.
func TestStatePathCreatedLater(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "not", "yet", ".hiro")
	got := disks([]string{filepath.Join(dir, "models"), state}, []string{state})
	if len(got) != 2 || got[0].Error != "path does not exist" {
		t.Fatalf("disks %+v", got)
	}
	d := got[1]
	if d.Error != "" || !d.CreatedLater || d.MeasuredAt != dir || d.Path != state || d.TotalBytes == 0 {
		t.Errorf("state folder not created yet: %+v", d)
	}
}

// U2 (findings16): the Ollama on PATH and the one install-ollama.sh built
// under $GOPATH/bin are two binaries: doctor names the second, which the
// examples run; the same binary reached both ways is not named twice.
func TestDoctorNamesTheInstalledOllamaBesidePATHs(t *testing.T) {
	gopath, other := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(gopath, "bin"), 0o755)
	built := filepath.Join(gopath, "bin", "ollama")
	onPath := filepath.Join(other, "ollama")
	for _, p := range []string{built, onPath} {
		os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	}
	t.Setenv("GOPATH", gopath)
	t.Setenv("HIRO_OLLAMA", "")
	collect := func(found string) Engine {
		r := Collect(context.Background(), Options{
			LookPath: func(name string) (string, error) {
				if name == "ollama" {
					return found, nil
				}
				return "", errors.New("not found")
			},
			Run: func(context.Context, string, ...string) ([]byte, error) {
				return []byte("ollama version is 0.6.5"), nil
			},
		})
		for _, e := range r.Engines {
			if e.Kind == "ollama" {
				return e
			}
		}
		t.Fatal("no ollama engine in the report")
		return Engine{}
	}
	if e := collect(onPath); e.Also != built {
		t.Errorf("PATH's %s and the built %s: also %q, want the built one", onPath, built, e.Also)
	}
	if e := collect(built); e.Also != "" {
		t.Errorf("the built one on PATH: also %q, want none", e.Also)
	}
}
