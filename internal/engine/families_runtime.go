package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hiro-dev/hiro/internal/failure"
)

// The families of the classifier's log-line rules that no engine owns:
// the model hub's HTTP answers, the file system, signals named inside a
// line, and the Rust and Go runtimes' own failure lines. The root-cause
// structure of a Rust panic or Go panic (which line holds the message) is
// read by the tracker; these rules give the class.

// hubFamily: the model hub (Hugging Face, its mirrors, ModelScope)
// answering a download: 401/403 and gated repositories are
// model_access_denied (a token or accepting the licence), a repository
// that does not exist is model_load_failed.
var hubFamily = family("hub", []Rule{
	{Text: "Client Error", Pattern: regexp.MustCompile(`(?i)\b(401|403) Client Error.{0,160}(huggingface|hf\.co|hf-mirror|modelscope)`), Class: failure.ClassModelAccessDenied},
	// Rust's hf-hub (TGI's router, mistral.rs): "HTTP status client error
	// (401 Unauthorized) for url (https://huggingface.co/...)"
	{Text: "huggingface", Pattern: regexp.MustCompile(`(?i)\b(401 Unauthorized|403 Forbidden)\b.{0,200}(huggingface|hf\.co)`), Class: failure.ClassModelAccessDenied},
	// Rust's hf-hub through ureq (mistral.rs, candle): "RequestError(Status(403,
	// Response[status: 403, status_text: Forbidden, url: https://huggingface.co/...])"
	{Text: "Status(", Pattern: regexp.MustCompile(`(?i)\bStatus\((401|403),.{0,200}(huggingface|hf\.co)`), Class: failure.ClassModelAccessDenied},
	// HTTP 451 from any hub (RFC 7725: the hub may not serve the model
	// here: a legal or export restriction on the region or account):
	// requests' "451 Client Error: Unavailable For Legal Reasons for url",
	// reqwest's "HTTP status client error (451 Unavailable For Legal
	// Reasons) for url (...)" (NIM's NGC download)
	{Text: "Unavailable For Legal Reasons", Class: failure.ClassModelAccessDenied,
		NextStep: "The model hub refuses to serve this model here (HTTP 451: a legal or export restriction on the region or account): " +
			"use a mirror or a copy the licence allows for this place, or a model that is not restricted."},
	// the hub's rate limit (HTTP 429 Too Many Requests) on a download or a
	// listing, in any client's wording: requests' "429 Client Error: Too
	// Many Requests for url", hf-hub's ureq "Status(429, ...)", reqwest's
	// "(429 Too Many Requests)", llama.cpp's common/download.cpp
	// "get_repo_files: error: GET failed (429)": anonymous requests are
	// limited hardest, so a token (access) is the first step; the model
	// as named cannot be fetched either way (Or), weak
	{Name: "hub/rate-limited-429", Text: "429", Pattern: regexp.MustCompile(`(?i)\b429\b.{0,40}(Too Many Requests|Client Error)|\bStatus\(429,|\bGET failed \(429\)|(huggingface\.co|hf\.co|hf-mirror\.com|modelscope)\S*: status code 429\b`),
		Class: failure.ClassModelAccessDenied, Or: failure.ClassModelLoadFailed,
		NextStep: "The model hub rate-limited the download (HTTP 429): give the engine a hub token (HF_TOKEN), wait and retry, " +
			"or serve from a local copy of the model (offline mode, a path instead of a repository name)."},
	// NVIDIA's NGC (NIM's model files): 401/403 is the NGC_API_KEY
	{Text: "ngc.nvidia.com", Pattern: regexp.MustCompile(`(?i)\b(401|403)\b.{0,200}ngc\.nvidia\.com`), Class: failure.ClassModelAccessDenied},
	{Text: "GatedRepoError", Class: failure.ClassModelAccessDenied},
	{Text: "Cannot access gated repo", Class: failure.ClassModelAccessDenied},
	{Text: "is gated", Pattern: regexp.MustCompile(`(?i)is gated\. You must be authenticated`), Class: failure.ClassModelAccessDenied},
	{Text: "is restricted", Pattern: regexp.MustCompile(`(?i)access to model \S+ is restricted`), Class: failure.ClassModelAccessDenied},
	{Text: "Invalid user token", Class: failure.ClassModelAccessDenied},
	{Text: "Invalid credentials in Authorization header", Class: failure.ClassModelAccessDenied},
	{Text: "awaiting a review from the repo authors", Class: failure.ClassModelAccessDenied},
	{Text: "Client Error", Pattern: regexp.MustCompile(`(?i)\b404 Client Error.{0,160}(huggingface|hf\.co|hf-mirror|modelscope)`), Class: failure.ClassModelLoadFailed},
	{Text: "RepositoryNotFoundError", Class: failure.ClassModelLoadFailed},
	// huggingface_hub's other errors for a repository that exists
	// (huggingface_hub src/huggingface_hub/errors.py): a revision it has
	// not ("RevisionNotFoundError: 404 Client Error. ... Revision Not Found
	// for url: ..."), a file it has not (EntryNotFoundError, from 1.0
	// RemoteEntryNotFoundError: "Entry Not Found for url: ..."), a revision
	// that cannot be resolved offline and is not cached
	// (RevisionResolutionError): the model as named cannot be fetched
	{Text: "RevisionNotFoundError", Class: failure.ClassModelLoadFailed},
	{Text: "Revision Not Found for url", Class: failure.ClassModelLoadFailed},
	{Text: "EntryNotFoundError", Class: failure.ClassModelLoadFailed},
	{Text: "Entry Not Found for url", Class: failure.ClassModelLoadFailed},
	{Text: "RevisionResolutionError", Class: failure.ClassModelLoadFailed},
	// Ollama's registry
	{Text: "pull model manifest", Pattern: regexp.MustCompile(`(?i)pull model manifest: .{0,40}(401|403|unauthorized|forbidden)`), Class: failure.ClassModelAccessDenied},
	{Text: "pull model manifest", Pattern: regexp.MustCompile(`(?i)pull model manifest: .{0,40}(file does not exist|not found|404)`), Class: failure.ClassModelLoadFailed},
	{Text: "Repository Not Found", Class: failure.ClassModelLoadFailed},
	// Rust's hf-hub through ureq: "request error: https://huggingface.co/
	// api/models/X/revision/main: status code 401"
	{Name: "hub/ureq-status-code-denied", Text: "status code 40", Pattern: regexp.MustCompile(`(?i)(huggingface\.co|hf\.co|hf-mirror\.com)\S*: status code (401|403)\b`), Class: failure.ClassModelAccessDenied},
	// transformers' cached_file re-raising the hub's errors as OSError
	// (transformers src/transformers/utils/hub.py): a gated repository
	// ("You are trying to access a gated repo.\nMake sure to have access
	// to it at https://huggingface.co/X.\n401 Client Error ..."), a
	// repository the hub does not show ("X is not a local folder and is not
	// a valid model identifier listed on 'https://huggingface.co/models'\nIf
	// this is a private repository, make sure to pass a token ..."): the
	// name is wrong, or the repository is private and no token was given
	// (Or), and a name that is neither a folder nor a repo id
	// a server's own report that its download of the model's files from
	// its registry was refused for want of credentials, in its own words
	// rather than a hub client's (NIM's "Failed to download the model
	// manifest for nim/X: Authentication Error", Tabby's "Failed to fetch
	// model 'X' due to 'Fetching 'F' failed: Server returned 401 HTTP
	// status'"): the key or token was not given to it
	{Name: "hub/download-refused-credentials", Text: "download", Pattern: downloadDenied, Class: failure.ClassModelAccessDenied, NextStep: downloadDeniedStep},
	{Name: "hub/fetch-refused-credentials", Text: "fetch", Pattern: downloadDenied, Class: failure.ClassModelAccessDenied, NextStep: downloadDeniedStep},
	{Name: "hub/transformers-gated-repo", Text: "You are trying to access a gated repo", Class: failure.ClassModelAccessDenied},
	{Name: "hub/transformers-not-a-valid-model-identifier", Text: "is not a valid model identifier listed on", Class: failure.ClassModelLoadFailed, Or: failure.ClassModelAccessDenied},
	{Name: "hub/transformers-incorrect-path-or-model-id", Text: "Incorrect path_or_model_id", Class: failure.ClassModelLoadFailed},
})

// downloadDenied matches a download or fetch of the model refused for
// want of credentials: an authentication word or an HTTP 401/403 status
// after the download's verb (hubFamily).
var downloadDenied = regexp.MustCompile(`(?i)\b(download|fetch)\w*\b.{0,200}(\bauthentication (error|failed|failure|required)\b|\bunauthori[sz]ed\b|\bnot authori[sz]ed\b|\b(returned|status|code|HTTP) (401|403)\b|\b(401|403) HTTP status\b)`)

// downloadDeniedStep is the next step of a refused model download.
const downloadDeniedStep = "The model registry refused the download for want of credentials: pass the key or token (NGC_API_KEY for NIM, " +
	"HF_TOKEN for the Hugging Face hub) into the server's environment, and check that the account may fetch this model."

// modelFamily: the model's own files, whatever the engine: a config,
// tokenizer or weights file that is missing, a field or a weight the
// loader needs that is not in them. After fsFamily: a file that cannot be
// read for want of permission or space is that.
var modelFamily = family("model", []Rule{
	{Text: ".json", Pattern: regexp.MustCompile(`(?i)\b(config|tokenizer|tokenizer_config|generation_config|preprocessor_config|params)\.json\b.{0,80}\b(not found|no such file|does not exist|is missing|cannot be found|could not be found)|\b(not found|no such file or directory|does not exist|missing in|could not find|cannot find)\b.{0,120}\b(config|tokenizer|tokenizer_config|generation_config|preprocessor_config|params)\.json\b`), Class: failure.ClassModelLoadFailed},
	{Text: "found", Pattern: regexp.MustCompile(`(?i)\bno (safetensors|\.safetensors|weights?|model weights|gguf|model|(\.bin|pytorch) weights) (files? )?(were )?found\b`), Class: failure.ClassModelLoadFailed},
	{Text: "missing ", Pattern: regexp.MustCompile(`(?i)\bmissing (weight|tensor)s?\b`), Class: failure.ClassModelLoadFailed},
	// candle's VarBuilder asking the checkpoint for a tensor it lacks
	// (candle-core src/error.rs CannotFindTensor: "cannot find tensor
	// PATH", its Debug form "CannotFindTensor { path: ... }" in a panic;
	// candle-vllm, mistral.rs)
	{Text: "annot", Pattern: regexp.MustCompile(`\b[Cc]annot find tensor \S|\bCannotFindTensor \{`), Class: failure.ClassModelLoadFailed},
	// serde's error for a config file without a field the loader needs
	// (Rust engines: "missing field `vocab_size` at line 46 column 1")
	{Text: "missing field `", Class: failure.ClassModelLoadFailed},
	// serde's other errors for a file that does not parse as the type
	// the loader reads, whatever the Rust engine (mistral.rs, candle, TGI's
	// router): serde's de::Error ("invalid type: null, expected usize",
	// "invalid value", "invalid length", "unknown variant", "unknown
	// field", "duplicate field") and serde_json's syntax errors ("EOF
	// while parsing a value", "expected `,` or `}`", "trailing comma"...),
	// which serde_json ends with the place, " at line 19 column 24"
	// (serde-rs/json@8b681ff src/error.rs, ErrorCode and ErrorImpl's Display)
	{Name: "model/serde-json-error", Text: " column ", Pattern: regexp.MustCompile(`\b(?:invalid (?:type|value|length|escape|number|unicode code point)|unknown (?:variant|field)|duplicate field|EOF while parsing|expected (?:value|ident|` + "`" + `)|number out of range|control character|key must be a string|lone leading surrogate|trailing (?:comma|characters)|unexpected end of hex escape|recursion limit exceeded).{0,300} at line \d+ column \d+`), Class: failure.ClassModelLoadFailed},
	// the engine cannot split this architecture over the GPUs as asked:
	// ExLlamaV2's "Tensor-parallel is not supported for
	// Gemma3ForConditionalGeneration" (exllamav2/tensor_p.py), vLLM's
	// "Pipeline parallelism is not supported for this model" (SupportsPP;
	// older: "is only supported for the following architectures"): the
	// model's architecture first, the profile's layout Or: weak, naming both
	{Text: "supported for", Pattern: regexp.MustCompile(`(?i)\b(tensor|pipeline|expert)[- ]?parallel(ism)?\b.{0,30}\b(not (yet )?supported (for|by)|only supported for the following\s+architectures)\b`),
		Class: failure.ClassModelLoadFailed, Or: failure.ClassInvalidConfiguration, NextStep: parallelArchStep},
	// the same refusal in the words of the engine's own setting (TGI's
	// "sharded is not supported for this model", models/__init__.py, its
	// --sharded/--num-shard): the line names the setting the profile
	// chose, so invalid_configuration first, the model Or (r11: TGI's
	// num_shard 4 for Falcon-7B): weak, naming both
	{Text: "sharded is not supported for", Class: failure.ClassInvalidConfiguration, Or: failure.ClassModelLoadFailed, NextStep: parallelArchStep},
	// a loader's own summary: the line before it, when a rule knows it,
	// says more
	{Text: "model load failed", Class: failure.ClassModelLoadFailed, Tier: TierHint, Summary: true},
})

// parallelArchStep is the advice when the engine cannot split the
// model's architecture the way it was asked to.
const parallelArchStep = "The engine cannot split this model's architecture the way it was asked (tensor, pipeline " +
	"or expert parallel): load it without that split (a GPU split by layers, e.g. TabbyAPI/ExLlamaV2 gpu_split " +
	"without tensor_parallel, vLLM without --pipeline-parallel-size), on one GPU, or with an engine that supports " +
	"it for this architecture."

// fsFamily: the file system: a full disk or quota (disk_full), a path the
// engine may not read or write (permission_denied). Shared memory that is
// full is osFamily's (a container's /dev/shm), matched before.
var fsFamily = family("fs", []Rule{
	{Text: "No space left on device", Class: failure.ClassDiskFull},
	{Text: "[Errno 28]", Class: failure.ClassDiskFull},
	{Text: "ENOSPC", Class: failure.ClassDiskFull},
	{Text: "Disk quota exceeded", Class: failure.ClassDiskFull},
	{Text: "EDQUOT", Class: failure.ClassDiskFull},
	{Text: "disk space", Pattern: regexp.MustCompile(`(?i)(not enough|insufficient|no) (free )?disk space`), Class: failure.ClassDiskFull},
	{Text: "There is not enough space on the disk", Class: failure.ClassDiskFull},
	{Text: "% full", Pattern: regexp.MustCompile(`(?i)is over \d+% full, available space: 0\b`), Class: failure.ClassDiskFull},
	// a PyInstaller one-file program cannot unpack itself into its temp
	// folder (bootloader pyi_archive.c: "[PYI-N:ERROR] Failed to extract
	// NAME: decompression resulted in return code -1!"): the write
	// failed, a full /tmp of earlier runs' _MEI folders the usual cause
	{Text: "decompression resulted in return code", Also: "Failed to extract", Class: failure.ClassDiskFull, NextStep: pyinstallerTmpStep},
	// a listener refused its address with EACCES (asyncio's "[Errno 13]
	// error while attempting to bind on address ('127.0.0.1', 5000)"):
	// a privileged port, or on Windows (WSAEACCES) a port another
	// process holds exclusively or the system reserved, so weak
	{Name: "fs/errno-13-bind", Text: "[Errno 13]", Also: "bind", Pattern: regexp.MustCompile(`(?i)\[Errno 13\].{0,40}\bbind\b`), Class: failure.ClassPermissionDenied, Or: failure.ClassPortInUse},
	{Text: "Permission denied", Class: failure.ClassPermissionDenied},
	{Text: "[Errno 13]", Class: failure.ClassPermissionDenied},
	{Text: "EACCES", Class: failure.ClassPermissionDenied},
	{Text: "Read-only file system", Class: failure.ClassPermissionDenied},
	{Text: "[Errno 30]", Class: failure.ClassPermissionDenied},
	// a write to a path refused in the engine's own words (NVIDIA NIM's
	// start-up check: "Unable to write to NIM_CACHE_PATH (/mnt/models/
	// cache)", a cache "is not writable"): the path or the variable that
	// names it follows the words; a full disk says so itself (above).
	// Weak: words without an errno may hide a full disk or a missing
	// folder as well as a refused permission
	{Name: "fs/cannot-write-path", Text: " write to", Pattern: writeRefused, Class: failure.ClassPermissionDenied, Weak: true},
	{Name: "fs/cannot-write-path-2", Text: " write into", Pattern: writeRefused, Class: failure.ClassPermissionDenied, Weak: true},
	{Name: "fs/not-writable-path", Text: "not writ", Pattern: writeRefused, Class: failure.ClassPermissionDenied, Weak: true},
	{Name: "fs/no-write-access-path", Text: "no write ", Pattern: writeRefused, Class: failure.ClassPermissionDenied, Weak: true},
	{Text: "Access is denied", Pattern: regexp.MustCompile(`(?i)(WinError 5|os error 5)\b.{0,10}Access is denied|Access is denied.{0,20}\(os error 5\)`), Class: failure.ClassPermissionDenied},
})

// writeRefused is a write to a path refused in words: the words, then
// within 40 bytes the path (/, \, ~) or the variable that names it
// (NIM_CACHE_PATH, HF_HOME).
var writeRefused = regexp.MustCompile(`(?i:\b(?:unable to|cannot|can ?not|can't|could not|couldn't|failed to) write (?:to|into|in)\b|\bis not writ(?:e)?able\b|\bno write (?:access|permission)\b).{0,40}(?:[/\\~]|\b[A-Z][A-Z0-9]*_(?:PATH|DIR|HOME|CACHE)\b)`)

// pyinstallerTmpStep is the advice when a one-file program cannot
// unpack itself into its temp folder.
const pyinstallerTmpStep = "The program could not unpack itself into its temp folder: free space there (each run of " +
	"a one-file build unpacks into /tmp/_MEI*, and crashed runs leave theirs: delete them), check it is writable, or " +
	"point TMPDIR at a folder with room."

// structuredFamily: a server refusing a structured-output request (a
// JSON Schema response_format, a grammar) in its own words, whatever the
// engine: the request failed, so these are raised in inference.
var structuredFamily = family("structured", []Rule{
	// the engine says it dropped the grammar and generated anyway
	{Text: "ignor", Pattern: regexp.MustCompile(`(?i)\bignor(ed|ing)\b.{0,30}\b(grammar|json.?schema|response_format|schema)\b`), Class: failure.ClassStructuredOutputFailOpen, Phase: failure.PhaseInference},
	{Text: "response_format", Pattern: regexp.MustCompile(`(?i)response_format.{0,60}(must be|not supported|unsupported|invalid|is not allowed)|(invalid|unsupported).{0,30}response_format`), Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "invalid format: expected", Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "json schema", Pattern: regexp.MustCompile(`(?i)invalid json schema|json schema.{0,40}(is invalid|not supported|unsupported|failed to (parse|convert|compile))`), Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
	{Text: "can be specified, but not both", Pattern: regexp.MustCompile(`(?i)json_schema.{0,20}grammar.{0,20}can be specified, but not both`), Class: failure.ClassStructuredOutputRejected, Phase: failure.PhaseInference},
})

// templateFamily: a chat template that fails while the prompt is
// rendered, in the engine's own template engine: llama.cpp's jinja
// (common/jinja/value.cpp, ggml-org/llama.cpp@c811cb8: a template's
// raise_exception(msg) throws "Jinja Exception: " + msg, and the server
// answers 400 "Unable to generate parser for this template" around it);
// Python's jinja2 is pythonSignatures' ("jinja2.exceptions").
var templateFamily = family("template", []Rule{
	{Text: "Jinja Exception: ", Class: failure.ClassTokenizerTemplate},
	// a tokenizer's vocabulary file that the engine fetches on first use
	// and cannot (openai-harmony's "HarmonyError: error downloading or
	// loading vocab file: failed to download or load vocab file", the
	// o200k tiktoken file gpt-oss's harmony encoding needs; tiktoken's
	// own load of an .tiktoken BPE file): the tokenizer, whatever engine
	// renders the chat (vLLM, TensorRT-LLM, SGLang), offline or not
	{Name: "template/vocab-file-download-failed", Text: "vocab file", Pattern: regexp.MustCompile(`(?i)\b(error|failed to|unable to|could not|cannot)\b.{0,30}\b(download|load|fetch|read)\w*\b.{0,30}\bvocab(ulary)? file\b`), Class: failure.ClassTokenizerTemplate},
	{Text: "Unable to generate parser for this template", Class: failure.ClassTokenizerTemplate},
})

// signalNumbers are the Linux signal numbers a line may name
// ("signaled to shutdown with signal 4") whose meaning is a class; other
// numbers say nothing by themselves.
var signalNumbers = map[string]failure.Class{
	"4": failure.ClassHostCapability, // SIGILL: an instruction the CPU lacks
}

// sigillStep is the advice of an illegal instruction, whatever the engine.
const sigillStep = "The CPU lacks an instruction set this engine build uses (SIGILL: AVX2, AVX-512, F16C...): use a build " +
	"for this CPU (llama.cpp GGML_NATIVE=ON, KoboldCpp --noavx2, an engine image built without AVX-512), or run on a " +
	"CPU that has it; the engine's log or lscpu shows which flags the CPU has."

// busSignal is SIGBUS's number: usually shared memory too small, but a
// memory-mapped file on a full disk ends the same way, so it explains
// only as a hint (a weak verdict).
const busSignal = "7"

// signalFamily: a signal named inside a log line by a wrapper that saw its
// child end (TGI's launcher, a gRPC backend's supervisor).
var signalFamily = family("signal", []Rule{
	{Text: "signal", Pattern: regexp.MustCompile(`(?i)\b(?:signal(?:ed)?|killed by)\b\D{0,40}?\bsignal:? (\d{1,2})\b`),
		Lookup: func(m []string) (failure.Class, bool) { c, ok := signalNumbers[m[1]]; return c, ok }, NextStep: sigillStep},
	{Name: "signal/sigbus-number", Text: "signal", Pattern: regexp.MustCompile(`(?i)\b(?:signal(?:ed)?|killed by)\b\D{0,40}?\bsignal:? ` + busSignal + `\b`),
		Class: failure.ClassHostCapability, Tier: TierHint, NextStep: shmStep},
	{Text: "SIGBUS", Class: failure.ClassHostCapability, Tier: TierHint, NextStep: shmStep},
	// a crash named by its signal says where, not why
	{Text: "SIGSEGV", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "Segmentation fault", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "SIGABRT", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	{Text: "access violation", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
	// LLVM's report_fatal_error (llvm/lib/Support/ErrorHandling.cpp:
	// "LLVM ERROR: " and the message, then exit or abort), from a JIT
	// compiler inside the engine (Triton's kernels under vLLM and
	// SGLang, TVM, Mesa's llvmpipe): the process that printed it is gone,
	// whatever server outlives it; it names where, not why (the moment
	// refines it: a warm-up's compile)
	{Name: "llvm/fatal-error", Family: "llvm", Text: "LLVM ERROR: ", Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
})

// ntStatuses are the Windows exception codes (NTSTATUS, Microsoft's
// ntstatus.h, [MS-ERREF] 2.3.1) a process that crashed exits with, as
// the wrapper that saw it end writes them in a line: in hex (Go's
// os/exec: "exit status 0xc0000094"), unsigned decimal (Python's
// returncode: 3221225477) or signed (a C or C++ int: -1073741819). Each
// is decoded like a signal: what the code means, and the class it gives.
var ntStatuses = []struct {
	code  uint32
	name  string // the ntstatus.h name
	class failure.Class
	// tier is TierHint for a code that says where the engine stopped,
	// not why: a crash (refined by context: crash) or a missing DLL.
	tier  Tier
	crash bool
	step  string
}{
	{0xC0000005, "STATUS_ACCESS_VIOLATION", failure.ClassEngineDied, TierHint, true, ""},
	// the C runtime's fast fail: abort(), a failed security check, an
	// invalid parameter; the status of most native aborts on Windows
	{0xC0000409, "STATUS_STACK_BUFFER_OVERRUN", failure.ClassEngineDied, TierHint, true, ""},
	{0xC0000094, "STATUS_INTEGER_DIVIDE_BY_ZERO", failure.ClassEngineDied, TierHint, true, ""},
	{0xC00000FD, "STATUS_STACK_OVERFLOW", failure.ClassEngineDied, TierHint, true, ""},
	{0xC0000374, "STATUS_HEAP_CORRUPTION", failure.ClassEngineDied, TierHint, true, ""},
	{0x80000003, "STATUS_BREAKPOINT", failure.ClassEngineDied, TierHint, true, ""},
	// the CPU's SIGILL
	{0xC000001D, "STATUS_ILLEGAL_INSTRUCTION", failure.ClassHostCapability, TierError, false, sigillStep},
	{0xC0000017, "STATUS_NO_MEMORY", failure.ClassHostOOM, TierError, false, ""},
	// a DLL the executable imports is missing (a runtime: the C++
	// redistributable, the CUDA runtime the build was linked against)
	{0xC0000135, "STATUS_DLL_NOT_FOUND", failure.ClassEngineDied, TierHint, false, brokenInstallStep},
}

// ntStatusRules are the rules of ntStatuses: the code in each of its
// written forms, anywhere in a line (a decimal form as a number of its
// own, not the digits of a longer one). Names: ntstatus/ and the code's
// name, -2 and -3 for the decimal forms.
func ntStatusRules() []Rule {
	var out []Rule
	for _, s := range ntStatuses {
		name := "ntstatus/" + strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(s.name, "STATUS_"), "_", "-"))
		forms := []string{fmt.Sprintf("0x%08x", s.code), strconv.FormatUint(uint64(s.code), 10), strconv.FormatInt(int64(int32(s.code)), 10),
			// the signed code as an unsigned 64-bit number (a wrapper that
			// reads the exit status as uint64: 18446744072635810825), and
			// that number as a float64 prints it (JavaScript's Number, LM
			// Studio's "Exit code: 18446744072635812000"), when no other
			// code of the table rounds to the same float
			strconv.FormatUint(uint64(int64(int32(s.code))), 10)}
		if f, ok := uniqueFloatForm(s.code); ok {
			forms = append(forms, f)
		}
		for i, f := range forms {
			r := Rule{Name: name, Text: f, Class: s.class, Crash: s.crash, Fatal: s.crash, Tier: s.tier, NextStep: s.step,
				Source: "ntstatus.h " + s.name}
			if i > 0 {
				r.Name = fmt.Sprintf("%s-%d", name, i+1)
				r.Pattern = regexp.MustCompile(`(^|[^\d])` + regexp.QuoteMeta(f) + `($|[^\d])`)
			}
			out = append(out, r)
		}
	}
	return out
}

// floatForm is code, sign-extended to 64 bits and read as unsigned, in
// the shortest decimal a float64 of it prints as, without exponent.
func floatForm(code uint32) string {
	return strconv.FormatFloat(float64(uint64(int64(int32(code)))), 'f', -1, 64)
}

// uniqueFloatForm is code's floatForm when no other code of ntStatuses
// has the same one (float64 keeps 53 bits: codes 0xC0000005 to 0xC0000374
// all print as 18446744072635810000, and that number names none of them).
func uniqueFloatForm(code uint32) (string, bool) {
	f := floatForm(code)
	for _, o := range ntStatuses {
		if o.code != code && floatForm(o.code) == f {
			return "", false
		}
	}
	return f, true
}

// ntStatusFamily: the Windows exception codes of ntStatuses.
var ntStatusFamily = family("ntstatus", ntStatusRules())

// rustFamily: the Rust runtime's own failure lines (mistral.rs, TGI's
// launcher and router). A panic's message is on the line after its
// header; the tracker takes it.
var rustFamily = family("rust", []Rule{
	{Text: "memory allocation of", Pattern: regexp.MustCompile(`memory allocation of \d+ bytes failed`), Class: failure.ClassHostOOM},
	// candle's error for an op its backend has no kernel of at that dtype
	// (candle-core src/error.rs UnsupportedDTypeForOp: "unsupported dtype
	// BF16 for op matmul"; mistral.rs, candle-vllm): the device (a CPU or
	// Metal GPU without bf16 kernels) cannot run the model's dtype, the
	// profile's dtype the other reading
	{Name: "rust/candle-unsupported-dtype-for-op", Text: "unsupported dtype ", Also: " for op ", Pattern: regexp.MustCompile(`unsupported dtype \w+ for op \w+`), Class: failure.ClassGPUArchUnsupported, Or: failure.ClassInvalidConfiguration},
})

// nativeFamily: a C or C++ program's own check that aborts it: glog's
// and its kin's CHECK ("Check failed: a == b": Triton, TVM/MLC's ICHECK
// "Check failed: (cond) is false: ...", TurboMind's TM_CHECK "[TM][FATAL]
// file(line): Check failed: ..."). It names where the engine stopped,
// not why: a crash, refined by context (a grammar in use); a rule that
// names a cause on the same line wins (an allocation that failed).
var nativeFamily = family("native", []Rule{
	{Name: "native/check-failed", Text: "Check failed", Pattern: regexp.MustCompile(`\bCheck failed: \S`), Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
})

// goFamily: the Go runtime's own failure lines (Ollama, LocalAI).
var goFamily = family("go", []Rule{
	{Text: "fatal error: runtime: out of memory", Class: failure.ClassHostOOM},
	{Text: "runtime: cannot allocate memory", Class: failure.ClassHostOOM},
	// a Go panic's first line names the crash; its goroutine dump follows
	{Text: "panic: ", Pattern: regexp.MustCompile(`^panic: `), Class: failure.ClassEngineDied, Crash: true, Tier: TierHint},
	// the Go runtime's report of an exception raised in native code on
	// Windows (runtime/signal_windows.go, winthrow: "Exception %#x %#x %#x
	// %#x" with the exception code first, then "PC=%#x" and "signal
	// arrived during external code execution"), as SIGSEGV's line is on
	// Linux: the crash, before the wrapper's line that its runner ended
	{Name: "go/windows-exception", Text: "Exception 0x", Pattern: regexp.MustCompile(`^Exception 0x[0-9a-fA-F]+ 0x`),
		Class: failure.ClassEngineDied, Crash: true, Fatal: true, Tier: TierHint},
})
