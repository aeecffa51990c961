package unleashimport

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// Run's steps as a state machine. A followLoop is the follower's state
// between steps, owned by Run's goroutine; step looks at it (and at the
// lease) and does the one thing due:
//
//	standby     another server holds the lease: report the store's state
//	loadState   the lease was just acquired, or the store refused a batch,
//	            or nothing is copied yet: read the store's follow state
//	connect     no connection to the source: open one and check it
//	importFirst the store is empty: import the source (followimport.go)
//	poll        follow (followpoll.go): read, settle, apply, schedule
//
// A step that fails records an outage (failed) and returns the wait of
// the retry schedule; a step that finds the source can never be followed
// returns a stop, which ends Run.

// followLoop is the follower's state between steps.
type followLoop struct {
	*Follower
	started time.Time // when Run began: the time put where Unleash has none

	// The source.
	src     followSource  // the events' connection (nil: none open)
	source  follow.Source // the source's identity, once reached
	readSet []string      // what the follower reads of the schema, as first seen
	world   worldReads    // the world's readings, on a connection of their own
	ahead   *aheadRead    // the events being read for the next poll (nil: none)

	// The copy, as applied.
	following bool        // the store follows the source (imported)
	position  int64       // the last id applied or settled as a hole
	holes     int64       // the holes up to position
	stored    time.Time   // SyncedAt as last written
	applying  bool        // BeforeApplying has run
	prev      *worldState // the world as last applied; nil: the next is Full
	worldAt   time.Time   // when the reading of the world last applied began
	announced bool        // events were read since the world was last read

	// Delivery.
	gaps    gapTracker
	held    heldEvent       // the event delivery waits on for the world
	absent  map[string]bool // projects the world did not find, whose events go on (heldProject)
	blocked time.Time       // since when delivery waits on a missing id

	// Outages: since when each ("source", "store") lasts, and the wait
	// before the next attempt.
	outages map[string]time.Time
	retry   *backoff.ExponentialBackOff
}

// newFollowLoop returns the state of a Run of f that begins now.
func newFollowLoop(f *Follower) *followLoop {
	retry := backoff.NewExponentialBackOff()
	retry.InitialInterval, retry.MaxInterval = f.opts.RetryMin, f.opts.RetryMax
	retry.Multiplier, retry.RandomizationFactor = 2, 0 // RetryMin, doubling to RetryMax
	retry.MaxElapsedTime = 0                           // retries for ever
	retry.Clock = clock(f.opts.Now)
	retry.Reset()
	return &followLoop{Follower: f, started: flagadmin.Truncate(f.opts.Now()), outages: map[string]time.Time{}, retry: retry}
}

// clock is FollowOptions.Now as a backoff.Clock.
type clock func() time.Time

func (c clock) Now() time.Time { return c() }

// step does one unit of work and returns how long to wait before the
// next, or an error that stops following.
func (l *followLoop) step(ctx context.Context) (time.Duration, error) {
	if !l.leased.Load() {
		l.standby(ctx)
		return l.opts.RenewEvery, nil
	}
	if l.needState.Swap(false) || !l.following {
		l.dropAhead() // the position it read from may change
		if wait, err := l.loadState(ctx); wait > 0 || err != nil {
			return wait, err
		}
	}
	if l.src == nil {
		if err := l.connect(ctx); err != nil {
			var s stop
			if errors.As(err, &s) {
				return 0, err
			}
			return l.failed("source", "the Unleash database cannot be reached", err), nil
		}
	}
	if !l.following {
		return l.importFirst(ctx)
	}
	return l.poll(ctx)
}

// standby reports the store's follow state while another server applies.
func (l *followLoop) standby(ctx context.Context) {
	l.closeSource() // the holder reads the source; this server needs no connection
	st, err := l.store.FollowState(ctx)
	if err != nil {
		return
	}
	l.setStatus(func(s *follow.Status) {
		s.State, s.Reason, s.Holder = follow.Standby, "", st.Lease.Holder
		s.Ready, s.Position, s.Holes, s.LagEvents, s.WaitingFor = st.Following(), st.Position, st.Holes, 0, 0
		if t := syncedAt(st); t != nil {
			s.SyncedAt = t
		}
	})
}

// syncedAt is st.SyncedAt for the status (nil when never).
func syncedAt(st follow.State) *time.Time {
	if st.SyncedAt.IsZero() {
		return nil
	}
	t := st.SyncedAt
	return &t
}

// loadState reads the store's follow state: where the copy is, and
// whether it is one (else the first import is due). The whole world is
// sent with the next reading of it. A store that follows another source
// than the one reached stops following.
func (l *followLoop) loadState(ctx context.Context) (time.Duration, error) {
	st, err := l.store.FollowState(ctx)
	if err != nil {
		return l.failed("store", "the store cannot be read", err), nil
	}
	l.following, l.position, l.holes, l.prev = st.Following(), st.Position, st.Holes, nil
	if l.following && l.source.SystemID+l.source.Database != "" && !st.Source.Same(l.source) {
		return 0, stopf("the store follows %s (database %q of system %s), not %s (database %q of system %s)",
			st.Source.URL, st.Source.Database, st.Source.SystemID, l.name, l.source.Database, l.source.SystemID)
	}
	l.setStatus(func(s *follow.Status) {
		s.Ready, s.Position, s.Holes = st.Following(), st.Position, st.Holes
		if t := syncedAt(st); t != nil {
			s.SyncedAt = t
		}
	})
	return 0, nil
}

// connect opens the source and checks it (checkSource); a source that is
// not an Unleash database, or cannot be followed, stops following.
func (l *followLoop) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.opts.ReadTimeout)
	defer cancel()
	src, err := l.open(ctx)
	if err != nil {
		if errors.Is(err, ErrNotUnleash) || errors.Is(err, ErrUnsupportedVersion) {
			return stop{fmt.Errorf("%w: %w", ErrFollowStopped, err)}
		}
		return err
	}
	id, err := l.checkSource(ctx, src)
	if err != nil {
		src.Close()
		if errors.Is(err, errNotFollowable) {
			return stop{fmt.Errorf("%w: %w", ErrFollowStopped, err)}
		}
		return err
	}
	if l.readSet == nil {
		schema := src.schema()
		l.readSet = schema.readSet
		if schema.newer {
			l.log.Warn("following: the Unleash schema is newer than the newest flagadmin was tested with; it is read all the same",
				"migration", schema.migration, "tested", NewestKnownMigration)
		}
	}
	l.src, l.source = src, id
	return nil
}

// checkSource checks a new connection to the source: followable, with the
// tables and columns the follower read when it started, and, when the
// store follows, the database the store follows and not behind the copy.
func (l *followLoop) checkSource(ctx context.Context, src followSource) (follow.Source, error) {
	id, err := src.identity(ctx, l.name)
	if err == nil {
		err = stillHas(l.readSet, src.schema(), l.name)
	}
	if err != nil || !l.following {
		return id, err
	}
	st, err := l.store.FollowState(ctx)
	if err != nil {
		return id, err
	}
	if !st.Source.Same(id) {
		return id, stopf("the store follows %s (database %q of system %s), and %s is another database (%q of system %s)",
			st.Source.URL, st.Source.Database, st.Source.SystemID, l.name, id.Database, id.SystemID)
	}
	// The ids handed out, not the events there are: events deleted in
	// the source after the copy took them stay in the copy, and
	// following goes on.
	drawn, err := src.lastDrawnID(ctx)
	if err != nil {
		return id, err
	}
	if drawn < l.position {
		return id, stopf("the newest event id %s has handed out is %d, below the copy's position %d: the database was restored from an older backup, or is not the one the copy was made from", l.name, drawn, l.position)
	}
	return id, nil
}

// closeSource closes the source's connections, if open: the events' and
// the world's (a reading in progress is canceled and waited for).
func (l *followLoop) closeSource() {
	l.dropAhead()
	if l.src != nil {
		l.src.Close()
		l.src = nil
	}
	l.world.close()
}

// reason describes a failure in one line for the log and the status.
func (l *followLoop) reason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", l.opts.ReadTimeout)
	}
	return connectReason(err)
}

// failed records a failure of what ("source" or "store"): the first of an
// outage is logged, with what it means; the source's connection is
// dropped. It returns how long to wait before trying again: RetryMin at
// an outage's start, doubling to RetryMax while it lasts.
func (l *followLoop) failed(what, msg string, err error) time.Duration {
	if what == "source" {
		l.closeSource()
	}
	if _, ongoing := l.outages[what]; !ongoing {
		l.outages[what] = l.opts.Now()
		synced, then := "never", "; serving goes on from the copy, and following resumes by itself"
		st := l.Status()
		if st.SyncedAt != nil {
			synced = st.SyncedAt.Format(time.RFC3339)
		}
		if !st.Ready {
			then = "; no copy is loaded yet (the API answers 503 until one is), and the import is tried again by itself"
		}
		l.log.Warn("following paused: "+msg+then, "source", l.name, "reason", l.reason(err), "copy_as_of", synced)
		l.retry.Reset()
	}
	// Counted after the line is logged: whoever sees the count finds it.
	l.errs.Add(1)
	l.setStatus(func(s *follow.Status) {
		s.State, s.Reason = follow.Paused, msg+": "+l.reason(err)
	})
	return l.retry.NextBackOff()
}

// recovered ends the outages in progress, logging each.
func (l *followLoop) recovered() {
	for what, since := range l.outages {
		delete(l.outages, what)
		l.log.Info("following resumed: the "+map[string]string{"source": "Unleash database answers", "store": "store can be written"}[what]+" again",
			"source", l.name, "paused", l.opts.Now().Sub(since).Round(time.Millisecond).String())
	}
}

// readFailed handles a failed read of the source: a stop (the world's
// connection reached another database, or lost what the follower reads)
// stops following, and so does a table or column gone that the follower
// read; anything else is an outage.
func (l *followLoop) readFailed(ctx context.Context, err error) (time.Duration, error) {
	if s := (stop{}); errors.As(err, &s) {
		return 0, err
	}
	if ctx.Err() != nil {
		return 0, nil
	}
	if isSchemaError(err) && l.src != nil {
		rctx, cancel := context.WithTimeout(ctx, l.opts.ReadTimeout)
		defer cancel()
		if ierr := l.src.reinspect(rctx, l.name); ierr == nil {
			if err := stillHas(l.readSet, l.src.schema(), l.name); err != nil {
				return 0, err
			}
			return l.opts.RetryMin, nil // a column it reads when present went away: read without it
		}
	}
	return l.failed("source", "the Unleash database cannot be read", err), nil
}

// applyFailed handles a failed write of the store.
func (l *followLoop) applyFailed(ctx context.Context, err error) time.Duration {
	switch {
	case ctx.Err() != nil:
		return 0
	case errors.Is(err, follow.ErrLeaseLost):
		l.leased.Store(false)
		l.log.Info("following: the follow lease was lost; another server may apply now", "holder", l.opts.Holder)
		return 0
	case errors.Is(err, flagadmin.ErrConflict):
		// The store is not where this follower thought (another server
		// applied meanwhile): read its state again and send the whole world.
		l.needState.Store(true)
		l.log.Warn("following: the store refused a batch; reading its follow state again", "reason", flat(err))
		l.errs.Add(1)
		return l.opts.RetryMin
	}
	return l.failed("store", "the store cannot be written", err)
}
