package extract

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/hiro-dev/hiro/internal/corpus"
	"github.com/hiro-dev/hiro/internal/llm"
	"github.com/hiro-dev/hiro/internal/prompt"
	"github.com/hiro-dev/hiro/internal/termtext"
)

// Defaults of Options.
const (
	// DefaultConcurrency is the number of requests in flight.
	DefaultConcurrency = 2
	// DefaultMaxRepairs is the number of repair retries per sentence.
	DefaultMaxRepairs = 1
	// DefaultMaxTokens bounds each reply (max_tokens).
	DefaultMaxTokens = 512
	// DefaultMaxDocBytes rejects larger documents (document_too_long).
	DefaultMaxDocBytes = 1 << 20
	// DefaultMaxRequestBytes rejects a sentence whose rendered messages
	// (system + user + repair turns) exceed it (request_too_long): about
	// 4,000 tokens of English, inside a 4k-8k context with the reply.
	DefaultMaxRequestBytes = 16 << 10
	// DefaultRequestTimeout bounds one chat completion.
	DefaultRequestTimeout = 2 * time.Minute
	// Seed is sent with every request, and temperature 0 (unless
	// Options says otherwise), so that an engine that honours them gives
	// the same claims every run.
	Seed = 42
)

// Chatter sends one chat completion; *llm.Client is one.
type Chatter interface {
	Chat(ctx context.Context, req llm.Request) (*llm.Reply, error)
}

// Progress receives progress in sentences; TerminalProgress draws a bar.
// Start comes once, before the first request: totalSentences is what this
// run will extract (the sentences of the documents left to do) and
// reusedDocuments how many documents an earlier run into the same folder
// finished (a resume keeps them; they are not redone), so a resumed run
// counts on from them.
type Progress interface {
	Start(totalSentences, reusedDocuments int)
	Add(sentences int)
	Finish()
}

// Options configure Run.
type Options struct {
	// Client sends the requests (required).
	Client Chatter
	// Backend is the profile name and BaseURL its server root (Client
	// sends the requests); run.json records both and a resumed run must
	// have the same. Model is the model id asked for (required).
	Backend string
	BaseURL string
	Model   string
	// OutDir is the output directory (required); an earlier run there is
	// resumed when run.json matches.
	OutDir string
	// Concurrency is the number of requests in flight; 0 means
	// DefaultConcurrency.
	Concurrency int
	// MaxRepairs is the number of repair retries after a failed reply
	// (0: none). Negative is an error.
	MaxRepairs int
	// MaxTokens, MaxDocBytes, MaxRequestBytes, RequestTimeout: 0 means
	// the Default of the same name.
	MaxTokens       int
	MaxDocBytes     int
	MaxRequestBytes int
	RequestTimeout  time.Duration
	// TimeoutRetries is how many times a request that ran past
	// RequestTimeout is sent again, each time with a fresh RequestTimeout,
	// before it counts as failed (0, the default: none; negative is an
	// error). The semantic gate gives production's side 1: a reply slowed
	// by a loaded machine then does not leave the baseline incomplete.
	// DocProgress.TimeoutRetries counts the requests sent again.
	TimeoutRetries int
	// Input, when set, records what the documents were read from in
	// run.json; a resumed run must have the same (RunDiffs).
	Input *RunInput
	// Shard, when Count > 0, restricts the run to the documents of one
	// shard (Shard.Has); run.json records it, and Merge combines the
	// shards' directories into what an unsharded run writes.
	Shard Shard
	// Progress, when non-nil, is told about finished sentences.
	Progress Progress
	// Preflight, when non-nil, is called once before the first request
	// when there is anything left to extract (e.g. a check that the backend
	// is up); its error ends the run before any request, wrapped in
	// ErrBackendDown.
	Preflight func(ctx context.Context) error
	// OnCommit, when non-nil, is called after each document's checkpoint
	// (tests interrupt a run with it).
	OnCommit func(DocProgress)
	// Temperature is the sampling temperature sent with every request
	// (0, the default: greedy, the same claims every run); Seed the seed
	// sent with it (0: the package's Seed, 42). A caller that samples on
	// purpose (the semantic gate's replicates) sets both; run.json records
	// them and a resumed run must have the same.
	Temperature float64
	Seed        int64
}

func (o *Options) fill() error {
	if o.Client == nil {
		return errors.New("extract: no client")
	}
	if strings.TrimSpace(o.Model) == "" {
		return errors.New("extract: no model id: set the backend profile's model")
	}
	if o.OutDir == "" {
		return errors.New("extract: no output directory: pass --out DIR")
	}
	if o.MaxRepairs < 0 {
		return fmt.Errorf("extract: max repairs %d: must be 0 or more", o.MaxRepairs)
	}
	if math.IsNaN(o.Temperature) || o.Temperature < 0 || o.Temperature > 2 {
		return fmt.Errorf("extract: temperature %v: use 0 to 2", o.Temperature)
	}
	if o.Seed == 0 {
		o.Seed = Seed
	}
	if o.Concurrency < 0 || o.MaxTokens < 0 || o.MaxDocBytes < 0 || o.MaxRequestBytes < 0 || o.RequestTimeout < 0 || o.TimeoutRetries < 0 {
		return errors.New("extract: concurrency, max tokens, byte bounds, timeout and timeout retries must not be negative")
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.MaxDocBytes == 0 {
		o.MaxDocBytes = DefaultMaxDocBytes
	}
	if o.MaxRequestBytes == 0 {
		o.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	return nil
}

// ErrBackendDown means Options.Preflight failed: nothing was sent.
var ErrBackendDown = errors.New("backend is not up")

// Summary is what Run did.
type Summary struct {
	OutDir string `json:"out_dir"`
	// Documents given; Skipped were finished by an earlier run; Done and
	// Failed were committed by this run.
	Documents int `json:"documents"`
	Skipped   int `json:"skipped"`
	Done      int `json:"done"`
	Failed    int `json:"failed"`
	// This run's counts.
	Claims  int `json:"claims"`
	Rejects int `json:"rejects"`
	// NotSent counts the rejects (within Rejects) of sentences that
	// address the model (ReasonAddressesModel): recorded as data and
	// never sent, so no request, and no router or shadow pair, has them.
	NotSent          int   `json:"not_sent,omitempty"`
	Requests         int   `json:"requests"`
	Replies          int   `json:"replies"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// OverloadRetries counts this run's retried overload answers (429,
	// 503); Client, when the client keeps counters (*llm.Client), has them
	// by status with the waits and the requests that gave up.
	OverloadRetries int        `json:"overload_retries"`
	Client          *llm.Stats `json:"client,omitempty"`
	// TimeoutRetries counts this run's requests sent again after running
	// past Options.RequestTimeout (Options.TimeoutRetries).
	TimeoutRetries int `json:"timeout_retries,omitempty"`
	// WallSeconds is the run's duration; OutputTokensPerSecond is
	// CompletionTokens/WallSeconds (server usage counts).
	WallSeconds           float64 `json:"wall_seconds"`
	OutputTokensPerSecond float64 `json:"output_tokens_per_second"`
	// Interrupted is true when ctx ended the run before every document
	// was committed; rerunning resumes.
	Interrupted bool `json:"interrupted"`
	// RequestsSent and RepliesReceived count every request this run sent
	// and every reply it had, the documents it did not finish included
	// (Requests and Replies count the committed documents only); on an
	// interrupted run Unfinished is the documents it started but did not
	// commit: their work is not kept and a rerun redoes them.
	RequestsSent    int `json:"requests_sent"`
	RepliesReceived int `json:"replies_received"`
	Unfinished      int `json:"unfinished_documents,omitempty"`
	// Stats totals the whole directory (every run).
	Stats Stats `json:"stats"`
}

// docState is one document being extracted.
type docState struct {
	doc       corpus.Document
	index     int
	sha       string
	sentences []corpus.Sentence
	docReject *Reason
	results   []sentResult
	pending   int
	mu        sync.Mutex
	done      chan struct{}
	// committed is set by the committer once the document is written.
	committed bool
}

// attempt is one request and the validation of its reply.
type attempt struct {
	n       int
	reply   *llm.Reply
	outcome Outcome
}

// sentResult is the outcome of one sentence.
type sentResult struct {
	attempts []attempt
	// reqReject is set when no reply could be had; transient when a
	// rerun may succeed (server error, transport).
	reqReject *Reason
	// addressed is set when the sentence speaks to the model: it is not
	// sent as a target and yields no claim (a RejectSentence).
	addressed *Reason
	transient bool
	cancelled bool
	requests  int
	// retries counts overload answers retried by the client;
	// timeoutRetries the requests sent again after running past
	// Options.RequestTimeout.
	retries, timeoutRetries int
}

// Run extracts claims from docs into opts.OutDir (see package doc and
// docs/design.md "Extraction"). Documents finished by an earlier run in the
// same directory are skipped. Rejections are recorded, never returned as
// errors: the error is for bad options, an output directory that cannot
// be written or resumed, or ctx ending (then Summary.Interrupted is true
// and the error wraps ctx.Err()).
func Run(ctx context.Context, docs []corpus.Document, opts Options) (*Summary, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	v, err := NewValidator()
	if err != nil {
		return nil, err
	}
	info := RunInfo{Schema: RunSchema, SpanUnit: SpanUnit, Backend: opts.Backend, BaseURL: opts.BaseURL, Model: opts.Model,
		PromptVersion: prompt.Version, PromptHash: prompt.Hash(), SchemaHash: prompt.SchemaHash(),
		Temperature: opts.Temperature, Seed: opts.Seed,
		MaxTokens: opts.MaxTokens, MaxRepairs: opts.MaxRepairs, MaxDocBytes: opts.MaxDocBytes, MaxRequestBytes: opts.MaxRequestBytes,
		Input: opts.Input}
	// index is each document's position in the whole input: a shard's
	// documents keep it, so merged shards come back in input order.
	index := make(map[string]int, len(docs))
	for i, d := range docs {
		if _, dup := index[d.ID]; !dup {
			index[d.ID] = i
		}
	}
	if opts.Shard.Count > 0 {
		var mine []corpus.Document
		for _, d := range docs {
			if opts.Shard.Has(d.ID) {
				mine = append(mine, d)
			}
		}
		docs = mine
		sh := opts.Shard
		sh.Documents = len(docs)
		info.Shard = &sh
	}
	// A run that would claim a new output directory checks the backend
	// before it writes anything there: a run that sent no request must not
	// leave a run.json that refuses the next run as "a different run".
	preflighted := false
	if opts.Preflight != nil && len(docs) > 0 {
		fresh, err := freshOut(opts.OutDir)
		if err != nil {
			return nil, err
		}
		if fresh {
			if err := opts.Preflight(ctx); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBackendDown, err)
			}
			preflighted = true
		}
	}
	out, err := openOut(opts.OutDir, info)
	if err != nil {
		return nil, err
	}
	defer out.close()
	start := time.Now()
	sum := &Summary{OutDir: opts.OutDir, Documents: len(docs)}
	finished := out.done()
	var todo []*docState
	total := 0
	for _, d := range docs {
		ds := prepare(d, opts.MaxDocBytes)
		ds.index = index[d.ID]
		if sha, ok := finished[d.ID]; ok {
			if sha != ds.sha {
				return nil, fmt.Errorf("%w: document %s changed since it was extracted into %s; use another --out directory", ErrRunMismatch, d.ID, opts.OutDir)
			}
			sum.Skipped++
			continue
		}
		total += len(ds.sentences)
		todo = append(todo, ds)
	}
	if len(todo) > 0 && opts.Preflight != nil && !preflighted {
		if err := opts.Preflight(ctx); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBackendDown, err)
		}
	}
	if opts.Progress != nil {
		opts.Progress.Start(total, sum.Skipped)
		defer opts.Progress.Finish()
	}
	w := &worker{v: v, opts: &opts, info: info}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan job)
	order := make(chan *docState, 4*opts.Concurrency)
	var wg sync.WaitGroup
	for i := 0; i < opts.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r := w.sentence(runCtx, j.d, j.i)
				j.d.finish(j.i, r)
				if opts.Progress != nil {
					opts.Progress.Add(1)
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // feeder: documents in order, then their sentences
		defer wg.Done()
		defer close(jobs)
		defer close(order)
		for _, d := range todo {
			select {
			case order <- d:
			case <-runCtx.Done():
				return
			}
			for i := range d.sentences {
				select {
				case jobs <- job{d, i}:
				case <-runCtx.Done():
					// Leave the rest unfinished; the committer stops.
					return
				}
			}
		}
	}()
	var commitErr error
	// The committer takes finished documents in input order and commits
	// them in groups: every document already finished when a commit
	// starts goes into it, so one write and one fsync per file serve the
	// whole group (group commit) while the workers keep going.
	var carry *docState
	for commitErr == nil {
		d := carry
		carry = nil
		if d == nil {
			var ok bool
			if d, ok = <-order; !ok {
				break
			}
		}
		select {
		case <-d.done:
		case <-runCtx.Done():
		}
		if runCtx.Err() != nil || d.cancelled() {
			break
		}
		group := []*docState{d}
	gather:
		for len(group) < maxCommitGroup {
			select {
			case n, ok := <-order:
				if !ok {
					break gather
				}
				if !n.finished() || n.cancelled() {
					carry = n
					break gather
				}
				group = append(group, n)
			default:
				break gather
			}
		}
		batch := make([]docCommit, len(group))
		for i, g := range group {
			batch[i].claims, batch[i].rejects, batch[i].p = w.assemble(g)
		}
		if err := out.commitGroup(batch); err != nil {
			commitErr = err
			break
		}
		for i := range batch {
			group[i].committed = true
			p := batch[i].p
			if p.Status == StatusDone {
				sum.Done++
			} else {
				sum.Failed++
			}
			sum.Claims += p.Claims
			sum.Rejects += p.Rejects
			sum.NotSent += p.AddressesModel
			sum.Requests += p.Requests
			sum.Replies += p.Replies
			sum.PromptTokens += p.PromptTokens
			sum.CompletionTokens += p.CompletionTokens
			sum.OverloadRetries += p.OverloadRetries
			sum.TimeoutRetries += p.TimeoutRetries
			if opts.OnCommit != nil {
				opts.OnCommit(p)
			}
		}
	}
	cancel()
	for range order { // let the feeder finish
	}
	wg.Wait()
	sum.WallSeconds = time.Since(start).Seconds()
	sum.RequestsSent, sum.RepliesReceived = int(w.sent.Load()), int(w.replied.Load())
	for _, d := range todo {
		if !d.committed && d.started() {
			sum.Unfinished++
		}
	}
	if sc, ok := opts.Client.(interface{ Stats() llm.Stats }); ok {
		st := sc.Stats()
		sum.Client = &st
	}
	if sum.WallSeconds > 0 {
		sum.OutputTokensPerSecond = float64(sum.CompletionTokens) / sum.WallSeconds
	}
	stats, serr := out.writeStats()
	sum.Stats = stats
	if commitErr != nil {
		return sum, commitErr
	}
	if serr != nil {
		return sum, fmt.Errorf("write %s: %w", StatsFile, serr)
	}
	if sum.Skipped+sum.Done+sum.Failed < len(docs) {
		sum.Interrupted = true
		if err := ctx.Err(); err != nil {
			return sum, fmt.Errorf("extraction interrupted after %d of %s (rerun the same command to resume): %w", sum.Skipped+sum.Done+sum.Failed, termtext.Plural(len(docs), "document", "documents"), err)
		}
		return sum, errors.New("extraction stopped before every document was committed")
	}
	return sum, nil
}

type job struct {
	d *docState
	i int
}

// prepare checks a document and splits it; a document that cannot be
// extracted gets docReject and no sentences.
func prepare(d corpus.Document, maxBytes int) *docState {
	sum := sha256.Sum256(d.Text)
	ds := &docState{doc: d, sha: hex.EncodeToString(sum[:]), done: make(chan struct{})}
	reject := func(code, detail string) *docState {
		ds.docReject = &Reason{Code: code, Detail: detail}
		close(ds.done)
		return ds
	}
	switch {
	case len(d.Text) > maxBytes:
		// Text may be cut just past the bound (corpus.LoadPathsBounded):
		// the file's size is the document's.
		size := max(int64(len(d.Text)), d.Size)
		return reject(ReasonDocumentTooLong, fmt.Sprintf("%d bytes, more than the bound of %d bytes (--max-doc-bytes); split the document or raise the bound", size, maxBytes))
	case !utf8.Valid(d.Text):
		return reject(ReasonNotUTF8, fmt.Sprintf("not valid UTF-8 (first bad byte at offset %d); convert it to UTF-8", firstInvalid(d.Text)))
	case strings.TrimSpace(string(d.Text)) == "":
		return reject(ReasonEmptyDocument, "the document is empty or only white space")
	}
	ss, err := corpus.Split(string(d.Text), d.Markdown)
	if err != nil {
		return reject(ReasonEmptyDocument, "sentence splitter: "+err.Error())
	}
	if len(ss) == 0 {
		return reject(ReasonEmptyDocument, "no sentences (only headings, code or rules)")
	}
	ds.sentences = ss
	ds.results = make([]sentResult, len(ss))
	ds.pending = len(ss)
	return ds
}

func firstInvalid(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// maxCommitGroup bounds the documents committed together (one write and
// one fsync per file for the group).
const maxCommitGroup = 256

// finished reports whether every sentence of d has its result.
func (d *docState) finished() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// finish records sentence i's result; the last one closes done.
func (d *docState) finish(i int, r sentResult) {
	d.mu.Lock()
	d.results[i] = r
	d.pending--
	last := d.pending == 0
	d.mu.Unlock()
	if last {
		close(d.done)
	}
}

// started reports whether a request was sent for any sentence of d.
func (d *docState) started() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.results {
		if r.requests > 0 {
			return true
		}
	}
	return false
}

func (d *docState) cancelled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.results {
		if r.cancelled {
			return true
		}
	}
	return d.pending > 0
}

// worker holds what every request needs, and counts what the run sent.
type worker struct {
	v    *Validator
	opts *Options
	info RunInfo
	// sent and replied count every request and reply of the run.
	sent, replied atomic.Int64
}

// sentence runs the request and repair loop for sentence i of d.
func (w *worker) sentence(ctx context.Context, d *docState, i int) sentResult {
	var r sentResult
	if ctx.Err() != nil {
		r.cancelled = true
		return r
	}
	if why, ok := AddressesModel(d.sentences[i].Text); ok {
		r.addressed = &Reason{Code: ReasonAddressesModel, Detail: why + "; the sentence is recorded as data and not sent as a target"}
		return r
	}
	in := Window(d.sentences, i)
	src := SourceFor(d.sentences, i, in)
	msgs := Messages(in)
	for n := 1; n <= 1+w.opts.MaxRepairs; n++ {
		if size := requestBytes(msgs); size > w.opts.MaxRequestBytes {
			if n == 1 {
				r.reqReject = &Reason{Code: ReasonRequestTooLong, Detail: fmt.Sprintf("the rendered request is %d bytes, more than the bound of %d (--max-request-bytes)", size, w.opts.MaxRequestBytes)}
			}
			break // a repair that would not fit is not sent
		}
		req := llm.Request{Model: w.opts.Model, Messages: msgs, MaxTokens: w.opts.MaxTokens,
			Temperature: &w.opts.Temperature, Seed: &w.opts.Seed, Schema: prompt.SchemaJSON(), SchemaName: "claims", Timeout: w.opts.RequestTimeout}
		reply, err := w.opts.Client.Chat(ctx, req)
		again := 0 // the same request sent again with a fresh bound (Options.TimeoutRetries)
		for ; err != nil && ctx.Err() == nil && timedOut(err) && again < w.opts.TimeoutRetries; again++ {
			r.requests++
			w.sent.Add(1)
			reply, err = w.opts.Client.Chat(ctx, req)
		}
		r.timeoutRetries += again
		r.requests++
		w.sent.Add(1)
		if err == nil {
			w.replied.Add(1)
		}
		if reply != nil {
			r.retries += reply.Retries
		}
		if err != nil {
			if ctx.Err() != nil {
				r.cancelled = true
				return r
			}
			detail := fmt.Sprintf("attempt %d: %v", n, err)
			if again > 0 {
				detail += fmt.Sprintf(" (sent %d times, each bounded by %s)", 1+again, w.opts.RequestTimeout)
			}
			r.reqReject = &Reason{Code: ReasonRequestFailed, Detail: detail}
			var ae *llm.APIError
			if errors.As(err, &ae) && reply == nil {
				r.retries += ae.Retries
			}
			// A 4xx about this request (400, 413, 422...) will fail again
			// the same way: the document is done with its reject. Anything
			// else may pass on a rerun: a timeout, a rate limit, a server
			// error, and what is wrong with the endpoint rather than the
			// request (401/403: the key; 404: the URL or model), which the
			// user fixes before rerunning.
			r.transient = !(errors.As(err, &ae) && permanentStatus(ae.StatusCode))
			if len(r.attempts) > 0 {
				r.transient = false // keep what the earlier attempt gave
			}
			return r
		}
		o := w.v.Validate(reply.Text, reply.FinishReason, src)
		r.attempts = append(r.attempts, attempt{n: n, reply: reply, outcome: o})
		if o.Clean() {
			break
		}
		msgs = append(msgs[:len(msgs):len(msgs)],
			llm.Message{Role: "assistant", Content: reply.Text},
			llm.Message{Role: "user", Content: RepairMessage(&o)})
	}
	return r
}

// assemble turns a finished document into its claims, rejects and
// checkpoint. Claims are deduplicated across the document: a claim
// repeated by a repair reply of the same sentence is dropped silently, a
// claim equal to one of an earlier sentence is rejected as a duplicate.
// A document with a transient request failure writes only its request
// rejects and is marked failed, so a rerun redoes it without duplicates.
func (w *worker) assemble(d *docState) ([]Claim, []Reject, DocProgress) {
	p := DocProgress{DocID: d.doc.ID, DocIndex: d.index, DocSHA256: d.sha, Status: StatusDone, Sentences: len(d.sentences)}
	base := Reject{DocID: d.doc.ID, Model: w.info.Model, Backend: w.info.Backend, PromptHash: w.info.PromptHash}
	var claims []Claim
	var rejects []Reject
	if d.docReject != nil {
		r := base
		r.Kind = RejectDocument
		r.Reasons = []Reason{*d.docReject}
		rejects = append(rejects, r)
		p.Rejects = 1
		return nil, rejects, p
	}
	failed := false
	for _, r := range d.results {
		if r.transient {
			failed = true
		}
	}
	docKeys := map[string]int{}
	for i, res := range d.results {
		s := d.sentences[i]
		idx, span := i, [2]int{s.Start, s.End}
		sbase := base
		sbase.SentenceIndex, sbase.SentenceSpan = &idx, &span
		p.Requests += res.requests
		p.OverloadRetries += res.retries
		p.TimeoutRetries += res.timeoutRetries
		for _, a := range res.attempts {
			p.Replies++
			if a.outcome.SchemaValid {
				p.SchemaValid++
			}
			if a.outcome.Clean() {
				p.Clean++
			}
			if a.reply.HasUsage {
				p.PromptTokens += int64(a.reply.Usage.PromptTokens)
				p.CompletionTokens += int64(a.reply.Usage.CompletionTokens)
			}
		}
		if res.reqReject != nil && (!failed || res.transient) {
			r := sbase
			r.Kind = RejectRequest
			r.Attempt = res.requests
			r.Reasons = []Reason{*res.reqReject}
			rejects = append(rejects, r)
		}
		if failed {
			continue
		}
		if res.addressed != nil {
			r := sbase
			r.Kind, r.Reasons, r.Text = RejectSentence, []Reason{*res.addressed}, s.Text
			rejects = append(rejects, r)
			p.AddressesModel++
			continue
		}
		sentKeys := map[string]bool{}
		for k, a := range res.attempts {
			retried := k < len(res.attempts)-1
			o := a.outcome
			// The whole reply goes into the attempt's first reject, a clip
			// of it into the others: a reply of many bad claims would
			// otherwise be written once per claim (quadratic in its size).
			given := false
			raw := func() string {
				if given {
					return clipRaw(a.reply.Text)
				}
				given = true
				return a.reply.Text
			}
			if len(o.ReplyReasons) > 0 {
				r := sbase
				r.Kind, r.Attempt, r.Retried, r.Reasons = RejectReply, a.n, retried, o.ReplyReasons
				r.Raw, r.FinishReason = raw(), a.reply.FinishReason
				rejects = append(rejects, r)
			}
			for _, b := range o.Bad {
				ci := b.Index
				r := sbase
				r.Kind, r.Attempt, r.Retried, r.Reasons = RejectClaim, a.n, retried, b.Reasons
				r.ClaimIndex, r.Text, r.Quote = &ci, b.Text, b.Quote
				r.Raw, r.FinishReason = raw(), a.reply.FinishReason
				rejects = append(rejects, r)
			}
			for _, c := range o.Good {
				if sentKeys[c.Key] {
					continue
				}
				if j, dup := docKeys[c.Key]; dup {
					ci := c.Index
					r := sbase
					r.Kind, r.Attempt, r.Retried = RejectClaim, a.n, retried
					r.Reasons = []Reason{{Code: ReasonDuplicate, Detail: fmt.Sprintf("same claim as one of sentence %d", j)}}
					r.ClaimIndex, r.Text, r.Quote = &ci, c.Text, c.Quote
					r.Raw, r.FinishReason = raw(), a.reply.FinishReason
					rejects = append(rejects, r)
					continue
				}
				sentKeys[c.Key] = true
				docKeys[c.Key] = i
				claims = append(claims, Claim{
					DocID: d.doc.ID, SentenceIndex: i, SentenceSpan: span, QuoteSpan: [2]int{c.QuoteStart, c.QuoteEnd}, SpanUnit: SpanUnit,
					Text: c.Text, Quote: c.Quote, Match: c.Match, Model: w.info.Model, Backend: w.info.Backend,
					PromptVersion: w.info.PromptVersion, PromptHash: w.info.PromptHash, SchemaHash: w.info.SchemaHash, Attempt: a.n,
				})
			}
		}
	}
	if failed {
		p.Status = StatusFailed
		claims = nil
	}
	p.Claims, p.Rejects = len(claims), len(rejects)
	return claims, rejects, p
}

// permanentStatus reports whether an HTTP error status says the request
// itself is refused (it fails again the same way): a 4xx other than 401,
// 403 and 404 (the endpoint's key, URL or model: fixed by the user, then
// retried), 408 (timeout) and 429 (rate limit).
func permanentStatus(code int) bool {
	switch code {
	case 401, 403, 404, 408, 429:
		return false
	}
	return code >= 400 && code < 500
}

// rawClip is how much of a reply a reject after the attempt's first keeps.
const rawClip = 256

// clipRaw returns text cut to rawClip bytes (at a UTF-8 boundary) with a
// note saying where the whole reply is.
func clipRaw(text string) string {
	if len(text) <= rawClip {
		return text
	}
	cut := rawClip
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + fmt.Sprintf(" … [%d bytes; the whole reply is in this attempt's first reject]", len(text))
}

// timedOut reports whether err is a request that ran past its own bound
// (llm.Request.Timeout: the context deadline, or the transport's timeout),
// as opposed to a refusal, an error answer or a cancelled run.
func timedOut(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
