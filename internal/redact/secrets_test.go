package redact

import (
	"strings"
	"testing"
)

// TestSecretsKeepsPaths: Secrets replaces registered values (plain and
// JSON-escaped), secret flag and key values and token shapes, and keeps
// local paths, which Value would replace.
func TestSecretsKeepsPaths(t *testing.T) {
	r := New()
	r.AddPath("/home/ops/project", ProjectPlaceholder)
	r.Add(`backend"secret\CCC333`)
	in := `non-default args: {'api_key': ['plainKEY123'], 'model': '/home/ops/project/m.gguf'} --api-key zzTOPsecret99 ` +
		`json "backend\"secret\\CCC333" raw backend"secret\CCC333 sk-abcdefghijklmnopqrstuvwx`
	out := r.Secrets(in)
	for _, leak := range []string{"plainKEY123", "zzTOPsecret99", `backend\"secret\\CCC333`, `backend"secret\CCC333`, "sk-abcdefghijklmnopqrstuvwx"} {
		if strings.Contains(out, leak) {
			t.Errorf("%q left in %s", leak, out)
		}
	}
	if !strings.Contains(out, "/home/ops/project/m.gguf") {
		t.Errorf("the path was replaced: %s", out)
	}
	type rec struct {
		Tail []string
		Note string
	}
	v := rec{Tail: []string{"--api-key zzTOPsecret99", "/home/ops/project"}, Note: "plain"}
	r.SecretsValue(&v)
	if strings.Contains(v.Tail[0], "zzTOPsecret99") || v.Tail[1] != "/home/ops/project" || v.Note != "plain" {
		t.Errorf("SecretsValue: %+v", v)
	}
}
