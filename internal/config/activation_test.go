package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestActivationPolicy: without [activation] the policy is the default;
// a policy names known kinds once each, or the key says which is wrong.
func TestActivationPolicy(t *testing.T) {
	dir := t.TempDir()
	base := "[backends.a]\nengine = \"llamacpp\"\ncommand = \"llama-server\"\nport = 18080\nmodel = \"m\"\n"
	path := filepath.Join(dir, "hiro.toml")
	if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil || !slices.Equal(c.Activation.Require, DefaultActivationRequire) {
		t.Fatalf("default policy: %v %v", err, c)
	}
	if err := loadText(t, dir, "ok", base+"[activation]\nrequire = [\"launch\", \"shadow\"]\n"); err != nil {
		t.Errorf("a valid policy: %v", err)
	}
	err = loadText(t, dir, "bad", base+"[activation]\nrequire = [\"semantics\", \"launch\", \"launch\"]\n")
	if err == nil || !strings.Contains(err.Error(), `activation.require[0]: "semantics" is not a gate kind`) || !strings.Contains(err.Error(), `activation.require[2]: "launch" is listed twice`) {
		t.Errorf("bad policy: %v", err)
	}
	if !Satisfies("semantic", "shadow") || Satisfies("shadow", "semantic") || !Satisfies("artifact", "artifact") {
		t.Error("Satisfies")
	}
}
