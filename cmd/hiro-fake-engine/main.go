// Command hiro-fake-engine is test support: a real process that acts out
// the ways an inference server misbehaves, so the supervisor is tested on
// real processes, log files, exits and signals (STYLE.md habit 4).
//
// It can replay a log file line by line with a delay and then exit with a
// code or a signal; serve llama.cpp-style /health (503 {"error":{"message":
// "Loading model"}} for --load-time, then 200), Ollama-style / and
// /api/tags, /v1/models with a configurable id, and /v1/chat/completions
// (streamed SSE with usage, honouring max_tokens; a fixed reply; a JSON
// reply for response_format requests) or answer chat with 400 (a chat
// template message), 500, or not at all; ignore SIGTERM; run as a wrapper
// whose child (a grandchild of the supervisor) holds the port; start a
// helper in a new session that escapes the process group and keeps the
// port; and log "failed to parse grammar" while answering structured
// requests with invalid JSON (schema fail-open); close chat requests'
// connections mid-request (--chat-drop). While a file a flag names
// exists it answers chat 500 (--chat-fail-when), slowly (--slow-when) or
// with claims its quotes do not ground (--ungrounded-when): a candidate
// that regresses when a test says so.
//
// With --proxy-to it is instead a plain standard-library reverse proxy, the
// router benchmarks' baseline. It also hangs chat after --chat-hang-after while /health stays 200, slows
// streams with --token-delay, and answers /v1/completions and
// /v1/embeddings at once (the router's routes).
//
// For remote-endpoint behaviour it can require its --api-key on every
// request (--require-api-key: 401 without "Authorization: Bearer KEY"; --key-public-paths
// leaves some open, as llama-server leaves /health and /v1/models), serve https with a
// given certificate (--tls-cert, --tls-key), answer chat requests as an
// overloaded server does (--overload-status 429 or 503, for the first
// --overload-first requests or every --overload-every-th, with an optional
// Retry-After), and answer extraction requests with realistic claims that
// quote the target sentence (--chat claims), so a client's validation does
// real work.
//
// Its own bookkeeping lines ("fake: pid=... starting", "fake: started
// helper pid=...", the timestamps for benchmarks "fake: health flips to 200
// at UNIXNANO" and "fake: exiting at UNIXNANO") go to stdout, the engine
// log, except with --replay: the log is then the replayed engine's alone
// (a real engine never prints them, and a failure's root cause or "last
// line" must quote the replayed log), and they go to --notes FILE, or
// nowhere. --notes FILE always takes them. Lines that act out an engine
// (replayed lines, progress, the bind error, grammar and request lines)
// and the fake's own errors ("fake: error: ...") always go to stdout.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

type options struct {
	// dropClaims is the share of --chat claims answers' claims left out,
	// picked by a hash of dropSeed and the claim's text (the same claims
	// every run with the same seed), and of the request's seed when it
	// asks for temperature > 0 (sampling: another seed, another pick).
	dropClaims                                                              float64
	dropSeed                                                                string
	host, model, replay, notes, signal, chat, reply, jsonReply, healthStyle string
	apiKey, hfToken                                                         string
	port, exitCode                                                          int
	lineDelay, loadTime, exitAfter, progressEvery, holdFor                  time.Duration
	chatHangAfter, tokenDelay                                               time.Duration
	proxyTo                                                                 string
	ignoreTerm, wrapper, escapeHelper, schemaFailOpen, logHealth            bool
	holdFD                                                                  int
	tlsCert, tlsKey                                                         string
	requireKey                                                              bool
	publicPaths                                                             string
	overloadStatus, overloadFirst, overloadEvery, retryAfter                int
	chunkTokens                                                             int
	overloadN                                                               *atomic.Int64
	chatFailWhen                                                            string
	// chatDrop makes every chat request end with its connection closed:
	// "before-headers" without an answer, "after-headers" after a 200's
	// headers (a Content-Length) and before any byte of the body (a
	// server that dies mid-request).
	chatDrop string
	// replyDelay is waited before each chat reply's first token;
	// slowEvery > 0 makes every slowEvery-th chat request wait slowDelay
	// more (a server whose latency jumps: a noisy candidate). chatN
	// counts the chat requests.
	replyDelay, slowDelay time.Duration
	slowEvery             int
	chatN                 *atomic.Int64
	// slowWhen: while this file exists each chat reply waits
	// slowWhenDelay more (a candidate that becomes slow when a test says
	// so); ungroundedWhen: while this file exists --chat claims replies
	// quote words the target sentence does not have (claims hiro's
	// validators reject: a candidate whose quality drops mid-way).
	slowWhen, ungroundedWhen string
	slowWhenDelay            time.Duration
}

var (
	outMu sync.Mutex
	out   = bufio.NewWriter(os.Stdout)
	// notes receives the bookkeeping lines (notef); nil drops them.
	notes io.Writer = out
)

// logf writes one line to stdout and flushes it at once (the supervisor
// follows the file).
func logf(format string, a ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	fmt.Fprintf(out, format+"\n", a...)
	out.Flush()
}

// notef writes one bookkeeping line of the fake itself (not an engine's
// line) where --notes and --replay say: stdout, the notes file, or nowhere.
func notef(format string, a ...any) {
	outMu.Lock()
	defer outMu.Unlock()
	if notes == nil {
		return
	}
	fmt.Fprintf(notes, format+"\n", a...)
	if notes == io.Writer(out) {
		out.Flush()
	}
}

// setNotes routes the bookkeeping lines: to path when given (appended,
// created if needed), else to stdout unless a log is replayed.
func setNotes(path, replay string) {
	switch {
	case path != "":
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			logf("fake: error: --notes: %v", err)
			os.Exit(3)
		}
		notes = f // unbuffered: every line is written at once
	case replay != "":
		notes = nil
	}
}

func main() {
	o := options{}
	flag.StringVar(&o.host, "host", "127.0.0.1", "address to listen on")
	flag.IntVar(&o.port, "port", 0, "port to serve HTTP on (0: serve nothing)")
	flag.StringVar(&o.model, "model", "fake-model", "model id reported by /v1/models and /api/tags")
	flag.StringVar(&o.replay, "replay", "", "log file to print line by line at start (the fake's own bookkeeping lines then stay out of the log: see --notes)")
	flag.StringVar(&o.notes, "notes", "", "write the fake's bookkeeping lines (pid, helper pid, timestamps) to this file instead of stdout")
	flag.DurationVar(&o.lineDelay, "line-delay", 0, "delay before each replayed line")
	flag.IntVar(&o.exitCode, "exit", -1, "after the replay (and --exit-after), exit with this code")
	flag.StringVar(&o.signal, "signal", "", "after the replay (and --exit-after), kill itself with this signal (KILL, SEGV, ABRT, BUS, ILL, QUIT, TERM, INT)")
	flag.DurationVar(&o.exitAfter, "exit-after", 0, "wait this long after start before --exit/--signal")
	flag.DurationVar(&o.progressEvery, "progress-every", 0, "log a progress line this often")
	flag.DurationVar(&o.loadTime, "load-time", 0, "health answers 503 Loading model for this long, then 200")
	flag.StringVar(&o.healthStyle, "health-style", "llamacpp", "llamacpp: /health 503 then 200; vllm: listen only after --load-time")
	flag.StringVar(&o.chat, "chat", "ok", "chat completions: ok, claims (extraction replies quoting the target sentence), 400 (template error), 500, hang")
	flag.DurationVar(&o.chatHangAfter, "chat-hang-after", 0, "after this long from start, chat completions hang while /health still answers 200 (a dead engine behind a live HTTP server)")
	flag.DurationVar(&o.tokenDelay, "token-delay", 0, "delay before each streamed token (a slow stream)")
	flag.DurationVar(&o.replyDelay, "reply-delay", 0, "delay before each chat reply's first token (a slower server)")
	flag.IntVar(&o.slowEvery, "slow-every", 0, "every N-th chat request waits --slow-delay more (a server whose latency jumps)")
	flag.DurationVar(&o.slowDelay, "slow-delay", 0, "the extra delay of --slow-every's requests")
	flag.BoolVar(&o.requireKey, "require-api-key", false, "require \"Authorization: Bearer KEY\" (KEY: --api-key) on every request, 401 otherwise, as vLLM and llama-server do with their key flag")
	flag.StringVar(&o.tlsCert, "tls-cert", "", "serve https with this PEM certificate (with --tls-key)")
	flag.StringVar(&o.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	flag.IntVar(&o.overloadStatus, "overload-status", 0, "answer chat requests picked by --overload-first/--overload-every with this status (429 or 503)")
	flag.IntVar(&o.overloadFirst, "overload-first", 0, "the first N chat requests get --overload-status")
	flag.IntVar(&o.overloadEvery, "overload-every", 0, "every N-th chat request gets --overload-status")
	flag.StringVar(&o.chatDrop, "chat-drop", "", "close each chat request's connection: before-headers (no answer) or after-headers (a 200's headers, no body): a server dying mid-request")
	flag.StringVar(&o.slowWhen, "slow-when", "", "while this file exists, each chat reply waits --slow-when-delay more (a server that becomes slow when a test says so)")
	flag.DurationVar(&o.slowWhenDelay, "slow-when-delay", 300*time.Millisecond, "the extra delay of --slow-when")
	flag.StringVar(&o.ungroundedWhen, "ungrounded-when", "", "while this file exists, --chat claims replies quote text that is not in the target sentence (claims hiro's validators reject)")
	flag.StringVar(&o.chatFailWhen, "chat-fail-when", "", "answer chat requests 500 while this file exists (a model that starts failing mid-way, when a test says so)")
	flag.IntVar(&o.retryAfter, "retry-after", -1, "Retry-After seconds sent with overload answers (-1: none)")
	flag.IntVar(&o.chunkTokens, "chunk-tokens", 1, "pseudo-tokens per streamed chunk (1: one chunk per token, as engines stream)")
	flag.StringVar(&o.proxyTo, "proxy-to", "", "benchmark baseline: serve --port as a plain standard-library reverse proxy (tuned transport) to this URL, nothing else")
	flag.StringVar(&o.reply, "reply", "READY", "chat reply text")
	flag.Float64Var(&o.dropClaims, "drop-claims", 0, "with --chat claims, leave out this share (0 to 1) of the claims, picked by a hash of --drop-seed and each claim's text (and the request's seed when it asks for temperature > 0): a weaker model with a known drop")
	flag.StringVar(&o.dropSeed, "drop-seed", "", "seed of --drop-claims' pick (another seed drops other claims)")
	flag.StringVar(&o.jsonReply, "json-reply", `{"claims":[]}`, "reply to requests with response_format")
	flag.BoolVar(&o.schemaFailOpen, "schema-fail-open", false, "log 'failed to parse grammar' and answer structured requests with invalid JSON")
	flag.BoolVar(&o.ignoreTerm, "ignore-sigterm", false, "ignore SIGTERM")
	flag.BoolVar(&o.wrapper, "wrapper", false, "act as a wrapper: start the engine (this command without --wrapper) as a child and wait for it")
	flag.BoolVar(&o.escapeHelper, "escape-helper", false, "start a helper in a new session (setsid) that inherits the listening socket and keeps the port")
	flag.StringVar(&o.publicPaths, "key-public-paths", "", "comma-separated paths answered without the key under --require-api-key (llama-server: \"/health,/v1/models\"; vLLM: \"/health\")")
	flag.StringVar(&o.apiKey, "api-key", "", "accepted like vLLM's --api-key and echoed, as vLLM does, in a 'non-default args' log line")
	flag.StringVar(&o.hfToken, "hf-token", "", "accepted like vLLM's --hf-token and echoed in the 'non-default args' log line")
	flag.BoolVar(&o.logHealth, "log-health-requests", false, "log each health request llama.cpp style (request: GET /health ...)")
	flag.IntVar(&o.holdFD, "hold-fd", 0, "internal: helper mode, hold this descriptor")
	flag.DurationVar(&o.holdFor, "hold-for", 2*time.Minute, "internal: how long a helper holds the port before it exits")
	flag.Parse()
	o.overloadN = new(atomic.Int64)
	o.chatN = new(atomic.Int64)
	setNotes(o.notes, o.replay)

	if o.holdFD > 0 {
		holdHelper(o)
		return
	}
	if o.wrapper {
		runWrapper()
		return
	}
	if o.proxyTo != "" {
		plainProxy(o)
		return
	}
	start := time.Now()
	if o.ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	} else {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		go func() {
			s := <-ch
			notef("fake: %v received, shutting down", s)
			os.Exit(0)
		}()
	}
	notef("fake: pid=%d pgid=%d starting", os.Getpid(), syscall.Getpgrp())
	if o.apiKey != "" || o.hfToken != "" {
		// vLLM prints its non-default arguments, secrets included.
		logf("INFO 11-30 10:00:00 [utils.py:326] non-default args: {'model': '%s', 'api_key': ['%s'], 'hf_token': '%s'}", o.model, o.apiKey, o.hfToken)
	}

	if o.port > 0 {
		go serve(o, start)
	}
	if o.progressEvery > 0 {
		go func() {
			for i := 1; ; i++ {
				time.Sleep(o.progressEvery)
				logf("fake: loading progress step %d", i)
			}
		}()
	}
	if o.replay != "" {
		replay(o.replay, o.lineDelay)
	}
	if o.exitCode >= 0 || o.signal != "" {
		if d := o.exitAfter - time.Since(start); d > 0 {
			time.Sleep(d)
		}
		end(o)
	}
	select {}
}

// replay prints the file line by line, sleeping delay before each.
func replay(path string, delay time.Duration) {
	f, err := os.Open(path)
	if err != nil {
		logf("fake: error: cannot replay: %v", err)
		os.Exit(3)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if delay > 0 {
			time.Sleep(delay)
		}
		logf("%s", sc.Text())
	}
}

// end exits with the code, or kills itself with the signal.
func end(o options) {
	notef("fake: exiting at %d", time.Now().UnixNano())
	if o.signal != "" {
		name := strings.TrimPrefix(strings.ToUpper(o.signal), "SIG")
		sigs := map[string]syscall.Signal{"KILL": syscall.SIGKILL, "SEGV": syscall.SIGSEGV, "ABRT": syscall.SIGABRT,
			"TERM": syscall.SIGTERM, "BUS": syscall.SIGBUS, "ILL": syscall.SIGILL, "INT": syscall.SIGINT,
			"QUIT": syscall.SIGQUIT}
		s, ok := sigs[name]
		if !ok {
			logf("fake: error: unknown signal %q", o.signal)
			os.Exit(3)
		}
		if s == syscall.SIGSEGV || s == syscall.SIGILL || s == syscall.SIGABRT || s == syscall.SIGBUS || s == syscall.SIGQUIT {
			// The Go runtime turns these into its own crash (exit 2), so
			// become a shell with the same pid that kills itself with the
			// signal's default action.
			// (The supervisor passes only the named environment: no PATH.)
			for _, sh := range []string{"/bin/sh", "/usr/bin/sh"} {
				_ = syscall.Exec(sh, []string{"sh", "-c", "kill -" + name + " $$"}, os.Environ())
			}
		}
		signal.Reset(s)
		syscall.Kill(os.Getpid(), s)
		time.Sleep(time.Second)
	}
	os.Exit(o.exitCode)
}

// runWrapper starts this command again without --wrapper as a child in
// the same process group and waits for it, like `sh -c` does for a
// compound command. The wrapper itself dies on SIGTERM; the child keeps
// whatever --ignore-sigterm says.
func runWrapper() {
	var args []string
	for _, a := range os.Args[1:] {
		if a != "--wrapper" && a != "-wrapper" {
			args = append(args, a)
		}
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		logf("fake: error: wrapper cannot start the engine: %v", err)
		os.Exit(3)
	}
	notef("fake: wrapper pid=%d started engine pid=%d", os.Getpid(), cmd.Process.Pid)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); ok {
		os.Exit(ee.ExitCode())
	}
	os.Exit(0)
}

// holdHelper is the escaped helper: it keeps the inherited listening
// socket open (accepting nothing) until holdFor passes.
func holdHelper(o options) {
	f := os.NewFile(uintptr(o.holdFD), "listener")
	notef("fake: helper pid=%d sid=%d holds the port", os.Getpid(), mustSid())
	time.Sleep(o.holdFor)
	f.Close()
}

func mustSid() int {
	sid, _ := unix.Getsid(os.Getpid())
	return sid
}

func serve(o options, start time.Time) {
	flipAt := start.Add(o.loadTime)
	if o.healthStyle == "vllm" {
		time.Sleep(time.Until(flipAt))
	}
	addr := net.JoinHostPort(o.host, strconv.Itoa(o.port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		logf("fake: ERROR: [Errno 98] error while attempting to bind on address (%s): address already in use", addr)
		os.Exit(1)
	}
	notef("fake: pid=%d serving on %s", os.Getpid(), addr)
	if o.escapeHelper {
		startHelper(l, o)
	}
	go func() {
		time.Sleep(time.Until(flipAt))
		notef("fake: health flips to 200 at %d", flipAt.UnixNano())
	}()
	loaded := func() bool { return !time.Now().Before(flipAt) }
	mux := http.NewServeMux()
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		ok := loaded()
		if o.logHealth {
			code := 503
			if ok {
				code = 200
			}
			logf("srv  log_server_r: request: GET /health 127.0.0.1 %d", code)
		}
		if !ok {
			writeJSON(w, 503, map[string]any{"error": map[string]any{"code": 503, "message": "Loading model", "type": "unavailable_error"}})
			return
		}
		writeJSON(w, 200, map[string]any{"status": "ok"})
	})
	mux.HandleFunc("/api/tags", func(w http.ResponseWriter, r *http.Request) {
		var models []any
		if loaded() {
			models = append(models, map[string]any{"name": o.model, "model": o.model})
		}
		writeJSON(w, 200, map[string]any{"models": models})
	})
	mux.HandleFunc("/api/version", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"version": "0.0.0-fake"})
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"object": "list", "data": []any{map[string]any{"id": o.model, "object": "model", "owned_by": "fake"}}})
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		if o.chatHangAfter > 0 && time.Since(start) > o.chatHangAfter {
			<-r.Context().Done()
			return
		}
		chat(w, r, o)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writeJSON(w, 200, map[string]any{"id": "cmpl-fake", "object": "text_completion", "model": o.model,
			"choices": []any{map[string]any{"index": 0, "text": o.reply, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}})
	})
	mux.HandleFunc("/v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writeJSON(w, 200, map[string]any{"object": "list", "model": o.model,
			"data":  []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{0.1, 0.2, 0.3}}},
			"usage": map[string]any{"prompt_tokens": 1, "total_tokens": 1}})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("Ollama is running"))
	})
	var h http.Handler = mux
	if o.requireKey {
		h = requireKey(o.apiKey, o.publicPaths, mux)
	}
	srv := &http.Server{Handler: h}
	if o.tlsCert != "" {
		err = srv.ServeTLS(l, o.tlsCert, o.tlsKey)
	} else {
		err = srv.Serve(l)
	}
	if err != nil {
		logf("fake: error: serve: %v", err)
	}
}

// requireKey answers 401 with an OpenAI-shaped body to any request
// without "Authorization: Bearer key", as vLLM's --api-key does, and logs
// the path (never the key). The paths in public (comma-separated) are
// answered without it, as llama-server answers /health and /v1/models.
func requireKey(key, public string, next http.Handler) http.Handler {
	want := "Bearer " + key
	open := map[string]bool{}
	for _, p := range strings.Split(public, ",") {
		if p = strings.TrimSpace(p); p != "" {
			open[p] = true
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want && !open[r.URL.Path] {
			notef("fake: 401 %s %s: missing or wrong API key", r.Method, r.URL.Path)
			writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "Unauthorized", "type": "authentication_error", "code": 401}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// overloaded says whether this chat request gets the overload answer.
func overloaded(o options) bool {
	if o.overloadStatus == 0 {
		return false
	}
	n := o.overloadN.Add(1)
	return (o.overloadFirst > 0 && n <= int64(o.overloadFirst)) || (o.overloadEvery > 0 && n%int64(o.overloadEvery) == 0)
}

// claimsReply is the --chat claims answer: two claims that quote the
// target sentence of the extraction prompt (the whole sentence, cut at a
// word before 300 bytes, and its first half), the way a good model
// answers, so that the client's validators do their full work.
func claimsReply(req chatRequest, o options) string {
	target, where := "", ""
	for _, m := range req.Messages {
		s, _ := m.Content.(string)
		i := strings.Index(s, "\nTarget sentence:\n")
		if i < 0 {
			continue
		}
		where = s
		s = s[i+len("\nTarget sentence:\n"):]
		if j := strings.Index(s, "\nContext after:\n"); j >= 0 {
			s = s[:j]
		}
		target = strings.TrimSpace(s)
		break
	}
	words := strings.Fields(target)
	if len(words) < 2 {
		return `{"claims":[]}`
	}
	cut := func(ws []string, limit int) string {
		out := ws[0]
		for _, w := range ws[1:] {
			if len(out)+1+len(w) > limit {
				break
			}
			out += " " + w
		}
		return out
	}
	whole := cut(words, 300)
	claims := []map[string]string{{"text": whole, "quote": whole}}
	if len(words) >= 6 {
		half := cut(words[:len(words)/2], 300)
		claims = append(claims, map[string]string{"text": strings.TrimRight(half, ",;:-") + ".", "quote": half})
	}
	if exists(o.ungroundedWhen) {
		// Well-formed claims whose quotes the sentence does not have.
		for _, c := range claims {
			c["quote"] = "a sentence the document never had"
		}
	}
	kept := []map[string]string{}
	for _, c := range claims {
		if !dropped(o, samplingSeed(req), where, c["text"]) {
			kept = append(kept, c)
		}
	}
	b, _ := json.Marshal(map[string]any{"claims": kept})
	return string(b)
}

// samplingSeed is what a sampling engine's output depends on besides
// the prompt: the request's seed when it asks for temperature > 0, else
// "" (greedy decoding: the seed changes nothing).
func samplingSeed(req chatRequest) string {
	if req.Temperature <= 0 || req.Seed == nil {
		return ""
	}
	return strconv.FormatInt(*req.Seed, 10)
}

// dropped says whether --drop-claims leaves the claim out: the FNV-1a
// hash of --drop-seed, the sampling seed (samplingSeed), the request's
// message holding the target (where: the sentence in its context) and
// the claim's text, as a fraction of 2^64, below the share. The context
// keeps the picks of documents apart: a templated corpus repeats a
// claim's text ("The museum is") in several documents, and a pick by the
// text alone would drop it in all of them at once, a spread common to a
// whole run that no model's sampling has.
func dropped(o options, sampling, where, text string) bool {
	if o.dropClaims <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(o.dropSeed))
	h.Write([]byte{0})
	if sampling != "" {
		h.Write([]byte(sampling))
		h.Write([]byte{0})
	}
	h.Write([]byte(where))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return float64(h.Sum64())/float64(^uint64(0)) < o.dropClaims
}

// startHelper starts this command as a helper in a new session holding a
// duplicate of the listening socket: it escapes the process group.
func startHelper(l net.Listener, o options) {
	f, err := l.(*net.TCPListener).File()
	if err != nil {
		logf("fake: error: helper: %v", err)
		return
	}
	args := []string{"--hold-fd", "3", "--hold-for", o.holdFor.String()}
	switch {
	case o.notes != "":
		args = append(args, "--notes", o.notes)
	case o.replay != "":
		args = append(args, "--notes", os.DevNull) // the log is the replayed engine's
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.ExtraFiles = []*os.File{f}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		logf("fake: error: helper: %v", err)
		return
	}
	f.Close()
	notef("fake: started helper pid=%d in a new session", cmd.Process.Pid)
	go cmd.Wait()
}

type chatRequest struct {
	Model          string          `json:"model"`
	MaxTokens      *int            `json:"max_tokens"`
	MaxCompletion  *int            `json:"max_completion_tokens"`
	Stream         bool            `json:"stream"`
	ResponseFormat json.RawMessage `json:"response_format"`
	Temperature    float64         `json:"temperature"`
	Seed           *int64          `json:"seed"`
	Messages       []struct {
		Content any `json:"content"`
	} `json:"messages"`
}

func chat(w http.ResponseWriter, r *http.Request, o options) {
	var req chatRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "invalid JSON body: " + err.Error(), "type": "invalid_request_error"}})
		return
	}
	switch o.chat {
	case "400":
		writeJSON(w, 400, map[string]any{"error": map[string]any{"code": 400, "type": "invalid_request_error",
			"message": "Cannot use chat template functions because tokenizer.chat_template is not set and no template argument was passed!"}})
		return
	case "500":
		writeJSON(w, 500, map[string]any{"error": map[string]any{"code": 500, "type": "server_error", "message": "llama_decode: failed to decode, ret = -1"}})
		return
	case "hang":
		<-r.Context().Done()
		notef("fake: client went away while its request hung")
		return
	}
	if o.chatDrop != "" {
		dropChat(w, o.chatDrop)
		return
	}
	if exists(o.chatFailWhen) {
		writeJSON(w, 500, map[string]any{"error": map[string]any{"code": 500, "type": "server_error", "message": "llama_decode: failed to decode, ret = -1"}})
		return
	}
	if overloaded(o) {
		if o.retryAfter >= 0 {
			w.Header().Set("Retry-After", strconv.Itoa(o.retryAfter))
		}
		msg := "server busy: too many requests in flight"
		if o.overloadStatus == 503 {
			msg = "service unavailable: no free slot"
		}
		writeJSON(w, o.overloadStatus, map[string]any{"error": map[string]any{"code": o.overloadStatus, "type": "server_busy", "message": msg}})
		return
	}
	if d := replyWait(o); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			notef("fake: client went away before the reply")
			return
		}
	}
	text := o.reply
	structured := len(req.ResponseFormat) > 0 && string(req.ResponseFormat) != "null"
	if structured {
		text = o.jsonReply
		if o.chat == "claims" {
			text = claimsReply(req, o)
		}
		if o.schemaFailOpen {
			logf("srv  params_from_: failed to parse grammar, ignoring response_format")
			text = "Sure! Here are the claims: none."
		}
	}
	limit := -1
	if req.MaxTokens != nil {
		limit = *req.MaxTokens
	} else if req.MaxCompletion != nil {
		limit = *req.MaxCompletion
	}
	toks := tokens(text)
	finish := "stop"
	if limit >= 0 && len(toks) > limit {
		toks, finish = toks[:limit], "length"
	}
	prompt := 0
	for _, m := range req.Messages {
		if s, ok := m.Content.(string); ok {
			prompt += countTokens(s)
		}
	}
	id := fmt.Sprintf("chatcmpl-fake-%d", time.Now().UnixNano())
	created := time.Now().Unix()
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": len(toks), "total_tokens": prompt + len(toks)}
	if !req.Stream {
		writeJSON(w, 200, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": o.model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish,
				"message": map[string]any{"role": "assistant", "content": strings.Join(toks, "")}}},
			"usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	sse := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, fin any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": o.model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": fin}}}
	}
	sse(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if k := o.chunkTokens; k > 1 {
		var grouped []string
		for i := 0; i < len(toks); i += k {
			grouped = append(grouped, strings.Join(toks[i:min(i+k, len(toks))], ""))
		}
		toks = grouped
	}
	for _, t := range toks {
		if o.tokenDelay > 0 {
			select {
			case <-time.After(o.tokenDelay):
			case <-r.Context().Done():
				notef("fake: client went away mid-stream")
				return
			}
		}
		sse(chunk(map[string]any{"content": t}, nil))
	}
	sse(chunk(map[string]any{}, finish))
	sse(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": o.model,
		"choices": []any{}, "usage": usage})
	fmt.Fprint(w, "data: [DONE]\n\n")
	if fl != nil {
		fl.Flush()
	}
}

// dropChat closes the request's connection (--chat-drop how): with
// nothing written (before-headers), or after a 200's headers announcing
// a body that never comes (after-headers).
func dropChat(w http.ResponseWriter, how string) {
	if how != "before-headers" && how != "after-headers" {
		logf("fake: error: --chat-drop %q: use before-headers or after-headers", how)
		writeJSON(w, 500, map[string]any{"error": map[string]any{"message": "bad --chat-drop"}})
		return
	}
	c, bw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		logf("fake: error: --chat-drop: %v", err)
		return
	}
	if how == "after-headers" {
		bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
		bw.Flush()
	}
	c.Close()
}

// replyWait is this chat request's wait before its reply: --reply-delay,
// --slow-delay more on every --slow-every-th request, and
// --slow-when-delay more while the --slow-when file exists.
func replyWait(o options) time.Duration {
	n := o.chatN.Add(1)
	d := o.replyDelay
	if o.slowEvery > 0 && n%int64(o.slowEvery) == 0 {
		d += o.slowDelay
	}
	if exists(o.slowWhen) {
		d += o.slowWhenDelay
	}
	return d
}

// exists says whether the file at path exists ("" never does): the
// --*-when flags' switch, flipped by a test while the fake serves.
func exists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}

// tokens splits s into pseudo-tokens of at most 4 bytes (about one BPE
// token each), so max_tokens cuts replies the way a real server does.
func tokens(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(4, len(s))
		for n < len(s) && !utf8Start(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// countTokens is len(tokens(s)) without building the pieces.
func countTokens(s string) int {
	n := 0
	for len(s) > 0 {
		k := min(4, len(s))
		for k < len(s) && !utf8Start(s[k]) {
			k++
		}
		s = s[k:]
		n++
	}
	return n
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// plainProxy is the benchmarks' baseline: httputil.ReverseProxy with a
// tuned transport (keep-alive reuse, no compression; streams flushed at
// every write)
// and nothing else: no routing, no auth, no metrics.
func plainProxy(o options) {
	target, err := url.Parse(o.proxyTo)
	if err != nil {
		logf("fake: error: --proxy-to: %v", err)
		os.Exit(2)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second, DisableCompression: true}
	rp.FlushInterval = 0 // SSE and unknown-length bodies are flushed at every write anyway
	addr := net.JoinHostPort(o.host, strconv.Itoa(o.port))
	notef("fake: plain proxy on %s to %s", addr, o.proxyTo)
	if err := http.ListenAndServe(addr, rp); err != nil {
		logf("fake: error: %v", err)
		os.Exit(1)
	}
}
