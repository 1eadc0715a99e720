package shadow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/hiro-dev/hiro/internal/stats"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/hiro-dev/hiro/internal/config"
	"github.com/hiro-dev/hiro/internal/extract"
	"github.com/hiro-dev/hiro/internal/llm"
)

// Defaults of Config.
const (
	// DefaultQueueSize bounds the requests waiting to be mirrored; a
	// request that finds the queue full is dropped and counted.
	DefaultQueueSize = 64
	// DefaultWorkers bounds the mirrored requests in flight to the
	// candidate at once.
	DefaultWorkers = 4
	// DefaultMaxPairs ends a run once this many pairs are scored.
	DefaultMaxPairs = 1000
	// MaxPairsLimit is the most pairs a run may keep.
	MaxPairsLimit = 100000
	// DefaultMinPairs is the fewest pairs a run decides on: with fewer
	// its outcome is inconclusive. 149 pairs that all succeed are the
	// fewest whose rate's one-sided 95 % Clopper-Pearson bound reaches
	// 0.98 (0.05^(1/149) = 0.9801), what DefaultMargin asks of a
	// candidate beside a production that never fails; 150 rounds it.
	DefaultMinPairs = 150
	// DefaultMargin is the non-inferiority margin of the gated rates (a
	// fraction: 0.02 is two percentage points).
	DefaultMargin = 0.02
	// DefaultRequestTimeout bounds one mirrored request.
	DefaultRequestTimeout = 2 * time.Minute
	// MaxCapture bounds the bytes of a reply kept for scoring (each side);
	// a production reply over it is not mirrored (counted as too large),
	// a candidate reply over it is scored as cut.
	MaxCapture = 1 << 20
)

// Config is one shadow run's settings (the control command's body).
type Config struct {
	// Share is the fraction of production's chat and completion requests
	// mirrored, in (0, 1].
	Share float64 `json:"share"`
	// MaxPairs ends the run once this many pairs are scored (0:
	// DefaultMaxPairs); For ends it after this long (0: no time bound).
	MaxPairs int             `json:"max_pairs,omitempty"`
	For      config.Duration `json:"for,omitempty"`
	// MinPairs and Margin decide the outcome (0: the defaults).
	MinPairs int     `json:"min_pairs,omitempty"`
	Margin   float64 `json:"margin,omitempty"`
	// QueueSize and Workers bound what the mirror holds and sends (0:
	// the defaults).
	QueueSize int `json:"queue_size,omitempty"`
	Workers   int `json:"workers,omitempty"`
	// RequestTimeout bounds one mirrored request (0: the default).
	RequestTimeout config.Duration `json:"request_timeout,omitempty"`
	// IdleWait bounds how long the mirror's work waits for a moment
	// without a client request in flight in the router (0: DefaultIdleWait;
	// see idleGate). Only a router's run waits (StartWith's busy).
	IdleWait config.Duration `json:"idle_wait,omitempty"`
}

// Fill sets the defaults and checks the values; errors name the setting
// and say what to use.
func (c *Config) Fill() error {
	if !(c.Share > 0 && c.Share <= 1) {
		return fmt.Errorf("shadow share %v: use a fraction in (0, 1], e.g. 0.1 for 10 %% of production's requests", c.Share)
	}
	if c.MaxPairs == 0 {
		c.MaxPairs = DefaultMaxPairs
	}
	if c.MaxPairs < 0 || c.MaxPairs > MaxPairsLimit {
		return fmt.Errorf("shadow max_pairs %d: use 1 to %d", c.MaxPairs, MaxPairsLimit)
	}
	if c.MinPairs == 0 {
		c.MinPairs = DefaultMinPairs
	}
	// A run that ends before its minimum can only be inconclusive: say so
	// before it starts rather than lower the minimum to fit.
	if least := stats.MinDocuments(stats.DefaultConfidence); c.MinPairs < least {
		return fmt.Errorf("shadow min_pairs %d: use at least %d (fewer pairs cannot decide anything at %.0f %%)", c.MinPairs, least, 100*stats.DefaultConfidence)
	}
	if c.MinPairs > c.MaxPairs {
		return fmt.Errorf("shadow max_pairs %d is below min_pairs %d: the run would end before it could decide; raise max_pairs to at least %d, or lower min_pairs (at least %d)",
			c.MaxPairs, c.MinPairs, c.MinPairs, stats.MinDocuments(stats.DefaultConfidence))
	}
	if c.Margin == 0 {
		c.Margin = DefaultMargin
	}
	if !(c.Margin > 0 && c.Margin < 1) {
		return fmt.Errorf("shadow margin %v: use a fraction in (0, 1), e.g. 0.02", c.Margin)
	}
	if c.For.Duration < 0 {
		return fmt.Errorf("shadow for %s: use a positive duration, or none", c.For.Duration)
	}
	if c.QueueSize == 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.QueueSize < 1 || c.QueueSize > 4096 || c.Workers < 1 || c.Workers > 64 {
		return fmt.Errorf("shadow queue_size %d, workers %d: use 1 to 4096 and 1 to 64", c.QueueSize, c.Workers)
	}
	if c.RequestTimeout.Duration == 0 {
		c.RequestTimeout.Duration = DefaultRequestTimeout
	}
	if c.IdleWait.Duration == 0 {
		c.IdleWait.Duration = DefaultIdleWait
	}
	if c.IdleWait.Duration < 0 || c.IdleWait.Duration > time.Minute {
		return fmt.Errorf("shadow idle_wait %s: use a positive duration up to 1m (default %s)", c.IdleWait.Duration, DefaultIdleWait)
	}
	return nil
}

// Remote reports whether the profile's server is not on this machine:
// mirroring to it sends users' prompts off the machine.
func Remote(p *config.Profile) bool {
	u, err := url.Parse(p.BaseURL)
	return err != nil || !llm.IsLoopbackHost(u.Hostname())
}

// ErrRemoteNotAllowed is returned by Start for a remote candidate whose
// profile did not opt in (shadow_remote).
var ErrRemoteNotAllowed = errors.New("shadow traffic to a remote candidate is not allowed")

// Job is one production request to mirror, with production's answer.
// The router fills it: Body is a copy of the request as sent to
// production; Capture appends production's reply as it passes; Done
// records its end.
type Job struct {
	Route  string
	Body   []byte
	Stream bool

	bodyBox  *[]byte // the bodyBufs entry Body was lent from, if any
	bodyBufd bool    // Body is a buffer NewJob lent or made (given back by releaseBody)

	status   int
	ttfb     time.Duration
	latency  time.Duration
	size     int
	reply    []byte  // a JSON answer as it came; a stream's partial last line
	replyBox *[]byte // the replyBufs entry reply was lent from, if any
	streamed reply   // a stream's text, finish_reason and usage, read line by line
	tooLarge bool
}

// Capture takes b, the next piece of production's reply. A JSON answer
// is kept as it comes; a stream (SSE) is read line by line as it passes
// and only its text, finish_reason and usage are kept (an event is about
// 50 times its text). Past MaxCapture bytes the job is marked too large
// and keeps nothing.
func (j *Job) Capture(b []byte) {
	if j.tooLarge {
		return
	}
	if j.size += len(b); j.size > MaxCapture {
		j.tooLarge, j.reply, j.streamed = true, nil, reply{}
		return
	}
	if !j.Stream {
		if j.reply == nil {
			// A buffer lent by replyBufs: no allocation for a typical
			// answer (a few hundred bytes) on the client's path.
			j.lendReply(len(b))
		}
		j.reply = append(j.reply, b...)
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			j.reply = append(j.reply, b...)
			return
		}
		line := b[:i]
		if len(j.reply) > 0 {
			line = append(j.reply, line...)
			j.reply = j.reply[:0]
		}
		j.streamed.event(line)
		b = b[i+1:]
	}
}

// NewJob is a Job for a production request of route with body: a copy
// of body in a buffer lent by bodyBufs (given back once the job is scored
// or dropped: no allocation on the client's path for a typical request),
// or, when owned, body itself (the caller's own copy, which nothing
// writes after: production's transport and the mirror only read it).
func NewJob(route string, body []byte, stream, owned bool) *Job {
	j := &Job{Route: route, Body: body, Stream: stream}
	if owned {
		return j
	}
	j.bodyBufd = true
	if p, ok := bodyBufs.Get().(*[]byte); ok && cap(*p) >= len(body) {
		j.bodyBox, j.Body = p, append((*p)[:0], body...)
		return j
	}
	j.Body = append(make([]byte, 0, max(len(body), 2<<10)), body...)
	return j
}

// bodyBufs lends the buffers NewJob copies request bodies into (*[]byte);
// one over maxPooledReply is not kept.
var bodyBufs sync.Pool

// releaseBody gives j's body buffer back when NewJob lent or made it
// (nothing may read j.Body after).
func (j *Job) releaseBody() {
	if !j.bodyBufd {
		return
	}
	if b := j.Body; cap(b) > 0 && cap(b) <= maxPooledReply {
		if j.bodyBox == nil {
			j.bodyBox = new([]byte)
		}
		*j.bodyBox = b[:0]
		bodyBufs.Put(j.bodyBox)
	}
	j.bodyBox, j.Body, j.bodyBufd = nil, nil, false
}

// replyBufs lends the buffers production's JSON answers are captured in
// (*[]byte, length 0); pairOf gives them back once the answer is parsed.
// A buffer over maxPooledReply is not kept: the pool would hold a 1 MiB
// buffer for a rare large answer.
var replyBufs sync.Pool

const maxPooledReply = 64 << 10

// lendReply sets j.reply to a lent buffer for at least n bytes.
func (j *Job) lendReply(n int) {
	if p, ok := replyBufs.Get().(*[]byte); ok && cap(*p) >= n {
		j.replyBox, j.reply = p, (*p)[:0]
		return
	}
	j.replyBox, j.reply = nil, make([]byte, 0, max(n, 2<<10))
}

// releaseReply gives j's captured answer buffer back (nothing may read
// it after).
func (j *Job) releaseReply() {
	if b := j.reply; cap(b) > 0 && cap(b) <= maxPooledReply {
		if j.replyBox == nil {
			j.replyBox = new([]byte)
		}
		*j.replyBox = b[:0]
		replyBufs.Put(j.replyBox)
	}
	j.replyBox, j.reply = nil, nil
}

// Done records production's status, time to the first body byte and
// end-to-end latency.
func (j *Job) Done(status int, ttfb, latency time.Duration) {
	j.status, j.ttfb, j.latency = status, ttfb, latency
}

// Mirror is one shadow run. Sample and Offer are the router's hot path:
// an atomic load and a random draw, and a non-blocking channel send.
type Mirror struct {
	cfg        Config
	cand       *config.Profile
	production string
	remote     bool
	hc         *http.Client
	oneShot    bool // hc is the profile's own client: no request reused (sendBuf)
	base       *url.URL
	validator  *extract.Validator
	queue      chan *Job
	// work hands a job from the dispatcher to a free worker; held is 1
	// while the dispatcher holds one waiting for a worker.
	work chan *Job
	held atomic.Int64
	// gate holds the workers' CPU work until the router is idle (nil:
	// no gate; StartWith's busy).
	gate *idleGate

	active atomic.Bool
	// The account (evidence.ShadowResult): every sampled request is
	// counted in one of mirrored, dropped, tooLarge, abandoned, unsent,
	// the queue, or pending (production's answer under way: sampled,
	// not yet offered nor abandoned).
	seen, sampled, dropped, tooLarge, mirrored, abandoned, unsent, pending atomic.Int64
	// outstanding counts the sampled requests not yet scored or dropped
	// (their bodies and replies are held): at most QueueSize + Workers.
	outstanding atomic.Int64

	mu      sync.Mutex
	pairs   pairChunks
	started time.Time
	endedAt time.Time
	ended   string
	timer   *time.Timer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	done   chan struct{}
	// over is set once the run ended and its goroutines returned; final
	// is the account then (Result), under finalMu.
	over    atomic.Bool
	finalMu sync.Mutex
	final   *Result
}

// Start begins a run mirroring to cand (a running profile: managed by
// hiro or not) for production (its profile name, for the account). A
// remote candidate needs its profile's shadow_remote (else
// ErrRemoteNotAllowed). The candidate's own key and CA are used
// (llm.HTTPClient). Stop or Result after it; the run also ends by itself
// at cfg.MaxPairs pairs or after cfg.For.
func Start(cfg Config, cand *config.Profile, production string) (*Mirror, error) {
	return StartWith(cfg, cand, production, nil, nil)
}

// StartWith is Start with the transport the mirrored requests go
// through: tr must attach the candidate profile's key itself (the
// router's own upstream transport does, with the key of its route for
// the candidate: one transport, no reader and writer goroutines per
// connection beside the clients' requests); nil: the profile's own
// client (llm.HTTPClient), as Start.
//
// busy, when not nil, is the router's count of client requests in
// flight: a worker then sends a request and scores a pair only while it
// is 0 (the router calls Idle when it falls to 0), or after waiting
// cfg.IdleWait for that (see idleGate); nil: no waiting, as Start.
func StartWith(cfg Config, cand *config.Profile, production string, tr http.RoundTripper, busy func() int64) (*Mirror, error) {
	if err := cfg.Fill(); err != nil {
		return nil, err
	}
	remote := Remote(cand)
	if remote && !cand.ShadowRemote {
		return nil, fmt.Errorf("%w: backend %s (%s) is not on this machine and mirroring sends users' prompts to it; set shadow_remote = true in [backends.%s] to allow it", ErrRemoteNotAllowed, cand.Name, cand.BaseURL, cand.Name)
	}
	base, err := url.Parse(cand.BaseURL)
	if err != nil || base.Host == "" {
		return nil, fmt.Errorf("backend %s: base_url %q is not a URL", cand.Name, cand.BaseURL)
	}
	hc := &http.Client{Transport: tr}
	if tr == nil {
		if hc, err = llm.HTTPClient(cand); err != nil {
			return nil, err
		}
	}
	v, err := extract.NewValidator()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Mirror{cfg: cfg, cand: cand, production: production, remote: remote, hc: hc, oneShot: tr == nil, base: base, validator: v,
		queue: make(chan *Job, cfg.QueueSize), work: make(chan *Job), started: time.Now(), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if busy != nil {
		m.gate = newIdleGate(busy, func() bool { return 2*len(m.queue) >= cap(m.queue) }, cfg.IdleWait.Duration)
	}
	m.active.Store(true)
	m.wg.Add(1 + cfg.Workers)
	go m.dispatch()
	for range cfg.Workers {
		go m.worker()
	}
	go func() {
		m.wg.Wait()
		m.over.Store(true)
	}()
	if cfg.For.Duration > 0 {
		m.timer = time.AfterFunc(cfg.For.Duration, func() { m.end("duration") })
	}
	return m, nil
}

// Candidate is the candidate profile's name.
func (m *Mirror) Candidate() string { return m.cand.Name }

// Remote reports whether the candidate is not on this machine.
func (m *Mirror) Remote() bool { return m.remote }

// Sample reports whether this production request is to be mirrored: the
// run is active, a draw falls within the share, and fewer than
// QueueSize + Workers sampled requests are held (else it is dropped and
// counted: what the mirror holds is bounded, however many requests are
// in flight). A sampled request is then either Offered or Abandoned.
func (m *Mirror) Sample() bool {
	if !m.active.Load() {
		return false
	}
	m.seen.Add(1)
	if m.cfg.Share < 1 && rand.Float64() >= m.cfg.Share {
		return false
	}
	if m.outstanding.Add(1) > int64(m.cfg.QueueSize+m.cfg.Workers) {
		m.outstanding.Add(-1)
		m.dropped.Add(1)
		m.sampled.Add(1)
		return false
	}
	m.pending.Add(1)
	m.sampled.Add(1)
	return true
}

// Abandon releases a sampled request that will not be offered (its
// client left, or the router's stop cut it), counted as abandoned.
func (m *Mirror) Abandon(j *Job) {
	j.releaseBody()
	m.abandoned.Add(1)
	m.pending.Add(-1)
	m.outstanding.Add(-1)
}

// Offer queues j (production's answer complete) without waiting: a full
// queue drops it (counted), as does a reply over MaxCapture; after the
// run's end it is counted unsent. It never blocks the caller.
func (m *Mirror) Offer(j *Job) {
	switch {
	case !m.active.Load():
		m.unsent.Add(1)
	case j.tooLarge:
		m.tooLarge.Add(1)
	default:
		select {
		case m.queue <- j:
			m.pending.Add(-1)
			return
		default:
			m.dropped.Add(1)
		}
	}
	j.releaseBody()
	m.pending.Add(-1)
	m.outstanding.Add(-1)
}

// Done is closed when the run has ended.
func (m *Mirror) Done() <-chan struct{} { return m.done }

// Stop ends the run (reason "command" unless it ended already), waits
// for the workers and returns the account.
func (m *Mirror) Stop() *Result {
	m.end("command")
	m.wg.Wait()
	m.over.Store(true)
	return m.Result()
}

// end ends the run once: no more sampling, in-flight mirrors cancelled
// (not scored), the queue abandoned.
func (m *Mirror) end(reason string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ended != "" {
		return
	}
	m.ended, m.endedAt = reason, time.Now()
	m.active.Store(false)
	if m.timer != nil {
		m.timer.Stop()
	}
	m.cancel()
	close(m.done)
}

// PollInterval is how often the mirror's dispatcher looks at the queue:
// an offered request waits at most this long (and for a free worker)
// before it is sent. Offer only puts the job in a buffered channel that
// no goroutine waits on, so the client's path never wakes one (waking a
// parked worker readies it on the client's own processor and may start
// an idle thread: microseconds on the primary path at share 1).
const PollInterval = time.Millisecond

// dispatch hands the queued jobs to free workers every PollInterval
// until the run ends; what is still queued then is counted unsent.
func (m *Mirror) dispatch() {
	defer m.wg.Done()
	t := time.NewTicker(PollInterval)
	defer t.Stop()
	unsent := func() {
		m.unsent.Add(1)
		m.outstanding.Add(-1)
	}
	for {
		select {
		case <-m.ctx.Done():
			for {
				select {
				case <-m.queue:
					unsent()
				default:
					return
				}
			}
		case <-t.C:
		}
		m.gate.kick()
		for more := true; more; {
			select {
			case j := <-m.queue:
				m.held.Store(1)
			hand:
				for {
					select {
					case m.work <- j:
						break hand
					case <-t.C:
						// Every worker holds a job (at the idle gate,
						// maybe): a backlog lets one go on.
						m.gate.kick()
					case <-m.ctx.Done():
						unsent()
						more = false
						break hand
					}
				}
				m.held.Store(0)
			default:
				more = false
			}
		}
	}
}

// worker mirrors and scores the jobs the dispatcher hands it.
func (m *Mirror) worker() {
	defer m.wg.Done()
	buf := sendBuf{oneShot: m.oneShot}
	defer buf.close()
	if m.gate != nil {
		buf.idle = time.NewTimer(time.Hour) // the gate's bound on a wait, reused
		buf.idle.Stop()
	}
	for {
		select {
		case <-m.ctx.Done():
			return
		case j := <-m.work:
			p, ok := m.mirror(j, &buf)
			j.releaseReply()
			j.releaseBody()
			m.outstanding.Add(-1)
			if !ok {
				continue
			}
			m.mu.Lock()
			if m.ended == "" {
				m.pairs.add(p)
				if m.pairs.n >= m.cfg.MaxPairs {
					m.mu.Unlock()
					m.end("max_pairs")
					continue
				}
			}
			m.mu.Unlock()
		}
	}
}

// pairChunks holds a run's scored pairs in chunks, each filled before
// the next is made: a growing run never copies what it holds (one slice
// doubling as it grew allocated about twice each pair's 456 bytes, and
// copied up to MaxPairsLimit pairs, 45 MB, beside the clients' requests).
type pairChunks struct {
	chunks [][]pair
	n      int
}

// Chunk sizes: the next chunk holds as many pairs as all before it,
// at least minPairChunk and at most maxPairChunk.
const minPairChunk, maxPairChunk = 64, 4096

func (c *pairChunks) add(p pair) {
	if k := len(c.chunks); k == 0 || len(c.chunks[k-1]) == cap(c.chunks[k-1]) {
		c.chunks = append(c.chunks, make([]pair, 0, min(maxPairChunk, max(minPairChunk, c.n))))
	}
	last := &c.chunks[len(c.chunks)-1]
	*last = append(*last, p)
	c.n++
}

// all is a copy of the pairs, in the order they were added.
func (c *pairChunks) all() []pair {
	out := make([]pair, 0, c.n)
	for _, ch := range c.chunks {
		out = append(out, ch...)
	}
	return out
}

// side is one side's answer as measured.
type side struct {
	status  int
	ttfb    time.Duration
	latency time.Duration
	bytes   int
	cut     bool
	err     string
	reply   reply
}

func (s *side) ok() bool { return s.status/100 == 2 && s.err == "" && !s.cut }

// mirror sends j to the candidate and scores the pair; ok is false when
// the run ended meanwhile (the pair is not counted).
// With a gate, the send and the scoring each wait for the router to be
// idle (the candidate's answer is read as it comes: its latency is not
// the gate's).
func (m *Mirror) mirror(j *Job, buf *sendBuf) (pair, bool) {
	m.mirrored.Add(1)
	m.gate.await(m.ctx, buf.idle)
	cand := m.send(j, buf)
	if m.ctx.Err() != nil {
		return pair{}, false
	}
	m.gate.await(m.ctx, buf.idle)
	if m.ctx.Err() != nil {
		return pair{}, false
	}
	return m.pairOf(j, cand), true
}

// pairOf scores j (production's answer captured) against cand, the
// candidate's answer as send read it.
func (m *Mirror) pairOf(j *Job, cand side) pair {
	j.streamed.end()
	prod := side{status: j.status, ttfb: j.ttfb, latency: j.latency, bytes: j.size, reply: j.streamed}
	if !j.Stream {
		prod.reply = parseReply(j.reply, false)
		// Its text points into the capture buffer: given back once scored.
		defer j.releaseReply()
	}
	return m.score(j, prod, cand)
}

// sendBuf is a worker's buffers for the candidate's replies, reused from
// one mirrored request to the next (fewer allocations: less garbage
// collection work competing with the primary path).
type sendBuf struct {
	chunk []byte
	sink  replySink
	urls  map[string]*url.URL // by route
	// The request with the candidate's model (withModel), and that
	// model's JSON value (for the model named).
	rewritten        []byte
	model, modelJSON string

	// The worker's request to the candidate, reused from one mirrored
	// request to the next (the transport is done with it once the reply
	// is read and closed): its body reader, headers and GetBody are made
	// once. Its context ctx lives until a request runs past the timeout
	// (timer cancels it with context.DeadlineExceeded as the cause), or
	// the run ends; then the next request makes both again.
	// oneShot: a request is made for each mirrored request (net/http's
	// transport, which may still write a body after the reply came).
	oneShot bool
	req     *http.Request
	rd      *bytes.Reader
	rc      io.ReadCloser // rd, as the request's body
	body    []byte        // what rd reads, for GetBody
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer

	idle *time.Timer // the idle gate's bound on one wait (nil: no gate)
}

// request is the worker's request for body (a stream's when stream),
// its context armed to end after timeout; disarm must be called once the
// reply is read and closed. The request, its context and timer are made
// again only after one ran past the timeout.
func (sb *sendBuf) request(parent context.Context, u *url.URL, body []byte, stream bool, timeout time.Duration) (*http.Request, error) {
	ctx := sb.arm(parent, timeout)
	if sb.req == nil {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", nil)
		if err != nil {
			sb.disarm()
			return nil, err
		}
		rd := new(bytes.Reader)
		rc := io.NopCloser(rd)
		req.GetBody = func() (io.ReadCloser, error) {
			rd.Reset(sb.body)
			return rc, nil
		}
		req.Header["Content-Type"] = jsonType
		sb.req, sb.rd, sb.rc = req, rd, rc
	}
	req := sb.req
	sb.body = body
	sb.rd.Reset(body)
	req.ContentLength = int64(len(body))
	req.Body = sb.rc
	req.URL, req.Host = u, u.Host
	if stream {
		req.Header["Accept"] = eventStreamType
	} else {
		delete(req.Header, "Accept")
	}
	return req, nil
}

// arm returns the worker's request context, armed to end after timeout
// (made again after one ran past it); disarm must be called once the
// reply is read and closed.
func (sb *sendBuf) arm(parent context.Context, timeout time.Duration) context.Context {
	if sb.ctx == nil {
		ctx, cancel := context.WithCancelCause(parent)
		sb.ctx, sb.cancel = ctx, cancel
		sb.timer = time.AfterFunc(timeout, func() { cancel(context.DeadlineExceeded) })
	} else {
		sb.timer.Reset(timeout)
	}
	return sb.ctx
}

// disarm stops the request's timer; a request that ran past it (its
// context is ended) is made again for the next one.
func (sb *sendBuf) disarm() {
	if sb.timer != nil && (!sb.timer.Stop() || sb.oneShot) {
		sb.cancel(context.Canceled)
		sb.req, sb.rd, sb.rc, sb.ctx, sb.cancel, sb.timer = nil, nil, nil, nil, nil, nil
	}
}

// close ends the worker's request context.
func (sb *sendBuf) close() {
	if sb.cancel != nil {
		sb.timer.Stop()
		sb.cancel(context.Canceled)
	}
}

// withModel is body with its "model" set to model, as sjson.SetBytes
// sets it (the same bytes: TestWithModelAsSjson), written into the
// worker's buffer (valid until its next send) instead of a new one per
// request; cur is body's "model" as gjson read it. A body whose model
// gjson did not place (none) goes through sjson, and so does every body
// of a oneShot worker (net/http's transport may still be writing one
// after its reply came).
func (sb *sendBuf) withModel(body []byte, cur gjson.Result, model string) ([]byte, error) {
	if sb.oneShot || !cur.Exists() || cur.Index <= 0 || cur.Index+len(cur.Raw) > len(body) || string(body[cur.Index:cur.Index+len(cur.Raw)]) != cur.Raw {
		return sjson.SetBytes(body, "model", model)
	}
	if sb.modelJSON == "" || sb.model != model {
		b, err := sjson.SetBytes([]byte(`{"model":null}`), "model", model)
		if err != nil {
			return nil, err
		}
		sb.model, sb.modelJSON = model, gjson.GetBytes(b, "model").Raw
	}
	out := append(sb.rewritten[:0], body[:cur.Index]...)
	out = append(out, sb.modelJSON...)
	out = append(out, body[cur.Index+len(cur.Raw):]...)
	sb.rewritten = out
	return out, nil
}

// Header values of a mirrored request (read only: shared by all).
var (
	jsonType        = []string{"application/json"}
	eventStreamType = []string{"text/event-stream"}
)

// url is route under base, parsed once per worker (a transport does not
// change a request's URL).
func (sb *sendBuf) url(base *url.URL, route string) (*url.URL, error) {
	if u := sb.urls[route]; u != nil {
		return u, nil
	}
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + route
	p, err := url.Parse(u.String())
	if err != nil {
		return nil, err
	}
	p.Host = strings.TrimSuffix(p.Host, ":") // as http.NewRequest (removeEmptyPort)
	if sb.urls == nil {
		sb.urls = map[string]*url.URL{}
	}
	sb.urls[route] = p
	return p, nil
}

// send posts j's body to the candidate: the route under its base URL, its
// model in "model", only Content-Type and Accept as headers (the client's
// headers, its key among them, are never sent); the profile's key is
// attached by its transport.
func (m *Mirror) send(j *Job, sb *sendBuf) side {
	var s side
	body := j.Body
	// Production's request names production's model; one that already
	// names the candidate's is sent as it is.
	if cur := gjson.Get(view(body), "model"); cur.Type != gjson.String || cur.Str != m.cand.Model {
		var err error
		if body, err = sb.withModel(body, cur, m.cand.Model); err != nil {
			s.err = "model field: " + err.Error()
			return s
		}
	}
	u, err := sb.url(m.base, j.Route)
	if err != nil {
		s.err = err.Error()
		return s
	}
	// The worker's request, reused (sendBuf.request): as
	// http.NewRequestWithContext makes it for u, without parsing u or
	// allocating the request, its headers and its body's reader again.
	req, err := sb.request(m.ctx, u, body, j.Stream, m.cfg.RequestTimeout.Duration)
	if err != nil {
		s.err = err.Error()
		return s
	}
	defer sb.disarm()
	t0 := time.Now()
	resp, err := m.roundTrip(req, body)
	if err != nil {
		s.err = errClass(err)
		s.latency = time.Since(t0)
		return s
	}
	defer resp.Body.Close()
	s.status = resp.StatusCode
	readReply(&s, resp.Body, j.Stream, sb, t0)
	return s
}

// replySink takes the candidate's answer's body as it is read: its time
// to first byte (from t0, the request's start), its size, and up to
// MaxCapture bytes of it (past them: cut).
type replySink struct {
	buf   bytes.Buffer
	t0    time.Time
	ttfb  time.Duration
	bytes int
	cut   bool
}

func (r *replySink) reset(t0 time.Time) {
	r.buf.Reset()
	r.t0, r.ttfb, r.bytes, r.cut = t0, 0, 0, false
}

// Write keeps p (never fails).
func (r *replySink) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if r.ttfb == 0 {
		r.ttfb = time.Since(r.t0)
	}
	r.bytes += len(p)
	if r.buf.Len()+len(p) <= MaxCapture {
		r.buf.Write(p)
	} else {
		r.cut = true
	}
	return len(p), nil
}

// into sets s's time to first byte, size, cut and reply (parsed from the
// buffer in place: valid until the sink's next reset).
func (r *replySink) into(s *side, stream bool) {
	s.ttfb, s.bytes, s.cut = r.ttfb, r.bytes, r.cut
	s.reply = parseReply(r.buf.Bytes(), stream)
}

// readReply reads the candidate's answer from body (its request sent at
// t0) into s: its time to first byte, size and latency, and its reply
// (kept up to MaxCapture bytes; past it s.cut).
func readReply(s *side, body io.Reader, stream bool, sb *sendBuf, t0 time.Time) {
	if sb.chunk == nil {
		sb.chunk = make([]byte, 32<<10)
	}
	chunk, sink := sb.chunk, &sb.sink
	sink.reset(t0)
	for {
		n, err := body.Read(chunk)
		sink.Write(chunk[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			s.err = errClass(err)
			break
		}
	}
	s.latency = time.Since(t0)
	sink.into(s, stream)
}

// roundTrip sends req (its body: body) through the client's transport
// itself: http.Client copies the request's headers for redirects it may
// follow, a tenth of the mirror's CPU per pair. An answer that is a
// redirect is closed and the request sent again through the client,
// which follows it as it always did.
func (m *Mirror) roundTrip(req *http.Request, body []byte) (*http.Response, error) {
	rt := m.hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		again, err := http.NewRequestWithContext(req.Context(), req.Method, req.URL.String(), bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		again.Header = req.Header
		return m.hc.Do(again)
	}
	return resp, nil
}

// errClass names a transport error without its text (which may hold
// addresses): timeout, canceled, or connection.
func errClass(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "connection error"
}
