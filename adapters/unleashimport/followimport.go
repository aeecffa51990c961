package unleashimport

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/follow"
)

// The follower's first step on an empty store: the import, as Import does
// it (the same reading and mapping), with the follow state, up to the last
// id it can settle.

// importFirst imports the source into the empty store (the first step of
// following), in one snapshot, up to the last id it can settle.
func (l *followLoop) importFirst(ctx context.Context) (time.Duration, error) {
	l.setStatus(func(s *follow.Status) { s.State, s.Reason = follow.Importing, "" })
	l.log.Info("following: the store is empty; importing the Unleash database first", "source", l.name)
	start := flagadmin.Truncate(l.opts.Now())
	sum, st, err := l.importSnapshot(ctx, start)
	if err != nil {
		return l.importFailed(ctx, err)
	}
	l.recovered()
	l.following, l.position, l.holes, l.stored = true, st.Position, st.Holes, st.SyncedAt
	// Logged before the status says so: whoever sees the follower ready
	// finds these lines in the log.
	attrs := []any{"source", l.name, "schema", sum.Schema, "position", st.Position, "elapsed", sum.Elapsed.Round(time.Millisecond).String()}
	for _, c := range sum.Kinds {
		attrs = append(attrs, strings.ReplaceAll(c.Name, " ", "_"), c.Imported)
	}
	l.log.Info("following: imported; now following", attrs...)
	for _, line := range sum.NotImportable {
		l.log.Warn("following: not importable: " + line)
	}
	l.setStatus(func(s *follow.Status) {
		s.State, s.Ready, s.Position, s.Holes = follow.Following, true, st.Position, st.Holes
		s.Copied, s.CopyTotal = 0, 0
		if t := syncedAt(st); t != nil {
			s.SyncedAt = t
		}
	})
	return 0, nil
}

// importFailed handles a failed import: the lease lost, or another
// server's import, hand over; a store that got other data stops
// following; anything else is an outage of the source or of the store.
func (l *followLoop) importFailed(ctx context.Context, err error) (time.Duration, error) {
	var s stop
	switch {
	case errors.As(err, &s):
		return 0, err
	case errors.Is(err, follow.ErrLeaseLost):
		l.leased.Store(false)
		return 0, nil
	case errors.Is(err, flagadmin.ErrConflict):
		// Another server imported meanwhile, or the store got data.
		if _, cerr := l.Check(ctx); cerr != nil {
			return 0, stop{fmt.Errorf("%w: %w", ErrFollowStopped, cerr)}
		}
		l.needState.Store(true)
		return 0, nil
	case isSource(err):
		return l.failed("source", "the Unleash database cannot be read", err), nil
	}
	return l.failed("store", "the store cannot be written", err), nil
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
// below the first missing id that is not settled (copyState).
func (l *followLoop) importSnapshot(ctx context.Context, start time.Time) (*Summary, follow.State, error) {
	schema := l.src.schema()
	sum := &Summary{Schema: fmt.Sprintf("Unleash schema at migration %d (%s)", schema.migrations, schema.migration)}
	prog := l.importProgress()
	var st follow.State
	var w *world
	read := false // the snapshot was read: what fails now is the copy
	err := l.src.snapshot(ctx, start, snapshotReading{sum: sum, prog: prog, batchSize: l.opts.BatchSize}, func(snap *sourceSnapshot) error {
		read, w = true, snap.world
		var err error
		if st, err = l.copyState(ctx, snap, start); err != nil {
			return sourceError{err}
		}
		return l.loadCopy(ctx, st, snap, prog)
	})
	if err != nil && !read {
		err = sourceError{err}
	}
	if err != nil {
		return nil, st, err
	}
	prog.step("build the event indexes and commit")
	sum.Elapsed = time.Since(start)
	l.prev, l.world.last, l.worldAt = stateOf(w), start, start
	// kind, not Kind: a source with no events read none, and its summary
	// says "events: 0" all the same.
	l.applied.Add(int64(sum.kind("events").Imported))
	return sum, st, nil
}

// copyState is the follow state of a copy of snap: its position is the
// newest id when no id below it is missing, else the last id below which
// every missing one is settled (settleImport), with the holes up to it.
func (l *followLoop) copyState(ctx context.Context, snap *sourceSnapshot, start time.Time) (follow.State, error) {
	upTo := snap.newest
	if len(snap.ranges) > 0 {
		var err error
		if upTo, err = l.settleImport(ctx, snap.ranges, snap.newest); err != nil {
			return follow.State{}, err
		}
	}
	var holes int64
	for _, g := range snap.ranges {
		if g[0] <= upTo {
			holes += min(g[1], upTo) - g[0] + 1
		}
	}
	st := follow.State{Source: l.source, Position: upTo, Holes: holes}
	if upTo == snap.newest {
		st.SyncedAt = start
	}
	return st, nil
}

// loadCopy loads snap's world and its events up to st's position into the
// store, with st, in the store's one transaction; the lease is renewed as
// soon as it ends.
func (l *followLoop) loadCopy(ctx context.Context, st follow.State, snap *sourceSnapshot, prog *progress) error {
	events := func(emit func([]flagadmin.Event) error) error {
		prog.step("write users, groups, projects, flags, tokens")
		if st.Position == 0 {
			return nil
		}
		var storeErr error
		err := snap.events(st.Position, func(batch []flagadmin.Event) error {
			storeErr = emit(batch)
			return storeErr
		})
		if err != nil && storeErr == nil && ctx.Err() == nil {
			return sourceError{err} // the reading failed, not the store
		}
		return err
	}
	l.copying.Store(true)
	err := l.store.LoadFollow(ctx, l.opts.Holder, l.opts.Now(), st, &snap.world.batch, events)
	l.copying.Store(false)
	l.renewNow(ctx)
	return err
}

// renewNow has the lease's goroutine renew the lease at once, which a
// long copy may have kept from being renewed until it ended, and waits
// for the renewal: the steps that follow write only under a lease the
// store holds for this server again (or, were it taken meanwhile, find
// this server on standby), not under one that ran out during the copy.
func (l *followLoop) renewNow(ctx context.Context) {
	done := make(chan struct{})
	select {
	case l.renew <- done:
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
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
		f.setStatus(func(s *follow.Status) { s.Copied, s.CopyTotal = int64(done), int64(total) })
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
// for them to end, then looks for ids of the ranges committed meanwhile
// (gaps.go). It returns the last id up to which everything is settled.
func (l *followLoop) settleImport(ctx context.Context, ranges [][2]int64, newest int64) (int64, error) {
	check, err := l.open(ctx)
	if err != nil {
		return 0, err
	}
	defer check.Close()
	var tr gapTracker
	tr.pending = make([]gapRange, len(ranges))
	for i, g := range ranges {
		tr.pending[i] = gapRange{lo: g[0], hi: g[1]}
	}
	deadline := time.Now().Add(l.opts.ImportWait)
	for {
		writers, err := check.writers(ctx)
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
