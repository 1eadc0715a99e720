package termtext

import "testing"

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain é ✓\ttab": "plain é ✓\ttab",
		"two\nlines":     "two\nlines",
		"\x1b[2J\x1b]0;PWNED\x07hello \x1b[31mred": `\x1b[2J\x1b]0;PWNED\x07hello \x1b[31mred`,
		"cr\rover":          `cr\x0dover`,
		"bad \xff\xfe utf8": `bad \xff\xfe utf8`,
		"c1 \u009b2J":       `c1 \u009b2J`,
		"del\x7f":           `del\x7f`,
		"":                  "",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEscapeCleanIsNotCopied(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Escape("INFO 05-01 loading weights took 2.5 s é") }); n != 0 {
		t.Errorf("%v allocations for text that needs no escape", n)
	}
}
