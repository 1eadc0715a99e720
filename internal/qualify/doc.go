// Package qualify runs bounded qualification campaigns (docs/design.md "Plan",
// "Gate", "Production guard", "Evidence"): it loads and validates a plan,
// runs its gates in order (a gate runs only if every gate before it
// passed), walks the launch gate's attempt ladder, guards production
// (stop before an exclusive candidate, restore and verify afterwards on
// every path, a lease from package lease held for the whole campaign so
// that one campaign owns production at a time and a killed hiro is
// recovered by the next one), and writes the evidence after every gate
// plus a Markdown report (package account renders it; report.go only
// writes it). Recovery (Recover) finalizes only campaigns that
// never finished; later events of a finished campaign are event files.
//
// Production is resolved through package production (the latest
// activation, else the configuration's [production]). When a 'hiro serve'
// of the same configuration serves production, an exclusive campaign asks
// it to drain and hand production over (package serve's control client)
// and takes it back through it, verified; without a router the guard
// stops and restores production itself.
//
// Gates come in kinds, one file each (gate_<kind>.go): the kind's plan
// struct (decoded strictly from its [[gates]] table), its Validate, Bound
// and Run, registered in a registry (gate.go). A gate reaches the world
// only through a Handle (the profiles it may talk to, the ready candidate,
// the evidence writer, the clock), so each kind is tested alone against the
// fake engine. Gate results are typed fields of evidence.Gate, which
// package account renders.
//
// It must not classify engine failures (package engine does), manage
// processes directly (package supervisor does), or print anywhere but the
// progress writer it is given. A plan that fails to load starts and stops
// nothing. Validation also refuses what could never run well: a gate
// timeout over MaxGateTimeout (7 days), a request count written as 0 (every
// count is 1 to MaxGateRequests, absent takes the kind's default), a
// candidate listening on production's own host and port, and an
// evidence_dir whose nearest existing folder hiro cannot create a folder in.
package qualify
