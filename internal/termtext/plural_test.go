package termtext

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 log lines"}, {1, "1 log line"}, {2, "2 log lines"}, {-1, "-1 log lines"}} {
		if got := Plural(c.n, "log line", "log lines"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
