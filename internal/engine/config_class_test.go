package engine

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// An engine refusing the configuration it was given (a variable it needs
// unset, a flag its parser does not know, a value it does not take) is
// invalid_configuration in launch, strongly, with the root-cause line and
// advice to fix the profile: not an unexplained engine_died with crash
// advice (issue 26, F10: Ollama's "Error: $HOME is not defined").
func TestConfigurationRefusalsAreInvalidConfiguration(t *testing.T) {
	cases := []struct {
		kind, log, root string
		code            int
	}{
		{"ollama", "Error: $HOME is not defined\n", "Error: $HOME is not defined", 1},
		{"ollama", "Error: unknown flag: --verbose\n", "Error: unknown flag: --verbose", 1},
		{"vllm", "INFO 12-02 06:00:00 [__init__.py:239] Automatically detected platform cuda.\nusage: vllm serve [model_tag] [options]\nvllm serve: error: unrecognized arguments: --enable-foo\n",
			"vllm serve: error: unrecognized arguments: --enable-foo", 2},
		{"vllm", "usage: vllm serve [model_tag] [options]\nvllm serve: error: argument --dtype: invalid choice: 'fp17' (choose from 'auto', 'half', 'float16')\n",
			"error: argument --dtype: invalid choice: 'fp17'", 2},
		{"sglang", "usage: launch_server.py [-h] --model-path MODEL_PATH\nlaunch_server.py: error: argument --port: invalid int value: 'abc'\n",
			"error: argument --port: invalid int value: 'abc'", 2},
		{"sglang", "usage: launch_server.py [-h] --model-path MODEL_PATH\nlaunch_server.py: error: the following arguments are required: --model-path\n",
			"the following arguments are required: --model-path", 2},
		{"trtllm", "Usage: trtllm-serve serve [OPTIONS] MODEL\nTry 'trtllm-serve serve --help' for help.\n\nError: No such option: --tp\n", "Error: No such option: --tp", 2},
		{"trtllm", "Usage: trtllm-serve serve [OPTIONS] MODEL\n\nError: Invalid value for '--port': 'x' is not a valid integer.\n", "Error: Invalid value for '--port'", 2},
		{"tgi", "error: unexpected argument '--foo' found\n\n  tip: to pass '--foo' as a value, use '-- --foo'\n\nUsage: text-generation-launcher [OPTIONS]\n\nFor more information, try '--help'.\n",
			"error: unexpected argument '--foo' found", 2},
		{"mistralrs", "error: invalid value 'abc' for '--port <PORT>': invalid digit found in string\n\nFor more information, try '--help'.\n",
			"error: invalid value 'abc' for '--port <PORT>'", 2},
		{"llamacpp", "error: invalid argument: --flash-attn-foo\n", "error: invalid argument: --flash-attn-foo", 1},
	}
	for _, c := range cases {
		d, err := DiagnoseLog(strings.NewReader(c.log), c.kind, DiagnoseOptions{Exit: Exited(c.code)})
		if err != nil {
			t.Fatal(err)
		}
		f := d.Failure
		if f == nil {
			t.Errorf("%s %q: no failure", c.kind, c.root)
			continue
		}
		if f.Class != failure.ClassInvalidConfiguration || f.Phase != failure.PhaseLaunch || f.Confidence != failure.ConfidenceStrong {
			t.Errorf("%s %q: %s (%s) %s, rule %s; want invalid_configuration (launch) strong", c.kind, c.root, f.Class, f.Phase, f.Confidence, f.Rule)
		}
		if !strings.Contains(f.RootCause, c.root) {
			t.Errorf("%s: root cause %q, want %q", c.kind, f.RootCause, c.root)
		}
		if !strings.Contains(f.NextStep, "fix the profile's args or env") {
			t.Errorf("%s %q: next step %q", c.kind, c.root, f.NextStep)
		}
	}
	// Lookalikes that are no configuration error: CUDA's invalid
	// argument, Python's NameError, nvcc's option value.
	for _, c := range []struct{ kind, log string }{
		{"vllm", "RuntimeError: CUDA error: invalid argument\n"},
		{"vllm", "NameError: name 'HOME' is not defined\n"},
		{"llamafile", "nvcc fatal   : Value 'native' is not defined for option 'gpu-architecture'\n"},
	} {
		d, err := DiagnoseLog(strings.NewReader(c.log), c.kind, DiagnoseOptions{Exit: Exited(1)})
		if err != nil {
			t.Fatal(err)
		}
		if d.Failure != nil && d.Failure.Class == failure.ClassInvalidConfiguration {
			t.Errorf("%s %q: invalid_configuration (rule %s); a lookalike", c.kind, c.log, d.Failure.Rule)
		}
	}
}
