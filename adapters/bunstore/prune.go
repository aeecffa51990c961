package bunstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
	"github.com/flagadmin/flagadmin/flagadmin/vlog"
)

// Retention (--retention): PruneEvents removes a batch of old events in
// a write transaction of its own, through record as every write: the
// summaries drop them (event_counts), the store's version rises. It takes
// the prune lock first (the one row of log_prune), which HoldProject,
// ReleaseProject and RecordRetention take too, then reads the rule in
// force (the newest retention-changed event) and the holds, so neither a
// hold nor a rule is recorded while a prune that did not read it runs,
// pruners of several servers take turns, each by the rule the log
// records, and of servers recording the same new rule one does. Under
// it, until the batch records itself, it shares no row with a writer of
// events: besides the events it deletes and their leaves, which it marks
// pruned (committed leaves, whose indexes do not move), it writes only
// rows no writer writes, each taken by one batch at a time: its own shard
// of event_counts (eventcounts.PruneShard) and its own row of
// store_versions (pruneVersionShard). Its events-pruned event comes last,
// through record like any write's events, so the rows every writer takes
// (event_counts, the event order lock) are held only from then to the
// commit, as by any writer. On SQLite, whose
// one writer connection runs them in turns, a writer waits for one batch
// at most, which the pruner keeps short (adapters/tlog).

// pruneVersionShard is the row of store_versions a pruning batch raises,
// and no other write.
const pruneVersionShard = versionShards

// lockPrune takes the prune lock in tx, unless the database has a single
// writer, which needs none.
func (s *Store) lockPrune(ctx context.Context, tx bun.IDB) error {
	if s.sqlDialect.SingleWriter() {
		return nil
	}
	var id int
	return tx.QueryRowContext(ctx, "SELECT id FROM log_prune WHERE id = 1 FOR UPDATE").Scan(&id)
}

// PruneEvents implements vlog.Store: the rule and the holds are
// read after the prune lock, which RecordRetention and the holds take
// to change them.
func (s *Store) PruneEvents(ctx context.Context, limit int, cutoff func(*flagadmin.Event) (time.Time, error), record func([]int64) (flagadmin.Event, error)) ([]int64, error) {
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// Only events with leaves are pruned: those of the store's own writes
	// and of other servers' are appended first.
	if err := s.settleLeaves(ctx); err != nil {
		return nil, err
	}
	if _, err := s.appendBehind(ctx); err != nil {
		return nil, s.fail("prune events", err)
	}
	var ids []int64
	err := s.inTx(ctx, "prune events", func(ctx context.Context, t *txn) (*changes, error) {
		ids = nil
		if err := s.lockPrune(ctx, t); err != nil {
			return nil, err
		}
		before, err := s.pruneCutoff(ctx, t, cutoff)
		if err != nil {
			return nil, err
		}
		// Read after the lock: by a locking read where a plain read would
		// see the transaction's snapshot rather than the holds committed
		// before the lock (sqlDialect.LatestShareLock).
		holdsSQL := "SELECT project FROM log_holds" + s.sqlDialect.LatestShareLock()
		var held []string
		if err := t.NewRaw(holdsSQL).Scan(ctx, &held); err != nil {
			return nil, err
		}
		q := t.NewSelect().TableExpr("events").
			Column("id", "created_at", "type", "created_by_user_id", "environment", "project", "feature_name").
			Where("created_at < ?", stored.CeilMillis(before)).
			Where("type NOT IN (?)", bun.In(vlog.RetentionEventTypes())).
			// Only events whose leaves are appended (leaves.go, in id
			// order): an event pruned before would leave no trace in the log.
			Where("id <= (SELECT COALESCE(MAX(event_id), 0) FROM log_leaves)").
			OrderExpr("id").Limit(int64(limit))
		if len(held) > 0 {
			q = q.Where("(project IS NULL OR project NOT IN (?))", bun.In(held))
		}
		var rows []stored.Event
		if err := q.Scan(ctx, &rows); err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, errNothingWritten
		}
		pruned := make([]flagadmin.Event, len(rows))
		for i, r := range rows {
			ids = append(ids, r.ID)
			pruned[i] = flagadmin.Event{ID: r.ID, CreatedAt: stored.Time(r.CreatedAt), Type: r.Type, CreatedByUserID: r.CreatedByUserID,
				Environment: r.Environment, Project: r.Project, FeatureName: r.FeatureName}
		}
		if _, err := t.NewDelete().TableExpr("events").Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return nil, err
		}
		if _, err := t.NewUpdate().TableExpr("log_leaves").Set("pruned = ?", true).Where("event_id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
			return nil, err
		}
		e, err := record(ids)
		if err != nil {
			return nil, &callbackError{err}
		}
		return &changes{pruned: pruned, events: []flagadmin.Event{e}}, nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// logHoldRow is a row of log_holds.
type logHoldRow struct {
	bun.BaseModel `bun:"table:log_holds"`

	Project string `bun:"project,pk"`
	Since   int64  `bun:"since"`
}

// HoldProject implements vlog.Store, under the prune lock.
func (s *Store) HoldProject(ctx context.Context, project string, since time.Time, e flagadmin.Event) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "hold project", func(ctx context.Context, t *txn) (*changes, error) {
		if err := s.lockPrune(ctx, t); err != nil {
			return nil, err
		}
		res, err := s.sqlDialect.IgnoreDuplicates(t.NewInsert().Model(&logHoldRow{Project: project, Since: stored.Millis(since)})).Exec(ctx)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return nil, err
			}
			return nil, &callbackError{flagadmin.ErrConflict}
		}
		return &changes{events: []flagadmin.Event{e}}, nil
	})
}

// ReleaseProject implements vlog.Store, under the prune lock.
func (s *Store) ReleaseProject(ctx context.Context, project string, e flagadmin.Event) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "release project", func(ctx context.Context, t *txn) (*changes, error) {
		if err := s.lockPrune(ctx, t); err != nil {
			return nil, err
		}
		res, err := t.NewDelete().TableExpr("log_holds").Where("project = ?", project).Exec(ctx)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			if err != nil {
				return nil, err
			}
			return nil, &callbackError{flagadmin.ErrNotFound}
		}
		return &changes{events: []flagadmin.Event{e}}, nil
	})
}

// RecordRetention implements vlog.Store, under the prune lock,
// which serializes it with itself: the newest retention-changed event is
// read after the lock (by a locking read where a plain read would see the
// transaction's snapshot: sqlDialect.LatestLock).
func (s *Store) RecordRetention(ctx context.Context, fn func(*flagadmin.Event) (*flagadmin.Event, error)) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "record retention", func(ctx context.Context, t *txn) (*changes, error) {
		if err := s.lockPrune(ctx, t); err != nil {
			return nil, err
		}
		last, err := s.lastRetention(ctx, t, true)
		if err != nil {
			return nil, err
		}
		e, err := fn(last)
		if err != nil {
			return nil, &callbackError{err}
		}
		if e == nil {
			return nil, errNothingWritten
		}
		return &changes{events: []flagadmin.Event{*e}}, nil
	})
}

// pruneCutoff reads the rule in force in t and returns the cutoff of a
// pruning batch by it; errNothingWritten when cutoff prunes nothing.
func (s *Store) pruneCutoff(ctx context.Context, t *txn, cutoff func(*flagadmin.Event) (time.Time, error)) (time.Time, error) {
	rule, err := s.lastRetention(ctx, t, false)
	if err != nil {
		return time.Time{}, err
	}
	before, err := cutoff(rule)
	switch {
	case err != nil:
		return time.Time{}, &callbackError{err}
	case before.IsZero():
		return time.Time{}, errNothingWritten
	}
	return before, nil
}

// lastRetention reads the newest retention-changed event in t (nil when
// there is none), which holds the prune lock, so the read sees every
// rule recorded before. Where a plain read sees the transaction's
// snapshot (MySQL), lock asks for a locking read (sqlDialect.LatestLock),
// which sees what was committed before it whatever the transaction read
// first; without it the read must be t's first plain read, whose snapshot
// is taken then (after the lock). A pruning batch reads without it: a
// locking read of the events of a type locks the gap after them in the
// type's index, where writers of other types insert.
func (s *Store) lastRetention(ctx context.Context, t *txn, lock bool) (*flagadmin.Event, error) {
	q := t.NewSelect().Model((*stored.Event)(nil)).Where("type = ?", flagadmin.EventRetentionChanged).OrderExpr("id DESC").Limit(1)
	if strength := s.sqlDialect.LatestLock(); lock && strength != "" {
		q = q.For(strength)
	}
	var rows []stored.Event
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	e, err := rows[0].Event()
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// LogHolds implements vlog.Store.
func (s *Store) LogHolds(ctx context.Context) ([]vlog.Hold, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var rows []logHoldRow
	if err := s.rdb.NewSelect().Model(&rows).OrderExpr("project").Scan(ctx); err != nil {
		return nil, s.fail("log holds", err)
	}
	out := make([]vlog.Hold, len(rows))
	for i, r := range rows {
		out[i] = vlog.Hold{Project: r.Project, Since: stored.Time(r.Since)}
	}
	return out, nil
}
