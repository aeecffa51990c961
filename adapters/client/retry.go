package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryPolicy bounds how a request is retried. Zero fields take the
// defaults named on them.
//
// What is retried: requests without effect or whose repetition has the same
// effect (GET, DELETE, and the deprecated search, a read sent as POST) on a
// 503 or 429 answer and on any connection error (refused, reset, a response
// cut off); the lifecycle completion, a write, only when the connection
// could not be opened, so the request never reached the server. The wait
// before a retry is the answer's Retry-After (seconds or an HTTP date) when
// it has one, else an exponential backoff with jitter. A retry whose wait
// would end after MaxElapsed, or after the context's deadline, is not made:
// the last error is returned at once.
//
// A DELETE whose answer was lost and which is retried after the deletion
// took effect is answered 404: the error is then flagadmin.ErrNotFound.
type RetryPolicy struct {
	// MaxAttempts bounds the attempts of one request, the first included
	// (default 4; 1 turns retries off).
	MaxAttempts int
	// MaxElapsed bounds the time from the first attempt to the start of
	// the last one, waits included (default 30s).
	MaxElapsed time.Duration
	// BaseDelay is the backoff before the first retry, doubled for each
	// further one (default 100ms).
	BaseDelay time.Duration
	// MaxDelay caps one backoff (default 5s). It does not shorten a
	// Retry-After: the server's wait is honoured or the retry is not made.
	MaxDelay time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 4
	}
	if p.MaxElapsed <= 0 {
		p.MaxElapsed = 30 * time.Second
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = 100 * time.Millisecond
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 5 * time.Second
	}
	return p
}

// backoff returns the wait before retry number n (1 for the first): the
// base doubled n-1 times, capped, with "equal jitter" (half fixed, half random).
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	half := d / 2
	return half + rand.N(half+1)
}

// connectionError is a request that got no complete response: the
// connection failed, was reset, or the response body was cut off.
type connectionError struct {
	op  string
	err error
	// unsent: the connection could not be opened, so no byte of the
	// request reached the server.
	unsent bool
}

func (e *connectionError) Error() string { return "client: " + e.op + ": " + e.err.Error() }
func (e *connectionError) Unwrap() error { return e.err }

// isDialError reports whether err is a failure to open the connection
// (refused, unreachable, DNS), after which nothing was sent.
func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// retryWait decides whether err, the outcome of an attempt of req, may be
// retried, and how long to wait first (retry is the 1-based retry number).
func (p RetryPolicy) retryWait(req request, err error, retry int, now time.Time) (time.Duration, bool) {
	var ce *connectionError
	var e *Error
	switch {
	case errors.As(err, &ce):
		if req.retry == retrySafe || ce.unsent {
			return p.backoff(retry), true
		}
	case errors.As(err, &e) && (e.Status == http.StatusServiceUnavailable || e.Status == http.StatusTooManyRequests):
		if req.retry != retrySafe {
			return 0, false
		}
		if d, ok := parseRetryAfter(e.retryAfter, now); ok {
			return d, true
		}
		return p.backoff(retry), true
	}
	return 0, false
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP
// date; a date in the past is no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// exchange sends req, retrying as the Client's RetryPolicy allows, and
// returns the first successful response (see attempt) or the last error.
func (c *Client) exchange(ctx context.Context, req request, stream bool) (*http.Response, []byte, error) {
	p := c.retry.withDefaults()
	start := time.Now()
	for attempt := 1; ; attempt++ {
		resp, body, err := c.attempt(ctx, req, stream)
		if err == nil {
			return resp, body, nil
		}
		if ctx.Err() != nil || attempt >= p.MaxAttempts {
			return nil, nil, err
		}
		now := time.Now()
		wait, ok := p.retryWait(req, err, attempt, now)
		if !ok || now.Add(wait).Sub(start) > p.MaxElapsed {
			return nil, nil, err
		}
		if deadline, has := ctx.Deadline(); has && now.Add(wait).After(deadline) {
			return nil, nil, err
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, nil, err
		}
	}
}

// sleep waits for d or until ctx is done, whose error it returns.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
