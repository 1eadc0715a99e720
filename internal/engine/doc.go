// Package engine owns hiro's knowledge of inference engine kinds
// (llamacpp, vllm, sglang, ollama, openai) and the failure classifier.
//
// Each kind is one *Engine value, defined in its own file (engine_<kind>.go)
// and registered in a table, so adding a kind is adding one file. An Engine
// knows its health check (path and how to read the answer), where it reports
// the model id and how ids compare, the log lines that mark its startup
// phases, its failure signatures (pattern → class, and which lines are
// wrappers never to be taken as the root cause) and the facts worth parsing
// from its log (weights load seconds, shards, KV cache sizes, ...).
//
// A Tracker is fed the engine log one line at a time while the engine
// starts; Classify turns the way the attempt ended (an Outcome) plus what
// the Tracker saw into a *failure.Failure. Diagnose does the same for a log
// read after the fact; DiagnoseLog also returns the serving device and,
// for a profile that requires an accelerator, judges a CPU fallback as
// the supervisor does. The tracker reads Python tracebacks as blocks (the
// exception line is the root cause, the frames name the component and
// phase), moves the phase to inference on served requests, keeps per-device
// facts, and reads the serving device (ServingDevice) that the ready
// verdict names. Signatures and triggers are found in one pass per line
// (an Aho-Corasick automaton built at registration).
//
// Case sets (a cases.json beside the logs it names; LoadCaseFile, the one
// loader, with LoadCaseSet, RunCaseSet, CoverageOf) check the classifier
// against failure logs with expected answers: the field corpus in
// testdata/field, the failures captured on an H200 in examples/gpu/results
// (with the serving device and the prereq gate's expected answers) and
// the handed cases in ../shared/cases.
//
// This package must not start, signal or wait for processes, read
// configuration files, or print anything: the supervisor and the CLI do
// that. It only makes HTTP requests given to it (health checks, model ids)
// through the *http.Client the caller passes. Package config checks a
// profile's engine kind against this registry (Kinds), so this package must
// never import config; a new kind is accepted there with no edit.
package engine
