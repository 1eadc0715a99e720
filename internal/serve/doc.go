// Package serve owns `hiro serve`: the router, the OpenAI-compatible front
// door of production (docs/design.md "Serving and activation"; behaviour
// in docs/serve.md). It must not be imported by any package but cli.
//
// It owns, one concern a file: the front door (front.go on fasthttp,
// exchange.go, rawio.go: routing by "model", bounds, streaming, a
// client's disconnect; conns.go: connections without a valid key capped
// apart and per address), the upstream transport (transport.go, proxy.go),
// the served profiles (served.go), keys and TLS (auth.go, tlspair.go),
// metrics and the access and event logs (metrics.go, accesslog.go,
// logs.go), processors (procs.go), the control socket's server side
// (controlserver.go; the protocol and its client are package control's)
// and production's watch.
//
// The watch (production.go: prodCtl, its run goroutine) senses health
// (health.go), canaries (canary.go), a death, a hand-over's owner
// (handover.go), a foreign record (foreign.go) and restarts coming due
// (restart.go), turns each into an event and applies the pure decision
// step (watch.go: (state, event) → (state, effects)); the effects are
// performed through the keeper (watch_effects.go, package production).
// switch.go points production at another backend (activation).
//
// API: New(Options) → *Server, Run, Addr, Status; ProductionProfile;
// CheckRecordedProduction and *ForeignProductionError; LeaseHolder.
//
// It must not parse configuration files (config does), start processes
// other than through production.Keeper, stop them other than through
// the supervisor, or classify failures other than through engine.
package serve
