package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Wrong numbers of positional arguments name the command, what it needs and
// an example, with exit 2 (not cobra's "accepts 1 arg(s), received 0").
func TestArgumentCountMessages(t *testing.T) {
	cfg := filepath.Join("..", "..", "examples", "hiro.toml")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backend", "start"}, "hiro: backend start: give the name of one backend profile (got 0 arguments), e.g. hiro backend start prod\n"},
		{[]string{"backend", "start", "a", "b"}, `hiro: backend start: give the name of one backend profile (got 2 arguments: "a" "b"), e.g. hiro backend start prod` + "\n"},
		{[]string{"backend", "logs"}, "hiro: backend logs: give the name of one backend profile (got 0 arguments), e.g. hiro backend logs prod --tail 50\n"},
		{[]string{"backend", "stop"}, "hiro: backend stop: give the name of one backend profile (got 0 arguments), e.g. hiro backend stop prod\n"},
		{[]string{"backend", "status", "a", "b"}, "hiro: backend status: give at most one backend profile name, none for every backend (got 2 arguments"},
		{[]string{"qualify"}, "hiro: qualify: give the path of one campaign plan, a TOML file (got 0 arguments), e.g. hiro qualify examples/demo/plan.toml --check\n"},
		{[]string{"activate"}, "hiro: activate: give the evidence folder or evidence.json of the campaign"},
		{[]string{"journal", "add"}, "hiro: journal add: give the public evidence.json of one campaign, or its evidence folder (got 0 arguments), e.g. hiro journal add "},
		{[]string{"corpus", "verify"}, "hiro: corpus verify: give exactly one corpus directory (got 0 arguments), e.g. hiro corpus verify corpora/fc6\n"},
		{[]string{"corpus", "import", "factcheck-gpt"}, `hiro: corpus import: give the format and the file (got 1 argument: "factcheck-gpt"), e.g. hiro corpus import factcheck-gpt `},
		{[]string{"artifact", "verify"}, "hiro: artifact verify: give exactly one manifest file (got 0 arguments), e.g. hiro artifact verify model.manifest.json --dir DIR\n"},
		{[]string{"extract", "merge", "--out", t.TempDir()}, "hiro: extract merge: give the output directories of every shard (got 0 arguments), e.g. hiro extract merge --out "},
		{[]string{"status", "x"}, `hiro: status: takes no arguments (got 1 argument: "x"); see 'hiro status --help'` + "\n"},
		{[]string{"version", "x", "y"}, `hiro: version: takes no arguments (got 2 arguments: "x" "y")`},
	} {
		code, out, errs := runHiro(t, append([]string{"--config", cfg}, c.args...)...)
		if code != ExitUsage || !strings.HasPrefix(errs, c.want) || out != "" {
			t.Errorf("hiro %s: exit %d, stdout %q\n stderr %q\n want exit 2, stderr starting %q", strings.Join(c.args, " "), code, out, errs, c.want)
		}
	}
}

// No command is left with cobra's own argument messages: every runnable
// command given too many arguments answers with its name and exit 2.
func TestEveryCommandChecksItsArguments(t *testing.T) {
	many := []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		if c == c.Root() || !c.Runnable() || c.Name() == "help" || c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		name := commandName(c)
		code, _, errs := runHiro(t, append(strings.Fields(name), many...)...)
		for _, cobraWords := range []string{"accepts ", "requires at least", "requires at most", "arg(s)", "unknown command"} {
			if strings.Contains(errs, cobraWords) && !c.HasSubCommands() {
				t.Errorf("hiro %s with 9 arguments: cobra's message %q", name, errs)
			}
		}
		if c.HasSubCommands() && c.Annotations[annotationRunsItself] == "" {
			// A group: its usage, then the error.
			if code != ExitUsage || !strings.Contains(errs, "\nhiro: "+name+`: unknown command "a1"`) {
				t.Errorf("hiro %s a1...: exit %d, stderr %q; want exit 2 naming the command once", name, code, errs)
			}
			return
		}
		if code != ExitUsage || !strings.HasPrefix(errs, "hiro: "+name+": ") {
			t.Errorf("hiro %s with 9 arguments: exit %d, stderr %q; want exit 2 naming the command", name, code, errs)
		}
	}
	walk(NewRoot(&Globals{}))
}

// Flag errors name the command once ("hiro: backend status: ...", not
// "hiro: hiro backend status: ..."), and a value that does not parse says
// what the flag takes, with an example, instead of strconv's error.
func TestFlagErrorMessages(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backend", "status", "--jsn"}, "hiro: backend status: unknown flag: --jsn (see 'hiro backend status --help')\n"},
		{[]string{"backend", "logs", "prod", "--tail", "abc"}, `hiro: backend logs: --tail: "abc" is not a whole number of lines; e.g. --tail 50` + "\n"},
		{[]string{"backend", "stop", "prod", "--grace", "5"}, `hiro: backend stop: --grace: "5" is not a duration (a number with a unit: ms, s, m, h); e.g. --grace 30s` + "\n"},
		{[]string{"extract", "--concurrency", "many"}, `hiro: extract: --concurrency: "many" is not a whole number; e.g. --concurrency `},
	} {
		code, _, errs := runHiro(t, c.args...)
		if code != ExitUsage || !strings.HasPrefix(errs, c.want) {
			t.Errorf("hiro %s: exit %d, stderr %q; want exit 2, stderr starting %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}

// A missing plan says what to give, with a plan of the repository; a missing
// configuration whose path came from $HIRO_CONFIG says so (and not when
// --config gave it).
func TestMissingFilesSayWhatToDo(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "demo", "plan.toml")
	code, _, errs := runHiro(t, "--config", filepath.Join("..", "..", "examples", "hiro.toml"), "qualify", "/nope.toml", "--check")
	const hint = "give the path of a campaign plan (TOML), e.g. hiro qualify examples/demo/plan.toml --check"
	if code != ExitUsage || errs != "hiro: /nope.toml: plan file not found; "+hint+"\n" {
		t.Errorf("qualify /nope.toml: exit %d, stderr %q", code, errs)
	}
	if _, err := os.Stat(example); err != nil {
		t.Errorf("the hint names %s: %v", example, err)
	}

	missing := filepath.Join(t.TempDir(), "hiro.toml")
	t.Setenv("HIRO_CONFIG", missing)
	code, _, errs = runHiro(t, "backend", "status")
	if code != ExitUsage || !strings.Contains(errs, missing+": configuration file not found; the path came from the environment variable HIRO_CONFIG: correct or unset HIRO_CONFIG, or pass --config FILE") {
		t.Errorf("HIRO_CONFIG missing: exit %d, stderr %q", code, errs)
	}
	code, _, errs = runHiro(t, "--config", missing, "backend", "status")
	if code != ExitUsage || strings.Contains(errs, "came from") || !strings.Contains(errs, "configuration file not found") {
		t.Errorf("--config missing: exit %d, stderr %q", code, errs)
	}
}
