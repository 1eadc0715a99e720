package engine

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// TestConflictingLinesAreWeak: a verdict whose class and root-cause line
// come from different lines, or whose line two specific rules read as
// different classes, is weak (issue 22, item 5: "lines conflict"), while
// the class and the root-cause line stay what structure gives; the same
// log without the conflict is strong.
func TestConflictingLinesAreWeak(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		lines      []string
		class      failure.Class
		root       string
		conf       failure.Confidence
	}{
		{"a summary's class, the child's line before it as the cause", "sglang", []string{
			"[2025-10-22 10:28:55] ERROR the detokenizer exited: pipe closed",
			"[2025-10-22 10:28:56] Initialization failed. warmup error: see above",
		}, failure.ClassWarmupFailed, "the detokenizer exited", failure.ConfidenceWeak},
		{"a summary header's class, its block's exception as the cause", "sglang", []string{
			"[2025-10-22 10:28:56] Initialization failed. warmup error: Traceback (most recent call last):",
			`  File "/x/http_server.py", line 1407, in _run_the_first_request`,
			"AssertionError: res=<Response [418]>",
		}, failure.ClassWarmupFailed, "AssertionError: res=<Response [418]>", failure.ConfidenceWeak},
		{"the outer exception's class, the innermost of the chain as the cause", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/loader.py", line 3, in load`,
			"OSError: the shard index names no file",
			"",
			"The above exception was the direct cause of the following exception:",
			"",
			"Traceback (most recent call last):",
			`  File "/x/engine.py", line 9, in start`,
			"RuntimeError: CUDA error: no kernel image is available for execution on the device",
		}, failure.ClassGPUArchUnsupported, "OSError: the shard index names no file", failure.ConfidenceWeak},
		{"one line, two specific rules of different classes", "vllm", []string{
			"ValueError: The quantization method awq is not supported for the current GPU. Minimum capability: 75. Current capability: 70.",
		}, failure.ClassGPUArchUnsupported, "quantization method awq", failure.ConfidenceWeak},
		{"a wrapper's words around the cause on its line are no conflict", "llamacpp", []string{
			"llama_model_load: error loading model: unable to allocate CUDA0 buffer",
		}, failure.ClassGPUOOM, "unable to allocate CUDA0 buffer", failure.ConfidenceStrong},
		{"a narrower reading of a rule's words is no conflict", "vllm", []string{
			"ERROR 01-01 00:00:01 [x.py:2] RuntimeError: unable to write to /dev/shm/torch_3_1: No space left on device",
		}, failure.ClassHostCapability, "/dev/shm", failure.ConfidenceStrong},
		{"no conflict: the same exception alone", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/engine.py", line 9, in start`,
			"RuntimeError: CUDA error: no kernel image is available for execution on the device",
		}, failure.ClassGPUArchUnsupported, "no kernel image", failure.ConfidenceStrong},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)})
		if f.Class != c.class || !strings.Contains(f.RootCause, c.root) || f.Confidence != c.conf {
			t.Errorf("%s: %s %s %q (rule %s, classes %v), want %s %s with %q", c.name, f.Class, f.Confidence, f.RootCause, f.Rule, f.Classes, c.class, c.conf, c.root)
		}
	}
}

// TestWeakRulesNeverDecideStrongly: a rule marked Weak (its class was
// wrong when it decided strongly at first sight, and nothing in its
// line's structure told the wrong cases apart) gives a weak verdict
// wherever its line stands.
func TestWeakRulesNeverDecideStrongly(t *testing.T) {
	n := 0
	for _, kind := range Kinds() {
		e := mustLookup(t, kind)
		for i := range e.signatures {
			r := &e.signatures[i]
			if !r.Weak || r.Text == "" || r.Pattern != nil || r.After != "" {
				continue // a pattern's line is not its text alone: the cases check those
			}
			line := "ERROR " + r.Text
			if r.Also != "" && !strings.Contains(strings.ToLower(r.Text), strings.ToLower(r.Also)) {
				line += " " + r.Also
			}
			tr := e.NewTracker()
			tr.Feed(line)
			f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: Exited(1)})
			if f.Rule == r.Name {
				n++
				if f.Confidence == failure.ConfidenceStrong {
					t.Errorf("%s: Weak rule %s decided %q strongly", kind, r.Name, line)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no Weak rule decided its own line: the check checks nothing")
	}
}
