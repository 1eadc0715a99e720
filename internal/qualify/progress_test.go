package qualify

import (
	"bytes"
	"strings"
	"testing"
)

// Progress lines quote gate reasons and root causes taken from engine
// logs: their control bytes are escaped; only hiro's own rewrite of the
// status line (\r ESC[K) reaches the terminal.
func TestProgressEscapesQuotedText(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b, true)
	p.status("[%s] %s", "launch", "loading \x1b]0;PWNED\x07")
	p.line("[%s] failed: %s", "launch", "last line: \x1b[2Jhello \xff")
	got := strings.ReplaceAll(b.String(), "\r\x1b[K", "")
	want := `  [launch] loading \x1b]0;PWNED\x07hiro: [launch] failed: last line: \x1b[2Jhello \xff` + "\n"
	if got != want {
		t.Fatalf("progress wrote %q, want %q", got, want)
	}
}
