package qualify

import (
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/hiro-dev/hiro/internal/config"
)

// TestEveryKindConforms is the suite every registered gate kind passes:
// a title, a rank of its own, a pointer section that strict decoding
// fills and whose unknown keys are reported, a Validate that runs on the
// zero section, and a positive bound.
func TestEveryKindConforms(t *testing.T) {
	ranks := map[int]string{}
	for _, k := range Kinds() {
		t.Run(k.Name, func(t *testing.T) {
			if k.Title == "" || k.New == nil {
				t.Fatalf("kind %s: title %q, New %v", k.Name, k.Title, k.New != nil)
			}
			if other, dup := ranks[k.Rank]; dup {
				t.Errorf("kind %s has the rank of %s", k.Name, other)
			}
			ranks[k.Rank] = k.Name
			md, err := toml.Decode("no_such_key = 1\n", k.New())
			if err != nil {
				t.Fatalf("the section does not decode (is New a pointer?): %v", err)
			}
			if und := md.Undecoded(); len(und) != 1 || und[0].String() != "no_such_key" {
				t.Errorf("unknown key not reported: %v", und)
			}
			g := k.New()
			cfg := &config.Config{Backends: map[string]*config.Profile{}}
			v := &Validation{Plan: &Plan{Path: "/x/plan.toml", Dir: "/x"}, Config: cfg, Spec: &GateSpec{ID: k.Name, Kind: k.Name, Skip: true}, key: "gates[0]"}
			g.Validate(v)
			for _, e := range v.errs {
				if !strings.HasPrefix(e.Key, "gates[0]") {
					t.Errorf("error without the gate's key path: %v", e)
				}
			}
			if b := g.Bound(nil, 0); b <= 0 {
				t.Errorf("bound %s", b)
			}
		})
	}
	if len(ranks) < 8 {
		t.Errorf("%d kinds registered, want at least 8", len(ranks))
	}
}
