package engine

import (
	"strconv"
	"strings"
	"sync"

	"github.com/hiro-dev/hiro/internal/failure"
)

// maxStoredLine bounds the bytes kept of one line in the tail and as a
// root cause; longer lines are cut (matching still sees the whole line).
const maxStoredLine = 4096

// Tracker follows one engine attempt's log as it arrives: the phase in
// progress (last marker seen; PhaseLaunch before any), the facts parsed so
// far, the first root-cause candidate of the best tier, and a ring buffer
// of the last failure.DefaultTailLines lines.
//
// Feed is cheap per line (a few dozen substring checks; a regexp only on
// lines that contain a parser's trigger text) and allocates only to keep
// the line in the tail. A Tracker is safe for concurrent use: stdout and
// stderr readers may both feed it while another goroutine classifies.
type Tracker struct {
	e *Engine

	mu       sync.Mutex
	phase    failure.Phase
	marker   string // the text of the last marker seen
	facts    map[string]float64
	cand     candidate
	fallback string // first generic error line, used when no signature matched
	lines    int64
	tail     [failure.DefaultTailLines]string
	next     int // index in tail of the next write
}

// candidate is a root-cause line a signature matched.
type candidate struct {
	line  string
	class failure.Class
	phase failure.Phase // the phase when it was seen, or the signature's pinned phase
	tier  Tier
}

// NewTracker returns a Tracker for one attempt of this engine, in phase
// launch with no facts.
func (e *Engine) NewTracker() *Tracker {
	return &Tracker{e: e, phase: failure.PhaseLaunch, facts: map[string]float64{}}
}

// Feed takes one log line (a trailing "\n" or "\r\n" is ignored). A line
// holding carriage returns (progress bars redrawn in place) is taken as
// the separate lines between them.
func (t *Tracker) Feed(line string) {
	line = strings.TrimRight(line, "\r\n")
	t.mu.Lock()
	defer t.mu.Unlock()
	if strings.IndexByte(line, '\r') < 0 {
		t.feed(line)
		return
	}
	for _, seg := range strings.Split(line, "\r") {
		if strings.TrimSpace(seg) != "" {
			t.feed(seg)
		}
	}
}

func (t *Tracker) feed(line string) {
	t.lines++
	stored := line
	if len(stored) > maxStoredLine {
		stored = strings.Clone(stored[:maxStoredLine]) + "..."
	}
	t.tail[t.next] = stored
	t.next = (t.next + 1) % len(t.tail)

	e := t.e
	for i := range e.markers {
		if strings.Contains(line, e.markers[i].Text) {
			t.phase = e.markers[i].Phase
			t.marker = e.markers[i].Text
			break
		}
	}
	for i := range e.facts {
		fp := &e.facts[i]
		if !strings.Contains(line, fp.Trigger) {
			continue
		}
		m := fp.Pattern.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for j, name := range fp.Names {
			if j+1 >= len(m) {
				break
			}
			if v, err := strconv.ParseFloat(strings.ReplaceAll(m[j+1], ",", ""), 64); err == nil {
				t.facts[name] = v
			}
		}
	}

	if t.cand.tier == TierError {
		return // the root cause is known; later lines cannot displace it
	}
	msg, level := splitLine(line)
	if isFrame(msg) || level == "INFO" || level == "DEBUG" || t.isWrapper(line) {
		return
	}
	for i := range e.signatures {
		s := &e.signatures[i]
		if !s.matches(line) {
			continue
		}
		if s.tier() > t.cand.tier {
			ph := s.Phase
			if ph == "" {
				ph = t.phase
			}
			t.cand = candidate{line: stored, class: s.Class, phase: ph, tier: s.tier()}
		}
		return
	}
	if t.fallback == "" && isErrorLine(msg, level) {
		t.fallback = stored
	}
}

func (t *Tracker) isWrapper(line string) bool {
	for _, w := range t.e.wrappers {
		if strings.Contains(line, w) {
			return true
		}
	}
	return false
}

// Phase returns the phase in progress: the phase of the last marker seen,
// PhaseLaunch before any.
func (t *Tracker) Phase() failure.Phase {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.phase
}

// Facts returns a copy of the facts parsed so far (name → value; units in
// the name: _seconds, _gib, _mib, _tokens).
func (t *Tracker) Facts() map[string]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.factsLocked()
}

func (t *Tracker) factsLocked() map[string]float64 {
	if len(t.facts) == 0 {
		return nil
	}
	out := make(map[string]float64, len(t.facts))
	for k, v := range t.facts {
		out[k] = v
	}
	return out
}

// Lines returns how many lines were fed (carriage-return segments count
// as lines).
func (t *Tracker) Lines() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lines
}

// Tail returns the last lines fed, oldest first, at most
// failure.DefaultTailLines.
func (t *Tracker) Tail() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.tailLocked()
}

func (t *Tracker) tailLocked() []string {
	n := len(t.tail)
	if t.lines < int64(n) {
		n = int(t.lines)
	}
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	start := (t.next - n + len(t.tail)) % len(t.tail)
	for i := 0; i < n; i++ {
		out = append(out, t.tail[(start+i)%len(t.tail)])
	}
	return out
}

// Signature returns the root-cause line a failure signature matched so
// far, with its class, and whether there is one. The supervisor may use it
// to stop waiting early when an engine logs a known fatal error but keeps
// running (Ollama's server outlives its failed runner).
func (t *Tracker) Signature() (class failure.Class, line string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cand.class, t.cand.line, t.cand.tier > 0
}

// splitLine separates a log line's message from the prefixes engines put
// before it, and returns the level when one is given ("ERROR", "INFO";
// empty when none). It knows vLLM's "(EngineCore_DP0 pid=301) ERROR 10-02
// 09:12:44 [core.py:708] message" and Go slog's "level=ERROR".
func splitLine(line string) (msg, level string) {
	msg = line
	if strings.HasPrefix(msg, "(") {
		if i := strings.Index(msg, ") "); i > 0 && i < 80 && strings.Contains(msg[:i], "pid=") {
			msg = msg[i+2:]
		}
	}
	for _, lv := range [...]string{"ERROR ", "INFO ", "WARNING ", "DEBUG ", "CRITICAL ", "WARN "} {
		if strings.HasPrefix(msg, lv) {
			level = lv[:len(lv)-1]
			if i := strings.Index(msg, "] "); i > 0 && i < 100 {
				msg = msg[i+2:]
			} else {
				msg = msg[len(lv):]
			}
			return msg, level
		}
	}
	if i := strings.Index(line, "level="); i >= 0 {
		rest := line[i+len("level="):]
		if j := strings.IndexByte(rest, ' '); j > 0 {
			level = rest[:j]
		}
	}
	return msg, level
}

// isFrame reports a traceback frame or source line ("  File ...",
// "    x = f("): indented messages never explain a failure by themselves.
func isFrame(msg string) bool {
	return strings.HasPrefix(msg, " ") || strings.HasPrefix(msg, "\t")
}

// isErrorLine reports a line that looks like an error, for the root cause
// of a death no signature explains: a Python exception line, an ERROR or
// CRITICAL level, or an unlevelled line mentioning an error.
func isErrorLine(msg, level string) bool {
	switch level {
	case "ERROR", "CRITICAL", "FATAL":
		return strings.TrimSpace(msg) != ""
	case "INFO", "DEBUG", "WARNING", "WARN":
		return false
	}
	for _, w := range [...]string{"rror", "RROR", "xception", "atal", "ATAL", "panic", "Abort", "abort"} {
		if strings.Contains(msg, w) {
			return true
		}
	}
	return false
}
