// Package control is the router's control protocol: what `hiro serve`
// answers on its control socket (control.sock in the private state
// folder private.Control: 0700, the socket 0600; Dial refuses a socket
// another user made) and the client `hiro status`, activation and
// campaigns call (Dial, DialFor → *Client). HTTP/1.1 over the socket,
// JSON bodies; an error answer is {"error": "..."} with a 4xx/5xx status
// (*Error).
//
//	GET  /v1/status                            → Status
//	POST /v1/drain    DrainRequest             → DrainResult (503 + Retry-After meanwhile)
//	POST /v1/resume                            → Status
//	POST /v1/handover HandoverRequest          → HandoverResult: drains, stops a managed
//	     production, watches the owner's pid and start time (dead: taken back); 409 when
//	     handed over to another campaign
//	POST /v1/takeback TakebackRequest          → Takeback: production started, verified
//	     (health, identity, READY completion), serving again; 409 likewise
//	POST /v1/switch   SwitchRequest            → SwitchResult: production points at a
//	     backend the caller started and verified; the caller stops the previous one
//	POST /v1/shadow/start ShadowStartRequest → ShadowStatus: mirror a share of
//	     production's requests to a running candidate (docs/shadow.md)
//	POST /v1/shadow/stop, GET /v1/shadow/status → ShadowStatus: the run's account
//
// Package serve implements the server side; nothing here starts, stops
// or watches a backend. It must not import serve, qualify or activation
// (they stand on it).
package control
