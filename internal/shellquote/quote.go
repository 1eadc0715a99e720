package shellquote

import "strings"

// Quote returns s as one shell word: unchanged when every byte is one a
// shell never treats specially (letters, digits, and - _ . / : , + = @ %),
// otherwise in single quotes, with each ' written as '\”. The empty string
// is ”.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	if isPlain(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join quotes every word with Quote and joins them with spaces: a command
// line a user can paste.
func Join(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("-_./:,+=@%", c) >= 0:
		default:
			return false
		}
	}
	// "=" is plain except at the start, where some shells read an
	// assignment-looking word differently; "~" is never plain.
	return s[0] != '='
}
