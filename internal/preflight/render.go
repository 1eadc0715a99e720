package preflight

import (
	"fmt"
	"strings"

	"github.com/hiro-dev/hiro/internal/evidence"
)

// Describe renders a prediction as lines for a terminal or a report
// (hiro fit, qualify --check, the launch gate's progress): the verdict,
// the estimate's range and parts, the fit, the capability rules.
func Describe(pr *evidence.Prediction) []string {
	var out []string
	switch {
	case pr.Runs:
		out = append(out, "predicted to run")
	case pr.Rule != "":
		out = append(out, fmt.Sprintf("predicted failure (%s, rule %s): %s", pr.Class, pr.Rule, pr.Reason))
	default:
		out = append(out, pr.CannotPredict)
	}
	if m := pr.Memory; m != nil {
		where := "memory per device"
		if m.Devices == 0 {
			where = "host memory (on the CPU)"
		}
		out = append(out, fmt.Sprintf("%s: %s – %s (%s, %s, %d layers, %d KV heads × %d, %d bytes of KV per token)",
			where, gib(m.LowBytes), gib(m.HighBytes), m.Format, m.Architecture, m.Layers, m.KVHeads, m.HeadDim, m.KVBytesPerToken))
		for _, p := range m.Parts {
			line := fmt.Sprintf("  %-12s %10s", p.Name, gib(p.Bytes))
			if p.Note != "" {
				line += "  " + p.Note
			}
			out = append(out, line)
		}
		if m.Policy != "" {
			out = append(out, "policy: "+m.Policy)
		}
		if m.Overhead != "" {
			out = append(out, "overhead: "+m.Overhead)
		}
	}
	if f := pr.Fit; f != nil {
		out = append(out, fmt.Sprintf("fit: %s: %s", strings.ReplaceAll(f.Verdict, "_", " "), f.Detail))
		for _, s := range f.Suggestions {
			out = append(out, "  would fit with: "+s)
		}
	}
	for _, c := range pr.Capabilities {
		mark := "ok"
		if !c.OK {
			mark = "FAILS"
		}
		out = append(out, fmt.Sprintf("capability %s: %s: %s (source: %s)", c.Rule, mark, c.Detail, c.Source))
	}
	if pr.HostSource != "" {
		out = append(out, "host facts: "+pr.HostSource)
	}
	return out
}
