package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/failure"
	"github.com/hiro-dev/hiro/internal/qualify"
)

func TestVersion(t *testing.T) {
	code, a, errs := runHiro(t, "version")
	if code != ExitOK || errs != "" {
		t.Fatalf("hiro version: exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"hiro ", "revision  ", "time      ", "go        " + runtime.Version()} {
		if !strings.Contains(a, want) {
			t.Errorf("hiro version lacks %q:\n%s", want, a)
		}
	}
	code, b, errs := runHiro(t, "--version")
	if code != ExitOK || b != a {
		t.Errorf("hiro --version: exit %d, stderr %q, output differs from 'hiro version':\n%s\nvs\n%s", code, errs, b, a)
	}
	code, j, _ := runHiro(t, "version", "--json")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
	}
	if code != ExitOK || json.Unmarshal([]byte(j), &v) != nil || v.GoVersion != runtime.Version() || v.Version == "" {
		t.Errorf("version --json: exit %d %q", code, j)
	}
}

// A group command without a subcommand is a usage error: usage on stderr,
// exit 2.
func TestGroupCommandsNeedASubcommand(t *testing.T) {
	for _, group := range []string{"backend", "corpus", "artifact", "journal"} {
		code, out, errs := runHiro(t, group)
		if code != ExitUsage || !strings.Contains(errs, "Usage:") || !strings.Contains(errs, "give a command") || out != "" {
			t.Errorf("hiro %s: exit %d, stdout %q, stderr %q", group, code, out, errs)
		}
		if code, _, errs := runHiro(t, group, "nonsense"); code != ExitUsage || !strings.Contains(errs, `unknown command "nonsense"`) {
			t.Errorf("hiro %s nonsense: exit %d, stderr %q", group, code, errs)
		}
	}
	if code, out, _ := runHiro(t, "backend", "--help"); code != ExitOK || !strings.Contains(out, "Usage:") {
		t.Errorf("hiro backend --help: exit %d", code)
	}
}

// Every long help is wrapped at 80 columns.
func TestHelpTextsWrapped(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		lines := strings.Split(c.Long, "\n")
		for i, l := range lines {
			if n := len([]rune(l)); n > helpWidth {
				t.Errorf("%s: help line %d is %d columns: %q", c.CommandPath(), i+1, n, l)
			}
			// A stub: a short line of running text whose paragraph goes
			// on, where the next word would have fitted (a long line
			// broken alone left it behind).
			if i+1 < len(lines) && plainLine(l) && plainLine(lines[i+1]) && !strings.HasSuffix(l, ":") &&
				len([]rune(l)) < helpWidth/2 && len([]rune(l))+1+len(strings.Fields(lines[i+1])[0]) <= helpWidth {
				t.Errorf("%s: help line %d is a stub before the rest of its paragraph: %q", c.CommandPath(), i+1, l)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewRoot(&Globals{}))
	// The flags' and subcommands' lines too, in the usage every --help
	// prints (a group's list of commands is one line each: its Short).
	var helps [][]string
	var each func(c *cobra.Command, path []string)
	each = func(c *cobra.Command, path []string) {
		if c.Hidden {
			return
		}
		helps = append(helps, append(slices.Clone(path), "--help"))
		for _, s := range c.Commands() {
			each(s, append(slices.Clone(path), s.Name()))
		}
	}
	each(NewRoot(&Globals{}), nil)
	for _, args := range helps {
		code, out, _ := runHiro(t, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d", args, code)
		}
		for i, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "  hiro ") {
				continue // the synopsis is one command line, not prose
			}
			if n := len([]rune(l)); n > helpWidth {
				t.Errorf("hiro %s: line %d is %d columns: %q", strings.Join(args, " "), i+1, n, l)
			}
		}
	}
	// qualify's help names every gate kind a plan may use.
	if _, out, _ := runHiro(t, "qualify", "--help"); true {
		for _, k := range qualify.KindNames() {
			if !strings.Contains(out, k) {
				t.Errorf("hiro qualify --help does not name the gate kind %q", k)
			}
		}
	}
	if got := wrapText("aaa bbb ccc\n  dd ee ff gg", 9); got != "aaa bbb\nccc\n  dd ee\n  ff gg" {
		t.Errorf("wrapText = %q", got)
	}
}

// hiro eval on a missing corpus exits 2, as its help says.
func TestEvalMissingCorpusIsUsage(t *testing.T) {
	code, _, errs := runHiro(t, "eval", "--corpus", filepath.Join(t.TempDir(), "nothing"), "--claims", "claims.jsonl")
	// The folder does not exist: it is named as missing, with no advice to
	// freeze it (that would fail the same way; issue 26's finding F5).
	if code != ExitUsage || !strings.Contains(errs, "no such folder") || strings.Contains(errs, "hiro corpus freeze") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	// A folder laid out as a corpus but not frozen yet: the next step is
	// freeze, not import.
	dir := filepath.Join(t.TempDir(), "mine")
	must(t, os.MkdirAll(filepath.Join(dir, "docs"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "docs", "a.txt"), []byte("A."), 0o644))
	for _, args := range [][]string{{"eval", "--corpus", dir, "--claims", "claims.jsonl"}, {"--config", filepath.Join("..", "..", "examples", "hiro.toml"), "extract", "--corpus", dir, "--out", t.TempDir()}} {
		_, _, errs := runHiro(t, args...)
		if !strings.Contains(errs, "freeze it with 'hiro corpus freeze "+dir+"'") || strings.Contains(errs, "corpus import") {
			t.Errorf("%v on an unfrozen folder: %q, want the freeze command", args, errs)
		}
	}
	code, long, _ := runHiro(t, "eval", "--help")
	if code != ExitOK || !strings.Contains(long, "2 bad usage (a missing file") {
		t.Errorf("eval help no longer documents exit 2 for a missing file:\n%s", long)
	}
}

// diagnose accepts engine kinds in any case, and the repository's sample
// log (README) and the seed replay's three logs give the answers the
// README and examples/seed-replay/logs/README.md promise.
func TestDiagnoseExampleLogs(t *testing.T) {
	type want struct {
		log, engine, exit, class, phase, root string
		facts                                 map[string]float64
	}
	root := filepath.Join("..", "..", "examples")
	cases := []want{
		{"diagnose/vllm.log", "vLLM", "--exit=1", "context_exceeds_kv", "kv_init", "estimated maximum model length is 16448", map[string]float64{"suggested_max_model_len": 16448}},
		{"seed-replay/logs/v2-runner-uva.log", "vllm", "--exit=1", "host_capability", "launch", "UVA is not available", nil},
		{"seed-replay/logs/v1-marlin-repack.log", "VLLM", "--exit=1", "quant_kernel_failed", "kernel_setup", "gptq_marlin_repack",
			map[string]float64{"weights_load_seconds": 93.66, "shards_loaded": 4, "shards_total": 4}},
		{"seed-replay/logs/triton-w4a16-died.log", "vllm", "--signal=KILL", "engine_died", "kv_init", "",
			map[string]float64{"weights_load_seconds": 16.18, "model_memory_gib": 12.0}},
	}
	for _, c := range cases {
		code, out, errs := runHiro(t, "diagnose", filepath.Join(root, c.log), "--engine", c.engine, c.exit, "--json")
		if code != ExitOK {
			t.Errorf("%s: exit %d: %s", c.log, code, errs)
			continue
		}
		var r struct {
			Engine  string `json:"engine"`
			Failure struct {
				Class     string             `json:"class"`
				Phase     string             `json:"phase"`
				RootCause string             `json:"root_cause"`
				Facts     map[string]float64 `json:"facts"`
			} `json:"failure"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v\n%s", c.log, err, out)
		}
		f := r.Failure
		if r.Engine != "vllm" || f.Class != c.class || f.Phase != c.phase || !strings.Contains(f.RootCause, c.root) {
			t.Errorf("%s: engine %s, %s in %s, root cause %q; want vllm, %s in %s, containing %q", c.log, r.Engine, f.Class, f.Phase, f.RootCause, c.class, c.phase, c.root)
		}
		for k, v := range c.facts {
			if f.Facts[k] != v {
				t.Errorf("%s: fact %s = %v, want %v (facts %v)", c.log, k, f.Facts[k], v, f.Facts)
			}
		}
	}
}

// The examples a user runs do not reach outside the repository.
func TestExamplesSelfContained(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "*", "*"))
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || st.IsDir() {
			continue
		}
		b, _ := os.ReadFile(f)
		if strings.Contains(string(b), "../shared") {
			t.Errorf("%s points into ../shared, which a user of hiro does not have", f)
		}
	}
	// The commands of the README and the docs (their indented blocks) neither.
	pages, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	for _, p := range append(pages, filepath.Join("..", "..", "README.md")) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "    ") && strings.Contains(l, "../shared") {
				t.Errorf("%s:%d: a command points into ../shared: %s", filepath.Base(p), i+1, l)
			}
		}
	}
}

// Without --journal and --out, the journal commands use the state
// directory: journal/ and journal-site/ inside it, never the current folder.
func TestJournalDefaultsToStateDir(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(cfg, []byte("state_dir = \"state\"\n\n[backends.x]\nengine = \"openai\"\nunmanaged = true\nbase_url = \"http://127.0.0.1:1\"\nmodel = \"m\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cwd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(cwd) })
	work := t.TempDir()
	if err := os.Chdir(work); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runHiro(t, "--config", cfg, "journal", "new", "--title", "Defaults", "--time", "2026-01-02T03:04:05Z"); code != ExitOK || !strings.Contains(out, filepath.Join(dir, "state", "journal")) {
		t.Fatalf("journal new: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runHiro(t, "--config", cfg, "journal", "build"); code != ExitOK || !strings.Contains(out, filepath.Join(dir, "state", "journal-site")) {
		t.Fatalf("journal build: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "journal-site", "index.html")); err != nil {
		t.Errorf("site not in the state directory: %v", err)
	}
	// Without a configuration (none named, no hiro.toml here): .hiro in
	// the current folder.
	t.Setenv("HIRO_CONFIG", "")
	if code, out, errs := runHiro(t, "journal", "new", "--title", "No config"); code != ExitOK || !strings.Contains(out, filepath.Join(".hiro", "journal")) {
		t.Fatalf("journal new without configuration: exit %d\n%s%s", code, out, errs)
	}
	ents, _ := os.ReadDir(work)
	if len(ents) != 1 || ents[0].Name() != ".hiro" {
		t.Errorf("the current folder holds %v; want only .hiro", ents)
	}
}

// docs/vocabulary.md names every phase and class the code knows, each class
// with an example line.
func TestVocabularyDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "vocabulary.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range failure.Phases {
		if !strings.Contains(doc, "| `"+string(p)+"` |") {
			t.Errorf("phase %s is not in docs/vocabulary.md's table", p)
		}
	}
	for _, c := range failure.Classes {
		i := strings.Index(doc, "| `"+string(c)+"` |")
		if i < 0 {
			t.Errorf("class %s is not in docs/vocabulary.md's table", c)
			continue
		}
		row, _, _ := strings.Cut(doc[i:], "\n")
		if cells := strings.Split(row, "|"); len(cells) < 5 || strings.TrimSpace(cells[3]) == "" {
			t.Errorf("class %s has no example line: %q", c, row)
		}
	}
	for _, code := range []int{ExitOK, ExitFailed, ExitUsage, ExitAborted, ExitCritical} {
		if !strings.Contains(doc, "| "+strconv.Itoa(code)+" |") {
			t.Errorf("exit code %d is not documented", code)
		}
	}
	readme, _ := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if !strings.Contains(string(readme), "(docs/vocabulary.md)") {
		t.Error("README does not link docs/vocabulary.md")
	}
}

// The README's command table has a line for every command hiro has.
func TestReadmeListsEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range NewRoot(&Globals{}).Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if !strings.Contains(string(b), "| `hiro "+c.Name()) && !strings.Contains(string(b), "/ `hiro "+c.Name()) {
			t.Errorf("README.md's command table has no line for hiro %s", c.Name())
		}
	}
}
