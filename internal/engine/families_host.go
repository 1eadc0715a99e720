package engine

import (
	"regexp"

	"github.com/hiro-dev/hiro/internal/failure"
)

// The host families of the classifier's log-line rules: host memory, the
// CPU's instruction sets, the operating system (shared memory, WSL2,
// addresses), starting the command, and the network ports. Wordings
// cover every platform's text where the OS writes the message (a taken
// port reads differently on Linux, macOS and Windows).

// memoryFamily: host memory: the engine's refusal, a CPU allocation, the
// OOM killer.
var memoryFamily = family("memory", []Rule{
	// Ollama's refusal before it starts a runner for the model
	// (ollama@fb30760 llm/server.go): raised by a model load
	{Text: "requires more system memory", Class: failure.ClassHostOOM, Phase: failure.PhaseLoad},
	{Text: "Out of memory: Killed process", Class: failure.ClassHostOOM},
	{Text: "killed by the OOM killer", Class: failure.ClassHostOOM},
	{Text: "oom-kill", Class: failure.ClassHostOOM},
	{Text: "oom_reaper", Class: failure.ClassHostOOM},
	{Text: "Memory cgroup out of memory", Class: failure.ClassHostOOM},
	{Text: "OOMKilled", Class: failure.ClassHostOOM},
	{Text: "DefaultCPUAllocator: can't allocate memory", Class: failure.ClassHostOOM},
	{Text: "std::bad_alloc", Class: failure.ClassHostOOM},
	{Text: "Cannot allocate memory", Class: failure.ClassHostOOM},
	{Text: "MemoryError", Pattern: regexp.MustCompile(`(^|[\s:(])MemoryError\b`), Class: failure.ClassHostOOM},
	{Text: "cpu_buffer_type_alloc_buffer: failed to allocate", Class: failure.ClassHostOOM},
	{Text: "CPU buffer", Pattern: regexp.MustCompile(`(?i)(unable|failed) to allocate CPU(_Mapped|_REPACK)? buffer`), Class: failure.ClassHostOOM},
	{Text: "insufficient system memory", Class: failure.ClassHostOOM},
	{Text: "not enough system memory", Class: failure.ClassHostOOM},
})

// cpuFamily: the CPU lacks an instruction set the engine build uses.
var cpuFamily = family("cpu", []Rule{
	// the CPU's SIGILL, not a GPU kernel's fault (CUDA error 715, "an
	// illegal instruction was encountered": the cuda family's crash)
	{Text: "Illegal instruction", NotAfter: "illegal instruction was encountered", Class: failure.ClassHostCapability, NextStep: sigillStep},
	{Text: "SIGILL", Class: failure.ClassHostCapability, NextStep: sigillStep},
	{Text: "does not support AVX", Class: failure.ClassHostCapability},
	// Cosmopolitan's check of the CPU a binary was built for (llamafile)
	{Text: "was required at build time but isn't available", Class: failure.ClassHostCapability, NextStep: sigillStep},
	// Windows ERROR_DLL_INIT_FAILED (its text is in the system's language):
	// a backend library whose start-up code runs instructions the CPU
	// lacks is its usual cause, a missing runtime another
	{Text: "WinError 1114", Class: failure.ClassHostCapability, Tier: TierHint},
	{Text: "dynamic link library (DLL) initialization routine failed", Class: failure.ClassHostCapability, Tier: TierHint},
	{Text: "CPU does not have", Pattern: regexp.MustCompile(`(?i)CPU does not have.{0,30}(AVX|SSE|FMA|F16C)`), Class: failure.ClassHostCapability},
})

// shmStep is the advice of shared memory too small (a container's
// /dev/shm is 64 MB unless told otherwise), whatever the engine.
const shmStep = "Shared memory (/dev/shm) is too small, a container's default is 64 MB: run it with --shm-size=16g " +
	"(or --ipc=host; in Kubernetes an emptyDir with medium: Memory mounted at /dev/shm); NCCL_SHM_DISABLE=1 keeps NCCL " +
	"off shared memory at some speed. A bus error can also be a memory-mapped file on a full disk: check df -h."

// osFamily: the operating system: shared memory, WSL2's missing UVA, an
// address the host does not have.
// execFormatStep is the advice when the OS refuses to run the engine's
// executable at all.
const execFormatStep = "The operating system refuses to run the engine's executable: it is built for another CPU " +
	"architecture or OS (exec format error: an arm64 image or binary on x86-64, or the reverse; pick the build for this " +
	"machine), or on Windows it is over the 4 GB an executable may be (llamafile: run the small llamafile runner and " +
	"pass the weights with -m)."

var osFamily = family("os", []Rule{
	// the OS's loader refuses the executable (Windows: PowerShell's and
	// CreateProcess's words; Linux: ENOEXEC)
	{Text: "is not a valid application for this OS platform", Class: failure.ClassHostCapability, Phase: failure.PhaseLaunch, NextStep: execFormatStep},
	{Text: "is not a valid Win32 application", Class: failure.ClassHostCapability, Phase: failure.PhaseLaunch, NextStep: execFormatStep},
	{Text: "exec format error", Class: failure.ClassHostCapability, Phase: failure.PhaseLaunch, NextStep: execFormatStep},
	// the Go runtime's own report of a fatal signal (runtime/signal_unix.go
	// sighandler, then "PC=... m=N sigcode=N" and "signal arrived during
	// cgo execution"): a Go server (Ollama, LocalAI) whose native code
	// (ggml, through cgo) faulted, not a container's small /dev/shm,
	// which Go does not use: a crash, as SIGSEGV's is
	{Name: "os/go-runtime-sigbus", Text: "SIGBUS: bus error", Pattern: regexp.MustCompile(`^SIGBUS: bus error\s*$`), Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "Bus error", Class: failure.ClassHostCapability, Tier: TierHint, NextStep: shmStep}, // SIGBUS: see busSignal
	{Text: "UVA is not available", Class: failure.ClassHostCapability},
	{Text: "No space left on device", Pattern: regexp.MustCompile(`(?i)/dev/shm|shm|shared memory`), Class: failure.ClassHostCapability, NextStep: shmStep},
	// inotify's ENOSPC is its watch limit, not a full disk; Weak: a library
	// may go on without its watch (UCX, in a server that then served: r1 at
	// first sight, testdata/first-sight.json)
	{Text: "inotify", Also: "No space left on device", Class: failure.ClassHostCapability, Weak: true,
		NextStep: "The kernel's inotify watch limit is reached (ENOSPC from inotify_add_watch is not a full disk): raise it " +
			"(sysctl fs.inotify.max_user_watches=524288) or stop what holds the watches."},
	{Text: "cannot assign requested address", Class: failure.ClassHostCapability},
	{Text: "Too many open files", Class: failure.ClassHostCapability},
})

// processFamily: the engine's command could not be started.
var processFamily = family("process", []Rule{
	{Text: "executable file not found in $PATH", Class: failure.ClassEngineDied},
	// Weak: a shell's "SCRIPT: line N: CMD: command not found" ends one line
	// of a script that may go on (LocalAI's entrypoint probing nvidia-smi,
	// then serving: r12c at first sight, testdata/first-sight.json); a
	// hint: the script's own words after it (its fallback) state the cause
	{Text: "command not found", Class: failure.ClassEngineDied, Weak: true, Tier: TierHint},
	{Text: "exec format error", Class: failure.ClassEngineDied},
	// a supervisor's own summary that the process it started did not pass
	// its health check within the bound (llama-swap's proxy/process.go:
	// "unable to start process: health check timed out after 120s", early
	// 2025 "health check failed after 15s"): the child was still starting
	// (its 503s, "Loading model" lines are not a failure), ready_timeout
	{Name: "process/health-check-ran-out", Text: "health", Pattern: regexp.MustCompile(`(?i)\bhealth ?check (?:failed|timed out) after \d+(?:\.\d+)?\s*(?:ms|s|m|sec|seconds?|minutes?)\b`),
		Class: failure.ClassReadyTimeout},
	// a program of the engine's install whose library is missing (the
	// accelerators' own libraries are cudaFamily's, matched before; one
	// the loader may not read is libraryAccessFamily's)
	// Weak: the class is what the loader's error says (a file missing, a
	// permission refused); wrong strongly at first sight (r4a,
	// testdata/first-sight.json)
	{Text: "error while loading shared libraries", Class: failure.ClassEngineDied, Weak: true, NextStep: brokenInstallStep},
	// a compiled library built against another version of what it links
	// (a PyTorch extension such as flash-attn against another torch ABI,
	// a backend against another server release): the dynamic loader's
	// "X.so: undefined symbol: NAME", whatever wraps it (ImportError,
	// OSError, dlopen)
	// ... unless the symbol is a C library function newer than the
	// host's glibc (getcpu is glibc 2.29's, the __isoc23_ parsers 2.38's;
	// the list: glibcNewSymbols): the host's libraries are too old for
	// the build (docs/vocabulary.md "A broken install")
	{Name: "process/glibc-symbol-undefined", Text: "undefined symbol", Pattern: regexp.MustCompile(`undefined symbol: (` + glibcNewSymbols + `)\b`), Class: failure.ClassHostCapability, NextStep: glibcStep},
	// Or: an extension out of step with what it links is the install's;
	// whether it was never installed whole (invalid_configuration) or
	// installed at another version (engine_died) the line cannot tell
	{Name: "process/library-undefined-symbol", Text: "undefined symbol", Pattern: regexp.MustCompile(`\.so[.\d]*: undefined symbol: \S`), Class: failure.ClassEngineDied, Or: failure.ClassInvalidConfiguration, NextStep: brokenInstallStep},
	// a library of the install the loader cannot find by name: macOS
	// dyld ("Library not loaded: @rpath/libpython3.11.dylib", dyld/
	// dyld_loader), Android's bionic linker ('dlopen failed: library "X"
	// not found', linker.cpp). The install is incomplete (a bundle's
	// framework missing, a library never built) or broken: weak, the
	// log does not say which (Or)
	{Name: "process/dyld-library-not-loaded", Text: "Library not loaded:", Class: failure.ClassEngineDied, Or: failure.ClassInvalidConfiguration, NextStep: brokenInstallStep},
	{Name: "process/dlopen-library-not-found", Text: "dlopen failed: library", Pattern: regexp.MustCompile(`dlopen failed: library "[^"]+" not found`), Class: failure.ClassInvalidConfiguration, Or: failure.ClassEngineDied, NextStep: brokenInstallStep},
	// the dynamic loader's symbol versions: a binary built against a newer
	// C library than the host's ("/lib/x86_64-linux-gnu/libc.so.6: version
	// `GLIBC_2.34' not found (required by ./llama-server)") is the host's
	// OS; against a newer C++ runtime (GLIBCXX_, CXXABI_) it is an older
	// libstdc++ earlier on the library path (a conda environment's) or
	// the system's (/lib, /usr/lib: an older OS or image): the system's
	// is host_capability (the host's libraries too old for the build), an
	// environment's engine_died (out of step); weak both, Or
	// invalid_configuration: an image's own /lib reads as the host's
	{Name: "process/glibc-version-not-found", Text: "not found (required by", Pattern: regexp.MustCompile("version `GLIBC_[\\d.]+' not found \\(required by"), Class: failure.ClassHostCapability, NextStep: glibcStep},
	{Name: "process/system-libstdcxx-version-not-found", Text: "not found (required by", Pattern: regexp.MustCompile("(^|[\\s:'\"])/(usr/)?lib(64|32)?/\\S*libstdc\\+\\+\\S*: version `(GLIBCXX|CXXABI)_[\\d.]+' not found \\(required by"), Class: failure.ClassHostCapability, Or: failure.ClassInvalidConfiguration, NextStep: libstdcxxStep},
	{Name: "process/libstdcxx-version-not-found", Text: "not found (required by", Pattern: regexp.MustCompile("version `(GLIBCXX|CXXABI)_[\\d.]+' not found \\(required by"), Class: failure.ClassEngineDied, Or: failure.ClassInvalidConfiguration, NextStep: libstdcxxStep},
})

// glibcNewSymbols are C library functions of glibc 2.25 and later (from
// glibc's own NEWS, https://sourceware.org/git/?p=glibc.git;a=blob;f=NEWS):
// a build that links one fails to load on an older glibc with
// "undefined symbol: NAME". An alternation for a pattern.
const glibcNewSymbols = `getcpu|reallocarray|memfd_create|copy_file_range|explicit_bzero|getrandom|getentropy|statx|gettid|` +
	`pidfd_open|pidfd_send_signal|close_range|closefrom|fcntl64|pthread_cond_clockwait|pthread_mutex_clocklock|sem_clockwait|` +
	`__libc_single_threaded|_dl_find_object|arc4random\w*|strlcpy|strlcat|__isoc23_\w+|pthread_getattr_default_np|` +
	`posix_spawn_file_actions_addclosefrom_np|mlock2|pkey_\w+|preadv2|pwritev2`

// glibcStep is the advice when a binary needs a newer C library than the
// host has.
const glibcStep = "The engine's binary was built against a newer C library (glibc) than this host has: use a build " +
	"made for this OS release (or the engine's container image), or run it on a newer OS."

// libstdcxxStep is the advice when a library needs a newer C++ runtime
// than the one the loader found first.
const libstdcxxStep = "A library needs a newer C++ runtime (libstdc++) than the one the loader found first, usually " +
	"an older copy in a conda or virtual environment: update it there (conda install -c conda-forge libstdcxx-ng), " +
	"or put the system's libstdc++ first (LD_LIBRARY_PATH), or use the engine's container image."

// configFamily: the engine refused the configuration it was given before
// it served: each command-line parser's own words for a flag it does not
// know or a value it does not take (Python's argparse, click, Rust's clap,
// Go's cobra, llama.cpp's common/arg.cpp), and Go's os.UserHomeDir /
// UserCacheDir when a variable they read is unset (Ollama's "Error: $HOME
// is not defined"). Raised at launch.
var configFamily = family("config", []Rule{
	{Text: " is not defined", Pattern: regexp.MustCompile(`\$[A-Za-z_][A-Za-z0-9_]* is not defined`), Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "neither $XDG_", Pattern: regexp.MustCompile(`neither \$XDG_\w+ nor \$HOME are defined`), Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	// argparse (vLLM, SGLang, LMDeploy, koboldcpp): "PROG: error: ..."
	{Text: "error: unrecognized arguments:", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "error: the following arguments are required:", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "error: argument ", Pattern: regexp.MustCompile(`error: argument [^:]+: (invalid (\w+ value|choice)|expected (one|\d+) arguments?|ignored explicit argument|ambiguous option)`), Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	// click (trtllm-serve): "Error: No such option: --x", "Error: Invalid
	// value for '--port': ..."
	{Text: "Error: No such option:", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "Error: Invalid value for ", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "Error: Missing option ", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	// clap (text-generation-launcher, mistralrs-server)
	{Text: "error: unexpected argument '", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "error: invalid value '", Pattern: regexp.MustCompile(`error: invalid value '.*' for '`), Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "error: the following required arguments were not provided", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "which wasn't expected", Pattern: regexp.MustCompile(`error: Found argument '.*' which wasn't expected`), Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	// cobra (Ollama): "Error: unknown flag: --x"
	{Text: "Error: unknown flag: ", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "Error: unknown shorthand flag: ", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	{Text: "Error: invalid argument ", Pattern: regexp.MustCompile(`Error: invalid argument ".*" for ".*" flag`), Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
	// llama.cpp common/arg.cpp: "error: invalid argument: --x" (not CUDA's
	// "invalid argument" error, which names no flag)
	{Text: "error: invalid argument: -", Class: failure.ClassInvalidConfiguration, Phase: failure.PhaseLaunch},
})

// netFamily: port_in_use, every platform's wording: Linux EADDRINUSE
// (errno 98), macOS (errno 48), Windows WSAEADDRINUSE (10048) and WSAEACCES
// (10013, a port reserved by Hyper-V), Docker's port allocator.
var netFamily = family("net", []Rule{
	// The OS's bind error (the bind call or its errno named on the line)
	// is strong; an engine's own "ADDR: Address already in use" with no
	// bind call named is weak with Or invalid_configuration: llamafile's
	// v2 server prints it for a port nothing holds (a listen address it
	// cannot use, mozilla-ai/llamafile#716), and the line alone cannot
	// tell that from a held port.
	{Name: "net/bind-address-already-in-use", Text: "address already in use", Pattern: regexp.MustCompile(`(?i)(bind|errno|os_error|EADDRINUSE|\[Errno 98\]).{0,80}address already in use|address already in use.{0,60}(errno|bind|syscall)`), Class: failure.ClassPortInUse},
	{Text: "address already in use", Class: failure.ClassPortInUse, Or: failure.ClassInvalidConfiguration},
	{Text: "Only one usage of each socket address", Class: failure.ClassPortInUse},
	{Text: "port is already allocated", Class: failure.ClassPortInUse},
	{Text: "WinError 10048", Class: failure.ClassPortInUse},
	{Text: "access a socket in a way forbidden by its access permissions", Class: failure.ClassPortInUse},
	{Text: "EADDRINUSE", Class: failure.ClassPortInUse},
	// Triton's and other C++ servers' own words: "Socket '0.0.0.0:8001'
	// already in use"
	{Text: "already in use", Pattern: regexp.MustCompile(`(?i)\b(socket|port|address) '?[\w.:\[\]-]*'? ?(is )?already in use`), Class: failure.ClassPortInUse},
	// Go's net package: "listen tcp ADDR: bind: <the OS's text, in the
	// system's language>".
	{Text: ": bind: ", Pattern: regexp.MustCompile(`listen tcp\S* \S+: bind: `), Class: failure.ClassPortInUse},
	{Text: "couldn't bind", Pattern: regexp.MustCompile(`(?i)couldn't bind.{0,30}(socket|port|address)`), Class: failure.ClassPortInUse},
	{Text: "failed to bind", Pattern: regexp.MustCompile(`(?i)failed to bind.{0,60}(port|address|:\d+)`), Class: failure.ClassPortInUse},
})

// hostFamilies are every shared family an engine on a GPU host can hit,
// after the engine's own rules and its stack's (python, ggml).
var hostFamilies = joinLists(libraryAccessFamily, cudaFamily, metalFamily, gpuFamily, rocmFamily, vulkanFamily, openclFamily, syclFamily, tpuFamily, neuronFamily, gaudiFamily, ascendFamily, ncclFamily,
	memoryFamily, cpuFamily, osFamily, processFamily, configFamily, netFamily, hubFamily, fsFamily, modelFamily, signalFamily, ntStatusFamily, nativeFamily, rustFamily, goFamily,
	structuredFamily, templateFamily)

// libraryAccessFamily: a shared library the dynamic loader (ld.so's
// "error while loading shared libraries: X: cannot open shared object
// file: Permission denied", dlopen's the same through Python's
// ImportError or OSError) or Windows' LoadLibrary (error 5) may not read:
// the process's user lacks access to the file or a folder above it, or
// the mount forbids mapping it (noexec: "failed to map segment from
// shared object"), whatever library it is (an accelerator's runtime
// too); before cudaFamily, whose rules read a missing library.
var libraryAccessFamily = family("library", []Rule{
	{Text: "cannot open shared object file: Permission denied", Class: failure.ClassPermissionDenied},
	{Text: "failed to map segment from shared object", Class: failure.ClassPermissionDenied},
})
