package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/hiro-dev/hiro/internal/account"
	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/engine"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/qualify"
	"github.com/hiro-dev/hiro/internal/redact"
	"github.com/hiro-dev/hiro/internal/shellquote"
	"github.com/hiro-dev/hiro/internal/termtext"
)

func init() { registerCommand(newExtractCmd) }

// extractOpts are the flags of 'hiro extract'.
type extractOpts struct {
	Corpus          string
	Backend         string
	Out             string
	Concurrency     int
	MaxRepairs      int
	MaxTokens       int
	MaxDocBytes     int
	MaxRequestBytes int
	Timeout         time.Duration
	Shard           string
}

func newExtractCmd(g *Globals) *cobra.Command {
	o := &extractOpts{}
	cmd := &cobra.Command{
		Use:   "extract [PATHS...|--corpus DIR] --out DIR [--backend NAME] [--concurrency N] [--max-repairs N] [--json]",
		Short: "Extract grounded claims from documents through a backend",
		Long: `Split each document (plain text, or Markdown for .md) into sentences and ask
the backend for the claims of each sentence, with two sentences before and
one after as context and the Markdown heading path. PATHS are files or
directories (.txt, .md, .markdown; document id: the path relative to the
directory given, or the file's name); a file named with another extension is
refused, as corpus freeze refuses it, and the files a directory's walk leaves
out are named on stderr; --corpus reads a frozen corpus instead
(document id: its corpus id). The backend is a profile of the configuration,
production by default.

Every reply is validated against the claims JSON Schema (also sent as
response_format), and each claim must quote its sentence (exactly, or up to
white space and case), use no number or month absent from the text, not
repeat another claim of the document, and be 2 words to 400 characters.
A reply cut at --max-tokens (finish_reason "length") is rejected as
"truncated" even when what arrived parses as JSON, one a content filter
stopped (finish_reason "content_filter") as "filtered".
A reply that fails gets up to --max-repairs repair requests that show the
model its reply and what failed; good claims of a reply are kept, bad ones
rejected with their reasons.

DIR receives claims.jsonl (one claim with provenance per line),
rejects.jsonl (every rejected document, request, reply or claim with its
reasons and the raw reply), progress.jsonl (one checkpoint per finished
document), run.json and stats.json. Rerunning the same command after an
interruption skips finished documents and drops a document written in part;
documents that failed are redone, and their earlier rejects are superseded
(kept in rejects.jsonl, no longer counted). A rerun whose settings would
change the output (the backend, its base_url or model, --max-tokens,
--max-repairs, --max-doc-bytes, --max-request-bytes, the corpus or PATHS,
--shard, another hiro's prompt) is refused with exit 2 naming each setting
with its old and new values: use a new --out directory for new settings.
DIR must be a directory (or not exist yet). Before the first request the
backend's health is checked once.

Sentences that address the model (instructions, an embedded reply format,
chat role markers) are data: they are not sent as targets and are recorded
in rejects.jsonl as "sentence" rejects with reason addresses_model (not a
failure). Spans (sentence_span, quote_span) are byte offsets into the
document's UTF-8 text as read (span_unit "utf8_bytes"): a leading byte
order mark is in no sentence but counts, so such a document's first
sentence starts at byte 3. A claim holding a control character or a line
break (NUL, ESC, tab, newline, ...; a quote may keep the source's tab and
newline) is rejected (control_character), and one holding a label of hiro's
prompt layout ("Context after:") is rejected (prompt_layout).

Exit status, from the output as it now is: 0 every document finished and
nothing is rejected; 1 something is rejected, a document failed (rerun to
retry it), or the backend is not up; 2 bad usage or configuration;
3 interrupted (rerun to resume).

--shard I/N processes only the documents of shard I of N (0 <= I < N; a
document's shard is a hash of its id, so the split does not depend on the
order or number of the other documents). Run the N shards as parallel jobs
against one endpoint, each with its own --out directory, then
'hiro extract merge --out DIR SHARD_DIRS...' writes exactly what one
unsharded run writes.`,
		Args:        cobra.ArbitraryArgs,
		Annotations: map[string]string{annotationRunsItself: "yes"},
		RunE: func(c *cobra.Command, args []string) error {
			return runExtract(c.Context(), g, o, args)
		},
	}
	cmd.AddCommand(newExtractMergeCmd(g))
	f := cmd.Flags()
	f.StringVar(&o.Corpus, "corpus", "", "frozen corpus directory to extract from (instead of PATHS)")
	f.StringVar(&o.Backend, "backend", "", "backend profile to extract through (default: the production profile)")
	f.StringVar(&o.Out, "out", "", "output directory; an earlier run there is resumed (required)")
	f.IntVar(&o.Concurrency, "concurrency", extract.DefaultConcurrency, "requests in flight")
	f.IntVar(&o.MaxRepairs, "max-repairs", extract.DefaultMaxRepairs, "repair requests after a failed reply (0: none)")
	f.IntVar(&o.MaxTokens, "max-tokens", extract.DefaultMaxTokens, "max_tokens of each reply")
	f.IntVar(&o.MaxDocBytes, "max-doc-bytes", extract.DefaultMaxDocBytes, "reject documents larger than this")
	f.IntVar(&o.MaxRequestBytes, "max-request-bytes", extract.DefaultMaxRequestBytes, "reject a sentence whose rendered request is larger than this")
	f.DurationVar(&o.Timeout, "timeout", extract.DefaultRequestTimeout, "bound on each chat completion")
	f.StringVar(&o.Shard, "shard", "", "process only shard I of N of the documents (I/N, 0-based; e.g. $JOB_COMPLETION_INDEX/8)")
	f.BoolVar(&g.JSON, "json", false, "print the summary as JSON (errors too)")
	return cmd
}

func runExtract(ctx context.Context, g *Globals, o *extractOpts, paths []string) error {
	switch {
	case o.Out == "":
		return UsageErrorf("extract: --out DIR is required: the directory for claims.jsonl and rejects.jsonl")
	case o.Corpus != "" && len(paths) > 0:
		return UsageErrorf("extract: give either PATHS or --corpus DIR, not both")
	case o.Corpus == "" && len(paths) == 0:
		return UsageErrorf("extract: nothing to extract from: give files or directories, or --corpus DIR")
	case o.Concurrency < 1:
		return UsageErrorf("extract: --concurrency %d: must be at least 1", o.Concurrency)
	case o.MaxRepairs < 0:
		return UsageErrorf("extract: --max-repairs %d: must be 0 or more", o.MaxRepairs)
	case o.MaxTokens < 1 || o.MaxDocBytes < 1 || o.MaxRequestBytes < 1 || o.Timeout <= 0:
		return UsageErrorf("extract: --max-tokens, --max-doc-bytes, --max-request-bytes and --timeout must be positive")
	}
	var shard extract.Shard
	if o.Shard != "" {
		var err error
		if shard, err = extract.ParseShard(o.Shard); err != nil {
			return UsageError(fmt.Errorf("extract: --shard: %w", err))
		}
	}
	prof, err := extractProfile(g, o.Backend)
	if err != nil {
		return err
	}
	var docs []corpus.Document
	input := &extract.RunInput{}
	if o.Corpus != "" {
		c, err := corpus.Load(o.Corpus)
		if err != nil {
			return UsageError(fmt.Errorf("extract: %w", err))
		}
		docs = c.Docs
		input.Corpus, _ = filepath.Abs(o.Corpus)
		input.CorpusName, input.CorpusDigest = c.Manifest.Name, c.Manifest.Digest
	} else {
		var leftOut []string
		if docs, leftOut, err = corpus.LoadPathsLeftOut(paths, int64(o.MaxDocBytes)+1); err != nil {
			return UsageError(fmt.Errorf("extract: %w", err))
		}
		// A folder's files that are not documents are not sent; say which,
		// so that a .png beside the notes is not a silent loss.
		if note := corpus.LeftOutNote(leftOut); note != "" {
			fmt.Fprintf(g.Stderr, "hiro: extract: %s\n", termtext.Escape(note))
		}
		for _, p := range paths {
			abs, err := filepath.Abs(p)
			if err != nil {
				return UsageError(fmt.Errorf("extract: %w", err))
			}
			input.Paths = append(input.Paths, abs)
		}
	}
	client, err := llm.NewForProfile(prof)
	if err != nil {
		return UsageError(fmt.Errorf("extract: %w", err))
	}
	opts := extract.Options{
		Client: client, Backend: prof.Name, BaseURL: prof.BaseURL, Model: prof.Model,
		OutDir: o.Out, Concurrency: o.Concurrency, MaxRepairs: o.MaxRepairs, MaxTokens: o.MaxTokens,
		MaxDocBytes: o.MaxDocBytes, MaxRequestBytes: o.MaxRequestBytes, RequestTimeout: o.Timeout,
		Shard: shard, Input: input,
	}
	// A line per finished document and a heartbeat, on stderr whether it
	// is a terminal or not, as the semantic gate writes them: a document
	// through a model on a loaded CPU takes minutes, and silence reads as
	// a hang.
	n := 0
	for _, d := range docs {
		if shard.Count == 0 || shard.Has(d.ID) {
			n++
		}
	}
	var mu sync.Mutex
	var stopLines func()
	opts.OnCommit, opts.Progress, stopLines = qualify.ExtractionLines(prof.Name, prof.Name, n, func(s string) {
		mu.Lock()
		defer mu.Unlock()
		if g.JSON { // stderr stays machine-readable: one JSON object a line
			b, _ := json.Marshal(map[string]string{"progress": s})
			fmt.Fprintln(g.Stderr, string(b))
			return
		}
		fmt.Fprintln(g.Stderr, "extract: "+s)
	})
	defer stopLines()
	opts.Preflight = func(ctx context.Context) error { return extractBackendUp(ctx, prof) }
	sum, err := extract.Run(ctx, docs, opts)
	if err != nil && (sum == nil || !sum.Interrupted) {
		if errors.Is(err, extract.ErrRunMismatch) || errors.Is(err, extract.ErrOutNotDir) {
			return UsageError(fmt.Errorf("extract: %w", err))
		}
		if errors.Is(err, extract.ErrOutBusy) {
			return BusyError(fmt.Errorf("extract: %w", err))
		}
		return FailedError(fmt.Errorf("extract: %w", err))
	}
	if g.JSON {
		if err := claimsPrintJSON(g, sum); err != nil {
			return err
		}
	} else {
		printExtractSummary(g, sum, prof)
	}
	switch {
	case sum.Interrupted:
		return AbortedError(fmt.Errorf("extract: %w", err))
	case sum.Stats.Rejects-sum.Stats.AddressesModel > 0 || sum.Stats.DocumentsFailed > 0:
		// Sentences that address the model are recorded as rejects by
		// design (the document is data): not a failure of the run.
		return Silent(ExitFailed)
	}
	return nil
}

// extractPreflightTimeout bounds the check that the backend is up.
const extractPreflightTimeout = 10 * time.Second

// extractBackendUp checks, once, that the profile's server answers its
// engine's health check (and, where the engine says, has the model), so
// a backend that is down fails the run once instead of every request.
func extractBackendUp(ctx context.Context, p *config.Profile) error {
	e, err := engine.Lookup(p.Engine)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, extractPreflightTimeout)
	defer cancel()
	hc, err := llm.HTTPClient(p) // the profile's key and CA, as every request
	if err != nil {
		return err
	}
	h := e.CheckHealth(ctx, hc, p.BaseURL, p.Model)
	if h.State == engine.HealthReady {
		return nil
	}
	what := h.Message
	if what == "" {
		what = fmt.Sprintf("%s answered %d", h.Path, h.StatusCode)
	}
	hint := fmt.Sprintf("start it with 'hiro backend start %s'", shellquote.Quote(p.Name))
	if p.Unmanaged {
		hint = "check that the server runs and its URL is right"
	}
	cause := h.Err
	if cause == nil {
		cause = errors.New(what)
	}
	if a := llm.Advice(p, h.StatusCode, cause); a != "" {
		hint = a // it answered: TLS or the key, not a server that is down
	}
	return fmt.Errorf("%s at %s: %s; %s, then rerun", p.Name, p.BaseURL, what, hint)
}

// extractProfile returns the named backend profile, or production's.
func extractProfile(g *Globals, name string) (*config.Profile, error) {
	cfg, err := config.Load(g.ConfigPath)
	if err != nil {
		return nil, UsageError(fmt.Errorf("extract: %w", err))
	}
	if name == "" {
		p := cfg.ProductionProfile()
		if p == nil {
			return nil, UsageErrorf("extract: %s names no production backend; pass --backend NAME (known: %v) or set [production] backend", cfg.Path, cfg.BackendNames())
		}
		return p, nil
	}
	p, err := cfg.Backend(name)
	if err != nil {
		return nil, UsageError(fmt.Errorf("extract: %w", err))
	}
	if p.BaseURL == "" {
		return nil, UsageErrorf("extract: backend %s has no base_url or port to reach it", name)
	}
	return p, nil
}

// isAre is the verb for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// printExtractSummary writes what an extraction run did for a person.
func printExtractSummary(g *Globals, s *extract.Summary, p *config.Profile) {
	fmt.Fprintf(g.Stdout, "backend %s (%s, model %s)\n", p.Name, p.BaseURL, p.Model)
	fmt.Fprintf(g.Stdout, "%s: %d done now, %d failed now, %d finished earlier\n", account.Plural(s.Documents, "document", "documents"), s.Done, s.Failed, s.Skipped)
	// An interrupted run's counts below are of the documents it finished;
	// what it sent in all is said after.
	label := "this run"
	if s.Interrupted {
		label = "the documents this run finished"
	}
	// A sentence that addresses the model is a reject no request carried:
	// say so beside the count, else the rejects seem to contradict a count
	// taken of the requests (the router's shadow account scores requests).
	rejects := account.Plural(s.Rejects, "reject", "rejects")
	if s.NotSent > 0 {
		why := "it addresses"
		if s.NotSent > 1 {
			why = "they address"
		}
		rejects += fmt.Sprintf(" (%s never sent: %s the model)", account.Plural(s.NotSent, "sentence", "sentences"), why)
	}
	fmt.Fprintf(g.Stdout, "%s: %s, %s, %s, %s, %s in %.1fs (%.1f tokens/s)\n", label,
		account.Plural(s.Claims, "claim", "claims"), rejects, account.Plural(s.Requests, "request", "requests"),
		account.Plural(s.Replies, "reply", "replies"), account.Plural(int(s.CompletionTokens), "output token", "output tokens"), s.WallSeconds, s.OutputTokensPerSecond)
	if c := s.Client; c != nil && c.Retries() > 0 {
		fmt.Fprintf(g.Stdout, "overload: %s retried (%d HTTP 429, %d HTTP 503, %.1fs waited), %s after retries, %d gave up at the bound\n",
			account.Plural(int(c.Retries()), "busy answer", "busy answers"), c.Retried429, c.Retried503, float64(c.RetryWaitMS)/1000,
			account.Plural(int(c.SucceededAfterRetry), "request succeeded", "requests succeeded"), c.OverloadGaveUp)
	}
	st := s.Stats
	fmt.Fprintf(g.Stdout, "directory %s now: %s done, %d failed, %s, %s, schema-valid replies %d of %d\n",
		s.OutDir, account.Plural(st.DocumentsDone, "document", "documents"), st.DocumentsFailed, account.Plural(st.Claims, "claim", "claims"), account.Plural(st.Rejects, "reject", "rejects"), st.SchemaValidReplies, st.Replies)
	if st.SupersededRejects == 1 {
		fmt.Fprintln(g.Stdout, "1 earlier reject was superseded: its document was redone; it stays in rejects.jsonl but no longer counts")
	} else if st.SupersededRejects > 0 {
		fmt.Fprintf(g.Stdout, "%d earlier rejects were superseded: their documents were redone; they stay in rejects.jsonl but no longer count\n", st.SupersededRejects)
	}
	if s.Requests > 0 && s.Replies == 0 {
		fmt.Fprintf(g.Stdout, "no reply from %s: is the backend running, and are its URL, model and key (api_key_env / api_key_file) right? See %s/rejects.jsonl for the errors; rerun the same command to retry the failed documents\n", redact.String(p.BaseURL), s.OutDir)
	}
	if s.Interrupted {
		// The "this run" line counts committed documents only: say what
		// was sent for the documents cut short too, and what is kept.
		kept := s.Done + s.Failed
		fmt.Fprintf(g.Stdout, "interrupted: this run sent %s and had %s in all, with the documents cut short; the %s it finished %s kept in %s",
			account.Plural(s.RequestsSent, "request", "requests"), account.Plural(s.RepliesReceived, "reply", "replies"),
			account.Plural(kept, "document", "documents"), isAre(kept), s.OutDir)
		if s.Unfinished > 0 {
			fmt.Fprintf(g.Stdout, "; %s started and not finished %s not kept and will be redone", account.Plural(s.Unfinished, "document", "documents"), isAre(s.Unfinished))
		}
		fmt.Fprintln(g.Stdout)
		fmt.Fprintln(g.Stdout, "interrupted: rerun the same command to resume")
	} else if st.Rejects-st.AddressesModel > 0 || st.DocumentsFailed > 0 {
		fmt.Fprintf(g.Stdout, "something was rejected: see %s/rejects.jsonl\n", s.OutDir)
	}
}
