package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/doctor"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shellquote"
)

func init() { registerCommand(newDoctorCmd) }

func newDoctorCmd(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor [--json]",
		Short: "Report host facts: OS, CPU, memory, disks, accelerators, engines",
		Long: `Report what this host offers an inference server: OS and kernel, CPU model and
cores, memory, free disk of the configured paths (disk_paths and state_dir),
accelerators through nvidia-smi where present (name, memory total and free,
driver, CUDA version, and the processes holding GPU memory with their pid,
name and MiB), and the engines found on PATH with their versions
(ollama, llama-server, vllm, sglang).

With a configuration, each backend profile's endpoint is checked too (no
request is sent): a warning names the key path when a profile sends its API
key over plain http to a host that is not this machine (use https with
ca_file, or a loopback/SSH tunnel; allow_plain_http = true silences it on a
network you trust), when its api_key_file may be read by group or others
(chmod 600), or when its api_key_file cannot give a key (missing, unreadable,
empty, more than one line: every command that reaches the server would fail
on it). Warnings do not change the exit status.

The configuration is optional: without one (no hiro.toml here, no --config,
no HIRO_CONFIG) only the current directory's disk is measured. A
configuration named with --config or HIRO_CONFIG that does not exist, or
one that exists but is invalid, is bad usage.

Exit status: 0 reported; 2 bad usage or configuration.`,
		Args: needArgs(0, 0, "", ""),
		RunE: func(c *cobra.Command, _ []string) error { return runDoctor(c.Context(), g) },
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print one JSON object (errors too)")
	return cmd
}

// runDoctor reports the host. A configuration named with --config or
// $HIRO_CONFIG that does not exist was refused before it ran
// (namedConfigMissing); only the default hiro.toml may be absent here.
func runDoctor(ctx context.Context, g *Globals) error {
	var paths, statePaths []string
	cfg, err := config.Load(g.ConfigPath)
	var ce *config.Error
	switch {
	case err == nil:
		paths = append(append(paths, cfg.DiskPaths...), cfg.StateDir)
		statePaths = []string{cfg.StateDir} // created on first use: missing is not a problem
	case errors.As(err, &ce) && ce.Key == "" && !fileExists(g.ConfigPath):
		paths = []string{"."} // no configuration: host facts only
	default:
		return UsageError(fmt.Errorf("doctor: %w", err))
	}
	r := doctor.Collect(ctx, doctor.Options{DiskPaths: paths, StatePaths: statePaths})
	warnings := doctorEndpointWarnings(cfg)
	if g.JSON {
		return backendPrintJSON(g, struct {
			doctor.Report
			Warnings []llm.Warning `json:"warnings"`
		}{r, warnings})
	}
	printDoctor(g, r)
	for _, w := range warnings {
		fmt.Fprintf(g.Stdout, "warning: %s\n", redact.Secrets(w.String()))
	}
	return nil
}

// doctorEndpointWarnings is llm.EndpointWarnings of every profile of cfg,
// by profile name; never nil (JSON prints []). cfg may be nil.
func doctorEndpointWarnings(cfg *config.Config) []llm.Warning {
	ws := []llm.Warning{}
	if cfg == nil {
		return ws
	}
	for _, name := range cfg.BackendNames() {
		ws = append(ws, llm.EndpointWarnings(cfg.Backends[name])...)
		if w, ok := keyFileWarning(cfg.Backends[name]); ok {
			ws = append(ws, w)
		}
	}
	return ws
}

// keyFileWarning is the warning for a profile whose api_key_file (used
// when it names no api_key_env) cannot give a key: missing, unreadable,
// empty or more than one line. Every command that reaches the server
// would fail on it ("cannot read the API key"); doctor says so first.
func keyFileWarning(p *config.Profile) (llm.Warning, bool) {
	if p.APIKeyFile == "" || p.APIKeyEnv != "" {
		return llm.Warning{}, false
	}
	if _, err := p.APIKey(nil); err == nil {
		return llm.Warning{}, false
	}
	what := "holds more than one line"
	b, err := os.ReadFile(p.APIKeyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		what = "does not exist"
	case err != nil:
		what = "cannot be read (" + err.Error() + ")"
	case strings.TrimSpace(string(b)) == "":
		what = "is empty"
	}
	return llm.Warning{Key: "backends." + p.Name + ".api_key_file", Msg: fmt.Sprintf(
		"key file %s of profile %s %s: every command that reaches its server will fail; put the server's API key in it alone on one line "+
			"and make it yours alone (chmod 600 %s), or fix api_key_file in [backends.%s]",
		p.APIKeyFile, p.Name, what, shellquote.Quote(p.APIKeyFile), p.Name)}, true
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func printDoctor(g *Globals, r doctor.Report) {
	w := tabwriter.NewWriter(g.Stdout, 0, 4, 2, ' ', 0)
	wsl := ""
	if r.OS.WSL {
		wsl = " (WSL)"
	}
	fmt.Fprintf(w, "os\t%s, %s/%s, kernel %s%s\n", r.OS.Name, r.OS.GOOS, r.OS.Arch, r.OS.Kernel, wsl)
	fmt.Fprintf(w, "cpu\t%s, %d cores\n", r.CPU.Model, r.CPU.Cores)
	fmt.Fprintf(w, "memory\t%s total, %s available\n", gib(r.Memory.TotalBytes), gib(r.Memory.AvailableBytes))
	for _, d := range r.Disks {
		paths := strings.Join(append([]string{d.Path}, d.AlsoPaths...), ", ")
		if d.Error != "" {
			fmt.Fprintf(w, "disk\t%s: %s\n", paths, d.Error)
			continue
		}
		later := ""
		if d.CreatedLater {
			later = fmt.Sprintf(" (not created yet: hiro creates it on first use; the space of %s)", d.MeasuredAt)
		}
		fmt.Fprintf(w, "disk\t%s%s: %s free of %s\n", paths, later, gib(d.FreeBytes), gib(d.TotalBytes))
	}
	if len(r.Accelerators) == 0 {
		fmt.Fprintf(w, "accelerator\tnone (%s): engines serve from the CPU; an exclusive campaign stops production while its candidate runs, exclusive = false runs it beside production\n", r.AcceleratorNote)
	}
	for _, a := range r.Accelerators {
		fmt.Fprintf(w, "accelerator\t%d: %s, %d MiB total, %d MiB free, driver %s, CUDA %s\n", a.Index, a.Name, a.MemoryTotalMiB, a.MemoryFreeMiB, a.Driver, a.CUDA)
	}
	if len(r.Accelerators) > 0 {
		switch {
		case r.GPUProcessNote != "":
			fmt.Fprintf(w, "gpu memory held by\tunknown (%s)\n", r.GPUProcessNote)
		case len(r.GPUProcesses) == 0:
			fmt.Fprintf(w, "gpu memory held by\tno process\n")
		}
		for _, p := range r.GPUProcesses {
			fmt.Fprintf(w, "gpu memory held by\t%s\n", p)
		}
	}
	for _, e := range r.Engines {
		switch {
		case !e.Found && e.Note != "":
			fmt.Fprintf(w, "engine\t%s: %s\n", e.Kind, e.Note)
		case !e.Found:
			fmt.Fprintf(w, "engine\t%s: not found (%s)\n", e.Kind, e.Command)
		default:
			v := e.Version
			if v == "" {
				v = "version unknown"
				if e.Note != "" {
					v += ": " + e.Note
				}
			}
			fmt.Fprintf(w, "engine\t%s: %s (%s)\n", e.Kind, v, strings.TrimSpace(e.Path))
			if e.Also != "" {
				fmt.Fprintf(w, "engine\t%s: another binary at %s, the one scripts/install-ollama.sh built and the examples run (they put its folder first on PATH); a profile's command = %q runs the one on PATH\n", e.Kind, e.Also, e.Command)
			}
		}
	}
	w.Flush()
}

func gib(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
