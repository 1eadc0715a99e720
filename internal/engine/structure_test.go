package engine

import (
	"strings"
	"testing"

	"github.com/hiro-dev/hiro/internal/failure"
)

// TestRootCauseByStructure: the root-cause line is found by the shape of
// the log (which line of a block holds the message), for every engine,
// not by its wording.
func TestRootCauseByStructure(t *testing.T) {
	for _, c := range []struct {
		name, kind string
		lines      []string
		exit       ExitInfo
		class      failure.Class
		root       string
	}{
		{"rust panic message is the line after its header", "mistralrs", []string{
			"2026-05-02T09:14:03.118201Z  INFO mistralrs_server_core: Loading model `m` on cuda[0].",
			"thread 'main' panicked at mistralrs-core/src/pipeline/mod.rs:88:14:",
			"the frobnicator is out of widgets",
			"note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
		}, Exited(101), failure.ClassEngineDied, "the frobnicator is out of widgets"},
		{"raise from: the innermost exception", "vllm", []string{
			"Traceback (most recent call last):",
			`  File "/x/hub.py", line 1, in get`,
			"requests.exceptions.HTTPError: 403 Forbidden for url: https://example.org/m",
			"",
			"The above exception was the direct cause of the following exception:",
			"",
			"Traceback (most recent call last):",
			`  File "/x/loader.py", line 2, in load`,
			"huggingface_hub.errors.GatedRepoError: 403 Client Error.",
		}, Exited(1), failure.ClassModelAccessDenied, "HTTPError: 403 Forbidden"},
		{"caused by: the innermost entry", "mistralrs", []string{
			"Error: failed to start the server",
			"",
			"Caused by:",
			"    0: loading the model",
			"    1: reading /models/m/config.json",
			"    2: Permission denied (os error 13)",
		}, Exited(1), failure.ClassPermissionDenied, "Permission denied (os error 13)"},
		{"signal number in a line", "tgi", []string{
			"2024-02-23T10:14:03.528141Z  INFO text_generation_launcher: Starting shard rank=0",
			"2024-02-23T10:14:09.528141Z ERROR text_generation_launcher: Shard process was signaled to shutdown with signal 4",
			"2024-02-23T10:14:09.528141Z ERROR text_generation_launcher: Shard 0 failed to start",
		}, Exited(1), failure.ClassHostCapability, "signal 4"},
		{"a C++ exception's what()", "lmdeploy", []string{
			"terminate called after throwing an instance of 'std::runtime_error'",
			"  what():  [TM][ERROR] CUDA runtime error: out of memory /src/allocator.h:231",
		}, Signaled("ABRT"), failure.ClassGPUOOM, "what():"},
		{"a child's stderr relayed by a wrapper", "openai", []string{
			"11:52PM DBG GRPC(m-127.0.0.1:1): stderr SIGILL: illegal instruction",
			"11:52PM DBG [llama-cpp] Fails: could not load model: rpc error: code = Unavailable desc = error reading from server: EOF",
		}, Exited(1), failure.ClassHostCapability, "stderr SIGILL"},
		{"an error line beats an advisory warning", "vllm", []string{
			"WARNING 01-01 00:00:00 [x.py:1] To avoid CUDA out of memory errors, consider lowering --gpu-memory-utilization.",
			"ERROR 01-01 00:00:01 [x.py:2] PermissionError: [Errno 13] Permission denied: '/root/.cache/huggingface'",
		}, Exited(1), failure.ClassPermissionDenied, "Permission denied"},
		{"advice alone decides nothing", "vllm", []string{
			"WARNING 01-01 00:00:00 [x.py:1] To avoid CUDA out of memory errors, consider lowering --gpu-memory-utilization.",
		}, Exited(1), failure.ClassEngineDied, "exited with code 1"},
		{"a native frame names the crashed component", "openai", []string{
			"*** Terminating app due to uncaught exception 'NSRangeException', reason: 'index 0 beyond bounds for empty array'",
			"\t3   libmlx.dylib    0x0000000104a1f2b0 _ZN3mlx4core5metal6DeviceC2Ev + 152",
		}, Signaled("ABRT"), failure.ClassAcceleratorUnavailable, "NSRangeException"},
		{"a Go panic's first line", "ollama", []string{
			"panic: runtime error: invalid memory address or nil pointer dereference",
			"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x5a1b2c]",
			"goroutine 1 [running]:",
		}, Exited(2), failure.ClassEngineDied, "panic: runtime error"},
	} {
		tr := mustLookup(t, c.kind).NewTracker()
		for _, l := range c.lines {
			tr.Feed(l)
		}
		f := tr.Classify(Outcome{Kind: OutcomeExited, Exit: c.exit})
		if f.Class != c.class || !strings.Contains(f.RootCause, c.root) {
			t.Errorf("%s: %s %q (rule %s), want %s with %q", c.name, f.Class, f.RootCause, f.Rule, c.class, c.root)
		}
	}
}
