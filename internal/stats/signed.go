package stats

import "strconv"

// Signed writes x for prose with its sign always shown: "+0.012",
// "-0.050", "+2.2". The minus is ASCII's hyphen-minus (U+002D), never the
// Unicode minus sign (U+2212), everywhere hiro prints a signed number
// (report.md, the journal, the terminal): one sign, the one the evidence
// JSON and Go's own formatting use, so that a search for "-0.05" finds the
// margin as well as the bounds (TestSignedNumbersUseOneHelper holds every
// other file to it). decimals is the number of digits after the point, or
// -1 for the fewest that give x back exactly (0.05 → "-0.05", 0.005 →
// "-0.005").
func Signed(x float64, decimals int) string {
	s := strconv.FormatFloat(x, 'f', decimals, 64)
	if s[0] != '-' {
		s = "+" + s
	}
	return s
}
