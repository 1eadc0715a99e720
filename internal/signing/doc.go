// Package signing owns hiro's signatures (docs/reliability.md): the user's
// Ed25519 key, created on first use in the private state folder
// (private.Keys) and readable by its owner only; the signature embedded
// in a JSON document (evidence, activation records) over the canonical
// bytes of the document without it; and the list of keys the user trusts
// (the own key, and those added with 'hiro trust add').
//
// It imports only private (the folder check) and atomicfile: it knows nothing of what
// the documents say, and never decides what to do with a document whose
// signature fails; the caller refuses it, saying why.
package signing
