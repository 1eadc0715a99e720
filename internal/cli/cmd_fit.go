package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/preflight"
	"github.com/hiro-dev/hiro/internal/production"
)

func init() { registerCommand(newFitCmd) }

func newFitCmd(g *Globals) *cobra.Command {
	var hostFacts string
	cmd := &cobra.Command{
		Use:   "fit PROFILE [--json]",
		Short: "Predict whether a backend profile fits and runs on this host",
		Long: `Predict a launch of PROFILE on this host without starting or stopping
anything: the accelerator memory it needs per device, estimated from its
pinned artifact (GGUF metadata; safetensors headers and config.json) and the
engine's own policy (llama.cpp/Ollama context × parallel slots and offloaded
layers; vLLM's gpu_memory_utilization share, tensor and pipeline parallel),
as a range with its parts; its fit against the free memory of the devices
the engine will see (CUDA_VISIBLE_DEVICES), with and without production
(what production's processes hold, from nvidia-smi); and the host capability
rules that apply (WSL2 and UVA, kernels' compute capability, Marlin's shape
divisibility, CPU instruction sets, driver CUDA version), each with its
public source. docs/qualify.md "Preflight" says how the estimate was measured.

A profile that needs the accelerator alone (exclusive_accelerator) may count
production's memory as free; one that runs beside production may not. On a
host without an accelerator, a GGUF profile without requires_accelerator runs
on the CPU: its host memory is predicted against the host's available memory.

Exit status: 0 predicted to run; 1 predicted not to run, or no prediction
could be made (the reason is printed); 2 bad usage or configuration.`,
		Args: needArgs(1, 1, "the name of one backend profile", "hiro fit candidate"),
		RunE: func(c *cobra.Command, args []string) error {
			return runFit(c.Context(), g, args[0], hostFacts)
		},
	}
	cmd.Flags().BoolVar(&g.JSON, "json", false, "print one JSON object (errors too)")
	cmd.Flags().StringVar(&hostFacts, "host-facts", "", "predict against recorded host facts (JSON) instead of this host")
	return cmd
}

// runFit prints the preflight's prediction for profile name.
func runFit(ctx context.Context, g *Globals, name, hostFacts string) error {
	cfg, err := backendLoadConfig(g, "fit", name)
	if err != nil {
		return err
	}
	prof, err := cfg.Backend(name)
	if err != nil {
		return UsageError(fmt.Errorf("fit: %w", err))
	}
	var h *preflight.Host
	if hostFacts != "" {
		if h, err = preflight.LoadHost(hostFacts); err != nil {
			return UsageError(fmt.Errorf("fit: %w", err))
		}
	} else {
		prodName := ""
		if a, _ := production.Resolve(cfg); a != nil && a.Name != name {
			prodName = a.Name
		}
		h = preflight.ForProduction(ctx, cfg.StateDir, prodName)
	}
	pr := preflight.Predict(prof, h, prof.ExclusiveAccelerator)
	if g.JSON {
		if err := backendPrintJSON(g, struct {
			Profile string `json:"profile"`
			*evidence.Prediction
		}{name, pr}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.Stdout, "%s: ", name)
		for _, l := range preflight.Describe(pr) {
			fmt.Fprintln(g.Stdout, l)
		}
		if pr.CannotPredict != "" {
			// Where the profile is, for what the reason says to add.
			fmt.Fprintf(g.Stdout, "profile: [backends.%s] in %s\n", name, cfg.Path)
		}
	}
	if !pr.Runs {
		return Silent(1)
	}
	return nil
}
