package corpus

import (
	"regexp"
	"strings"
	"sync"
	"unicode"

	"github.com/neurosnap/sentences"
	"github.com/neurosnap/sentences/english"
)

// Sentence is one sentence of a document.
type Sentence struct {
	// Index is the sentence's position in the document, from 0.
	Index int `json:"index"`
	// Start and End are the byte span [Start, End) of the sentence in the
	// document's text; Text == doc.Text[Start:End]. Leading and trailing
	// white space is outside the span.
	Start int `json:"start"`
	End   int `json:"end"`
	// Text is the sentence exactly as in the source (it may contain
	// newlines when a sentence wraps lines).
	Text string `json:"text"`
	// HeadingPath is the Markdown heading path (outermost first) the
	// sentence sits under; nil for plain text or before any heading.
	HeadingPath []string `json:"heading_path,omitempty"`
}

var (
	tokOnce sync.Once
	tokMu   sync.Mutex
	tok     *sentences.DefaultSentenceTokenizer
	tokErr  error
)

// tokenizer returns the English punkt tokenizer, built once from the
// training data the library ships.
func tokenizer() (*sentences.DefaultSentenceTokenizer, error) {
	tokOnce.Do(func() { tok, tokErr = english.NewSentenceTokenizer(nil) })
	return tok, tokErr
}

var (
	reHeading  = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	reFence    = regexp.MustCompile("^ {0,3}(```|~~~)")
	reListItem = regexp.MustCompile(`^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+`)
	reQuote    = regexp.MustCompile(`^ {0,3}>[ \t]?`)
	reRule     = regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`)
)

// block is a byte range of the text that the sentence tokenizer splits,
// with the heading path in force there.
type block struct {
	start, end int
	heading    []string
}

// Split splits text into sentences. Paragraphs (runs of non-blank lines)
// are split independently so a sentence never crosses a blank line; a
// number ending a sentence ("in 1952. Her") is a boundary too (the punkt
// model takes "1952." for an ordinal). With
// markdown true, ATX headings ("# Title") set the heading path and are not
// sentences themselves, fenced code blocks and thematic breaks are skipped,
// and each list item or block-quote line starts a new block whose marker
// ("- ", "1. ", "> ") is outside every span. Splitting is deterministic.
//
// A UTF-8 byte order mark (BOM, U+FEFF) at the start of text is not part
// of any sentence (nor of a Markdown heading on the first line); spans
// still count from the first byte of text as given, BOM included, so a
// document with a BOM has its first sentence at byte 3 and
// Text == text[Start:End] holds for every sentence.
func Split(text string, markdown bool) ([]Sentence, error) {
	body := strings.TrimPrefix(text, BOM)
	if len(body) == len(text) {
		return split(text, markdown)
	}
	off := len(text) - len(body)
	ss, err := split(body, markdown)
	for i := range ss {
		ss[i].Start += off
		ss[i].End += off
	}
	return ss, err
}

// BOM is the UTF-8 byte order mark that some editors write at the start of
// a text file; Split leaves it out of every sentence.
const BOM = "\ufeff"

func split(text string, markdown bool) ([]Sentence, error) {
	t, err := tokenizer()
	if err != nil {
		return nil, err
	}
	blocks := blocksOf(text, markdown)
	var out []Sentence
	tokMu.Lock()
	defer tokMu.Unlock()
	for _, bl := range blocks {
		chunk := text[bl.start:bl.end]
		for _, s := range t.Tokenize(chunk) {
			a, b := s.Start, s.End
			if a < 0 || b > len(chunk) || a >= b {
				continue
			}
			for _, part := range splitAfterNumbers(chunk, a, b) {
				a, b := part[0], part[1]
				seg := chunk[a:b]
				trimmedLeft := strings.TrimLeft(seg, " \t\r\n\f\v")
				a += len(seg) - len(trimmedLeft)
				seg = strings.TrimRight(trimmedLeft, " \t\r\n\f\v")
				b = a + len(seg)
				if seg == "" {
					continue
				}
				out = append(out, Sentence{
					Index:       len(out),
					Start:       bl.start + a,
					End:         bl.start + b,
					Text:        seg,
					HeadingPath: bl.heading,
				})
			}
		}
	}
	return out, nil
}

// reNumberEnd finds a sentence end the punkt model misses: a number
// followed by ".", "!" or "?" (and maybe a closing quote or bracket), white
// space, then a capital letter or an opening quote ("... in 1952. Her son
// ..."). Decimals ("3.6") have no space after the dot and are not cut.
var reNumberEnd = regexp.MustCompile(`\d[.!?]["')\]\x{201d}\x{2019}]?\s+["(\x{201c}]?\p{Lu}`)

// splitAfterNumbers cuts chunk[a:b] at every reNumberEnd boundary and
// returns the [start, end) pieces (offsets in chunk).
func splitAfterNumbers(chunk string, a, b int) [][2]int {
	var parts [][2]int
	start := a
	for _, m := range reNumberEnd.FindAllStringIndex(chunk[a:b], -1) {
		// The cut is after the punctuation (and closing mark): at the
		// first white space of the match.
		seg := chunk[a+m[0] : a+m[1]]
		ws := strings.IndexFunc(seg, unicode.IsSpace)
		cut := a + m[0] + ws
		parts = append(parts, [2]int{start, cut})
		start = cut
	}
	return append(parts, [2]int{start, b})
}

// blocksOf cuts text into paragraph blocks, reading Markdown structure
// when markdown is true.
func blocksOf(text string, markdown bool) []block {
	var blocks []block
	var headings []string // index = level-1
	var cur []string      // current heading path (shared, copied on change)
	inFence := ""
	open := -1 // start of the open block, -1 when none
	lastEnd := 0
	flush := func() {
		if open >= 0 && lastEnd > open {
			blocks = append(blocks, block{start: open, end: lastEnd, heading: cur})
		}
		open = -1
	}
	pos := 0
	for pos < len(text) {
		nl := strings.IndexByte(text[pos:], '\n')
		lineEnd := len(text)
		next := len(text)
		if nl >= 0 {
			lineEnd = pos + nl
			next = lineEnd + 1
		}
		line := strings.TrimRight(text[pos:lineEnd], "\r")
		lineStart := pos
		pos = next
		if markdown {
			if inFence != "" {
				if strings.HasPrefix(strings.TrimLeft(line, " "), inFence) {
					inFence = ""
				}
				continue
			}
			if m := reFence.FindStringSubmatch(line); m != nil {
				flush()
				inFence = m[1]
				continue
			}
		}
		if strings.TrimSpace(line) == "" {
			flush()
			continue
		}
		if markdown {
			if m := reHeading.FindStringSubmatch(line); m != nil {
				flush()
				level := len(m[1])
				for len(headings) < level {
					headings = append(headings, "")
				}
				headings = append(headings[:level-1], strings.TrimSpace(m[2]))
				cur = nil
				for _, h := range headings {
					if h != "" {
						cur = append(cur, h)
					}
				}
				continue
			}
			if reRule.MatchString(line) {
				flush()
				continue
			}
			if loc := reListItem.FindStringIndex(line); loc != nil {
				flush()
				open = lineStart + loc[1]
				lastEnd = lineStart + len(line)
				continue
			}
			if loc := reQuote.FindStringIndex(line); loc != nil {
				flush()
				open = lineStart + loc[1]
				lastEnd = lineStart + len(line)
				continue
			}
		}
		if open < 0 {
			open = lineStart
		}
		lastEnd = lineStart + len(line)
	}
	flush()
	return blocks
}
