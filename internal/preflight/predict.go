package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/hiro-dev/hiro/internal/artifact"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
)

// RuleMemoryFit is the rule name a memory-fit prediction carries.
const RuleMemoryFit = "preflight/memory-fit"

// Predict predicts a launch of p on h before anything is started or
// stopped: the capability rules first (a failing one predicts the
// failure whatever the memory), then the memory estimate from p's
// artifact and its fit. exclusive says production will be stopped for
// the launch, so memory production holds counts as free; for a profile
// that runs beside production, "fits only if production is stopped" is a
// predicted failure (accelerator_busy). A prediction that cannot be made
// (no artifact, a missing config.json, an unknown dtype, a truncated
// header) has CannotPredict set and Runs false: the caller launches as
// it would without a preflight. It never panics on bad input.
func Predict(p *config.Profile, h *Host, exclusive bool) *evidence.Prediction {
	pr := &evidence.Prediction{HostSource: h.Source}
	dir, model, mf, err := locate(p)
	l := LaunchOf(p, mf)
	devs, verr := h.Visible(l.VisibleDevices, l.HasVisibleDevices)
	var cfg *ModelConfig
	if err == nil && model == "" {
		cfg, _ = ReadConfig(dir)
	}
	c := &Context{Launch: l, Host: h, Devices: devs, Model: cfg}
	for i := range Rules {
		r := &Rules[i]
		if r.Family != "" && r.Family != p.Engine {
			continue
		}
		applies, ok, detail := r.Check(c)
		if !applies {
			continue
		}
		pr.Capabilities = append(pr.Capabilities, evidence.CapabilityCheck{Rule: r.Name, OK: ok, Class: classIf(!ok, r.Class), Detail: detail, Source: r.Source})
		if !ok && pr.Rule == "" {
			pr.Class, pr.Rule = r.Class, r.Name
			pr.Reason = fmt.Sprintf("%s: %s; %s", r.Needs, detail, r.NextStep)
		}
	}
	if pr.Rule != "" {
		return pr
	}
	if why := gpuEngineWithoutGPU(l, h); why != "" {
		// Said first: the most decisive fact, whatever the artifact says.
		pr.CannotPredict = "cannot predict: " + why
		if err == nil && model == "" {
			_, _, err = estimateSafetensors(dir, l, 0)
		}
		if err != nil {
			pr.CannotPredict += "; besides, " + err.Error()
		}
		return pr
	}
	if err != nil {
		pr.CannotPredict = "cannot predict: " + err.Error()
		return pr
	}
	if verr != nil {
		pr.CannotPredict = "cannot predict: " + verr.Error()
		return pr
	}
	var m *evidence.MemoryEstimate
	if model != "" {
		if len(h.Devices) == 0 && !p.RequiresAccelerator {
			// No accelerator on the host: llama.cpp and Ollama run every
			// layer on the CPU (requires_accelerator was refused above).
			l.GPULayers = 0
		}
		m, err = estimateGGUF(model, l)
	} else {
		var total uint64
		if len(devs) > 0 {
			total = devs[0].TotalBytes
		}
		m, _, err = estimateSafetensors(dir, l, total)
	}
	if err != nil {
		pr.CannotPredict = "cannot predict: " + err.Error()
		return pr
	}
	pr.Memory = m
	if m.Devices == 0 {
		pr.Fit = CheckHostFit(m, h)
	} else {
		pr.Fit = CheckFit(m, devs)
	}
	switch pr.Fit.Verdict {
	case evidence.FitFits:
		pr.Runs = true
	case evidence.FitOnlyIfProductionStopped:
		if exclusive {
			pr.Runs = true
		} else {
			pr.Class, pr.Rule = failure.ClassAcceleratorBusy, RuleMemoryFit
			pr.Reason = "fits only if production is stopped, and the profile runs beside production (not exclusive_accelerator): " + pr.Fit.Detail
		}
	case evidence.FitDoesNotFit:
		pr.Class, pr.Rule = failure.ClassGPUOOM, RuleMemoryFit
		if m.Devices == 0 {
			pr.Class = failure.ClassHostOOM
		}
		if m.ReservedBytes > 0 && pr.Fit.FreeBytes == m.ReservedBytes {
			pr.Class = failure.ClassContextExceedsKV
		}
		pr.Reason = "does not fit: " + pr.Fit.Detail
	default:
		pr.CannotPredict = "cannot predict: " + pr.Fit.Detail
	}
	return pr
}

// gpuEngineWithoutGPU says why a launch of a GPU engine (vLLM, SGLang:
// they serve from an accelerator, and hiro predicts their memory only on
// one) on a host whose facts list no GPU cannot be judged: what was not
// checked (the memory fit, the rules that read the GPU), why, and what to
// do. "" for another engine or a host with a GPU. It is no predicted
// failure: a CPU build of the engine may still serve, so the launch is
// made as without a preflight (docs/qualify.md "Preflight: predicting a
// launch before production stops").
func gpuEngineWithoutGPU(l Launch, h *Host) string {
	if (l.Engine != "vllm" && l.Engine != "sglang") || len(h.Devices) > 0 {
		return ""
	}
	name := map[string]string{"vllm": "vLLM", "sglang": "SGLang"}[l.Engine]
	note := h.DeviceNote
	if note == "" {
		note = "nvidia-smi lists none"
	}
	return fmt.Sprintf("%s shows no GPU (%s), and %s serves from one: its memory fit (the %.2f share of each device it reserves) "+
		"and the rules that read the GPU (compute capability for its quantised kernels, the driver's CUDA) were not checked; "+
		"a launch here fails unless the engine is its CPU build: run 'hiro fit' on the GPU host, or give that host's facts with --host-facts FILE",
		hostName(h), note, name, l.GPUMemoryUtilization)
}

// hostName is the host h's facts describe, for a sentence: "this host" or
// the recorded facts' source.
func hostName(h *Host) string {
	if h.Source == "" || h.Source == "this host" {
		return "this host"
	}
	return "the recorded host (" + h.Source + ")"
}

// AsFailure is a predicted failure (pr.Class set) as the failure record
// of a launch that was not made: phase prereq (nothing started), the
// rule and its reason as the root cause, strong confidence. nil when pr
// predicts no failure.
func AsFailure(pr *evidence.Prediction) *failure.Failure {
	if pr == nil || pr.Class == "" {
		return nil
	}
	return &failure.Failure{Class: pr.Class, Phase: failure.PhasePrereq, RootCause: "predicted before launch: " + pr.Reason,
		Rule: pr.Rule, Confidence: failure.ConfidenceStrong}
}

func classIf(b bool, c failure.Class) failure.Class {
	if b {
		return c
	}
	return ""
}

// locate finds p's model: the artifact directory (artifact_dir, else the
// directory its manifest verifies), a GGUF in it (or llama.cpp's -m
// file), and an Ollama Modelfile beside it.
func locate(p *config.Profile) (dir, gguf, modelfile string, err error) {
	dir = p.ArtifactDir
	if dir == "" && p.Artifact != "" {
		m, lerr := artifact.Load(p.Artifact)
		if lerr != nil {
			return "", "", "", fmt.Errorf("artifact manifest %s: %w", p.Artifact, lerr)
		}
		dir = m.DirFor(p.Artifact)
	}
	if p.Engine == "llamacpp" {
		if mp := LaunchOf(p, "").ModelPath; mp != "" {
			if !filepath.IsAbs(mp) {
				mp = filepath.Join(p.Workdir, mp)
			}
			if _, serr := os.Stat(mp); serr == nil || !errors.Is(serr, fs.ErrNotExist) {
				return filepath.Dir(mp), mp, "", nil
			}
			// No such file: the args' model is no path hiro can read (a
			// wrapper's or a fake engine's model id, trial 10 Q3); the
			// artifact, when there is one, tells the shape instead.
			if dir == "" {
				return "", "", "", fmt.Errorf("no GGUF to read: the model %q that profile %s's args give (-m/--model) is no file (looked for %s); name its file there, or add artifact = \"path/to/manifest.json\" or artifact_dir under [backends.%s]", LaunchOf(p, "").ModelPath, p.Name, mp, p.Name)
			}
		}
	}
	if dir == "" {
		return "", "", "", fmt.Errorf("profile %s names no artifact, so the model's shape is unknown: add artifact = \"path/to/manifest.json\" (a manifest hiro artifact pin writes) or artifact_dir = \"path/to/model\" (the model's folder) under [backends.%s]", p.Name, p.Name)
	}
	if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
		return "", "", "", fmt.Errorf("artifact directory %s is missing", dir)
	}
	ggufs, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	sort.Strings(ggufs)
	if len(ggufs) > 0 {
		return dir, ggufs[0], modelfileIn(dir), nil
	}
	return dir, "", "", nil
}
