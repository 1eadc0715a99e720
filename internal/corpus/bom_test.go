package corpus

import (
	"strings"
	"testing"
)

// A leading BOM is in no sentence (nor in the first heading), and spans
// still count from the first byte of the text as read.
func TestSplitLeavesLeadingBOMOut(t *testing.T) {
	for _, c := range []struct {
		text     string
		markdown bool
		first    string
		heading  string
	}{
		{BOM + "Marta Olsen founded the bakery in 1952. It sold bread.", false, "Marta Olsen founded the bakery in 1952.", ""},
		{BOM + "# History\n\nMarta Olsen founded the bakery in 1952. It sold bread.\n", true, "Marta Olsen founded the bakery in 1952.", "History"},
	} {
		ss, err := Split(c.text, c.markdown)
		if err != nil || len(ss) != 2 {
			t.Fatalf("%q: %d sentences (%v)", c.text, len(ss), err)
		}
		for _, s := range ss {
			if strings.Contains(s.Text, BOM) || c.text[s.Start:s.End] != s.Text {
				t.Errorf("%q: sentence %+v holds the BOM or its span is not its text", c.text, s)
			}
		}
		if ss[0].Text != c.first || (!c.markdown && ss[0].Start != len(BOM)) {
			t.Errorf("%q: first sentence %+v, want %q at byte %d", c.text, ss[0], c.first, len(BOM))
		}
		if c.heading != "" && (len(ss[0].HeadingPath) != 1 || ss[0].HeadingPath[0] != c.heading) {
			t.Errorf("%q: heading path %q, want [%s]", c.text, ss[0].HeadingPath, c.heading)
		}
		// Without the BOM, the same sentences 3 bytes earlier.
		plain, _ := Split(strings.TrimPrefix(c.text, BOM), c.markdown)
		for i := range plain {
			if plain[i].Text != ss[i].Text || plain[i].Start+len(BOM) != ss[i].Start {
				t.Errorf("%q: sentence %d differs from the text without BOM: %+v vs %+v", c.text, i, ss[i], plain[i])
			}
		}
	}
}
