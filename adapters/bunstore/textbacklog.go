package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/indexbuild"
)

// textBacklog fills the full-text index with the texts of the events a
// load left pending (textLaterFrom), in the background: at Open when the
// database has a backlog, and after each load that leaves one. It indexes
// textBacklogBatch events a transaction on the writer, so that the
// store's writes wait for one batch at most, and tells its progress in the
// store's log. Until it is done, a free-text search scans the texts of the
// events it has not reached, so no answer depends on it.
type textBacklog struct {
	statements indexbuild.Backlog
	wake       chan struct{} // a load left a backlog
	cancel     context.CancelFunc
	done       chan struct{}
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
	b := &textBacklog{statements: statements, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	s.text = b
	if !run {
		close(b.done)
		return
	}
	go func() {
		defer close(b.done)
		for {
			var retry <-chan time.Time
			if err := s.fillTextBacklog(ctx); err != nil && ctx.Err() == nil {
				// A database this store may only read, or an outage:
				// tried again a while later, or after the next load.
				s.log.Warn("bunstore: could not fill the full-text index with the texts of loaded events; searches scan them meanwhile", "cause", err.Error(), "retry_in", textBacklogRetry.String())
				retry = time.After(textBacklogRetry)
			}
			select {
			case <-ctx.Done():
				return
			case <-b.wake:
			case <-retry:
			}
		}
	}()
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
// left, logging when it starts, every progressEvery events and when it is
// done.
func (s *Store) fillTextBacklog(ctx context.Context) error {
	start := time.Now()
	var filled, of, logged int64
	var longest time.Duration // the writer's longest wait for a batch
	for {
		batchStart := time.Now()
		from, to, more, err := s.fillTextBatch(ctx)
		if err != nil {
			return err
		}
		longest = max(longest, time.Since(batchStart))
		if of == 0 {
			if !more && from == to {
				return nil // nothing was pending
			}
			of = to - from
			s.log.Info("bunstore: filling the full-text index with the texts of loaded events; searches scan the texts not yet indexed", "events", of)
		}
		filled = of - (to - from)
		if !more {
			s.log.Info("bunstore: the full-text index holds the texts of every event", "events", of,
				"took", time.Since(start).Round(time.Millisecond).String(), "longest_batch", longest.Round(time.Millisecond).String())
			return nil
		}
		if filled/progressEvery > logged/progressEvery {
			s.log.Info("bunstore: filling the full-text index", "indexed", filled, "of", of)
			logged = filled
		}
	}
}

// fillTextBatch indexes the texts of the next textBacklogBatch pending
// events in a transaction on the writer, and returns the range that was
// pending before it and whether some is left after it (from == to and
// false when none was).
func (s *Store) fillTextBatch(ctx context.Context) (from, to int64, more bool, err error) {
	b := s.text.statements
	err = s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		err := tx.QueryRowContext(ctx, b.Pending).Scan(&from, &to)
		if errors.Is(err, sql.ErrNoRows) {
			from, to = 0, 0
			return nil
		}
		if err != nil {
			return err
		}
		upTo := min(from+textBacklogBatch, to)
		if _, err := tx.ExecContext(ctx, b.Fill, from, upTo); err != nil {
			return err
		}
		more = upTo < to
		if !more {
			_, err = tx.ExecContext(ctx, b.Done)
			return err
		}
		_, err = tx.ExecContext(ctx, b.Advance, upTo)
		return err
	})
	return from, to, more, err
}
