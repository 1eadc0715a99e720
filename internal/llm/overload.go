package llm

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/hiro-dev/hiro/internal/config"
)

// Option configures New.
type Option func(*Client)

// WithOverload sets the retry policy for overload answers (HTTP 429 and
// 503): see config.Overload. Without it a client does not retry at all.
func WithOverload(o config.Overload) Option {
	return func(c *Client) { c.overload = o }
}

// IsOverload reports whether status says the server is busy rather than
// broken: 429 Too Many Requests or 503 Service Unavailable.
func IsOverload(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable
}

// Stats are a client's counters since it was made, safe to read while
// requests run. Sent = Completed + Failed + Retried429 + Retried503 (each
// retried answer is one request sent).
type Stats struct {
	// Calls is the number of Chat calls; Sent the HTTP requests they made.
	Calls int64 `json:"calls"`
	Sent  int64 `json:"sent"`
	// Completed calls ended with a reply; Failed calls with an error.
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	// Retried429 and Retried503 count overload answers that were retried.
	Retried429 int64 `json:"retried_429"`
	Retried503 int64 `json:"retried_503"`
	// SucceededAfterRetry counts calls that got a reply after at least one
	// overload retry; OverloadGaveUp calls that failed because the overload
	// bound was reached (max retries or max elapsed).
	SucceededAfterRetry int64 `json:"succeeded_after_retry"`
	OverloadGaveUp      int64 `json:"overload_gave_up"`
	// RetryWaitMS is the total time spent waiting before retries, in
	// milliseconds.
	RetryWaitMS int64 `json:"retry_wait_ms"`
}

// Retries returns Retried429 + Retried503.
func (s Stats) Retries() int64 { return s.Retried429 + s.Retried503 }

// counters is Stats kept with atomics.
type counters struct {
	calls, sent, completed, failed, r429, r503, afterRetry, gaveUp, waitNS atomic.Int64
}

func (k *counters) snapshot() Stats {
	return Stats{Calls: k.calls.Load(), Sent: k.sent.Load(), Completed: k.completed.Load(), Failed: k.failed.Load(),
		Retried429: k.r429.Load(), Retried503: k.r503.Load(), SucceededAfterRetry: k.afterRetry.Load(),
		OverloadGaveUp: k.gaveUp.Load(), RetryWaitMS: k.waitNS.Load() / int64(time.Millisecond)}
}

// Stats returns the client's counters so far.
func (c *Client) Stats() Stats { return c.stats.snapshot() }

// retryAfter parses a Retry-After header: delay-seconds or an HTTP date.
// ok is false when the header is absent or unreadable.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

// withOverloadRetries runs one attempt after another while attempt answers
// an overload status, waiting as the policy says (Retry-After first), and
// fills the reply's and the error's retry counts. attempt returns the
// reply, the error, and the answer's Retry-After when it gave one.
func (c *Client) withOverloadRetries(ctx context.Context, attempt func() (*Reply, time.Duration, bool, error)) (*Reply, error) {
	c.stats.calls.Add(1)
	o := c.overload
	var (
		last    *Reply
		lastErr error
		retries int
		waited  time.Duration
	)
	op := func() (*Reply, error) {
		c.stats.sent.Add(1)
		r, ra, hasRA, err := attempt()
		last, lastErr = r, err
		var ae *APIError
		if err == nil || !errors.As(err, &ae) || !IsOverload(ae.StatusCode) || o.MaxRetries <= 0 {
			return r, backoff.Permanent(errDone)
		}
		if hasRA {
			return r, &backoff.RetryAfterError{Duration: ra}
		}
		return r, errOverload
	}
	var opts []backoff.RetryOption
	if o.MaxRetries > 0 {
		eb := backoff.NewExponentialBackOff()
		eb.InitialInterval = o.InitialInterval.Duration
		eb.MaxInterval = o.MaxInterval.Duration
		eb.Multiplier = o.Multiplier
		opts = append(opts, backoff.WithBackOff(eb),
			backoff.WithMaxTries(uint(o.MaxRetries)+1),
			backoff.WithMaxElapsedTime(o.MaxElapsed.Duration),
			backoff.WithNotify(func(_ error, d time.Duration) {
				var ae *APIError
				if errors.As(lastErr, &ae) && ae.StatusCode == http.StatusTooManyRequests {
					c.stats.r429.Add(1)
				} else {
					c.stats.r503.Add(1)
				}
				retries++
				waited += d
				c.stats.waitNS.Add(int64(d))
			}))
	} else {
		opts = append(opts, backoff.WithMaxTries(1))
	}
	_, rerr := backoff.Retry(ctx, op, opts...)
	if last != nil {
		last.Retries, last.RetryWait = retries, waited
	}
	err := lastErr
	if err == nil && rerr != nil && !errors.Is(rerr, errDone) {
		err = rerr
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// Cancelled while waiting to retry: say so, keeping the last answer.
		err = &cancelledError{ctx: ctx.Err(), last: err}
	}
	var ae *APIError
	if errors.As(err, &ae) {
		ae.Retries = retries
		if IsOverload(ae.StatusCode) && o.MaxRetries > 0 && ctx.Err() == nil {
			ae.GaveUp = true
			c.stats.gaveUp.Add(1)
		}
	}
	if err != nil {
		c.stats.failed.Add(1)
		return last, err
	}
	c.stats.completed.Add(1)
	if retries > 0 {
		c.stats.afterRetry.Add(1)
	}
	return last, nil
}

var (
	// errDone stops the retry loop: success or an error that is not
	// overload (the real error is kept aside).
	errDone = errors.New("done")
	// errOverload asks for another attempt after the computed backoff.
	errOverload = errors.New("overload")
)

// cancelledError is ctx ending while hiro waited to retry an overload
// answer: it is the context's error, and says what the server last said.
type cancelledError struct {
	ctx  error
	last error
}

func (e *cancelledError) Error() string {
	return "chat completion: " + e.ctx.Error() + " while waiting to retry (last answer: " + e.last.Error() + ")"
}

func (e *cancelledError) Unwrap() error { return e.ctx }
