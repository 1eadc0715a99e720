// Package control is the router's control protocol: what `hiro serve`
// answers on its control socket (a Unix socket in the user's private
// state folder) and the client that `hiro status`, activation and
// campaigns call.
//
// It owns the protocol's types (Status, BackendStatus, Check, the
// hand-over, take-back and switch answers and requests), the socket's
// folder (Dir, EnsureDir) and the client (Dial, DialFor, Client). Package
// serve implements the server side; nothing here starts, stops or
// watches a backend.
//
// It must not import serve, qualify or activation (they stand on it).
package control
