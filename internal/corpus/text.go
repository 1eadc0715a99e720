package corpus

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Quote match kinds, recorded in every claim's provenance.
const (
	// MatchExact: the quote is a byte-for-byte substring of the source.
	MatchExact = "exact"
	// MatchNormalized: the quote is a substring of the source once both
	// are normalised by NormalizeSpaceCase (whitespace runs collapsed to
	// one space, trimmed, lower-cased, curly quotes and dashes folded).
	MatchNormalized = "normalized"
)

// foldRunes maps typographic variants to their ASCII form so that a model
// that writes straight quotes still matches a source with curly ones.
var foldRunes = strings.NewReplacer(
	"\u2018", "'", "\u2019", "'", "\u201c", "\"", "\u201d", "\"",
	"\u2013", "-", "\u2014", "-", "\u00a0", " ",
)

// NormalizeSpaceCase returns s with typographic quotes and dashes folded to
// ASCII, every run of Unicode white space replaced by one space, leading
// and trailing space removed, and letters lower-cased. It is the
// normalisation of MatchNormalized.
func NormalizeSpaceCase(s string) string {
	s = foldRunes.Replace(s)
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// FindQuote looks for quote in src: first exactly, then after
// NormalizeSpaceCase of both. It returns the byte span [start, end) of
// the match in src, the match kind (MatchExact or MatchNormalized), and
// ok=false when the quote is not there (or is blank). For a normalised
// match the span covers the source bytes the normalised match came from.
func FindQuote(src, quote string) (start, end int, kind string, ok bool) {
	if strings.TrimSpace(quote) == "" {
		return 0, 0, "", false
	}
	if i := strings.Index(src, quote); i >= 0 {
		return i, i + len(quote), MatchExact, true
	}
	nq := NormalizeSpaceCase(quote)
	ns, offs := normalizeWithOffsets(src)
	i := strings.Index(ns, nq)
	if i < 0 {
		return 0, 0, "", false
	}
	// offs[k] is the source byte where normalised byte k came from.
	start = offs[i]
	last := i + len(nq) - 1
	_, size := utf8.DecodeRuneInString(src[offs[last]:])
	end = offs[last] + size
	return start, end, MatchNormalized, true
}

// normalizeWithOffsets is NormalizeSpaceCase that also returns, for each
// byte of the result, the offset in s of the rune it came from.
func normalizeWithOffsets(s string) (string, []int) {
	var b strings.Builder
	offs := make([]int, 0, len(s))
	pendingSpace := false
	for i, r := range s {
		switch r {
		case '\u2018', '\u2019':
			r = '\''
		case '\u201c', '\u201d':
			r = '"'
		case '\u2013', '\u2014':
			r = '-'
		}
		if unicode.IsSpace(r) {
			pendingSpace = b.Len() > 0
			continue
		}
		if pendingSpace {
			b.WriteByte(' ')
			offs = append(offs, i)
			pendingSpace = false
		}
		lr := unicode.ToLower(r)
		n := b.Len()
		b.WriteRune(lr)
		for k := n; k < b.Len(); k++ {
			offs = append(offs, i)
		}
	}
	return b.String(), offs
}

var reToken = regexp.MustCompile(`[\p{L}\p{N}]+`)

// Tokens returns the scoring tokens of s: maximal runs of letters and
// digits after NormalizeSpaceCase (punctuation and white space separate
// tokens and are dropped; "1,898" gives "1" and "898", "U.S." gives "u"
// and "s").
func Tokens(s string) []string {
	return reToken.FindAllString(NormalizeSpaceCase(s), -1)
}

// NormalizeClaim is the key for duplicate detection: the tokens of s
// joined by one space, so claims that differ only in case, white space or
// punctuation are duplicates.
func NormalizeClaim(s string) string { return strings.Join(Tokens(s), " ") }
