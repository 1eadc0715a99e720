// Package engine owns hiro's knowledge of inference engine kinds and the
// failure classifier.
//
// Each kind is one *Engine value in its own file (engine_<kind>.go),
// registered in a table: adding a kind is adding one file. An Engine knows
// its health check, where it reports the model id, the log lines that mark
// its phases, its rules and wrappers, and the facts worth parsing.
//
// Classification is rules as data. A Rule (rule.go) is one named entry of
// an ordered table: what it matches (a line's text and pattern, what must
// or must not have been logged before, an exit's signal or code) and what
// it concludes (class, pinned phase, tier, next step). Shared families
// live in one place each: families_gpu.go (CUDA, GPU, ROCm, Metal, Vulkan,
// SYCL, TPU, Neuron, Gaudi, NCCL), families_host.go (memory, CPU, OS,
// process, network), families_runtime.go (hub, file system, signals, Rust,
// Go) and signatures.go (the Python and ggml stacks); a kind lists its
// own rules and markers first, genericMarkers after. It is hiro's one rule format:
// package preflight's host-capability rules embed a Rule (name, family,
// class, next step, source) and add a host-fact predicate; RuleNames
// lists the names they must not take. Matches and FirstMatch match a
// line outside the tracker.
//
// A Tracker is fed the log one line at a time: phase markers, facts, the
// serving device, Python traceback blocks, and the first root-cause line
// of the best tier (rules found in one pass per line by an Aho-Corasick
// automaton). Classify walks outcomeRules (verdict.go) and gives the
// *failure.Failure of the first that holds, with the deciding rule's name
// and the verdict's confidence (strong, weak, none). Diagnose and
// DiagnoseLog do the same for a log read after the fact.
//
// Case sets (a cases.json beside its logs; LoadCaseFile, the one loader,
// RunCaseSet, CoverageOf) check the classifier against failure logs with
// expected answers: testdata/*, examples/gpu/results and ../shared/cases.
//
// This package must not start, signal or wait for processes, read
// configuration files, or print anything. It makes only the HTTP requests
// given to it, through the caller's *http.Client. Package config checks a
// profile's kind against Kinds, so this package must never import config.
package engine
