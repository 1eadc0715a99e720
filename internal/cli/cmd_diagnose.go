package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/tidwall/sjson"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func init() { registerCommand(newDiagnoseCmd) }

// diagnoseOpts are the flags of 'hiro diagnose'.
type diagnoseOpts struct {
	Engine  string
	Exit    int
	HasExit bool
	Signal  string
	// RequiresAccelerator: judge the log as for a profile with
	// requires_accelerator (CPU serving is the failure).
	RequiresAccelerator bool
	// Coverage: the arguments are case-set directories; print the class x
	// engine table of right answers instead of diagnosing one log.
	Coverage bool
}

// coverageReport is what 'hiro diagnose --coverage --json' prints.
type coverageReport struct {
	Sets  []string                                         `json:"sets"`
	Cases int                                              `json:"cases"`
	Right int                                              `json:"right"`
	Cells map[failure.Class]map[string]engine.CoverageCell `json:"cells"`
	Wrong []coverageMiss                                   `json:"wrong,omitempty"`
	// Confidence counts the failure verdicts per confidence with their
	// right classes; ConfidentWrong the strong verdicts of a wrong class.
	Confidence     map[failure.Confidence]engine.ConfidenceCell `json:"confidence"`
	ConfidentWrong int                                          `json:"confident_wrong"`
}

type coverageMiss struct {
	Set    string `json:"set"`
	Log    string `json:"log"`
	Engine string `json:"engine"`
	Misses string `json:"misses"`
}

// diagnoseReport is what 'hiro diagnose --json' prints: the failure object
// of 'backend start --json' (with its next_step) for the log given.
type diagnoseReport struct {
	Log    string `json:"log"`
	Engine string `json:"engine"`
	// Failure holds the deciding rule's name, the confidence and the
	// other classes the log points at (rule, confidence, classes). It has
	// no seconds_since_start: a log read after the fact does not say when
	// the engine started, and an absent fact is absent, not 0.
	Failure untimedFailure `json:"failure"`
	// Device is where the log shows the model served; absent when it
	// does not say.
	Device *engine.ServingDevice `json:"device,omitempty"`
}

// untimedFailure is a failure whose start time is unknown: its JSON is
// the failure object less seconds_since_start.
type untimedFailure struct{ *failure.Failure }

// MarshalJSON writes the failure object without seconds_since_start.
func (u untimedFailure) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(u.Failure)
	if err != nil || u.Failure == nil {
		return b, err
	}
	return sjson.DeleteBytes(b, "seconds_since_start")
}

func newDiagnoseCmd(g *Globals) *cobra.Command {
	o := &diagnoseOpts{}
	cmd := &cobra.Command{
		Use:   "diagnose LOGFILE --engine KIND [--exit CODE | --signal NAME] [--json]\n  hiro diagnose --coverage CASEDIR... [--json]",
		Short: "Classify an engine's startup failure from its log, after the fact",
		Long: `Read an engine log (one a user pasted, or an attempt's log file; - reads it
from standard input) and say why
the engine failed, as 'hiro backend start' would have: the failure class, the
phase it was in, the root-cause line (not the wrapper line), the facts parsed
from the log (weights load seconds, shards, KV cache sizes, ...) and the next
step to try. --exit or --signal says how the process ended when known; any
exit before ready is a failure, exit code 0 included. The serving device the
log shows (GPU with its layers, or CPU) is printed too; with
--requires-accelerator the log is judged as for a profile that requires an
accelerator, so a silent CPU fallback is the failure (accelerator_unavailable).

KIND is one of: ` + strings.Join(engine.Kinds(), ", ") + `.

With --coverage, each argument is a case set (a directory with a cases.json
and the logs it names, e.g. internal/engine/testdata/field): every case is
diagnosed and checked against its expected class, phase, root-cause line
and facts, and a table class x engine of right/cases is printed, then the
cases answered wrong, then the share of strong verdicts and their accuracy and
the confident-wrong count (a wrong class said with strong confidence).

Exit status: 0 diagnosed (--coverage: every case right); 1 --coverage with a
case answered wrong; 2 bad usage (no such file, unknown engine kind, both
--exit and --signal, unknown signal, a case set that cannot be read).`,
		Args: needArgs(1, -1, "one engine log file, or case-set directories with --coverage", "hiro diagnose examples/diagnose/vllm.log --engine vllm --exit 1"),
		RunE: func(c *cobra.Command, args []string) error {
			o.HasExit = c.Flags().Changed("exit")
			if o.Coverage {
				return runDiagnoseCoverage(c.Context(), g, args)
			}
			if len(args) != 1 {
				return UsageErrorf("diagnose: give one engine log file (got %s; several arguments are case-set directories, with --coverage), e.g. hiro diagnose examples/diagnose/vllm.log --engine vllm --exit 1", countArgs(args))
			}
			return runDiagnose(c.Context(), g, o, args, c.InOrStdin())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Engine, "engine", "", "engine kind that wrote the log: "+strings.Join(engine.Kinds(), ", ")+" (required)")
	f.IntVar(&o.Exit, "exit", 0, "exit code the engine process ended with")
	f.StringVar(&o.Signal, "signal", "", "signal that ended the engine process (KILL, SIGSEGV, 9, ...)")
	f.BoolVar(&o.RequiresAccelerator, "requires-accelerator", false, "the profile requires an accelerator: a log that shows CPU serving is the failure")
	f.BoolVar(&g.JSON, "json", false, "print one JSON object {log, engine, failure} (errors too)")
	f.BoolVar(&o.Coverage, "coverage", false, "arguments are case-set directories: print the class x engine table of right answers")
	return cmd
}

// diagnosed is what readDiagnosis's reader found.
type diagnosed struct {
	d    engine.Diagnosis
	seen *textSeen
	err  error
}

// readDiagnosis opens the log path ("-": stdin) and diagnoses it. Opening
// and reading a pipe (stdin, a FIFO, <(...)) block until the writer
// writes or ends, and such a read cannot be cancelled: it runs apart, and
// ctx's end (Ctrl-C, SIGTERM) returns at once with exit 3, nothing being
// held (issue 26 G13: only SIGKILL ended it).
func readDiagnosis(ctx context.Context, path string, stdin io.Reader, kind string, do engine.DiagnoseOptions) (engine.Diagnosis, *textSeen, error) {
	done := make(chan diagnosed, 1)
	go func() {
		in := stdin
		if path != "-" {
			fh, err := os.Open(path)
			if err != nil {
				done <- diagnosed{err: UsageErrorf("diagnose: cannot read the log %s: %w: give the path of the engine's log file, or - to read it from standard input", path, errors.Unwrap(err))}
				return
			}
			defer fh.Close()
			in = fh
		}
		seen := &textSeen{r: in}
		d, err := engine.DiagnoseLog(seen, kind, do)
		if err != nil {
			err = UsageErrorf("diagnose: %s: %w", path, err)
		}
		done <- diagnosed{d: d, seen: seen, err: err}
	}()
	select {
	case r := <-done:
		return r.d, r.seen, r.err
	case <-ctx.Done():
		from := path
		if path == "-" {
			from = "standard input"
		}
		return engine.Diagnosis{}, nil, AbortedError(fmt.Errorf("diagnose: %v while waiting for the log on %s: nothing was diagnosed", context.Cause(ctx), from))
	}
}

// runDiagnose classifies the log args[0] ("-": stdin) and prints the
// failure.
func runDiagnose(ctx context.Context, g *Globals, o *diagnoseOpts, args []string, stdin io.Reader) error {
	if o.Engine == "" {
		return UsageErrorf("diagnose: --engine is required: the kind of engine that wrote the log, one of %s", strings.Join(engine.Kinds(), ", "))
	}
	// Kinds are lower-case; "vLLM" or "SGLang" as people write them is meant
	// the same.
	o.Engine = strings.ToLower(strings.TrimSpace(o.Engine))
	if _, err := engine.Lookup(o.Engine); err != nil {
		return UsageErrorf("diagnose: --engine: %w%s", err, kindSuggestion(o.Engine))
	}
	if o.HasExit && o.Signal != "" {
		return UsageErrorf("diagnose: give --exit or --signal, not both: a process either exits with a code or is killed by a signal")
	}
	var exit engine.ExitInfo
	switch {
	case o.Signal != "":
		name, err := diagnoseSignalName(o.Signal)
		if err != nil {
			return UsageErrorf("diagnose: --signal: %w", err)
		}
		exit = engine.Signaled(name)
	case o.HasExit:
		code, ok := exitCode(o.Exit)
		if !ok {
			return UsageErrorf("diagnose: --exit %d: an exit code is 0 to 255, or a Windows NTSTATUS 0xC0000000 to 0xFFFFFFFF "+
				"(or its negative 32-bit form, -1073741824 to -1); a shell's 128+N means signal N: use --signal N", o.Exit)
		}
		exit = engine.Exited(code)
	}

	path := args[0]
	// Say what a read that can wait forever waits on.
	if path == "-" {
		if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintln(g.Stderr, "diagnose: reading the log from standard input (the terminal); end it with Ctrl-D, or pipe the log in")
		}
	} else if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		fmt.Fprintf(g.Stderr, "diagnose: waiting for the log on the named pipe %s (Ctrl-C stops)\n", path)
	}
	d, seen, err := readDiagnosis(ctx, path, stdin, o.Engine, engine.DiagnoseOptions{Exit: exit, RequiresAccelerator: o.RequiresAccelerator})
	if err != nil {
		return err
	}
	if !seen.text && o.Signal == "" && !o.HasExit {
		// Nothing to read and no exit status: any class would be a guess
		// (a wrong file, a log not flushed yet).
		return UsageErrorf("diagnose: the log %s is empty (no text in it): nothing to diagnose; give the engine's combined stdout and stderr, or --exit/--signal when the process ended before writing a line", path)
	}
	if n, of := seen.binary(); n > 0 {
		return UsageErrorf("diagnose: the log %s is not text (%d of its first %d bytes are neither printable text nor white space): nothing to diagnose; give the engine's log file, not a binary or compressed one (zcat or xzcat it into diagnose -)", path, n, of)
	}
	var dev *engine.ServingDevice
	if d.Device.Kind != "" {
		dev = &d.Device
	}
	if g.JSON {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(diagnoseReport{Log: path, Engine: o.Engine, Failure: untimedFailure{d.Failure}, Device: dev})
	}
	if !seen.text {
		fmt.Fprintln(g.Stdout, "the log is empty: this verdict rests on the exit status alone")
	}
	printDiagnosis(g.Stdout, d.Failure)
	if dev != nil {
		fmt.Fprintf(g.Stdout, "serving device: %s (%s)\n", dev, dev.Evidence)
	}
	if h := otherKindsHint(seen, o.Engine, d.Failure, engine.DiagnoseOptions{Exit: exit, RequiresAccelerator: o.RequiresAccelerator}); h != "" {
		fmt.Fprintln(g.Stdout, h)
	} else if h := resembleHint(seen, o.Engine); h != "" {
		fmt.Fprintln(g.Stdout, h)
	}
	return nil
}

// resembleHint is a line saying the log holds none of its kind's own
// phase lines but several of another kind's (engine.Resemble): most
// likely the wrong --engine, whose advice the verdict gave; the kinds
// that share the most such lines (llama.cpp's derivatives share its
// loader's) are all named. "" when the kind is openai (only generic
// lines), its own lines are there, or no other kind's are.
func resembleHint(seen *textSeen, kind string) string {
	if kind == "openai" || seen == nil || seen.cut || !seen.text {
		return ""
	}
	rs := engine.Resemble(seen.kept)
	for _, r := range rs {
		if r.Kind == kind {
			return ""
		}
	}
	if len(rs) == 0 {
		return ""
	}
	var kinds []string
	for _, r := range rs {
		if r.Lines == rs[0].Lines {
			kinds = append(kinds, "--engine "+r.Kind)
		}
	}
	return fmt.Sprintf("hint: this log has none of %s's own lines but %d of another kind's (such as %q): if that engine wrote it, run again with %s (this verdict's advice is for %s)",
		kind, rs[0].Lines, rs[0].Example, strings.Join(kinds, " or "), kind)
}

// textSeen passes a log through, noting whether it held anything but
// white space.
// It keeps up to maxKept bytes of it (kept; cut past them), for
// reading it again with other engine kinds (otherKindsHint).
type textSeen struct {
	r    io.Reader
	text bool
	kept []byte
	cut  bool
}

// binarySample is how many leading bytes binary reads, and binaryShare
// the share of them that must be control bytes or invalid UTF-8 for the
// log to be binary: a log with a stray escape or a NUL run from a crashed
// write stays a log.
const (
	binarySample = 8 << 10
	binaryShare  = 0.3
)

// binary reports how many of the kept log's first binarySample bytes are
// control bytes (but tab, newline, carriage return and escape) or
// invalid UTF-8, and of how many, when that share is above binaryShare;
// 0 otherwise (or when the log was not kept).
func (t *textSeen) binary() (bad, of int) {
	b := t.kept
	if len(b) > binarySample {
		b = b[:binarySample]
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 || r < 0x20 && r != '\t' && r != '\n' && r != '\r' && r != 0x1b || r == 0x7f {
			bad += size
		}
		i += size
	}
	if len(b) == 0 || float64(bad) <= binaryShare*float64(len(b)) {
		return 0, 0
	}
	return bad, len(b)
}

// maxKept bounds the log textSeen keeps (16 MiB): a bigger one is not
// read again with other kinds.
const maxKept = 16 << 20

func (t *textSeen) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if !t.text && len(bytes.TrimSpace(p[:n])) > 0 {
		t.text = true
	}
	if !t.cut {
		if len(t.kept)+n > maxKept {
			t.cut, t.kept = true, nil
		} else {
			t.kept = append(t.kept, p[:n]...)
		}
	}
	return n, err
}

// otherKindsHint is a line saying which other engine kinds read the log
// strongly, when its own kind's verdict has confidence none (a rule for
// another engine's words: the wrong --engine, most likely); "" when
// none does or the verdict is not none.
func otherKindsHint(seen *textSeen, kind string, f *failure.Failure, do engine.DiagnoseOptions) string {
	if f == nil || f.Confidence != failure.ConfidenceNone || seen == nil || seen.cut || !seen.text {
		return ""
	}
	other := engine.OtherKinds(seen.kept, kind, do)
	if len(other) == 0 {
		return ""
	}
	var parts []string
	for _, r := range other {
		parts = append(parts, fmt.Sprintf("--engine %s reads it as %s (rule %s)", r.Kind, r.Failure.Class, r.Failure.Rule))
		if len(parts) == 3 {
			break
		}
	}
	return fmt.Sprintf("hint: no %s rule explains this log, but another engine's does: %s; is it that engine's log?", kind, strings.Join(parts, "; "))
}

// runDiagnoseCoverage diagnoses every case of the sets in dirs and prints
// the coverage table and the wrong answers.
func runDiagnoseCoverage(_ context.Context, g *Globals, dirs []string) error {
	var all []engine.CaseResult
	rep := coverageReport{Sets: dirs}
	for _, d := range dirs {
		rs, err := engine.RunCaseSet(d)
		if err != nil {
			return UsageErrorf("diagnose --coverage: %w: give a directory holding a cases.json and its logs", err)
		}
		for _, r := range rs {
			if !r.Right() {
				rep.Wrong = append(rep.Wrong, coverageMiss{Set: d, Log: r.Case.Log, Engine: r.Case.Engine, Misses: r.Misses()})
			}
		}
		all = append(all, rs...)
	}
	cv := engine.CoverageOf(all)
	rep.Cases, rep.Cells = len(all), cv.Cells
	rep.Confidence, rep.ConfidentWrong = cv.Confidence, cv.ConfidentWrong
	rep.Right = len(all) - len(rep.Wrong)
	if g.JSON {
		enc := json.NewEncoder(g.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		if err := cv.Write(g.Stdout); err != nil {
			return err
		}
		fmt.Fprintf(g.Stdout, "\n%d of %s right (class, phase, root-cause line, facts and serving device) in %s\n", rep.Right, termtext.Plural(rep.Cases, "case", "cases"), strings.Join(dirs, ", "))
		fmt.Fprintf(g.Stdout, "confidence: %s\n", cv.ConfidenceText())
		for _, m := range rep.Wrong {
			fmt.Fprintf(g.Stdout, "wrong: %s/%s (%s): %s\n", m.Set, m.Log, m.Engine, m.Misses)
		}
	}
	if len(rep.Wrong) > 0 {
		return Silent(ExitFailed)
	}
	return nil
}

// diagnoseSignalName normalises a signal given as "KILL", "SIGKILL", "kill" or
// "9" to its name without "SIG".
func diagnoseSignalName(s string) (string, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if name := unix.SignalName(syscall.Signal(n)); name != "" {
			return strings.TrimPrefix(name, "SIG"), nil
		}
		return "", fmt.Errorf("%d is not a signal number of this system", n)
	}
	name := strings.TrimPrefix(strings.ToUpper(s), "SIG")
	if unix.SignalNum("SIG"+name) == 0 {
		return "", fmt.Errorf("%q is not a signal name (e.g. KILL, TERM, SEGV, ABRT)", s)
	}
	return name, nil
}

// printDiagnosis writes a failure as a few readable lines (package
// account's one rendering of a failure). A log that shows no failure at
// all, its exit not given (engine.RuleNoFailureShown), is said so, with
// the best guess if the engine did end, not as "failed".
func printDiagnosis(w io.Writer, f *failure.Failure) {
	for i, l := range account.Failure(f) {
		if i == 0 && f.Rule == engine.RuleNoFailureShown {
			if f.Class == failure.ClassProbeFailed {
				fmt.Fprintf(w, "no failure in this log (if its replies were wrong: %s)\n", l)
			} else {
				fmt.Fprintf(w, "no failure in this log (if the engine ended: %s)\n", l)
			}
			continue
		}
		if i == 0 {
			fmt.Fprintf(w, "failed: %s\n", l)
			continue
		}
		fmt.Fprintf(w, "  %s\n", l)
	}
	// The account says a verdict in words only when it is not strong; a
	// person asking diagnose also wants to see that a verdict is strong,
	// and which rule to blame if it is wrong.
	if f != nil && f.Confidence == failure.ConfidenceStrong {
		fmt.Fprintf(w, "  confidence: strong (the rule %s matched the root-cause line)\n", f.Rule)
	}
}

// kindSuggestion is "; did you mean KIND?" for a mistyped engine kind
// near a known one (config.Suggest: the same rule as a mistyped key), or "".
func kindSuggestion(kind string) string {
	if best := config.Suggest(kind, engine.Kinds()); best != "" {
		return "; did you mean " + best + "?"
	}
	return ""
}

// exitCode is the exit status --exit gives, as the engine reads it: 0 to
// 255 (POSIX), or a Windows NTSTATUS error code (0xC0000000 to 0xFFFFFFFF,
// e.g. 0xC0000409 = 3221226505, STATUS_STACK_BUFFER_OVERRUN), which
// PowerShell and some launchers print as the negative 32-bit integer
// (-1073740791); false for anything else.
func exitCode(n int) (int, bool) {
	if n < 0 && n >= math.MinInt32 {
		n = int(uint32(int32(n)))
	}
	return n, (n >= 0 && n <= 255) || (n >= 0xC0000000 && n <= 0xFFFFFFFF)
}
