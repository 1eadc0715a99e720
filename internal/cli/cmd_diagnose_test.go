package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/testsupport"
)

// diagnoseCaseSets are the failure-log case sets present
// (testsupport.CaseSetDirs): the handed ones beside the checkout, the
// field and live corpora and the H200 captures.
var diagnoseCaseSets = testsupport.CaseSetDirs()

// TestDiagnoseCases runs every case log through 'hiro diagnose --json'
// and checks class, phase, root cause, facts and exit.
func TestDiagnoseCases(t *testing.T) {
	n := 0
	for _, dir := range diagnoseCaseSets {
		cases, err := engine.LoadCaseSet(dir)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			n++
			t.Run(filepath.Base(dir)+"/"+strings.TrimSuffix(c.Log, ".log"), func(t *testing.T) {
				args := []string{"diagnose", filepath.Join(dir, c.Log), "--engine", c.Engine, "--json"}
				if c.Signal != "" {
					args = append(args, "--signal", c.Signal)
				} else if c.Exit != nil {
					args = append(args, "--exit", strconv.Itoa(*c.Exit))
				}
				if c.RequiresAccelerator {
					args = append(args, "--requires-accelerator")
				}
				var out, errb bytes.Buffer
				if code := Run(context.Background(), args, &out, &errb); code != ExitOK {
					t.Fatalf("exit %d, stderr %q", code, errb.String())
				}
				var rep struct {
					Engine  string                `json:"engine"`
					Failure *failure.Failure      `json:"failure"`
					Device  *engine.ServingDevice `json:"device"`
				}
				if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Failure == nil {
					t.Fatalf("not JSON: %v\n%s", err, out.String())
				}
				f := rep.Failure
				var dev engine.ServingDevice
				if rep.Device != nil {
					dev = *rep.Device
				}
				if r := c.CheckDiagnosis(engine.Diagnosis{Failure: f, Device: dev}); !r.Right() {
					t.Errorf("%s (source %s)", r.Misses(), c.Source)
				}
				if c.Ready {
					return
				}
				if c.Signal != "" && f.Signal != engine.Signaled(c.Signal).Signal {
					t.Errorf("signal %q, want %q", f.Signal, c.Signal)
				}
				if c.Exit != nil && (f.ExitCode == nil || *f.ExitCode != *c.Exit) {
					t.Errorf("exit code %v, want %d", f.ExitCode, *c.Exit)
				}
				switch f.Confidence {
				case failure.ConfidenceStrong, failure.ConfidenceWeak, failure.ConfidenceNone:
				default:
					t.Errorf("confidence %q, want strong, weak or none", f.Confidence)
				}
				if f.Rule == "" {
					t.Errorf("no rule named for %s", f.Class)
				}
				// A log tail is shown unless the engine printed nothing at
				// all (an empty log: the signal alone is the evidence).
				empty := false
				if fi, err := os.Stat(filepath.Join(dir, c.Log)); err == nil && fi.Size() == 0 {
					empty = true
				}
				if f.NextStep == "" || (len(f.LogTail) == 0 && !empty) || rep.Engine != c.Engine {
					t.Errorf("next step %q, %d tail lines, engine %q", f.NextStep, len(f.LogTail), rep.Engine)
				}
			})
		}
	}
	if n == 0 {
		t.Skip("no failure-log case sets found")
	}
}

// TestDiagnoseCoverage prints the class x engine table for the field
// corpus, and exits 1 naming the case when an answer is wrong.
func TestDiagnoseCoverage(t *testing.T) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"diagnose", "--coverage", "../engine/testdata/field", "../engine/testdata/live"}, &out, &errb)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %q\n%s", code, errb.String(), out.String())
	}
	for _, want := range []string{"| class \\ engine", "| probe_failed ", "| host_oom ", "| accelerator_unavailable ", "| all ", "cases right", "confidence: strong ", "confident-wrong 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	// A set whose expected answer the log does not give: exit 1, named.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.log"), []byte("main: loading model\nllama_model_load: error loading model: unknown model architecture: 'z'\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "cases.json"), []byte(`{"cases":[{"log":"x.log","engine":"llamacpp","exit":1,"class":"gpu_oom","phase":"load"}]}`), 0o644)
	out.Reset()
	code = Run(context.Background(), []string{"diagnose", "--coverage", dir, "--json"}, &out, &errb)
	var rep struct {
		Cases, Right int
		Wrong        []struct{ Log, Misses string }
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out.String())
	}
	if code != ExitFailed || rep.Cases != 1 || rep.Right != 0 || len(rep.Wrong) != 1 || !strings.Contains(rep.Wrong[0].Misses, "class got model_load_failed want gpu_oom") {
		t.Errorf("exit %d, report %+v", code, rep)
	}
	// Not a case set: usage.
	if code := Run(context.Background(), []string{"diagnose", "--coverage", t.TempDir()}, &out, &errb); code != ExitUsage {
		t.Errorf("empty dir: exit %d", code)
	}
}

func TestDiagnoseHuman(t *testing.T) {
	log := filepath.Join(t.TempDir(), "engine.log")
	os.WriteFile(log, []byte("INFO 01-01 00:00:00 [x.py:1] Starting to load model m...\n"+
		"INFO 01-01 00:00:30 [x.py:1] Loading weights took 30.50 seconds\n"+
		"ERROR 01-01 00:00:31 [core.py:1] RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"), 0o644)
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"diagnose", log, "--engine", "vllm", "--signal", "sigabrt"}, &out, &errb)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"failed: gpu_oom in phase kernel_setup", "root cause: ERROR", "CUDA out of memory",
		"killed by signal ABRT", "weights_load_seconds=30.5", "next step:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// "-" reads the log from standard input (a log pasted into a terminal or
// piped from journalctl): the same verdict as from the file.
func TestDiagnoseStdin(t *testing.T) {
	bin := testsupport.Hiro(t)
	log, err := os.ReadFile(filepath.Join("..", "..", "examples", "diagnose", "vllm.log"))
	if err != nil {
		t.Fatal(err)
	}
	verdict := func(args ...string) string {
		cmd := exec.Command(bin, append([]string{"diagnose"}, args...)...)
		cmd.Stdin = bytes.NewReader(log)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hiro diagnose %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	fromStdin := verdict("-", "--engine", "vllm", "--exit", "1", "--json")
	fromFile := verdict(filepath.Join("..", "..", "examples", "diagnose", "vllm.log"), "--engine", "vllm", "--exit", "1", "--json")
	var a, b map[string]any
	if json.Unmarshal([]byte(fromStdin), &a) != nil || json.Unmarshal([]byte(fromFile), &b) != nil || a["log"] != "-" {
		t.Fatalf("from stdin:\n%s\nfrom the file:\n%s", fromStdin, fromFile)
	}
	delete(a, "log")
	delete(b, "log")
	if a["failure"] == nil || !reflect.DeepEqual(a, b) {
		t.Errorf("from stdin:\n%s\nfrom the file:\n%s", fromStdin, fromFile)
	}
}

func TestDiagnoseUsage(t *testing.T) {
	log := filepath.Join(t.TempDir(), "engine.log")
	os.WriteFile(log, []byte("main: loading model\n"), 0o644)
	empty := filepath.Join(t.TempDir(), "empty.log")
	os.WriteFile(empty, []byte("\n \n"), 0o644)
	// a compressed log (trial 12's S4: random bytes read as a log printed
	// a 1.5 KB last line of escapes)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(bytes.Repeat([]byte("llama_model_load: error loading model: unable to allocate CUDA0 buffer\n"), 40))
	zw.Close()
	binary := filepath.Join(t.TempDir(), "engine.log.gz")
	os.WriteFile(binary, gz.Bytes(), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"diagnose", filepath.Join(t.TempDir(), "absent.log"), "--engine", "vllm"}, "absent.log"},
		{[]string{"diagnose", log, "--engine", "textgen"}, "koboldcpp, llamacpp, llamafile, lmdeploy, mistralrs, ollama, openai, sglang, tabbyapi, tgi, trtllm, vllm"},
		{[]string{"diagnose", log, "--engine", "vlm"}, "did you mean vllm?"},
		{[]string{"diagnose", log}, "--engine is required"},
		{[]string{"diagnose", log, "--engine", "vllm", "--exit", "1", "--signal", "KILL"}, "not both"},
		{[]string{"diagnose", log, "--engine", "vllm", "--signal", "NOPE"}, "not a signal name"},
		{[]string{"diagnose", log, "--engine", "vllm", "--exit", "300"}, "0 to 255"},
		{[]string{"diagnose", "--engine", "vllm"}, "diagnose: give one engine log file, or case-set directories with --coverage (got 0 arguments), e.g. hiro diagnose"},
		{[]string{"diagnose", empty, "--engine", "vllm"}, "is empty (no text in it): nothing to diagnose"},
		{[]string{"diagnose", binary, "--engine", "llamacpp"}, "engine.log.gz is not text"},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), c.args, &out, &errb)
		if code != ExitUsage || !strings.Contains(errb.String(), c.want) || out.Len() != 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 2 naming %q", c.args, code, errb.String(), out.String(), c.want)
		}
	}
	// --json errors are JSON too.
	var out, errb bytes.Buffer
	code := Run(context.Background(), []string{"diagnose", log, "--engine", "textgen", "--json"}, &out, &errb)
	var e struct {
		Error    string `json:"error"`
		ExitCode int    `json:"exit_code"`
	}
	if code != ExitUsage || json.Unmarshal(errb.Bytes(), &e) != nil || e.ExitCode != ExitUsage {
		t.Errorf("json error: exit %d, stderr %q", code, errb.String())
	}
	// A Windows NTSTATUS is an exit code too, in either form: an LM Studio
	// or llama.cpp process on Windows ends with 0xC0000409.
	for _, x := range []string{"3221226505", "-1073740791", "0xC0000409"} {
		out.Reset()
		errb.Reset()
		if code := Run(context.Background(), []string{"diagnose", log, "--engine", "llamacpp", "--exit", x}, &out, &errb); code != ExitOK ||
			!strings.Contains(out.String(), "3221226505") && !strings.Contains(strings.ToUpper(out.String()), "C0000409") {
			t.Errorf("--exit %s: exit %d, stdout %q, stderr %q", x, code, out.String(), errb.String())
		}
	}
	// A signal number is accepted and named.
	out.Reset()
	if code := Run(context.Background(), []string{"diagnose", log, "--engine", "llamacpp", "--signal", "9"}, &out, &errb); code != ExitOK ||
		!strings.Contains(out.String(), "killed by signal KILL") || !strings.Contains(out.String(), "engine_died in phase load") {
		t.Errorf("signal 9: exit %d, %q", code, out.String())
	}
	// An empty log with an exit status is diagnosed on the status alone,
	// and says so.
	out.Reset()
	if code := Run(context.Background(), []string{"diagnose", empty, "--engine", "llamafile", "--signal", "ILL"}, &out, &errb); code != ExitOK ||
		!strings.Contains(out.String(), "the log is empty: this verdict rests on the exit status alone") {
		t.Errorf("empty log, signal ILL: exit %d, %q", code, out.String())
	}
}

// terminalSafe reports the first byte of s that would drive a terminal
// (a control byte other than newline and tab) or break UTF-8, or -1.
func terminalSafe(s string) int {
	if !utf8.ValidString(s) {
		for i := 0; i < len(s); i++ {
			if r, n := utf8.DecodeRuneInString(s[i:]); r == utf8.RuneError && n <= 1 {
				return i
			}
		}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
			return i
		}
	}
	return -1
}

// A log's escape sequences (clear screen, window title, colours) and
// invalid UTF-8 reach the terminal as visible escapes, not as bytes.
func TestDiagnoseEscapesControlBytes(t *testing.T) {
	log := filepath.Join(t.TempDir(), "esc.log")
	if err := os.WriteFile(log, []byte("starting\n\x1b[2J\x1b]0;PWNED\x07hello \x1b[31mred \xff\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"diagnose", log, "--engine", "vllm"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if i := terminalSafe(out.String()); i >= 0 {
		t.Fatalf("raw byte %#x at %d reaches the terminal:\n%q", out.String()[i], i, out.String())
	}
	if want := `(last line: \x1b[2J\x1b]0;PWNED\x07hello \x1b[31mred \xff)`; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %s:\n%s", want, out.String())
	}
}

// TestDiagnoseSaysConfidence: a verdict no rule explains says so in
// words, with the best guess; a strong one says nothing of it.
func TestDiagnoseSaysConfidence(t *testing.T) {
	dir := t.TempDir()
	unknown := filepath.Join(dir, "unknown.log")
	os.WriteFile(unknown, []byte("INFO 01-01 00:00:00 [x.py:1] Starting to load model m...\n"+
		"ERROR 01-01 00:00:31 [core.py:1] the frobnicator refused the widget\n"), 0o644)
	known := filepath.Join(dir, "known.log")
	os.WriteFile(known, []byte("ERROR 01-01 00:00:31 [core.py:1] RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n"), 0o644)
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"diagnose", unknown, "--engine", "vllm", "--exit", "1"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "confidence: none: no rule explains this log; best guess: engine_died"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	if code := Run(context.Background(), []string{"diagnose", known, "--engine", "vllm", "--exit", "1", "--json"}, &out, &errb); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Failure struct{ Rule, Confidence string }
	}
	// The text says a strong verdict too, with its rule.
	var text bytes.Buffer
	if code := Run(context.Background(), []string{"diagnose", known, "--engine", "vllm", "--exit", "1"}, &text, &errb); code != ExitOK ||
		!strings.Contains(text.String(), "confidence: strong (the rule python/") {
		t.Errorf("exit %d, text lacks the strong confidence and its rule:\n%s", code, text.String())
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Failure.Confidence != "strong" || !strings.HasPrefix(rep.Failure.Rule, "python/") {
		t.Errorf("rule %q confidence %q (%v), want a python/ rule, strong", rep.Failure.Rule, rep.Failure.Confidence, err)
	}
}

// A log read after the fact does not say when the engine started:
// 'diagnose --json' leaves seconds_since_start out rather than print 0
// (issue 26: "--signal 9 --json" reported seconds_since_start 0).
func TestDiagnoseJSONLeavesStartTimeOut(t *testing.T) {
	log := filepath.Join("..", "..", "examples", "diagnose", "vllm.log")
	for _, exit := range [][]string{{"--signal", "9"}, {"--exit", "1"}, nil} {
		var out, errb bytes.Buffer
		args := append([]string{"diagnose", log, "--engine", "vllm", "--json"}, exit...)
		if code := Run(context.Background(), args, &out, &errb); code != ExitOK {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		var rep struct {
			Failure map[string]any `json:"failure"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Failure == nil {
			t.Fatalf("%v: not JSON: %v\n%s", args, err, out.String())
		}
		if v, ok := rep.Failure["seconds_since_start"]; ok {
			t.Errorf("%v: seconds_since_start %v printed for a log without a start time", exit, v)
		}
		if rep.Failure["class"] == nil || rep.Failure["root_cause"] == nil {
			t.Errorf("%v: the failure object lost its fields: %s", exit, out.String())
		}
	}
}

// A log that shows no failure at all, read with no exit status given
// ("echo hello | hiro diagnose - --engine ollama"), is said to show none,
// not "failed", with confidence none and the rule that says so; given an
// exit status, or with an error line, it is a failure as before.
func TestDiagnoseNoFailureInLog(t *testing.T) {
	dir := t.TempDir()
	quiet := filepath.Join(dir, "quiet.log")
	os.WriteFile(quiet, []byte("hello\n"), 0o644)
	erring := filepath.Join(dir, "erring.log")
	os.WriteFile(erring, []byte("hello\nError: the frobnicator refused the widget\n"), 0o644)
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), append([]string{"diagnose"}, args...), &out, &errb); code != ExitOK {
			t.Fatalf("diagnose %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	got := run(quiet, "--engine", "ollama")
	for _, want := range []string{"no failure in this log (if the engine ended: engine_died in phase launch)",
		"no line of the log shows a failure", "last line: hello", "confidence: none", "--exit CODE or --signal NAME"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "failed:") {
		t.Errorf("a log with no failure is said to have failed:\n%s", got)
	}
	var rep struct {
		Failure struct{ Class, Rule, Confidence string }
	}
	if err := json.Unmarshal([]byte(run(quiet, "--engine", "ollama", "--json")), &rep); err != nil ||
		rep.Failure.Rule != engine.RuleNoFailureShown || rep.Failure.Confidence != "none" || rep.Failure.Class != "engine_died" {
		t.Errorf("JSON failure %+v (%v), want rule %s, confidence none, class engine_died", rep.Failure, err, engine.RuleNoFailureShown)
	}
	// An engine that served and ended with code 0 (a graceful stop: the
	// trial's 'hiro backend stop' of Ollama) shows no failure either; the
	// best guess is a wrong reply, which no log line could show.
	served := filepath.Join(dir, "served.log")
	os.WriteFile(served, []byte(`time=2026-12-03T13:12:13.147Z level=INFO source=server.go:619 msg="llama runner started in 0.51 seconds"
[GIN] 2026/12/03 - 13:12:13 | 200 |  631.612014ms |       127.0.0.1 | POST     "/v1/chat/completions"
`), 0o644)
	got = run(served, "--engine", "ollama", "--exit", "0")
	for _, want := range []string{"no failure in this log (if its replies were wrong: probe_failed", "served requests and ended with code 0",
		"confidence: none"} {
		if !strings.Contains(got, want) {
			t.Errorf("served, exit 0: output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "the replies themselves were wrong") {
		t.Errorf("served, exit 0: says the replies were wrong with nothing showing it:\n%s", got)
	}
	for _, args := range [][]string{{quiet, "--engine", "ollama", "--exit", "1"}, {quiet, "--engine", "ollama", "--signal", "KILL"},
		{erring, "--engine", "ollama"}} {
		if got := run(args...); !strings.HasPrefix(got, "failed: ") {
			t.Errorf("diagnose %v: want a failure:\n%s", args, got)
		}
	}
}

// A log diagnosed with the wrong --engine (the shipped vLLM example read
// as Ollama's), whose own kind's verdict has confidence none, names the
// kinds that read it strongly; with the right kind, or a log no kind
// explains, there is no hint.
func TestDiagnoseHintsTheEngineThatExplainsIt(t *testing.T) {
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), append([]string{"diagnose"}, args...), &out, &errb); code != ExitOK {
			t.Fatalf("diagnose %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	log := filepath.Join("..", "..", "examples", "diagnose", "vllm.log")
	got := run(log, "--engine", "ollama")
	if !strings.Contains(got, "hint: no ollama rule explains this log") || !strings.Contains(got, "--engine vllm reads it as context_exceeds_kv") {
		t.Errorf("wrong --engine: no hint naming vllm:\n%s", got)
	}
	if got := run(log, "--engine", "vllm"); strings.Contains(got, "hint:") {
		t.Errorf("right --engine: a hint:\n%s", got)
	}
	quiet := filepath.Join(t.TempDir(), "quiet.log")
	os.WriteFile(quiet, []byte("hello\n"), 0o644)
	if got := run(quiet, "--engine", "ollama"); strings.Contains(got, "hint:") {
		t.Errorf("a log no kind explains: a hint:\n%s", got)
	}
}

// A log whose verdict is strong under the wrong --engine (a llama-server
// CUDA OOM read as vLLM's, with vLLM's advice: trial 12's S3) holds none
// of that kind's own lines: diagnose says which kinds' lines it holds;
// with the right kind, or as openai, there is no hint.
func TestDiagnoseHintsTheEngineWhoseLinesItHolds(t *testing.T) {
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), append([]string{"diagnose"}, args...), &out, &errb); code != ExitOK {
			t.Fatalf("diagnose %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	log := filepath.Join(t.TempDir(), "llama-server.log")
	os.WriteFile(log, []byte("llama_model_loader: loaded meta data with 30 key-value pairs and 291 tensors from /models/m.gguf\n"+
		"ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8566.04 MiB on device 0: cudaMalloc failed: out of memory\n"+
		"llama_model_load: error loading model: unable to allocate CUDA0 buffer\n"), 0o644)
	got := run(log, "--engine", "vllm", "--exit", "1")
	if !strings.Contains(got, "gpu_oom") || !strings.Contains(got, "hint: this log has none of vllm's own lines") || !strings.Contains(got, "--engine llamacpp") {
		t.Errorf("wrong --engine: no hint naming llamacpp:\n%s", got)
	}
	for _, kind := range []string{"llamacpp", "openai"} {
		if got := run(log, "--engine", kind, "--exit", "1"); strings.Contains(got, "hint:") {
			t.Errorf("--engine %s: a hint:\n%s", kind, got)
		}
	}
}
