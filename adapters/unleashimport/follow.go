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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/flagadmin/flagadmin/flagadmin"
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

// FollowStore is a store a follower writes into: a flagadmin.FollowTarget
// that can tell whether it is empty. *memstore.Store and *bunstore.Store
// implement it.
type FollowStore interface {
	flagadmin.FollowTarget
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
	// that the copy is current (FollowState.SyncedAt), for the lag the
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
// it with Run; Status reports on it at any time.
type Follower struct {
	url, name string
	store     FollowStore
	opts      FollowOptions
	log       *slog.Logger

	// Owned by Run's goroutine.
	src       *Source
	source    flagadmin.FollowSource // the source's identity, once reached
	eventsOID uint32
	readSet   []string // what the follower reads of the schema, as first seen
	gaps      gapTracker
	prev      *worldState // the world as last applied; nil: the next is Full
	lastWorld time.Time   // when the last reading of the world began
	worldAt   time.Time   // when the reading of the world last applied began
	worldSrc  *Source     // the world's own connection, idle (nil: none open)
	reading   chan worldReading
	stopRead  context.CancelFunc
	held      heldEvent // the event delivery waits on for the world
	absent    map[string]bool
	started   time.Time
	position  int64
	holes     int64
	following bool      // the store follows the source (imported)
	stored    time.Time // SyncedAt as last written
	blocked   time.Time // since when delivery waits on a missing id
	announced bool      // events were read since the world was last read
	outages   map[string]time.Time
	retry     time.Duration

	leased    atomic.Bool
	needState atomic.Bool   // re-read the follow state (lease just acquired)
	wake      chan struct{} // the lease changed hands
	copying   atomic.Bool   // the first import's store transaction runs
	renew     chan struct{} // renew the lease now (the copy just ended)
	applied   atomic.Int64
	errs      atomic.Int64

	mu     sync.Mutex
	status flagadmin.FollowStatus
}

// NewFollower returns a follower of the Unleash database at sourceURL
// (postgres://...) into store. It reads nothing until Check or Run.
func NewFollower(sourceURL string, store FollowStore, opts FollowOptions) *Follower {
	opts.defaults()
	f := &Follower{url: sourceURL, name: SourceName(sourceURL), store: store, opts: opts, log: opts.Logger,
		outages: map[string]time.Time{}, wake: make(chan struct{}, 1), renew: make(chan struct{}, 1)}
	f.status = flagadmin.FollowStatus{Source: f.name, State: flagadmin.FollowStateStarting}
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
		f.setStatus(func(s *flagadmin.FollowStatus) {
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
	src, err := Open(ctx, f.url)
	if err == nil {
		_, _, err = src.identity(ctx, f.name)
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
func (f *Follower) Status() flagadmin.FollowStatus {
	f.mu.Lock()
	st := f.status
	f.mu.Unlock()
	st.Applied, st.Errors = f.applied.Load(), f.errs.Load()
	st.Applying = f.leased.Load() && st.State != flagadmin.FollowStateStopped
	if st.SyncedAt != nil {
		st.LagSeconds = max(0, f.opts.Now().Sub(*st.SyncedAt).Seconds())
	}
	return st
}

// setStatus changes the status under its lock.
func (f *Follower) setStatus(change func(*flagadmin.FollowStatus)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(&f.status)
}

// Run follows until ctx ends (then it releases the lease and returns nil)
// or following stops for good (an error wrapping ErrFollowStopped, also
// logged; the store keeps the copy as it is).
func (f *Follower) Run(ctx context.Context) error {
	f.started = flagadmin.Truncate(f.opts.Now())
	leaseCtx, stopLease := context.WithCancel(ctx)
	leaseDone := make(chan struct{})
	go func() { defer close(leaseDone); f.leaseLoop(leaseCtx) }()
	defer func() {
		stopLease()
		<-leaseDone
		f.closeSource()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = f.store.ReleaseFollowLease(rctx, f.opts.Holder)
		f.leased.Store(false)
	}()
	for {
		wait, err := f.step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			why := stoppedReason(err)
			f.setStatus(func(s *flagadmin.FollowStatus) { s.State, s.Reason = flagadmin.FollowStateStopped, why })
			f.log.Error("following stopped; serving goes on from the copy as it is", "source", f.name, "reason", why)
			return err
		}
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-f.wake:
				timer.Stop()
			case <-timer.C:
			}
		}
	}
}

// leaseLoop acquires or renews the lease at once and every RenewEvery.
func (f *Follower) leaseLoop(ctx context.Context) {
	ticker := time.NewTicker(f.opts.RenewEvery)
	defer ticker.Stop()
	var until, failing time.Time
	standby := false // the standby line was logged since this server last applied
	for {
		now := f.opts.Now()
		st, ok, err := f.store.AcquireFollowLease(ctx, f.opts.Holder, now, now.Add(f.opts.LeaseTTL))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && f.copying.Load():
			// The first copy's own transaction is the fence (LoadFollow
			// checks at its end that no other server took the lease): a
			// renewal that cannot run beside it, on a store with one
			// writer (SQLite), does not end the lease; it is renewed as
			// soon as the copy ends.
			ok = f.leased.Load()
		case err != nil:
			f.errs.Add(1)
			if failing.IsZero() {
				failing = now
				f.log.Warn("following: the follow lease cannot be renewed; this server keeps applying until it ends",
					"holder", f.opts.Holder, "until", until.Format(time.RFC3339), "reason", flat(err))
			}
			ok = f.leased.Load() && now.Before(until) // keep it while it lasts
		default:
			if !failing.IsZero() {
				f.log.Info("following: the follow lease can be renewed again", "holder", f.opts.Holder,
					"failed_for", now.Sub(failing).Round(time.Millisecond).String())
				failing = time.Time{}
			}
			if ok {
				until = now.Add(f.opts.LeaseTTL)
			}
		}
		if err == nil {
			f.setStatus(func(s *flagadmin.FollowStatus) { s.Holder = st.Holder })
		}
		was := f.leased.Swap(ok)
		switch {
		case ok:
			standby = false
			if !was {
				f.needState.Store(true)
				f.log.Info("following: this server applies the source's changes (it holds the follow lease)", "holder", f.opts.Holder)
			}
		case was && err != nil:
			f.log.Warn("following: the follow lease ended while it could not be renewed; this server serves the copy until it gets the lease again", "holder", f.opts.Holder)
		case err == nil && !standby:
			// Once each time this server becomes standby: at start as
			// after it applied.
			standby = true
			f.log.Info("following: another server applies the source's changes; this one serves the copy", "holder", f.opts.Holder, "applied_by", st.Holder)
		}
		if was != ok {
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-f.renew:
		}
	}
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

// step does one unit of work and returns how long to wait before the
// next, or an error that stops following.
func (f *Follower) step(ctx context.Context) (time.Duration, error) {
	if !f.leased.Load() {
		f.standby(ctx)
		return f.opts.RenewEvery, nil
	}
	if f.needState.Swap(false) || !f.following {
		st, err := f.store.FollowState(ctx)
		if err != nil {
			return f.failed("store", "the store cannot be read", err), nil
		}
		f.following, f.position, f.holes, f.prev = st.Following(), st.Position, st.Holes, nil
		if f.following && f.source.SystemID+f.source.Database != "" && !st.Source.Same(f.source) {
			return 0, stopf("the store follows %s (database %q of system %s), not %s (database %q of system %s)",
				st.Source.URL, st.Source.Database, st.Source.SystemID, f.name, f.source.Database, f.source.SystemID)
		}
		f.setStatus(func(s *flagadmin.FollowStatus) {
			s.Ready, s.Position, s.Holes = st.Following(), st.Position, st.Holes
			if !st.SyncedAt.IsZero() {
				t := st.SyncedAt
				s.SyncedAt = &t
			}
		})
	}
	if f.src == nil {
		if err := f.connect(ctx); err != nil {
			var s stop
			if errors.As(err, &s) {
				return 0, err
			}
			return f.failed("source", "the Unleash database cannot be reached", err), nil
		}
	}
	if !f.following {
		return f.importFirst(ctx)
	}
	return f.poll(ctx)
}

// standby reports the store's follow state while another server applies.
func (f *Follower) standby(ctx context.Context) {
	f.closeSource() // the holder reads the source; this server needs no connection
	st, err := f.store.FollowState(ctx)
	if err != nil {
		return
	}
	f.setStatus(func(s *flagadmin.FollowStatus) {
		s.State, s.Reason, s.Holder = flagadmin.FollowStateStandby, "", st.Holder
		s.Ready, s.Position, s.Holes, s.LagEvents, s.WaitingFor = st.Following(), st.Position, st.Holes, 0, 0
		if !st.SyncedAt.IsZero() {
			t := st.SyncedAt
			s.SyncedAt = &t
		}
	})
}

// connect opens the source and checks it: followable, the database the
// store follows (if it follows one), with the tables and columns the
// follower read when it started, and not behind the copy.
func (f *Follower) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, f.opts.ReadTimeout)
	defer cancel()
	src, err := Open(ctx, f.url)
	if err != nil {
		if errors.Is(err, ErrNotUnleash) || errors.Is(err, ErrUnsupportedVersion) {
			return stop{fmt.Errorf("%w: %w", ErrFollowStopped, err)}
		}
		return err
	}
	id, oid, err := src.identity(ctx, f.name)
	if err == nil {
		err = src.stillHas(f.readSet, f.name)
	}
	if err == nil && f.following {
		st, serr := f.store.FollowState(ctx)
		switch {
		case serr != nil:
			err = serr
		case !st.Source.Same(id):
			err = stopf("the store follows %s (database %q of system %s), and %s is another database (%q of system %s)",
				st.Source.URL, st.Source.Database, st.Source.SystemID, f.name, id.Database, id.SystemID)
		}
		if err == nil {
			// The ids handed out, not the events there are: events
			// deleted in the source after the copy took them stay in the
			// copy, and following goes on.
			drawn, nerr := src.lastDrawnID(ctx)
			if nerr != nil {
				err = nerr
			} else if drawn < f.position {
				err = stopf("the newest event id %s has handed out is %d, below the copy's position %d: the database was restored from an older backup, or is not the one the copy was made from", f.name, drawn, f.position)
			}
		}
	}
	if err != nil {
		src.Close()
		if errors.Is(err, errNotFollowable) {
			return stop{fmt.Errorf("%w: %w", ErrFollowStopped, err)}
		}
		return err
	}
	if f.readSet == nil {
		f.readSet = src.readSet()
		if src.Newer() {
			f.log.Warn("following: the Unleash schema is newer than the newest flagadmin was tested with; it is read all the same",
				"migration", src.LastMigration, "tested", NewestKnownMigration)
		}
	}
	f.src, f.source, f.eventsOID = src, id, oid
	return nil
}

// closeSource closes the source's connections, if open: the events' and
// the world's (a reading in progress is canceled and waited for).
func (f *Follower) closeSource() {
	if f.src != nil {
		f.src.Close()
		f.src = nil
	}
	if f.reading != nil {
		f.stopRead()
		r := <-f.reading
		f.reading = nil
		if r.src != nil {
			r.src.Close()
		}
	}
	if f.worldSrc != nil {
		f.worldSrc.Close()
		f.worldSrc = nil
	}
}

// worldReading is the outcome of a reading of the world on its own
// connection (startWorld).
type worldReading struct {
	world *worldState
	began time.Time
	err   error
	// src is the world's connection, to reuse; nil after a failure (closed).
	src *Source
}

// startWorld begins a reading of the world on the world's connection
// (opened when none is, and checked as connect checks the events': the
// source the events are read from, with what the follower reads of its
// schema), in a goroutine of its own; its outcome arrives on f.reading.
// prev is the world as last applied, whose flags the reading keeps when
// they did not change.
func (f *Follower) startWorld(ctx context.Context, began time.Time, prev *worldState) {
	src, started, url, name, want, readSet := f.worldSrc, f.started, f.url, f.name, f.source, f.readSet
	f.worldSrc = nil
	ch := make(chan worldReading, 1)
	rctx, cancel := context.WithTimeout(ctx, f.opts.ReadTimeout)
	f.reading, f.stopRead, f.lastWorld = ch, cancel, began
	go func() {
		defer cancel()
		r := worldReading{began: began}
		if src == nil {
			src, r.err = Open(rctx, url)
			if r.err == nil {
				var id flagadmin.FollowSource
				if id, _, r.err = src.identity(rctx, name); r.err == nil && !id.Same(want) {
					r.err = stopf("the connection to %s for its flags and tokens reached another database (%q of system %s) than its events (%q of system %s)",
						name, id.Database, id.SystemID, want.Database, want.SystemID)
				} else if r.err == nil {
					r.err = src.stillHas(readSet, name)
				}
			}
		}
		if r.err == nil {
			r.world, r.err = src.readWorldNow(rctx, started, prev)
		}
		if r.err != nil && src != nil {
			src.Close()
			src = nil
		}
		r.src = src
		ch <- r
	}()
}

// heldEvent is the first event of a project the copy does not know, and
// when a poll first read it: delivery stops before it until a reading of
// the world begun after then has been applied.
type heldEvent struct {
	id   int64
	seen time.Time
}

// heldProject returns the index in events of the first event whose
// project the copy does not know yet and that must wait for the world
// (len(events) when none). An event waits until a reading of the world
// begun after the event was first read is applied: a project created
// with it (private, perhaps) is then known, and its visibility with it.
// A project that reading did not find either no longer exists in Unleash
// (events outlive their project): its events are delivered, and later
// ones too (f.absent), until an event says it was created again. Before
// the first reading since this server took the lease (world nil), the
// projects the store holds are the ones the copy knows.
func (f *Follower) heldProject(ctx context.Context, events []flagadmin.Event, at time.Time, world *worldState, worldAt time.Time) int {
	stored := map[string]bool{}
	inStore := func(id string) bool {
		known, asked := stored[id]
		if !asked {
			_, err := f.store.Project(ctx, id)
			known = err == nil // not found, or not answering: wait for the world
			stored[id] = known
		}
		return known
	}
	for i, e := range events {
		if e.Project == nil || *e.Project == "" {
			continue
		}
		project := *e.Project
		if e.Type == flagadmin.EventProjectCreated {
			delete(f.absent, project)
		}
		if world != nil {
			if _, known := world.projects[project]; known || f.absent[project] {
				continue
			}
		} else if e.Type != flagadmin.EventProjectCreated && inStore(project) {
			continue
		}
		if e.ID == f.held.id && world != nil && worldAt.After(f.held.seen) {
			// Read before a reading of the world that did not find its
			// project.
			if f.absent == nil {
				f.absent = map[string]bool{}
			}
			f.absent[project] = true
			continue
		}
		if e.ID != f.held.id {
			f.held = heldEvent{id: e.ID, seen: at}
		}
		return i
	}
	return len(events)
}

// reason describes a failure in one line for the log and the status.
func (f *Follower) reason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", f.opts.ReadTimeout)
	}
	return connectReason(err)
}

// failed records a failure of what ("source" or "store"): the first of an
// outage is logged, with what it means; the source's connection is
// dropped. It returns how long to wait before trying again.
func (f *Follower) failed(what, msg string, err error) time.Duration {
	f.errs.Add(1)
	if what == "source" {
		f.closeSource()
	}
	if _, ongoing := f.outages[what]; !ongoing {
		f.outages[what] = f.opts.Now()
		synced, then := "never", "; serving goes on from the copy, and following resumes by itself"
		st := f.Status()
		if st.SyncedAt != nil {
			synced = st.SyncedAt.Format(time.RFC3339)
		}
		if !st.Ready {
			then = "; no copy is loaded yet (the API answers 503 until one is), and the import is tried again by itself"
		}
		f.log.Warn("following paused: "+msg+then, "source", f.name, "reason", f.reason(err), "copy_as_of", synced)
		f.retry = f.opts.RetryMin
	} else {
		f.retry = min(2*f.retry, f.opts.RetryMax)
	}
	f.setStatus(func(s *flagadmin.FollowStatus) {
		s.State, s.Reason = flagadmin.FollowStatePaused, msg+": "+f.reason(err)
	})
	return f.retry
}

// recovered ends the outages in progress, logging each.
func (f *Follower) recovered() {
	for what, since := range f.outages {
		delete(f.outages, what)
		f.log.Info("following resumed: the "+map[string]string{"source": "Unleash database answers", "store": "store can be written"}[what]+" again",
			"source", f.name, "paused", f.opts.Now().Sub(since).Round(time.Millisecond).String())
	}
}

// importFirst imports the source into the empty store (the first step of
// following), in one snapshot, up to the last id it can settle.
func (f *Follower) importFirst(ctx context.Context) (time.Duration, error) {
	f.setStatus(func(s *flagadmin.FollowStatus) { s.State, s.Reason = flagadmin.FollowStateImporting, "" })
	f.log.Info("following: the store is empty; importing the Unleash database first", "source", f.name)
	start := flagadmin.Truncate(f.opts.Now())
	sum, st, err := f.importSnapshot(ctx, start)
	if err != nil {
		var s stop
		switch {
		case errors.As(err, &s):
			return 0, err
		case errors.Is(err, flagadmin.ErrFollowLeaseLost):
			f.leased.Store(false)
			return 0, nil
		case errors.Is(err, flagadmin.ErrConflict):
			// Another server imported meanwhile, or the store got data.
			if _, cerr := f.Check(ctx); cerr != nil {
				return 0, stop{fmt.Errorf("%w: %w", ErrFollowStopped, cerr)}
			}
			f.needState.Store(true)
			return 0, nil
		case isSource(err):
			return f.failed("source", "the Unleash database cannot be read", err), nil
		}
		return f.failed("store", "the store cannot be written", err), nil
	}
	f.recovered()
	f.following, f.position, f.holes, f.stored = true, st.Position, st.Holes, st.SyncedAt
	f.setStatus(func(s *flagadmin.FollowStatus) {
		s.State, s.Ready, s.Position, s.Holes = flagadmin.FollowStateFollowing, true, st.Position, st.Holes
		s.Copied, s.CopyTotal = 0, 0
		if !st.SyncedAt.IsZero() {
			t := st.SyncedAt
			s.SyncedAt = &t
		}
	})
	attrs := []any{"source", f.name, "schema", sum.Schema, "position", st.Position, "elapsed", sum.Elapsed.Round(time.Millisecond).String()}
	for _, c := range sum.Kinds {
		attrs = append(attrs, strings.ReplaceAll(c.Name, " ", "_"), c.Imported)
	}
	f.log.Info("following: imported; now following", attrs...)
	for _, line := range sum.NotImportable {
		f.log.Warn("following: not importable: " + line)
	}
	return 0, nil
}

// sourceError marks an error of reading the source (as opposed to writing
// the store).
type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }
func (e sourceError) Unwrap() error { return e.err }

func isSource(err error) bool {
	var se sourceError
	return errors.As(err, &se)
}

// importSnapshot reads the world and the events in one snapshot and loads
// them, with the follow state, into the store. The events loaded stop
// below the first missing id that is not settled: every missing id below
// the newest is settled by one reading of the writers (on a second
// connection, after the snapshot) and, once they have ended, a look in a
// newer snapshot for ids that committed meanwhile (gaps.go).
func (f *Follower) importSnapshot(ctx context.Context, start time.Time) (*Summary, flagadmin.FollowState, error) {
	src := f.src
	sum := &Summary{Schema: fmt.Sprintf("Unleash schema at migration %d (%s)", src.Migrations, src.LastMigration)}
	tx, err := src.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, flagadmin.FollowState{}, sourceError{err}
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	r := &reader{src: src, tx: tx, sum: sum, prog: f.importProgress(), batchSize: f.opts.BatchSize, keyFeatures: true}
	w, err := r.readWorld(ctx, start)
	if err != nil {
		return nil, flagadmin.FollowState{}, sourceError{err}
	}
	var newest int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM events`).Scan(&newest); err != nil {
		return nil, flagadmin.FollowState{}, sourceError{err}
	}
	ranges, err := gapRanges(ctx, tx)
	if err != nil {
		return nil, flagadmin.FollowState{}, sourceError{err}
	}
	upTo := newest
	if len(ranges) > 0 {
		if upTo, err = f.settleImport(ctx, ranges, newest); err != nil {
			return nil, flagadmin.FollowState{}, sourceError{err}
		}
	}
	var holes int64
	for _, g := range ranges {
		if g[0] <= upTo {
			holes += min(g[1], upTo) - g[0] + 1
		}
	}
	st := flagadmin.FollowState{Source: f.source, Position: upTo, Holes: holes}
	if upTo == newest {
		st.SyncedAt = start
	}
	events := func(emit func([]flagadmin.Event) error) error {
		r.prog.step("write users, groups, projects, flags, tokens")
		if upTo == 0 {
			return nil
		}
		var storeErr error
		err := r.readEvents(ctx, eventMode{upTo: upTo}, func(batch []flagadmin.Event) error {
			storeErr = emit(batch)
			return storeErr
		})
		if err != nil && storeErr == nil && ctx.Err() == nil {
			return sourceError{err} // the reading failed, not the store
		}
		return err
	}
	f.copying.Store(true)
	err = f.store.LoadFollow(ctx, f.opts.Holder, f.opts.Now(), st, &w.batch, events)
	f.copying.Store(false)
	select {
	case f.renew <- struct{}{}: // the lease, which the copy may have kept from being renewed
	default:
	}
	if err != nil {
		return nil, st, err
	}
	r.prog.step("build the event indexes and commit")
	sum.Elapsed = time.Since(start)
	f.prev, f.lastWorld, f.worldAt = stateOf(w), start, start
	// kind, not Kind: a source with no events read none, and its summary
	// says "events: 0" all the same.
	f.applied.Add(int64(sum.kind("events").Imported))
	return sum, st, nil
}

// importProgress reports the first import's progress: its lines to
// FollowOptions.Progress, else to the log, and the events copied so far
// to the status.
func (f *Follower) importProgress() *progress {
	out := f.opts.Progress
	if out == nil {
		out = logLines{f.log}
	}
	p := newProgress(out)
	p.report = func(done, total int) {
		f.setStatus(func(s *flagadmin.FollowStatus) { s.Copied, s.CopyTotal = int64(done), int64(total) })
	}
	return p
}

// logLines logs each line written to it ("following: importing").
type logLines struct{ log *slog.Logger }

func (l logLines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.log.Info("following: importing", "progress", line)
	}
	return len(p), nil
}

// settleImport settles the missing ids of an import's snapshot: it reads
// the writers on a second connection (after the snapshot), waits a little
// for them to end, then looks for ids of the ranges committed meanwhile.
// It returns the last id up to which everything is settled.
func (f *Follower) settleImport(ctx context.Context, ranges [][2]int64, newest int64) (int64, error) {
	check, err := Open(ctx, f.url)
	if err != nil {
		return 0, err
	}
	defer check.Close()
	var tr gapTracker
	tr.pending = make([]gapRange, len(ranges))
	for i, g := range ranges {
		tr.pending[i] = gapRange{lo: g[0], hi: g[1]}
	}
	deadline := time.Now().Add(f.opts.ImportWait)
	for {
		writers, err := check.writers(ctx, f.eventsOID)
		if err != nil {
			return 0, err
		}
		tr.observe(writers)
		if tr.pending[0].cleared() {
			break
		}
		if time.Now().After(deadline) {
			return ranges[0][0] - 1, nil // the follower settles the rest
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	late, err := check.firstCommitted(ctx, ranges)
	if err != nil {
		return 0, err
	}
	if late > 0 {
		return late - 1, nil
	}
	return newest, nil
}

// poll reads the events after the position (and the world when due),
// settles what it can, and applies it with the new position.
func (f *Follower) poll(ctx context.Context) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, f.opts.ReadTimeout)
	defer cancel()
	at := f.opts.Now()
	limit := f.opts.BatchSize
	if !f.blocked.IsZero() {
		// Waiting on a missing id: what matters is that id (and the
		// writers); a small read sees it arrive without reading a whole
		// batch again and again.
		limit = min(limit, blockedBatch)
	}
	events, ids, err := f.src.eventsAfter(rctx, f.position, limit)
	if err != nil {
		return f.readFailed(ctx, err)
	}
	// The world read meanwhile, if its reading is done: applied with
	// this poll's events.
	var next *worldReading
	if f.reading != nil {
		select {
		case r := <-f.reading:
			f.reading, f.worldSrc = nil, r.src
			if r.err != nil {
				var s stop
				if errors.As(r.err, &s) {
					return 0, r.err
				}
				return f.readFailed(ctx, r.err)
			}
			next = &r
		default:
		}
	}
	// Delivery stops before an event whose project must wait for the
	// world (its id and those above are read again).
	world, worldAt := f.prev, f.worldAt
	if next != nil {
		world, worldAt = next.world, next.began
	}
	held := f.heldProject(ctx, events, at, world, worldAt)
	settled := ids
	if held < len(events) {
		settled = ids[:slices.Index(ids, events[held].ID)]
	}
	s := f.gaps.settle(f.position, settled)
	deliver := events[:held]
	for i, e := range deliver {
		if e.ID > s.position {
			deliver = deliver[:i]
			break
		}
	}
	b := &flagadmin.FollowBatch{Events: deliver, Position: s.position, Holes: f.holes + s.holes}
	if next != nil {
		diffInto(b, f.prev, next.world)
	}
	f.announced = f.announced || len(ids) > 0
	if since := f.opts.Now().Sub(f.lastWorld); f.reading == nil && (world == nil || since >= f.opts.StateInterval ||
		(f.announced && since >= f.opts.MinStateInterval) || held < len(events)) {
		f.startWorld(ctx, f.opts.Now(), world)
		f.announced = false
	}
	if f.gaps.waiting() {
		writers, err := f.src.writers(rctx, f.eventsOID)
		if err != nil {
			return f.readFailed(ctx, err)
		}
		f.gaps.observe(writers)
	}
	full := len(ids) == limit
	var lag int64
	switch {
	case full:
		newest, err := f.src.newestEventID(rctx)
		if err != nil {
			return f.readFailed(ctx, err)
		}
		lag = newest - s.position
	case len(ids) > 0:
		lag = ids[len(ids)-1] - s.position
	}
	caughtUp := lag == 0
	if caughtUp {
		b.SyncedAt = flagadmin.Truncate(at)
	}
	if b.Changes() || b.Position != f.position || (caughtUp && at.Sub(f.stored) >= f.opts.SyncEvery) {
		if err := f.store.ApplyFollow(ctx, f.opts.Holder, f.opts.Now(), b); err != nil {
			return f.applyFailed(ctx, err), nil
		}
		if !b.SyncedAt.IsZero() {
			f.stored = b.SyncedAt
		}
	}
	f.recovered()
	f.applied.Add(int64(len(deliver)))
	f.position, f.holes = s.position, b.Holes
	if next != nil {
		f.prev, f.worldAt = next.world, next.began
	}
	if s.waitingFor != 0 && f.blocked.IsZero() {
		f.blocked = at
	} else if s.waitingFor == 0 {
		f.blocked = time.Time{}
	}
	f.setStatus(func(st *flagadmin.FollowStatus) {
		st.State, st.Reason, st.Ready = flagadmin.FollowStateFollowing, "", true
		st.Position, st.Holes, st.LagEvents, st.WaitingFor = f.position, f.holes, lag, s.waitingFor
		if caughtUp {
			t := flagadmin.Truncate(at)
			st.SyncedAt = &t
		}
	})
	switch {
	case full && s.deliver > 0:
		return 0, nil // a backlog: read on at once
	case s.waitingFor != 0:
		// A transaction may still commit the missing id: look again soon,
		// less often the longer it stays open.
		switch waited := at.Sub(f.blocked); {
		case waited < time.Second:
			return min(25*time.Millisecond, f.opts.PollInterval), nil
		case waited < 10*time.Second:
			return f.opts.PollInterval, nil
		default:
			return max(f.opts.PollInterval, time.Second), nil
		}
	}
	return f.opts.PollInterval, nil
}

// readFailed handles a failed read of the source: a table or column gone
// stops following when the follower read it; anything else is an outage.
func (f *Follower) readFailed(ctx context.Context, err error) (time.Duration, error) {
	if ctx.Err() != nil {
		return 0, nil
	}
	if isSchemaError(err) && f.src != nil {
		rctx, cancel := context.WithTimeout(ctx, f.opts.ReadTimeout)
		defer cancel()
		if ierr := f.src.reinspect(rctx, f.name); ierr == nil {
			if err := f.src.stillHas(f.readSet, f.name); err != nil {
				return 0, err
			}
			return f.opts.RetryMin, nil // a column it reads when present went away: read without it
		}
	}
	return f.failed("source", "the Unleash database cannot be read", err), nil
}

// applyFailed handles a failed write of the store.
func (f *Follower) applyFailed(ctx context.Context, err error) time.Duration {
	switch {
	case ctx.Err() != nil:
		return 0
	case errors.Is(err, flagadmin.ErrFollowLeaseLost):
		f.leased.Store(false)
		f.log.Info("following: the follow lease was lost; another server may apply now", "holder", f.opts.Holder)
		return 0
	case errors.Is(err, flagadmin.ErrConflict):
		// The store is not where this follower thought (another server
		// applied meanwhile): read its state again and send the whole world.
		f.errs.Add(1)
		f.needState.Store(true)
		f.log.Warn("following: the store refused a batch; reading its follow state again", "reason", flat(err))
		return f.opts.RetryMin
	}
	return f.failed("store", "the store cannot be written", err)
}

// flat is err's message on one line.
func flat(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
