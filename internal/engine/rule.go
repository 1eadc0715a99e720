package engine

import (
	"bytes"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/failure"
)

// Tier ranks root-cause candidates: the tracker keeps the first line of
// the best tier seen. It is a rule's strength: a TierHint rule is generic
// (its verdict is weak), a TierError rule names the cause (strong).
type Tier int

const (
	// TierHint is a low-level, generic or warning line that explains the
	// failure only when no engine error line follows (e.g. ggml's
	// "cudaMalloc failed: out of memory" before llama.cpp's "error loading
	// model: unable to allocate CUDA0 buffer").
	TierHint Tier = 1
	// TierError is the engine's own error line naming the cause.
	TierError Tier = 2
)

// Rule is one named entry of an ordered classification table: what it
// matches and what it concludes (Name, Family, Class, Tier, NextStep,
// Source: the one table format of hiro's rules). The same type holds
// three kinds of table, each walked by a short loop, first match wins:
//
//   - log-line rules (an engine's signatures and the shared families):
//     Text, Also, Pattern or Lookup, After and NotAfter match one line;
//   - exit rules (exitRules): Signals or Codes match how the process
//     ended, with BeforeReady limiting them to an attempt never ready;
//   - host-capability rules (package preflight's Rules): a preflight.Rule
//     embeds a Rule for its name, family, class, next step and source and
//     adds a predicate over host facts (Predict reads only that: its
//     matching fields stay empty). Matches and FirstMatch match one line
//     outside the tracker (host output, a /proc/cpuinfo flags line).
//
// A line matches when it contains Text, compared case-insensitively
// (ASCII; empty matches every line), contains Also (any case) when set,
// and matches Pattern when set (on the line as written; write (?i) where
// the wording's case varies). Text doubles as the cheap prefilter that
// keeps Pattern off most lines. The zero Tier means TierError.
type Rule struct {
	// Name identifies the rule in a verdict ("cuda/no-kernel-image-is-
	// available"): Family, "/", the slug of Text, unless set. Unique in a
	// table; the failure record's Rule field holds it.
	Name string
	// Family is the group the rule belongs to ("cuda", "rocm", "python",
	// "fs", an engine kind); set by family or by register.
	Family string
	// Text is a literal substring the line must contain, any case.
	Text string
	// Also is a second literal the line must contain, any case (a cheap
	// check before Pattern when Text alone is a common word).
	Also string
	// Pattern, when set, must match the line too.
	Pattern *regexp.Regexp
	// Lookup, when set, gives the class from Pattern's submatches instead
	// of Class (a CUDA error number or enum name); false: no match.
	Lookup func(m []string) (failure.Class, bool)
	// After, when set, is a literal (case-sensitive) that must have been
	// logged, in this line or an earlier one, for the rule to match;
	// NotAfter one that must not have been.
	After, NotAfter string
	// Signals and Codes match an exit: the signal that ended the process
	// (without "SIG") or its exit code (a shell's 128+N counts as signal
	// N). BeforeReady: only when the attempt was never ready.
	Signals     []string
	Codes       []int
	BeforeReady bool
	// Explain is an exit rule's root cause: a format taking the exit
	// ("killed by signal ILL") and the phase as %[1]s and %[2]s.
	Explain string
	// Class is the failure class the rule concludes.
	Class failure.Class
	// Phase, when set, pins the failure phase: the step that raises this
	// error, whatever marker came last (vLLM's KV cache sizing errors are
	// raised in kv_init although "Available KV cache memory" is logged just
	// before them).
	Phase failure.Phase
	// Tier ranks the candidate and says the rule's strength; zero means
	// TierError.
	Tier Tier
	// Crash marks an engine crash while serving that names no cause by
	// itself ("Scheduler hit an exception"); with Class engine_died. The
	// classifier refines it from context: structured_output_crash when a
	// grammar backend was in use and requests were being served. A
	// crash rule of another class keeps it, unless its line was logged
	// while serving and the server outlived it (the request failed).
	Crash bool
	// Fatal marks a crash line that reports the death of the process
	// that printed it or a failure it cannot go on after (a signal, an
	// abort, a failed native assertion, its GPU context lost): a
	// server that outlives it is a wrapper whose engine child died
	// (Ollama's runner), so the verdict stays engine_died, not a failed
	// request the engine survived.
	Fatal bool
	// Summary marks a wrapper's summary that names no cause ("Failed to
	// load model."): it gives the class, and the first error line logged
	// before it (the child's own, relayed) is the root cause; when the
	// summary opens a Python traceback on its line, the exception line
	// that ends the block is.
	Summary bool
	// Notice marks a line an engine prints when it goes on in a lesser
	// way (ggml-cuda's "failed to allocate ... of pinned memory" before it
	// uses pageable memory, ggml_cuda_init's failure before a CPU
	// fallback): the line is at most a hint (Tier must be TierHint), whatever
	// later rules of the table would say of it, so it explains the failure
	// only when no error line follows.
	Notice bool
	// Below marks a header whose message is on the indented lines after
	// it (CANN's catch-all "EE9999: [PID: N] ... Inner Error!", then the
	// runtime's own lines): they are read as lines, not as frames, until
	// a blank line or a stack trace, and a rule that matches one of them
	// states the cause. Tier must be TierHint.
	Below bool
	// Weak marks a rule whose verdict is weak whatever line it matched:
	// its class was wrong when it decided strongly on a held-out set at
	// first sight (testdata/first-sight.json), and nothing in the line's
	// structure told the wrong cases from the right ones (its class
	// depends on what the wording wraps: which module is missing, which
	// step the collective ran in). It still ranks as its Tier says.
	Weak bool
	// Or is the other class the line can mean when the log alone cannot
	// tell which (docs/vocabulary.md "A broken install": a library the
	// loader cannot find is the host's or the install's): a rule with Or
	// is weak like a Weak one, and its verdict names Or in Classes.
	Or failure.Class
	// NextStep, when set, is the advice when this rule decides (else the
	// engine's or the class's).
	NextStep string
	// Source, when set, names the public document or code that states
	// what the rule concludes (required in a host-capability table).
	Source string

	lower     []byte // Text lower-cased, set by register
	also      []byte // Also lower-cased, set by register
	afterID   int32  // index of After in the tracker's seen texts, -1 none
	notAfterI int32  // index of NotAfter, -1 none
	anchored  bool   // Pattern matches at the line's start (anchoredPattern), set by register
}

// Matches reports whether line matches the rule's Text, Also and Pattern
// (not After or NotAfter, which need the lines before) and the class it
// gives. It is the reading a table outside the tracker uses (a preflight
// table over host output).
func (r *Rule) Matches(line string) (failure.Class, bool) {
	lower := []byte(strings.ToLower(line))
	if !bytes.Contains(lower, []byte(strings.ToLower(r.Text))) {
		return "", false
	}
	if r.Also != "" && !bytes.Contains(lower, []byte(strings.ToLower(r.Also))) {
		return "", false
	}
	return r.patternClass(line)
}

// classOf returns the class line gets from r, when it matches (its text
// is known to be in the line, or r has none).
func (r *Rule) classOf(line string, lower []byte) (failure.Class, bool) {
	if len(r.also) > 0 && !bytes.Contains(lower, r.also) {
		return "", false
	}
	return r.patternClass(line)
}

func (r *Rule) patternClass(line string) (failure.Class, bool) {
	switch {
	case r.Pattern == nil:
		return r.Class, true
	case r.Lookup != nil:
		m := r.Pattern.FindStringSubmatch(line)
		if m == nil && r.anchored {
			m = r.Pattern.FindStringSubmatch(stripHostPrefix(line))
		}
		if m == nil {
			return "", false
		}
		return r.Lookup(m)
	case r.Pattern.MatchString(line), r.anchored && r.Pattern.MatchString(stripHostPrefix(line)):
		return r.Class, true
	}
	return "", false
}

// anchoredPattern reports a Pattern that matches only at the line's start
// ("^panic: ", "(?i)^..."): the line a process wrote, which a host may
// have prefixed (docker compose's "svc  | ", journald's "Mon DD HH:MM:SS
// host unit[pid]: "), so it is also read without that prefix.
func anchoredPattern(p *regexp.Regexp) bool {
	if p == nil {
		return false
	}
	s := strings.TrimPrefix(p.String(), "(?i)")
	return strings.HasPrefix(s, "^")
}

func (r *Rule) tier() Tier {
	if r.Tier == 0 {
		return TierError
	}
	return r.Tier
}

// matchesExit reports whether an exit rule matches the signal and code
// (exitSignal's reading) of an attempt, served or not.
func (r *Rule) matchesExit(sig string, code int, served bool) bool {
	if r.BeforeReady && served {
		return false
	}
	for _, s := range r.Signals {
		if s == sig {
			return true
		}
	}
	for _, c := range r.Codes {
		if c == code {
			return true
		}
	}
	return false
}

// FirstMatch returns the first rule of rules that line matches (Matches),
// with its class, or nil.
func FirstMatch(rules []Rule, line string) (*Rule, failure.Class) {
	for i := range rules {
		if c, ok := rules[i].Matches(line); ok {
			return &rules[i], c
		}
	}
	return nil, ""
}

// RuleNames returns the name of every rule of the classifier's tables
// (each kind's signatures and the shared families, the exit rules, the
// outcome rules), sorted and each once: the names another table must not
// take (a preflight's host-capability rules).
func RuleNames() []string {
	seen := map[string]bool{}
	for _, e := range registry {
		for i := range e.signatures {
			seen[e.signatures[i].Name] = true
		}
	}
	for i := range exitRules {
		seen[exitRules[i].Name] = true
	}
	for i := range outcomeRules {
		seen[outcomeRules[i].Name] = true
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// family names the rules of one family: Family and, unless set, Name
// (family/slug of Text; a slug taken twice gets -2, -3...).
func family(name string, rules []Rule) []Rule {
	out := make([]Rule, len(rules))
	copy(out, rules)
	nameRules(name, out)
	return out
}

// nameRules fills Family and Name where empty (see family).
func nameRules(fam string, rules []Rule) {
	taken := map[string]int{}
	for i := range rules {
		r := &rules[i]
		if r.Family == "" {
			r.Family = fam
		}
		if r.Name != "" {
			continue
		}
		base := r.Family + "/" + slug(r.Text)
		taken[base]++
		r.Name = base
		if n := taken[base]; n > 1 {
			r.Name += "-" + strconv.Itoa(n)
		}
	}
}

// slug is s in lower case with runs of other characters than letters and
// digits as one "-", cut to 48 bytes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		ok := 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		switch {
		case ok:
			b.WriteRune(c)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
		if b.Len() >= 48 {
			break
		}
	}
	return strings.TrimRight(b.String(), "-")
}
