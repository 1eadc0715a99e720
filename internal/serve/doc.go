// Package serve owns `hiro serve`: the router, the OpenAI-compatible front
// door of production (docs/design.md "Serving and activation"; behaviour
// in docs/serve.md). It must not be imported by any package but cli.
//
// It owns, one concern a file: the front door (front.go on fasthttp,
// exchange.go, rawio.go: routing by "model", bounds, streaming, a
// client's disconnect; conns.go: connections without a valid key capped
// apart and per address), the upstream transport (transport.go, proxy.go,
// outgoing.go: the request a backend gets), the served profiles
// (served.go), keys and TLS (auth.go, tlspair.go), metrics and the access
// and event logs (metrics.go, accesslog.go, logs.go), processors
// (procs.go), the control socket's server side (controlserver.go; the
// protocol and its client are package control's) and production's watch.
//
// The watch (production.go: prodCtl, its run goroutine) only receives
// events: the bring-up, ticks, a death, a canary's outcome, a restart
// coming due and the control commands (hand-over, take-back, switch). It
// applies the pure decision step (watch.go: (state, event) → (state,
// effects)) and performs the effects through the keeper
// (watch_effects.go, package production): health (health.go), canaries
// (canary.go), hand-over (handover.go), a foreign record (foreign.go),
// starts and restarts (restart.go), the switch (switch.go).
//
// API: New(Options) → *Server, Run, Addr, Status; ProductionProfile, ProductionOf;
// CheckRecordedProduction and *ForeignProductionError; LeaseHolder.
//
// It must not parse configuration files (config does), start or stop a
// recorded process other than through production.Keeper, or classify
// failures other than through engine.
package serve
