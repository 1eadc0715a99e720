package shellquote

import (
	"os/exec"
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "''",
		"/tmp/key.txt":          "/tmp/key.txt",
		"prod-2":                "prod-2",
		"/tmp/sp ace é/key.txt": "'/tmp/sp ace é/key.txt'",
		"it's":                  `'it'\''s'`,
		"$HOME":                 "'$HOME'",
		"~/x":                   "'~/x'",
		"a;rm -rf /":            "'a;rm -rf /'",
		"=x":                    "'=x'",
		"*.json":                "'*.json'",
		"line\nbreak":           "'line\nbreak'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestQuoteRoundTrip gives the quoted words to a real shell and reads them
// back one per line.
func TestQuoteRoundTrip(t *testing.T) {
	words := []string{"/tmp/sp ace é/key.txt", "it's", "$HOME `id` $(id)", "a\"b", "back\\slash", "*", "", "-n"}
	out, err := exec.Command("sh", "-c", "for w in "+Join(words...)+"; do printf '%s\\n' \"[$w]\"; done").Output()
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for _, w := range words {
		want.WriteString("[" + w + "]\n")
	}
	if string(out) != want.String() {
		t.Fatalf("the shell read back\n%s\nwant\n%s", out, want.String())
	}
}
