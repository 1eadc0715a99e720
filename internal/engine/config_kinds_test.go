package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/engine"
)

// profileWith is a minimal configuration whose one backend names kind.
func profileWith(kind string) string {
	return fmt.Sprintf(`[backends.b]
engine = %q
model = "m"
command = "server"
port = 11500
`, kind)
}

// engineErrors returns the validation errors keyed backends.b.engine.
func engineErrors(t *testing.T, kind string) []*config.Error {
	t.Helper()
	_, err := config.Parse([]byte(profileWith(kind)), "hiro.toml")
	if err == nil {
		return nil
	}
	var es config.Errors
	if !errors.As(err, &es) {
		t.Fatalf("engine %q: config.Parse error is not config.Errors: %v", kind, err)
	}
	var out []*config.Error
	for _, e := range es {
		if e.Key == "backends.b.engine" {
			out = append(out, e)
		}
	}
	return out
}

// Every registered kind is accepted by config, a kind registered later (one
// new engine_<kind>.go) is accepted without editing config, and an unknown
// kind's error names its key path and lists the registered kinds.
func TestConfigAcceptsExactlyTheRegisteredKinds(t *testing.T) {
	if len(engine.Kinds()) == 0 {
		t.Fatal("no engine kinds registered")
	}
	for _, kind := range engine.Kinds() {
		if es := engineErrors(t, kind); len(es) > 0 {
			t.Errorf("registered engine kind %q refused by config: %v", kind, es[0])
		}
	}

	es := engineErrors(t, "newkind")
	if len(es) != 1 {
		t.Fatalf("unknown kind: got %d errors at backends.b.engine, want 1", len(es))
	}
	msg := es[0].Error()
	if !strings.Contains(msg, "backends.b.engine") || !strings.Contains(msg, `unknown engine kind "newkind"`) {
		t.Errorf("unknown kind error %q does not name the key path and the kind", msg)
	}
	if !strings.Contains(msg, strings.Join(engine.Kinds(), ", ")) {
		t.Errorf("unknown kind error %q does not list the registered kinds %v", msg, engine.Kinds())
	}

	undo := engine.RegisterForTest(&engine.Engine{Kind: "newkind"})
	defer undo()
	if es := engineErrors(t, "newkind"); len(es) > 0 {
		t.Errorf("a newly registered kind is refused by config: %v", es[0])
	}
	undo()
	undo = func() {}
	if es := engineErrors(t, "newkind"); len(es) != 1 {
		t.Errorf("a kind no longer registered is accepted by config")
	}
}
