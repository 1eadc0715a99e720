package qualify_test

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/qualify"
)

// TestGateErrorKeysHaveOneShape (issue 26, trial 11 leftover): a gate's
// errors named it two ways in one output, "gates[ready].timeout" from
// the value checks and "gates[1] (id \"ready\").colour" from decoding.
// Every gate key is now "gates[N]" (the 0-based table), with the plan's
// id beside it when the table gives one.
func TestGateErrorKeysHaveOneShape(t *testing.T) {
	e := newEnv(t, nil, "", nil)
	plan := e.writePlan("[[gates]]\nkind = \"launch\"\n[[gates]]\nid = \"ready\"\nkind = \"ready_control\"\ntimeout = \"-5s\"\ncolour = \"red\"\n[[gates]]\nkind = \"structured_control\"\ntimeout = \"-1s\"\n")
	_, _, err := qualify.LoadPlan(plan, e.cfgPath)
	if err == nil {
		t.Fatal("a plan with a negative timeout and an unknown key loaded")
	}
	msg := err.Error()
	for _, want := range []string{`gates[1] (id "ready").timeout: `, `gates[1] (id "ready").colour: `, `gates[2].timeout: `} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack the key %q:\n%s", want, msg)
		}
	}
	for _, bad := range []string{"gates[ready]", "gates[structured_control]"} {
		if strings.Contains(msg, bad) {
			t.Errorf("errors name a gate %q, the other shape:\n%s", bad, msg)
		}
	}
}
