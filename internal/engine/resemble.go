package engine

import (
	"bufio"
	"bytes"
	"sort"
)

// resembleLines bounds how many lines of a log Resemble reads: an
// engine's start-up lines, where its own phase markers are, come first.
const resembleLines = 2000

// resembleMinText is the shortest marker text Resemble counts: shorter
// ones ("loading:", "Model loaded") are words any engine may print.
const resembleMinText = 14

// Resemblance is how many lines of a log hold one of a kind's own phase
// marker texts (its file's, not genericMarkers), and the first of them.
type Resemblance struct {
	Kind    string
	Lines   int
	Example string
}

// Resemble counts, for every kind but openai (whose markers are only the
// generic ones), the lines among the first resembleLines of log that
// hold one of the kind's own marker texts (of resembleMinText bytes or
// more); the kinds with any, most
// lines first. It tells a log of one engine diagnosed as another's (a
// llama-server log given --engine vllm): the wrong kind's rules may
// still match its generic lines, with that engine's advice.
func Resemble(log []byte) []Resemblance {
	generic := map[string]bool{}
	for _, m := range genericMarkers {
		generic[m.Text] = true
	}
	own := map[string][][]byte{}
	for _, k := range Kinds() {
		if k == "openai" {
			continue
		}
		for _, m := range registry[k].markers {
			if !generic[m.Text] && len(m.Text) >= resembleMinText {
				own[k] = append(own[k], []byte(m.Text))
			}
		}
	}
	count := map[string]*Resemblance{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 0; n < resembleLines && sc.Scan(); n++ {
		line := sc.Bytes()
		for k, texts := range own {
			for _, t := range texts {
				if bytes.Contains(line, t) {
					r := count[k]
					if r == nil {
						r = &Resemblance{Kind: k, Example: string(t)}
						count[k] = r
					}
					r.Lines++
					break
				}
			}
		}
	}
	out := make([]Resemblance, 0, len(count))
	for _, r := range count {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Lines != out[j].Lines {
			return out[i].Lines > out[j].Lines
		}
		return out[i].Kind < out[j].Kind
	})
	return out
}
