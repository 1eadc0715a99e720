package preflight

import (
	"fmt"
	"strings"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// CheckFit checks a memory estimate against the devices the engine will
// see (the first m.Devices of them): fits in the free memory now, fits
// only if production is stopped (free + what production holds), or does
// not fit, by how much, and what would make it fit. An engine that
// reserves a share of each device (vLLM) must also fit its own parts
// inside that share. It decides on the top of the range: never "fits"
// when the range's top does not.
func CheckFit(m *evidence.MemoryEstimate, devs []Device) *evidence.FitCheck {
	need := max(m.HighBytes, m.ReservedBytes)
	if len(devs) == 0 {
		return &evidence.FitCheck{Verdict: evidence.FitCannotPredict, NeedBytes: need,
			Detail: "no accelerator is visible to the engine: its memory cannot be checked"}
	}
	if m.Devices > len(devs) {
		return &evidence.FitCheck{Verdict: evidence.FitDoesNotFit, NeedBytes: need,
			Detail:      fmt.Sprintf("the launch spreads the model over %d devices; the engine sees %d", m.Devices, len(devs)),
			Suggestions: []string{fmt.Sprintf("lower tensor/pipeline parallel to %d, or make more devices visible (CUDA_VISIBLE_DEVICES)", len(devs))}}
	}
	// Inside an engine's own reservation.
	if m.ReservedBytes > 0 && m.HighBytes > m.ReservedBytes {
		f := &evidence.FitCheck{Verdict: evidence.FitDoesNotFit, Device: 0, NeedBytes: m.HighBytes, FreeBytes: m.ReservedBytes,
			ShortBytes: m.HighBytes - m.ReservedBytes}
		f.Detail = fmt.Sprintf("%s per device needed inside the engine's reservation of %s: short by %s", gib(m.HighBytes), gib(m.ReservedBytes), gib(f.ShortBytes))
		f.Suggestions = suggestions(m, m.ReservedBytes)
		return f
	}
	var worst *evidence.FitCheck
	for i := 0; i < max(1, m.Devices); i++ {
		d := devs[i]
		if d.MIG {
			return &evidence.FitCheck{Verdict: evidence.FitCannotPredict, Device: i, NeedBytes: need,
				Detail: fmt.Sprintf("device %d (%s) is partitioned in MIG slices: the slice's memory is not known", i, d.Name)}
		}
		f := &evidence.FitCheck{Device: i, NeedBytes: need, FreeBytes: d.FreeBytes, FreeIfStoppedBytes: d.FreeBytes + d.ProductionBytes}
		switch {
		case need <= d.FreeBytes:
			f.Verdict = evidence.FitFits
			f.Detail = fmt.Sprintf("%s needed on device %d (%s), %s free", gib(need), i, d.Name, gib(d.FreeBytes))
		case need <= f.FreeIfStoppedBytes:
			f.Verdict = evidence.FitOnlyIfProductionStopped
			f.Detail = fmt.Sprintf("%s needed on device %d (%s), %s free, %s with production stopped", gib(need), i, d.Name, gib(d.FreeBytes), gib(f.FreeIfStoppedBytes))
		default:
			f.Verdict = evidence.FitDoesNotFit
			f.ShortBytes = need - f.FreeIfStoppedBytes
			f.Detail = fmt.Sprintf("%s needed on device %d (%s), %s free with production stopped: short by %s", gib(need), i, d.Name, gib(f.FreeIfStoppedBytes), gib(f.ShortBytes))
			f.Suggestions = suggestions(m, f.FreeIfStoppedBytes)
		}
		if worst == nil || rank(f.Verdict) > rank(worst.Verdict) {
			worst = f
		}
	}
	return worst
}

// CheckHostFit checks an estimate of a launch that runs on the CPU
// (m.Devices 0: no accelerator on the host, or no layer offloaded)
// against the host's available memory (MemAvailable): fits, or does not
// fit by how much and what would make it fit. What production holds is
// already out of MemAvailable and is not counted as freed. Device is
// -1: host memory. It decides on the top of the range.
func CheckHostFit(m *evidence.MemoryEstimate, h *Host) *evidence.FitCheck {
	need := m.HighBytes
	f := &evidence.FitCheck{Device: -1, NeedBytes: need, FreeBytes: h.AvailableBytes}
	switch {
	case h.AvailableBytes == 0:
		f.Verdict = evidence.FitCannotPredict
		f.Detail = "the host's available memory is not known (no MemAvailable in /proc/meminfo or the recorded facts)"
	case need <= h.AvailableBytes:
		f.Verdict = evidence.FitFits
		f.Detail = fmt.Sprintf("%s of host memory needed (the model runs on the CPU), %s available", gib(need), gib(h.AvailableBytes))
	default:
		f.Verdict = evidence.FitDoesNotFit
		f.ShortBytes = need - h.AvailableBytes
		f.Detail = fmt.Sprintf("%s of host memory needed (the model runs on the CPU), %s available: short by %s", gib(need), gib(h.AvailableBytes), gib(f.ShortBytes))
		for _, s := range suggestions(m, h.AvailableBytes) {
			if !strings.Contains(s, "GPU") {
				f.Suggestions = append(f.Suggestions, s)
			}
		}
	}
	return f
}

func rank(v string) int {
	switch v {
	case evidence.FitFits:
		return 0
	case evidence.FitOnlyIfProductionStopped:
		return 1
	case evidence.FitDoesNotFit:
		return 2
	}
	return 3
}

// suggestions say what would make m fit in avail bytes per device: the
// context that would fit, fewer slots, a smaller quantisation, offload,
// more devices.
func suggestions(m *evidence.MemoryEstimate, avail uint64) []string {
	var out []string
	var kv uint64
	for _, p := range m.Parts {
		// llama.cpp's compute buffers grow with the context too.
		if p.Name == "kv_cache" || (p.Name == "compute" && m.Format == "gguf") {
			kv += p.Bytes
		}
	}
	if kv > 0 && m.ContextTokens > 0 && m.HighBytes-kv < avail {
		tokens := uint64(m.ContextTokens) * uint64(max(1, m.Parallel))
		if m.Format == "safetensors" {
			tokens = uint64(m.ContextTokens)
		}
		perToken := kv / tokens
		if perToken > 0 {
			fit := (avail - (m.HighBytes - kv)) / perToken
			if m.Format == "gguf" {
				fit /= uint64(max(1, m.Parallel))
				out = append(out, fmt.Sprintf("a context of at most %d tokens per slot (now %d)", fit, m.ContextTokens))
				if m.Parallel > 1 {
					out = append(out, fmt.Sprintf("fewer parallel slots (now %d): the KV cache holds context × slots", m.Parallel))
				}
			} else {
				out = append(out, fmt.Sprintf("--max-model-len %d or less (now %d)", fit, m.ContextTokens))
			}
		}
	}
	out = append(out, "a smaller quantisation of the model (fewer bytes per weight) or a quantised KV cache")
	if m.Format == "gguf" {
		out = append(out, "offload fewer layers to the GPU (the rest run on the CPU, slower)")
	} else {
		out = append(out, "tensor parallel over more devices (--tensor-parallel-size)")
	}
	return out
}
