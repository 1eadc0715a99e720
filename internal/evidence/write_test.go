package evidence

import "testing"

func TestRedactPathsKeepsTheSentencesPunctuation(t *testing.T) {
	for in, want := range map[string]string{
		`model "x" is not in /srv/models; create or pull it`: `model "x" is not in <path>; create or pull it`,
		`the store is /srv/models.`:                          `the store is <path>.`,
		`held at /srv/a.b/c.gguf then`:                       `held at <path> then`,
		`gone: /srv/x!`:                                      `gone: <path>!`,
	} {
		if got := RedactPaths(in); got != want {
			t.Errorf("RedactPaths(%q) = %q, want %q", in, got, want)
		}
	}
}
