package account

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/evidence"
	"github.com/hiro-dev/hiro/internal/failure"
)

// A failed launch's next steps carry the last attempt's step itself (the
// terminal summary prints no attempt account to point at), and count one
// attempt in the singular.
func TestLaunchNextStepsSayTheStep(t *testing.T) {
	const step = "Another process holds the port: stop it or move the profile's port."
	g := &evidence.Gate{ID: "launch", Kind: "launch", Status: "failed", Attempts: []evidence.Attempt{{Name: "base",
		Failure: &failure.Failure{Class: failure.ClassPortInUse, NextStep: step}}}}
	e := &evidence.Evidence{Verdict: evidence.VerdictNotQualified, Candidate: "cand", Gates: []evidence.Gate{*g}}
	got := strings.Join(nextSteps(e, g), "\n")
	if !strings.Contains(got, "Follow the next step of the last attempt (base, port_in_use): "+step) {
		t.Errorf("next steps lack the attempt's step:\n%s", got)
	}
	if !strings.Contains(got, "The one declared attempt was tried") || strings.Contains(got, "All 1 ") {
		t.Errorf("one attempt is not counted in the singular:\n%s", got)
	}
	g.Attempts = append(g.Attempts, g.Attempts[0])
	if got := strings.Join(nextSteps(e, g), "\n"); !strings.Contains(got, "All 2 declared attempts of the ladder were tried") {
		t.Errorf("two attempts:\n%s", got)
	}
}
