// Package preflight predicts a launch before anything is started or
// stopped: the accelerator memory a backend profile needs, estimated from
// its pinned artifact (GGUF metadata through gpustack/gguf-parser-go;
// safetensors headers and config.json) and the engine's own memory
// policy; the fit of that estimate against the host's free memory, with
// and without production; and the host capability rules (Rules: named
// values in the classifier's table format, an embedded engine.Rule with
// its public source, plus a predicate over host facts) that say a runner
// or kernel cannot run here.
//
// It reads files and host facts only (package doctor's, or recorded ones
// for a replay). It must not start or stop processes: the launch gate and
// activation decide what to do with a prediction. Bad input is never a
// "fits": it is a prediction that cannot be made, with the reason.
package preflight
