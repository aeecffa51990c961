package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// textBacklog fills the full-text index with the texts of the events a
// load or a follower catching up left pending (textLaterFrom, deferText),
// in the background: at Open when the database has a backlog, and after
// each load or batch that leaves one. It indexes
// textBacklogBatch events a transaction on the writer, so that the
// store's writes wait for one batch at most, and tells its progress in the
// store's log. Until it is done, a free-text search scans the texts of the
// events it has not reached, so no answer depends on it.
type textBacklog struct {
	statements indexbuild.Backlog
	wake       chan struct{} // a load or a follower's batch left a backlog
	cancel     context.CancelFunc
	done       chan struct{}
	// lastDeferred is when a follower's batch last left its texts to the
	// backlog (Unix nanoseconds).
	lastDeferred atomic.Int64
	// indexedAt is when the writer last indexed the texts of events it
	// inserted (Unix nanoseconds), and unmerged whether it has since the
	// index was last merged (keepMerged).
	indexedAt   atomic.Int64
	unmerged    atomic.Bool
	indexedWake chan struct{} // the writer indexed texts into a merged index
}

// textBacklogBatch is how many events a transaction of the backlog
// indexes: about a tenth of a second of the writer's time on SQLite.
var textBacklogBatch int64 = 1_000

// textBacklogRetry is how long the store waits to fill the backlog again
// after a failure.
var textBacklogRetry = 30 * time.Second

// startTextBacklog starts filling the backlog, where the dialect has one;
// unless run, the store keeps its statements but fills nothing by itself.
func (s *Store) startTextBacklog(run bool) {
	statements, ok := s.sqlDialect.TextBacklog()
	if !ok {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &textBacklog{statements: statements, wake: make(chan struct{}, 1), indexedWake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	s.text = b
	if !run {
		close(b.done)
		return
	}
	go func() {
		defer close(b.done)
		s.runTextBacklog(ctx)
	}()
}

// runTextBacklog fills the backlog whenever a load or a follower's batch
// leaves one (and at the start), and keeps the index merged (keepMerged),
// until ctx ends.
func (s *Store) runTextBacklog(ctx context.Context) {
	b := s.text
	// A database without the backlog's table (a store opened
	// WithoutMigrate on one not migrated, such as a read command's that
	// refuses it) has no backlog: the store waits for a load or a
	// follower's batch, which only a migrated database takes.
	var from, to int64
	if err := s.rdb.QueryRowContext(ctx, b.statements.Pending).Scan(&from, &to); err != nil && !errors.Is(err, sql.ErrNoRows) {
		s.log.Debug("bunstore: no full-text backlog to fill at the start", "cause", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		}
	}
	var retry <-chan time.Time
	var nextMerge time.Time // keepMerged
	for fill := true; ; {
		if fill {
			retry = s.fillTextBacklogOrRetry(ctx)
		}
		fill = true
		select {
		case <-ctx.Done():
			return
		case <-b.wake:
		case <-retry:
		case <-b.indexedWake:
			fill = false // only the merge's time changed
		case <-b.mergeDue(nextMerge):
			nextMerge, fill = s.keepMerged(ctx, nextMerge), false
		}
	}
}

// fillTextBacklogOrRetry fills the backlog (fillTextBacklog) and returns
// nil, or, when that failed, a channel that receives when to try again.
func (s *Store) fillTextBacklogOrRetry(ctx context.Context) <-chan time.Time {
	err := s.fillTextBacklog(ctx)
	if err == nil || ctx.Err() != nil {
		return nil
	}
	// A database this store may only read, or an outage: tried again a
	// while later, or after the next load.
	s.log.Warn("bunstore: could not fill the full-text index with the texts of loaded events; searches scan them meanwhile", "cause", err.Error(), "retry_in", textBacklogRetry.String())
	return time.After(textBacklogRetry)
}

// Keeping the full-text index merged. Each transaction that indexes the
// texts of the events it inserts (indexTexts) writes them to a segment of
// their own, which FTS5 merges with others only as they pile up on a
// level (automerge), and a query looks each of its terms up in every
// segment: free text answered 1.5-1.6x the requests with the index of
// 1,000,000 events written in batches merged into one segment than in its
// nine (BENCHMARKS.md). So once the store's writes that indexed texts
// pause for textMergeQuiet, it merges the index into one segment, in
// transactions of bounded work (mergeIndex), and after a merge that took
// d it waits textMergeSpacing times d before the next: merging, which
// rewrites the index, takes the writer a twenty-first of its time at
// most.
var (
	textMergeQuiet   = time.Second
	textMergeSpacing = 20
)

// indexed tells the backlog's goroutine that the writer has indexed the
// texts of events it inserted: the index is to be merged once the writes
// pause.
func (b *textBacklog) indexed() {
	b.indexedAt.Store(time.Now().UnixNano())
	if !b.unmerged.Swap(true) {
		select {
		case b.indexedWake <- struct{}{}:
		default:
		}
	}
}

// mergeDue returns a channel that receives when the index may be merged:
// textMergeQuiet after the writer last indexed texts, and not before
// next; nil (never) when there is nothing to merge or the dialect merges
// nothing.
func (b *textBacklog) mergeDue(next time.Time) <-chan time.Time {
	if !b.unmerged.Load() || len(b.statements.Merge) == 0 {
		return nil
	}
	at := time.Unix(0, b.indexedAt.Load()).Add(textMergeQuiet)
	if next.After(at) {
		at = next
	}
	return time.After(time.Until(at))
}

// keepMerged merges the index unless the writer has indexed texts in the
// last textMergeQuiet (then the caller waits again), and returns when the
// next merge may begin: textMergeSpacing times this one's length after
// it, or textBacklogRetry after a failure.
func (s *Store) keepMerged(ctx context.Context, next time.Time) time.Time {
	b := s.text
	if time.Since(time.Unix(0, b.indexedAt.Load())) < textMergeQuiet {
		return next // written since the wait began
	}
	b.unmerged.Store(false) // a write during the merge sets it again
	start := time.Now()
	steps, err := s.mergeIndex(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("bunstore: could not merge the full-text index; searches read its segments meanwhile", "cause", err.Error(), "retry_in", textBacklogRetry.String())
		}
		b.unmerged.Store(true)
		return time.Now().Add(textBacklogRetry)
	}
	took := time.Since(start)
	if steps > 0 {
		s.log.Info("bunstore: merged the full-text index into one segment", "steps", steps, "took", took.Round(time.Millisecond).String())
	}
	return time.Now().Add(time.Duration(textMergeSpacing) * took)
}

// wakeTextBacklog tells the backlog's goroutine that a load left texts
// to index.
func (s *Store) wakeTextBacklog() {
	if s.text == nil {
		return
	}
	select {
	case s.text.wake <- struct{}{}:
	default:
	}
}

// stopTextBacklog stops filling the backlog and waits for its goroutine:
// the batch under way rolls back, and the next server to start goes on
// from the last one committed.
func (s *Store) stopTextBacklog() {
	if s.text == nil {
		return
	}
	s.text.cancel()
	<-s.text.done
}

// fillTextBacklog indexes the pending texts batch by batch until none is
// left, then merges the index (mergeText), logging when it starts, every
// progressEvery events and when it is done and merged. While a
// follower's batches leave their texts to it (deferText), it waits for
// them to pause for textBacklogQuiet, but fills one batch at least every
// textBacklogTurn.
func (s *Store) fillTextBacklog(ctx context.Context) error {
	start := time.Now()
	var filled, logged int64
	var longest time.Duration // the writer's longest wait for a batch
	for {
		if err := s.text.awaitQuiet(ctx); err != nil {
			return err
		}
		batchStart := time.Now()
		from, upTo, to, err := s.fillTextBatch(ctx)
		if err != nil {
			return err
		}
		longest = max(longest, time.Since(batchStart))
		if from == to { // nothing left to index: merge, when a range is pending
			steps, err := s.mergeText(ctx)
			if err == nil && (filled > 0 || steps > 0) {
				s.log.Info("bunstore: the full-text index holds the texts of every event", "events", filled,
					"took", time.Since(start).Round(time.Millisecond).String(), "longest_batch", longest.Round(time.Millisecond).String(),
					"merge_steps", steps)
			}
			return err
		}
		if filled == 0 {
			s.log.Info("bunstore: filling the full-text index with the texts of loaded events; searches scan the texts not yet indexed", "events", to-from)
		}
		filled += upTo - from
		if filled/progressEvery > logged/progressEvery {
			s.log.Info("bunstore: filling the full-text index", "indexed", filled, "of", filled+to-upTo)
			logged = filled
		}
	}
}

// fillTextBatch indexes the texts of the next textBacklogBatch pending
// events in a transaction on the writer: those above from up to upTo, of
// the range pending before it, (from, to]; from == to when none was (or
// the range is done, its index not yet merged: mergeText).
func (s *Store) fillTextBatch(ctx context.Context) (from, upTo, to int64, err error) {
	b := s.text.statements
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		err := tx.QueryRowContext(ctx, b.Pending).Scan(&from, &to)
		if errors.Is(err, sql.ErrNoRows) {
			from, upTo, to = 0, 0, 0
			return nil
		}
		if err != nil {
			return err
		}
		upTo = min(from+textBacklogBatch, to)
		if from == to {
			return nil // the range is done, its index not yet merged
		}
		if _, err := tx.ExecContext(ctx, b.Fill, from, upTo); err != nil {
			return err
		}
		if err := s.fillTokens(ctx, tx, from, upTo); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, b.Advance, upTo)
		return err
	})
	return from, upTo, to, err
}

// MergeTextIndex merges the segments of the full-text index into one
// now, where the database keeps it in segments (SQLite; elsewhere it does
// nothing), in transactions of bounded work: what the store does by
// itself once its writes pause, for a bulk writer (InsertEvents) that
// closes the store before they have.
func (s *Store) MergeTextIndex(ctx context.Context) error {
	if s.text == nil || len(s.text.statements.Merge) == 0 {
		return nil
	}
	_, err := s.mergeIndex(ctx)
	return s.fail("merge the full-text index", err)
}

// mergeText merges the segments the backlog's transactions left in the
// full-text index, in transactions of a bounded amount of work each, so
// that the store's writes wait for one at most, then ends the pending
// range (Done) unless a write extended it meanwhile. It returns at once
// when no range is pending, and tells how many transactions merged.
func (s *Store) mergeText(ctx context.Context) (steps int, err error) {
	b := s.text.statements
	return s.mergeSteps(ctx, func(ctx context.Context, tx bun.Tx) (bool, error) {
		var from, to int64
		err := tx.QueryRowContext(ctx, b.Pending).Scan(&from, &to)
		if errors.Is(err, sql.ErrNoRows) || err == nil && from < to {
			return true, nil // none pending, or more to fill (the caller is woken)
		}
		if err != nil {
			return false, err
		}
		merged, err := s.mergeStep(ctx, tx)
		if err == nil && merged {
			_, err = tx.ExecContext(ctx, b.Done)
		}
		return merged, err
	})
}

// mergeIndex merges the segments of the full-text index into one, in
// transactions of a bounded amount of work each (mergeStep), and tells
// how many transactions merged.
func (s *Store) mergeIndex(ctx context.Context) (steps int, err error) {
	return s.mergeSteps(ctx, s.mergeStep)
}

// mergeSteps runs step in a transaction of its own on the writer until it
// reports that it merged nothing (or fails), and tells how many
// transactions merged.
func (s *Store) mergeSteps(ctx context.Context, step func(ctx context.Context, tx bun.Tx) (bool, error)) (int, error) {
	for steps := 0; ; steps++ {
		merged := true
		err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) (err error) {
			merged, err = step(ctx, tx)
			return err
		})
		if err != nil || merged {
			return steps, err
		}
	}
}

// mergeStep runs each of the backlog's Merge statements once in tx, and
// reports whether none merged anything: the index is one segment.
func (s *Store) mergeStep(ctx context.Context, tx bun.Tx) (bool, error) {
	b := s.text.statements
	merged := true
	for _, stmt := range b.Merge {
		var before, after int64
		if err := tx.QueryRowContext(ctx, b.Changes).Scan(&before); err != nil {
			return false, err
		}
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, err
		}
		if err := tx.QueryRowContext(ctx, b.Changes).Scan(&after); err != nil {
			return false, err
		}
		merged = merged && after-before < 2 // the command's own row only
	}
	return merged, nil
}

// fillTokens adds the tokens of the events above from up to to, whose
// texts a fill has just indexed (the backlog's, a load's), to the
// vocabulary of the texts, where the dialect keeps one.
func (s *Store) fillTokens(ctx context.Context, db bun.IDB, from, to int64) error {
	keeper, keeps := s.sqlDialect.(tokenKeeper)
	if !keeps {
		return nil
	}
	rows, err := db.QueryContext(ctx, "SELECT search_payload, search_meta FROM events WHERE id > ? AND id <= ?", from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	tokens := stored.TokenSet{}
	for rows.Next() {
		var payload, meta string
		if err := rows.Scan(&payload, &meta); err != nil {
			return err
		}
		tokens.Add(payload)
		tokens.Add(meta)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return keeper.AddSearchTokens(ctx, db, tokens.Sorted())
}

// textLaterBatch is the number of events from which a follower's batch
// leaves their texts to the backlog (deferText): the batches of a
// follower catching up (5,000 events each by default), whose copy goes
// twice as fast without the index's work (BENCHMARKS.md); the few events
// of a follower that is up to date are indexed as they are written.
var textLaterBatch = 1_000

// textBacklogQuiet is how long the backlog waits after a batch that left
// its texts to it before it fills, so that a follower catching up has the
// writer to itself; textBacklogTurn bounds that wait, so that the backlog
// goes on under a follower that never pauses.
var textBacklogQuiet, textBacklogTurn = time.Second, 5 * time.Second

// deferText leaves the texts of events, a batch a follower writes in tx
// (ids given, increasing), to the backlog instead of indexing them as they
// are inserted, where the database has a backlog and the batch holds
// textLaterBatch events or more. The pending range is one: it is made
// (above the largest id stored) or extended to the batch's last id only
// when every event between the range and the batch is in it, that is
// when the batch's ids are above every stored one and no stored event is
// above the range. Otherwise the batch is indexed as it is written. It
// must run before the events are inserted (PostgreSQL's events are sent
// marked, which only COPY does: indexbuild.Backlog.Mark).
func (s *Store) deferText(ctx context.Context, tx bun.IDB, events []flagadmin.Event) (bool, error) {
	if s.text == nil || len(events) < textLaterBatch {
		return false, nil
	}
	b := s.text.statements
	if b.Mark != "" && !s.sqlDialect.CopiesEvents() {
		return false, nil
	}
	first, last := events[0].ID, events[len(events)-1].ID
	var stored int64
	if err := tx.QueryRowContext(ctx, lastEventIDSQL).Scan(&stored); err != nil || first <= stored {
		return false, err
	}
	var from, to int64
	err := tx.QueryRowContext(ctx, b.Pending).Scan(&from, &to)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		_, err = tx.ExecContext(ctx, b.Start, stored, last)
	case err != nil:
	case to >= stored:
		_, err = tx.ExecContext(ctx, b.Extend, last)
	default:
		return false, nil
	}
	return err == nil, err
}

// deferred tells the backlog that a batch left its texts to it, once the
// batch has committed.
func (s *Store) deferred() {
	s.text.lastDeferred.Store(time.Now().UnixNano())
	s.wakeTextBacklog()
}

// awaitQuiet returns once no batch has left its texts to the backlog for
// textBacklogQuiet, or textBacklogTurn after it was called.
func (b *textBacklog) awaitQuiet(ctx context.Context) error {
	turn := time.Now().Add(textBacklogTurn)
	for {
		quietAt := time.Unix(0, b.lastDeferred.Load()).Add(textBacklogQuiet)
		wait := min(time.Until(quietAt), time.Until(turn))
		if wait <= 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
}
