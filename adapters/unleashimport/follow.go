package unleashimport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// Following a live Unleash (docs/following-unleash.md). A Follower keeps a
// store a copy of an Unleash database: on an empty store it first imports the
// database as Import does (the same reading and mapping), then it follows:
//
//   - Events: every poll reads the events after the position in one
//     statement and applies the settled prefix (gaps.go: the gap rule), in
//     id order, exactly once, with the position, in one store transaction.
//   - State: the world (users, groups, projects, roles, favorites,
//     features, tokens) is read again, in one snapshot, every
//     StateInterval, and sooner (MinStateInterval) after a poll that read
//     events, since most of Unleash's changes announce themselves with an
//     event; only what changed is applied, with the events of the poll
//     that finds the reading done. The world is read on a connection of
//     its own while polls go on (on 20,000 flags a reading takes a second
//     or more; events do not wait for it), and its flags are read again
//     only when what they are mapped from changed (reader.featuresKey).
//     An event of a project the copy does not know yet waits for a
//     reading of the world begun after it was read, so that a new private
//     project's events are never shown before the project is known
//     (heldProject).
//   - Several servers: exactly one applies, the holder of the store's
//     follow lease; the others serve the copy and take over when the
//     lease ends (LeaseTTL after the holder's last renewal).
//   - Faults: a source that cannot be reached, or a store that cannot be
//     written, pauses following, with one log line when the outage starts
//     and one when it ends; it resumes by itself. A source that lost a
//     table or column the follower reads, that is another database than
//     the one the copy was made from, or whose ids cannot be followed,
//     stops following for good, with a clear message; serving goes on.
//     The waits between attempts are RetryMin, doubling to RetryMax while
//     the outage lasts (an exponential backoff without jitter).
//
// The code: Run's steps are a state machine over a followLoop
// (followloop.go: standby, read the follow state, connect, import, poll);
// the import is followimport.go, a poll's own steps (read, settle, apply,
// schedule) followpoll.go, the lease followlease.go. What the steps read
// of the source is one small interface, followSource (followsource.go),
// which *Source implements and a fake drives in the steps' tests.

// FollowStore is a store a follower writes into: a follow.Target
// that can tell whether it is empty. *memstore.Store and *bunstore.Store
// implement it.
type FollowStore interface {
	follow.Target
	// Contents counts what the store holds, by kind; all 0 when empty.
	Contents(ctx context.Context) (map[string]int64, error)
	// Project returns a project of the store (flagadmin.Store's).
	Project(ctx context.Context, id string) (flagadmin.Project, error)
}

// Defaults of FollowOptions.
const (
	// DefaultPollInterval is how often the follower asks the source for
	// new events.
	DefaultPollInterval = 100 * time.Millisecond
	// DefaultStateInterval is how often the world is read again at most
	// apart: a change no event announces (an expiry date moved, a row
	// changed by SQL) reaches the copy within about this long.
	DefaultStateInterval = time.Second
	// DefaultMinStateInterval is how soon the world is read again after a
	// poll that read events.
	DefaultMinStateInterval = 250 * time.Millisecond
	// DefaultFollowLeaseTTL is how long the follow lease lasts unrenewed:
	// another server takes over at most this long (plus RenewEvery) after
	// the holder died.
	DefaultFollowLeaseTTL = 20 * time.Second
	// DefaultFollowRenewEvery is how often the lease is renewed, or tried
	// for by a server that does not hold it.
	DefaultFollowRenewEvery = 5 * time.Second
	// DefaultSyncEvery is how often a caught-up holder records in the store
	// that the copy is current (follow.State.SyncedAt), for the lag the
	// other servers report.
	DefaultSyncEvery = time.Second
	// DefaultReadTimeout bounds one poll's reads of the source: a source
	// that stops answering pauses following after this long.
	DefaultReadTimeout = 10 * time.Second
	// DefaultFollowBatch is how many events a poll reads at most.
	DefaultFollowBatch = 5000
)

// FollowOptions tune a Follower. The zero value is usable.
type FollowOptions struct {
	// Holder is this server's id in the lease; "" makes one from the host
	// name, the process id and a random suffix.
	Holder string
	// Logger receives the follower's log; nil discards it.
	Logger *slog.Logger
	// Progress receives the import's progress lines (as Options.Progress).
	Progress io.Writer
	// PollInterval, StateInterval, MinStateInterval, LeaseTTL,
	// RenewEvery, SyncEvery, ReadTimeout: see the defaults of the same
	// names; 0 means the default.
	PollInterval, StateInterval, MinStateInterval time.Duration
	LeaseTTL, RenewEvery, SyncEvery, ReadTimeout  time.Duration
	// ImportWait is how long the first import waits for the transactions
	// that may hold ids missing in its snapshot (0: 5 s); past it, the
	// import stops below the first such id and following settles the rest.
	ImportWait time.Duration
	// BatchSize is how many events a poll reads at most (0: DefaultFollowBatch).
	BatchSize int
	// RetryMin and RetryMax bound the wait between attempts while the
	// source or the store fails (0: 500 ms and 5 s).
	RetryMin, RetryMax time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// BeforeApplying, when set, runs once in Run's goroutine, before the
	// first write after the copy: before the first batch the follower
	// applies to a store that holds the copy (the first import is the
	// copy, not after it). What starts from the store's newest event there
	// (a webhook sink seen for the first time) misses no event followed
	// after the copy. It runs on the server that applies, not on a
	// standby.
	BeforeApplying func(ctx context.Context)
}

func (o *FollowOptions) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.PollInterval, DefaultPollInterval)
	set(&o.StateInterval, DefaultStateInterval)
	set(&o.MinStateInterval, DefaultMinStateInterval)
	set(&o.LeaseTTL, DefaultFollowLeaseTTL)
	set(&o.RenewEvery, DefaultFollowRenewEvery)
	set(&o.SyncEvery, DefaultSyncEvery)
	set(&o.ReadTimeout, DefaultReadTimeout)
	set(&o.ImportWait, 5*time.Second)
	set(&o.RetryMin, 500*time.Millisecond)
	set(&o.RetryMax, 5*time.Second)
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultFollowBatch
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Holder == "" {
		host, _ := os.Hostname()
		b := make([]byte, 3)
		_, _ = rand.Read(b)
		o.Holder = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
}

// blockedBatch is how many events a poll reads while delivery waits on a
// missing id.
const blockedBatch = 256

// ErrFollowRefused: the store cannot follow the source: it holds data that
// is not a copy of it (Follower.Check).
var ErrFollowRefused = errors.New("the store cannot follow this Unleash database")

// ErrSourceRefused marks the error of CheckSource: the source can never be
// followed as configured.
var ErrSourceRefused = errors.New("the source cannot be followed")

// ErrFollowStopped wraps the reason following stopped for good (Run's
// error): the source lost what the follower reads, is another database, or
// cannot be followed.
var ErrFollowStopped = errors.New("following stopped")

// Follower keeps a store a copy of an Unleash database (see the package's
// follow.go). Create it with NewFollower, check the store with Check, run
// it with Run; Status reports on it at any time. What Run's steps carry
// from one to the next is a followLoop (followloop.go); the Follower holds
// what Run shares with the lease's goroutine and with Status.
type Follower struct {
	url, name string
	store     FollowStore
	opts      FollowOptions
	log       *slog.Logger
	// open connects to the source (Open; a fake in the tests of the steps).
	open func(ctx context.Context) (followSource, error)

	leased    atomic.Bool
	needState atomic.Bool        // re-read the follow state (lease just acquired)
	wake      chan struct{}      // the lease changed hands
	copying   atomic.Bool        // the first import's store transaction runs
	renew     chan chan struct{} // renew the lease now (the copy just ended), then close the channel sent
	applied   atomic.Int64
	errs      atomic.Int64

	mu     sync.Mutex
	status follow.Status
}

// NewFollower returns a follower of the Unleash database at sourceURL
// (postgres://...) into store. It reads nothing until Check or Run.
func NewFollower(sourceURL string, store FollowStore, opts FollowOptions) *Follower {
	opts.defaults()
	f := &Follower{url: sourceURL, name: SourceName(sourceURL), store: store, opts: opts, log: opts.Logger,
		wake: make(chan struct{}, 1), renew: make(chan chan struct{}, 1)}
	f.open = func(ctx context.Context) (followSource, error) {
		src, err := Open(ctx, sourceURL)
		if err != nil {
			return nil, err // not a nil *Source in an interface
		}
		return src, nil
	}
	f.status = follow.Status{Source: f.name, State: follow.Starting}
	return f
}

// Holder returns this follower's id in the lease.
func (f *Follower) Holder() string { return f.opts.Holder }

// Check tells whether the store can follow the source, before anything is
// read from the source: a store that follows a source resumes (Run checks
// that it is this one once it reaches it; resume is true); an empty store
// imports first; a store holding anything else is refused with
// ErrFollowRefused and a message naming what it holds.
func (f *Follower) Check(ctx context.Context) (resume bool, err error) {
	st, err := f.store.FollowState(ctx)
	if err != nil {
		return false, err
	}
	if st.Following() {
		// The copy is there: served from now on, before Run reaches
		// anything.
		f.setStatus(func(s *follow.Status) {
			s.Ready, s.Position, s.Holes = true, st.Position, st.Holes
			if !st.SyncedAt.IsZero() {
				t := st.SyncedAt
				s.SyncedAt = &t
			}
		})
		return true, nil
	}
	have, err := f.store.Contents(ctx)
	if err != nil {
		return false, err
	}
	var held []string
	for _, k := range []string{"users", "groups", "projects", "features", "tokens", "events"} {
		if have[k] > 0 {
			held = append(held, nounCount(have[k], k))
		}
	}
	if len(held) > 0 {
		return false, fmt.Errorf("%w: the store holds %s and is not a copy of %s; follow into an empty database", ErrFollowRefused, strings.Join(held, ", "), f.name)
	}
	return false, nil
}

// CheckSource reaches the source once, before Run, and returns an error of
// kind ErrSourceRefused (its message saying why, in one line) when it can
// never be followed as configured: it answers but is not an Unleash
// database, or one older than 5.0, or its event ids cannot be followed (a
// standby); or its server refuses the connection for its settings (a
// database that does not exist, a role or password refused: ErrRefused).
// A source that cannot be reached now is no refusal: CheckSource returns
// nil and Run tries again until it can (the same refusals later, as when
// a database is being restored, are outages too).
func (f *Follower) CheckSource(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, f.opts.ReadTimeout)
	defer cancel()
	src, err := f.open(ctx)
	if err == nil {
		_, err = src.identity(ctx, f.name)
		src.Close()
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotUnleash), errors.Is(err, ErrUnsupportedVersion), errors.Is(err, ErrRefused), errors.Is(err, errNotFollowable):
		return kindError{err, ErrSourceRefused}
	}
	return nil
}

// Status reports the follower's state now.
func (f *Follower) Status() follow.Status {
	f.mu.Lock()
	st := f.status
	f.mu.Unlock()
	st.Applied, st.Errors = f.applied.Load(), f.errs.Load()
	st.Applying = f.leased.Load() && st.State != follow.Stopped
	if st.SyncedAt != nil {
		st.LagSeconds = max(0, f.opts.Now().Sub(*st.SyncedAt).Seconds())
	}
	return st
}

// setStatus changes the status under its lock.
func (f *Follower) setStatus(change func(*follow.Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.status)
}

// Run follows until ctx ends (then it releases the lease and returns nil)
// or following stops for good (an error wrapping ErrFollowStopped, also
// logged; the store keeps the copy as it is).
func (f *Follower) Run(ctx context.Context) error {
	l := newFollowLoop(f)
	leaseCtx, stopLease := context.WithCancel(ctx)
	leaseDone := make(chan struct{})
	go func() { defer close(leaseDone); f.leaseLoop(leaseCtx) }()
	defer func() {
		stopLease()
		<-leaseDone
		l.closeSource()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = f.store.ReleaseFollowLease(rctx, f.opts.Holder)
		f.leased.Store(false)
	}()
	for {
		wait, err := l.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			why := stoppedReason(err)
			f.setStatus(func(s *follow.Status) { s.State, s.Reason = follow.Stopped, why })
			f.log.Error("following stopped; serving goes on from the copy as it is", "source", f.name, "reason", why)
			return err
		}
		if !f.pause(ctx, wait) {
			return nil
		}
	}
}

// pause waits d, or less when the lease changes hands; false when ctx
// ended.
func (f *Follower) pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-f.wake:
	case <-timer.C:
	}
	return true
}

// stoppedReason is why following stopped, in one line, without the
// "following stopped: " its error starts with (the state says it).
func stoppedReason(err error) string {
	why := flat(err)
	for prefix := ErrFollowStopped.Error() + ": "; strings.HasPrefix(why, prefix); {
		why = strings.TrimPrefix(why, prefix)
	}
	return why
}

// stop is a reason to stop following for good.
type stop struct{ err error }

func (s stop) Error() string { return s.err.Error() }
func (s stop) Unwrap() error { return s.err }

func stopf(format string, args ...any) error {
	return stop{fmt.Errorf("%w: "+format, append([]any{ErrFollowStopped}, args...)...)}
}

// flat is err's message on one line.
func flat(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
