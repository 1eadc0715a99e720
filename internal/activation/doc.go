// Package activation changes production, and only on evidence (docs/design.md
// "Serving and activation"): 'hiro activate EVIDENCE' switches production
// to a campaign's candidate when the evidence says qualified, is recent
// enough, and its fingerprints still match what would run (Check names the
// exact field that differs); 'hiro rollback' returns to the production an
// activation replaced, when its recorded configuration still matches.
//
// The switch starts the new production (after stopping the old one first
// when either needs the accelerator exclusively), proves it ready with the
// campaign guard's own restore verification (health, identity, the
// profile's bounded probe completion, the READY prompt by default, its
// reply judged by supervisor.JudgeReply, the rule 'backend start' uses:
// production.Keeper), points a running router at it (the
// router serving this configuration file, or production's endpoint through
// another file: RouterFor), then
// stops the old one. Any failure before the new one is verified puts the
// old one back and verifies it. Each switch holds production's lock
// (package production), writes an intent first so that a hiro killed
// mid-switch is recovered by the next one (Recover, which holds the same
// lease keys while it puts production back), and writes its record
// (the switch's evidence) and a journal entry.
//
// It must not decide what production is by itself (package production
// resolves it), manage processes directly (package supervisor does), or
// re-implement readiness (supervisor and qualify do).
package activation
