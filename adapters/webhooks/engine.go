package webhooks

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/flagadmin/flagadmin/adapters/eventjson"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Store is what the engine needs of storage: the event log, read in id
// order (flagadmin.Store.ExportEvents), and the sinks' delivery state.
// bunstore.Store and memstore.Store are both.
type Store interface {
	ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error
	flagadmin.SinkStore
}

// Defaults of Options: the delivery docs/streams-and-webhooks.md describes
// ("Delivery guarantees").
const (
	DefaultLeaseTTL       = 20 * time.Second
	DefaultRenewEvery     = 5 * time.Second
	DefaultPollEvery      = time.Second
	DefaultRequestTimeout = 10 * time.Second
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 5 * time.Minute
)

// Options tune an Engine. The zero value is the defaults above; tests shorten
// the times.
type Options struct {
	// Holder identifies this engine in the sinks' leases; default
	// "<hostname>-<pid>-<random>". Two engines must never share one.
	Holder string
	// LeaseTTL is how long a lease lasts without renewal (default 20 s):
	// how long another server waits before it takes over from a dead one.
	LeaseTTL time.Duration
	// RenewEvery is how often the holder renews its leases, and how often
	// an engine that holds none tries to take it (default 5 s). Takeover
	// after a death takes at most LeaseTTL + RenewEvery.
	RenewEvery time.Duration
	// PollEvery is the longest wait for new events (default 1 s); Notify
	// ends the wait earlier.
	PollEvery time.Duration
	// RequestTimeout bounds one delivery attempt: no complete answer
	// within it is a failure (default 10 s).
	RequestTimeout time.Duration
	// BackoffInitial and BackoffMax: after a failed attempt the engine
	// waits BackoffInitial, doubling after each further failure up to
	// BackoffMax, each wait drawn within ±50 % (defaults 1 s and 5 min).
	// The database being unreachable is retried on the same schedule.
	BackoffInitial, BackoffMax time.Duration
	// Client sends the requests; default an http.Client that does not
	// follow redirects (a 3xx is a failed attempt).
	Client *http.Client
	// Logger receives failed attempts and lease changes; default none.
	Logger *slog.Logger
	// Now is the clock of the leases; default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Holder == "" {
		host, _ := os.Hostname()
		var r [4]byte
		_, _ = rand.Read(r[:])
		o.Holder = host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:])
	}
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&o.LeaseTTL, DefaultLeaseTTL)
	set(&o.RenewEvery, DefaultRenewEvery)
	set(&o.PollEvery, DefaultPollEvery)
	set(&o.RequestTimeout, DefaultRequestTimeout)
	set(&o.BackoffInitial, DefaultBackoffInitial)
	set(&o.BackoffMax, DefaultBackoffMax)
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Engine delivers events to sinks: one goroutine per sink, each holding
// the sink's lease while it delivers. Create it with New, run it with
// Start, end it with Stop. It is safe for concurrent use.
type Engine struct {
	store  Store
	opts   Options
	sinks  []*sink
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// SinkStats is what an engine knows of a sink, for metrics.
type SinkStats struct {
	// Name is the sink's name.
	Name string
	// Holding: this engine holds the sink's lease and delivers for it.
	Holding bool
	// Position is the id of the last event delivered, as this engine last
	// read or wrote it.
	Position int64
	// LagEvents counts the matching events after Position, as of the
	// engine's last read; when LagAtLeast, there may be more (it reads at
	// most flagadmin.ExportBatchSize at a time).
	LagEvents  int64
	LagAtLeast bool
	// OldestPending is the createdAt of the first undelivered event (zero
	// when none): the lag in time is now minus it.
	OldestPending time.Time
	// Attempts counts the failed attempts at the current event.
	Attempts int
	// LastError describes the last failed attempt since the last delivery.
	LastError string
	// Delivered counts the events this engine delivered to the sink.
	Delivered int64
	// Failures counts this engine's failed attempts at the sink, over
	// every event.
	Failures int64
}

// LagSeconds is the age of the oldest undelivered event at now, 0 when
// none is pending.
func (s SinkStats) LagSeconds(now time.Time) float64 {
	if s.OldestPending.IsZero() {
		return 0
	}
	return max(now.Sub(s.OldestPending).Seconds(), 0)
}

// sink is the delivery of one sink.
type sink struct {
	e    *Engine
	def  flagadmin.WebhookSink
	q    flagadmin.EventQuery
	wake chan struct{}
	// registered: the store holds the sink (RegisterSink succeeded).
	registered atomic.Bool

	mu    sync.Mutex
	stats SinkStats
}

// New returns an engine for sinks (validated again here) over store. It
// does nothing until Start.
func New(store Store, sinks []flagadmin.WebhookSink, opts Options) (*Engine, error) {
	if err := flagadmin.ValidateWebhookSinks(sinks); err != nil {
		return nil, err
	}
	opts.defaults()
	e := &Engine{store: store, opts: opts}
	for _, def := range sinks {
		q, err := def.Query()
		if err != nil {
			return nil, err
		}
		e.sinks = append(e.sinks, &sink{e: e, def: def, q: q, wake: make(chan struct{}, 1), stats: SinkStats{Name: def.Name}})
	}
	return e, nil
}

// Holder is the id this engine holds leases under.
func (e *Engine) Holder() string { return e.opts.Holder }

// Register registers the sinks the store does not hold yet: a sink seen
// for the first time starts after the newest event stored at that moment,
// so every event written after Register returns nil is delivered to every
// sink. Start calls it; a server may call it earlier, once its store holds
// the events a new sink should not get and before it accepts writes. It
// makes one attempt per sink and names those that failed.
func (e *Engine) Register(ctx context.Context) error {
	var errs []error
	for _, s := range e.sinks {
		if err := s.register(ctx); err != nil {
			errs = append(errs, fmt.Errorf("register sink %q: %w", s.def.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Start starts delivering, in the background, until Stop. It first
// registers the sinks (Register) before it returns; each sink then waits
// for its lease. Failures of the database are retried in the background
// (a sink that could not register here registers when the database
// answers, and starts after the newest event then): Start itself does not
// fail.
func (e *Engine) Start(ctx context.Context) error {
	if err := e.Register(ctx); err != nil {
		e.opts.Logger.Warn("webhooks: cannot register the sinks now; retrying in the background", "err", err)
	}
	// The sinks run until Stop, not until the end of ctx (which bounds
	// starting only).
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	for _, s := range e.sinks {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			s.run(runCtx)
		}()
	}
	return nil
}

// Stop ends delivery: attempts in flight are abandoned (the next holder
// sends them again), and the leases this engine holds are released so
// that another server takes over at once. It waits for the sinks'
// goroutines, and for the releases at most until ctx ends.
func (e *Engine) Stop(ctx context.Context) error {
	if e.cancel == nil {
		return nil
	}
	e.cancel()
	e.wg.Wait()
	var errs []error
	for _, s := range e.sinks {
		if err := e.store.ReleaseSinkLease(ctx, s.def.Name, e.opts.Holder); err != nil {
			errs = append(errs, fmt.Errorf("release the lease of sink %q: %w", s.def.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Notify tells the engine that new events may have been recorded: sinks
// waiting for events read at once instead of at their next poll. It never
// blocks; connect it to a feed of new events to deliver with less delay.
func (e *Engine) Notify() {
	for _, s := range e.sinks {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Stats returns each sink's statistics, in the order of the configuration.
func (e *Engine) Stats() []SinkStats {
	out := make([]SinkStats, len(e.sinks))
	for i, s := range e.sinks {
		s.mu.Lock()
		out[i] = s.stats
		s.mu.Unlock()
	}
	return out
}

// retrySchedule is the wait before each retry: BackoffInitial, doubling
// to BackoffMax, each drawn within ±50 % (but never above BackoffMax),
// forever.
type retrySchedule struct {
	b   *backoff.ExponentialBackOff
	max time.Duration
}

// newBackoff returns the retry schedule of Options.
func (e *Engine) newBackoff() *retrySchedule {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = e.opts.BackoffInitial
	b.MaxInterval = e.opts.BackoffMax
	b.Multiplier = 2
	b.RandomizationFactor = 0.5
	b.MaxElapsedTime = 0 // never gives up
	b.Reset()
	return &retrySchedule{b: b, max: e.opts.BackoffMax}
}

// NextBackOff returns the next wait.
func (r *retrySchedule) NextBackOff() time.Duration { return min(r.b.NextBackOff(), r.max) }

// Reset starts the schedule again from BackoffInitial.
func (r *retrySchedule) Reset() { r.b.Reset() }

// update changes the sink's statistics under its lock.
func (s *sink) update(fn func(*SinkStats)) {
	s.mu.Lock()
	fn(&s.stats)
	s.mu.Unlock()
}

// log returns the engine's logger with the sink's name.
func (s *sink) log() *slog.Logger { return s.e.opts.Logger.With("sink", s.def.Name) }

// sleep waits d, or less when ctx ends (false then).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// register registers the sink unless it is registered.
func (s *sink) register(ctx context.Context) error {
	if s.registered.Load() {
		return nil
	}
	st, err := s.e.store.RegisterSink(ctx, s.def.Name, s.e.opts.Now())
	if err != nil {
		return err
	}
	s.update(func(x *SinkStats) { x.Position = st.Position })
	s.registered.Store(true)
	return nil
}

// run registers the sink unless Register did, then alternates between
// waiting for its lease and delivering while it holds it, until ctx ends.
func (s *sink) run(ctx context.Context) {
	o := &s.e.opts
	storeRetry := s.e.newBackoff()
	for ctx.Err() == nil {
		if err := s.register(ctx); err != nil {
			if ctx.Err() == nil {
				s.log().Warn("webhooks: cannot register the sink; retrying", "err", err)
				sleep(ctx, storeRetry.NextBackOff())
			}
			continue
		}
		break
	}
	storeRetry.Reset()
	for ctx.Err() == nil {
		now := o.Now()
		st, held, err := s.e.store.AcquireSinkLease(ctx, s.def.Name, o.Holder, now, now.Add(o.LeaseTTL))
		switch {
		case err != nil:
			if ctx.Err() == nil {
				s.log().Warn("webhooks: cannot take the sink's lease; retrying", "err", err)
				sleep(ctx, storeRetry.NextBackOff())
			}
			continue
		case !held:
			storeRetry.Reset()
			s.update(func(x *SinkStats) { x.Holding, x.Position = false, st.Position })
			sleep(ctx, o.RenewEvery)
			continue
		}
		storeRetry.Reset()
		s.log().Info("webhooks: delivering for the sink", "holder", o.Holder, "position", st.Position)
		s.update(func(x *SinkStats) {
			x.Holding, x.Position, x.Attempts, x.LastError = true, st.Position, st.Attempts, st.LastError
		})
		err = s.holdAndDeliver(ctx, st.Position, flagadmin.Lease{Holder: o.Holder, Until: now.Add(o.LeaseTTL)})
		s.update(func(x *SinkStats) { x.Holding = false })
		if errors.Is(err, flagadmin.ErrLeaseLost) {
			s.log().Warn("webhooks: lost the sink's lease", "holder", o.Holder)
			sleep(ctx, storeRetry.NextBackOff()) // not at once: the lease was lost for a reason
		}
	}
}

// holdAndDeliver delivers from position while a second goroutine keeps
// the lease (held as this engine last renewed it) renewed; it returns when
// the lease is lost (flagadmin.ErrLeaseLost) or ctx ends.
func (s *sink) holdAndDeliver(ctx context.Context, position int64, held flagadmin.Lease) error {
	o := &s.e.opts
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for sleep(lctx, o.RenewEvery) {
			now := o.Now()
			_, ok, err := s.e.store.AcquireSinkLease(lctx, s.def.Name, o.Holder, now, now.Add(o.LeaseTTL))
			switch {
			case err == nil && ok:
				held.Until = now.Add(o.LeaseTTL)
			case err == nil:
				cancel(flagadmin.ErrLeaseLost)
				return
			case lctx.Err() != nil:
				return
			default:
				s.log().Warn("webhooks: cannot renew the sink's lease", "err", err)
				// Stop one renewal before the lease may end unrenewed:
				// another server may take it over then.
				if !held.HeldBy(o.Holder, o.Now().Add(o.RenewEvery)) {
					cancel(flagadmin.ErrLeaseLost)
					return
				}
			}
		}
	}()
	err := s.deliver(lctx, position)
	cancel(err)
	wg.Wait()
	if cause := context.Cause(lctx); errors.Is(cause, flagadmin.ErrLeaseLost) {
		return cause
	}
	return err
}

// errBatchFull ends a read of the event log once a batch is full.
var errBatchFull = errors.New("webhooks: batch full")

// deliver sends the sink's events after position, in id order, each until
// it is delivered, and advances the stored position after each; it
// returns when ctx ends or the lease is lost.
func (s *sink) deliver(ctx context.Context, position int64) error {
	batch := make([]flagadmin.Event, 0, flagadmin.ExportBatchSize)
	for {
		var err error
		if batch, err = s.nextBatch(ctx, position, batch[:0]); err != nil {
			return err
		}
		s.noteLag(batch)
		if len(batch) == 0 {
			if err := s.waitForEvents(ctx); err != nil {
				return err
			}
			continue
		}
		if err := s.sendBatch(ctx, batch); err != nil {
			return err
		}
		position = batch[len(batch)-1].ID
	}
}

// nextBatch reads the sink's next events after position into batch, up to
// its capacity, retrying while the event log cannot be read; it fails only
// when ctx ends.
func (s *sink) nextBatch(ctx context.Context, position int64, batch []flagadmin.Event) ([]flagadmin.Event, error) {
	retry := s.e.newBackoff()
	for {
		batch = batch[:0]
		err := s.e.store.ExportEvents(ctx, s.q, position, func(ev flagadmin.Event) error {
			batch = append(batch, ev)
			if len(batch) == cap(batch) {
				return errBatchFull
			}
			return nil
		})
		if err == nil || errors.Is(err, errBatchFull) {
			return batch, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.log().Warn("webhooks: cannot read the event log; retrying", "err", err)
		if !sleep(ctx, retry.NextBackOff()) {
			return nil, ctx.Err()
		}
	}
}

// noteLag records the events a batch leaves to deliver: all of them, or at
// least as many when it is full.
func (s *sink) noteLag(batch []flagadmin.Event) {
	full := len(batch) == cap(batch)
	s.update(func(x *SinkStats) {
		x.LagEvents, x.LagAtLeast, x.OldestPending = int64(len(batch)), full, time.Time{}
		if len(batch) > 0 {
			x.OldestPending = batch[0].CreatedAt
		}
	})
}

// waitForEvents waits until an event may have been recorded: the engine
// wakes the sink, or PollEvery passes. It fails only when ctx ends.
func (s *sink) waitForEvents(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-s.wake:
	case <-time.After(s.e.opts.PollEvery):
	}
	return nil
}

// sendBatch delivers the events of batch in order, advancing the stored
// position after each.
func (s *sink) sendBatch(ctx context.Context, batch []flagadmin.Event) error {
	for i := range batch {
		ev := &batch[i]
		if err := s.post(ctx, ev); err != nil {
			return err
		}
		if err := s.advance(ctx, ev.ID); err != nil {
			return err
		}
		s.update(func(x *SinkStats) {
			x.Position, x.Delivered, x.Attempts, x.LastError = ev.ID, x.Delivered+1, 0, ""
			x.LagEvents--
			x.OldestPending = time.Time{}
			if i+1 < len(batch) {
				x.OldestPending = batch[i+1].CreatedAt
			}
		})
	}
	return nil
}

// advance stores the position after a delivery, retrying while the
// database fails; it gives up when the lease is lost or ctx ends (the next
// holder then sends the event again).
func (s *sink) advance(ctx context.Context, id int64) error {
	o := &s.e.opts
	retry := s.e.newBackoff()
	for {
		err := s.e.store.AdvanceSink(ctx, s.def.Name, o.Holder, o.Now(), id, 1)
		switch {
		case err == nil, errors.Is(err, flagadmin.ErrLeaseLost):
			return err
		case ctx.Err() != nil:
			return ctx.Err()
		}
		s.log().Warn("webhooks: cannot store the sink's position; retrying", "event", id, "err", err)
		if !sleep(ctx, retry.NextBackOff()) {
			return ctx.Err()
		}
	}
}

// post sends one event until the sink answers 2xx; it returns an error only
// when ctx ends or the lease is lost.
func (s *sink) post(ctx context.Context, ev *flagadmin.Event) error {
	o := &s.e.opts
	body := eventjson.AppendEvent(nil, ev)
	retry := s.e.newBackoff()
	for attempt := 1; ; attempt++ {
		err := s.send(ctx, ev, body)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		msg := err.Error()
		s.update(func(x *SinkStats) { x.Attempts, x.LastError, x.Failures = attempt, msg, x.Failures+1 })
		wait := retry.NextBackOff()
		s.log().Warn("webhooks: delivery failed; retrying", "event", ev.ID, "attempt", attempt, "retry_in", wait.Round(time.Millisecond), "err", msg)
		if err := s.e.store.RecordSinkFailure(ctx, s.def.Name, o.Holder, o.Now(), attempt, msg); errors.Is(err, flagadmin.ErrLeaseLost) {
			return err
		}
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// send makes one attempt: nil when the sink answered 2xx.
func (s *sink) send(ctx context.Context, ev *flagadmin.Event, body []byte) error {
	o := &s.e.opts
	rctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.def.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	ts := o.Now().Unix()
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "flagadmin-webhooks")
	req.Header.Set(HeaderEventID, strconv.FormatInt(ev.ID, 10))
	req.Header.Set(HeaderEventType, ev.Type)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderSignature, Sign(s.def.Secret, ts, body))
	resp, err := o.Client.Do(req)
	if err == nil {
		// The status is what counts; the body is read (a little of it) only
		// so that the connection can serve the next request.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			return fmt.Errorf("answered %s", resp.Status)
		}
		return nil
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("no answer within %v", o.RequestTimeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err // without the URL, which the sink's name stands for
	}
	return err
}
