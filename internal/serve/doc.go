// Package serve owns `hiro serve`: the router, the OpenAI-compatible front
// door of production (docs/design.md "Serving and activation"). It proxies
// POST /v1/chat/completions, /v1/completions and /v1/embeddings to the
// backend the request's "model" names (the production alias and
// production's own model id go to the active production backend; profiles
// listed in [serve].served go to themselves (proxied as they are, health
// polled: served.go); anything else is a 404 that
// lists what is served, quoting the name only when it is not a key: echoModel) and
// answers GET and HEAD /v1/models itself; GET /health
// (no key) is 200 while production is ready and serving, else 503. The
// HTTP server is fasthttp's (front.go: net/http's per-request background
// read and its wake-ups were most of a proxy's added latency on a small
// machine); upstream requests go through net/http's client code on the
// request's goroutine (transport.go). Streaming (SSE) passes through chunk
// by chunk (every read of a body of unknown length is flushed);
// a client's disconnect cancels the upstream request (seen when an answer
// is written, and by a read of the connection once a request has run
// 20 ms: clientWatch); bodies are bounded ([serve].max_body_bytes, 413
// beyond) and so is their JSON nesting (MaxJSONDepth levels, 400 beyond,
// found by a linear scan before any recursive parse), headers to 16 KiB
// (431 beyond). A request sent with "Expect: 100-continue" gets its 401,
// 405 or 413 on its headers, without a 100 (expectContinue). Requests
// refused before the handler (onReadError) are counted and logged too:
// route "" when their headers were not read, 499 for a client that left
// mid-request. Paths are routed as fasthttp normalizes them
// ("//v1/chat/completions" is the chat route; a trailing slash is another
// path: 404). Response headers a backend's Connection header names stay
// on their hop; when it also says "close", net/http's reader drops the
// names, and only known end-to-end headers pass (endToEnd). Versions
// other than HTTP/1.1 and HTTP/1.0 get 505 (refuseVersion). A request
// whose lines end in a bare LF is not read by fasthttp (its header block
// must end in CRLF CRLF): it gets the 408 after headerTimeout, whose
// message says so.
//
// It watches production continuously: health polls, and a periodic bounded
// canary completion (only when no real request succeeded in the interval,
// and never one that would make Ollama load an unloaded model; at most one
// in flight, its requests beside the goroutine that owns production, so
// health polls, control commands and a death are handled while it waits,
// and an outcome about a production that changed meanwhile is dropped).
// A death or a failed canary is classified by the engine package (the process's own
// log tracker, so the failure has the same class, phase, root cause and
// facts as a startup failure), recorded in the status and the event log,
// and a managed production is restarted through the supervisor (Start,
// readiness, Stop) with exponential backoff within a restart budget
// ([serve].restart_budget in restart_window); past the budget it stays
// down and says so. While production is not ready, requests for it wait
// up to [serve].wait_for_ready and then get 503 with Retry-After; so does
// a request that finds production refusing connections before the watcher
// did. Clients are told production's state and the failure's class, never
// the operator's detail (pids, addresses, paths). An unmanaged production
// is watched the same way and reported, never restarted. A production held by a live campaign's lease is never
// started or restarted by the router. Production's record in state_dir is
// acted on only when it names the process the router started or adopted:
// one of another configuration is never stopped or overwritten (New
// refuses with a *ForeignProductionError; found later, production is
// down for this router until that process is gone).
//
// Authentication: bearer keys from [serve].api_keys_file and the variable
// [serve].api_keys_env (at least MinKeyLen characters each, or New
// refuses; New refuses a named variable that is unset or empty too, but
// the default one), compared in constant time, never logged; /metrics
// may have its own key. The listener is loopback unless configured, and
// then TLS ([serve].tls_cert, tls_key) is required; New reads and checks
// the pair (tlspair.go), so a bad one is a configuration error. Observability:
// Prometheus /metrics (client_golang, a registry of its own) and one JSON
// access log line per request, without prompt text ([serve].access_log;
// New refuses a path that cannot be opened as a configuration error;
// Options.Reopen, SIGHUP for `hiro serve`, reopens it and events.jsonl
// for log rotation).
//
// Processors: `hiro serve` ([Options].OwnsProcess) runs on one processor
// while requests come one at a time and on all of them once they overlap
// ([serve].procs = 0, procs.go; the hiro_serve_procs gauge; a fixed
// procs is clamped to runtime.NumCPU), which
// bench/serve-proxy.sh measures against direct and a plain
// standard-library proxy.
//
// # Control socket
//
// The router is controlled through a Unix socket, control.sock, in the
// user's private state folder (ControlDir: $HIRO_STATE_HOME/serve, else
// $HIRO_LEASE_DIR/serve, else $XDG_STATE_HOME/hiro/serve, else
// ~/.local/state/hiro/serve; the folder is 0700, the socket 0600; the
// client refuses a socket another user made, or one in a folder others may
// write, before asking it anything). The protocol is HTTP/1.1 over that socket with JSON bodies;
// use the Go client (Dial → *control.Client) rather than speaking it by hand.
// Every error answer is {"error": "..."} with a 4xx/5xx status.
//
//	GET  /v1/status            → Status (also `hiro status`)
//	POST /v1/drain    {"timeout_ms"}          → DrainResult: new requests
//	     get 503 + Retry-After; waits for in-flight ones up to the timeout.
//	POST /v1/resume                           → Status: drain ends.
//	POST /v1/handover {"campaign","lease_owner_pid","timeout_ms"} →
//	     HandoverResult: drains, stops a managed production (recorded in
//	     the result), answers 503 + Retry-After until Takeback, and watches
//	     the lease owner: when that process dies (pid gone, or reused: its
//	     start time differs) the router takes production back by itself,
//	     verified. 409 when already handed over to another campaign.
//	POST /v1/takeback {"campaign"}            → Verification: starts the
//	     production profile (supervisor.Start: health, identity, probe),
//	     then a bounded READY completion, and resumes serving. 409 when
//	     production is handed over to another campaign.
//	POST /v1/switch   {"profile","effective_profile","campaign"} → SwitchResult: the
//	     router points production at an already started and verified
//	     backend (a recorded managed process is adopted, so its death is
//	     noticed), waits (up to drain_timeout) for the requests already on
//	     the previous one to end, and returns its name and what was still
//	     in flight; the caller stops the previous one. With "campaign",
//	     production handed over to that campaign (an exclusive
//	     activation) is switched and the hand-over ends.
//	     effective_profile (a config.Profile in JSON) is what runs;
//	     omitted: the configuration's profile of that name.
//
// Which profile is production comes from one function, ProductionProfile
// (package production's resolver).
//
// This package must not parse configuration files itself (internal/config
// does), launch or stop processes other than through internal/supervisor,
// or classify failures other than through internal/engine.
package serve
