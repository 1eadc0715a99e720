// Package ramp owns the decisions of a progressive activation (docs/shadow.md
// "Progressive activation"): the policy (Policy: the steps of the
// candidate's share, the soak, the fewest requests a step advances on,
// the margins), the sticky assignment of a client to a side (Bucket,
// ToCandidate: one client key stays on the candidate once moved, at every
// larger share), the live samples of a step (Sample) and Decide, a pure
// function from a step's samples to advance, hold, reverse or complete,
// with the checks it rests on (package stats: Clopper-Pearson bounds of
// error and invalid rates, Mann-Whitney with the Hodges-Lehmann shift for
// latency, above an effect-size floor).
//
// It decides and never acts: the router (package serve) routes, counts,
// calls Decide and performs what it says. It must not import the router
// or start, stop or contact any backend.
package ramp
