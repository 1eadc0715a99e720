// Package shadow owns scored shadow traffic (docs/shadow.md): a Mirror
// takes a sampled share of production's chat and completion requests
// from the router, after production answered, through a bounded queue
// (full: the request is dropped and counted), sends each to a running
// candidate with the candidate profile's own key (never the client's),
// and scores the pair: status, latency, usage; for hiro's own extraction
// requests (recognised by the prompt's system-message hash, package
// prompt) both replies validated by package extract and matched with
// package eval's similarity; schema validity for response_format
// requests; exact and normalised agreement otherwise. Result turns the
// pairs into an evidence.ShadowResult with paired non-inferiority tests
// (package stats) on the candidate's success, schema validity, grounding
// and accepted-claim rates; agreement with production is reported, not
// gated on.
//
// It holds no request or reply text beyond the pair being scored; what it
// keeps are hashes and sizes. It must not import the router (package
// serve imports it) or start and stop processes.
package shadow
