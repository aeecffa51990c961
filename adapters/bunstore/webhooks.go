package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/flagadmin"
)

var _ flagadmin.SinkStore = (*Store)(nil)

// The delivery state of webhook sinks (flagadmin.SinkStore), one row per
// sink in webhook_sinks. Times are Unix milliseconds of the callers'
// clocks. Every write is one statement, so none waits for another lock
// while holding one, and none raises the store's version (the state of
// deliveries is not part of what caches of the API hold).
//
// The lease's acquisition and release, and the writes it fences
// (AdvanceSink, RecordSinkFailure), are conditional UPDATEs (lease.go), as
// the follow lease's are.

// sinkRow is a row of webhook_sinks.
type sinkRow struct {
	bun.BaseModel `bun:"table:webhook_sinks"`

	Name        string `bun:"name,pk"`
	Position    int64  `bun:"after_id"`
	Delivered   int64  `bun:"delivered"`
	Attempts    int    `bun:"attempts"`
	LastError   string `bun:"last_error"`
	LastErrorAt int64  `bun:"last_error_at"`
	Holder      string `bun:"holder"`
	LeaseUntil  int64  `bun:"lease_until"`
	Seq         int64  `bun:"seq"`
	CreatedAt   int64  `bun:"created_at"`
}

func (r sinkRow) state() flagadmin.SinkState {
	return flagadmin.SinkState{
		Name: r.Name, Position: r.Position, Delivered: r.Delivered, Attempts: r.Attempts,
		LastError: r.LastError, LastErrorAt: fromMillis(r.LastErrorAt),
		Lease: flagadmin.Lease{Holder: r.Holder, Until: fromMillis(r.LeaseUntil)}, CreatedAt: fromMillis(r.CreatedAt),
	}
}

// fromMillis is the UTC time of Unix milliseconds, the zero time for 0.
func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// RegisterSink implements flagadmin.SinkStore: the row is inserted with
// the largest event id as its position, in one statement, unless it exists.
func (s *Store) RegisterSink(ctx context.Context, name string, now time.Time) (flagadmin.SinkState, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	insert := `INSERT INTO webhook_sinks (name, after_id, delivered, attempts, last_error, last_error_at, holder, lease_until, seq, created_at)
		SELECT ?, COALESCE(MAX(id), 0), 0, 0, '', 0, '', 0, 0, ? FROM events`
	insert += s.sqlDialect.KeepExisting("name")
	if _, err := s.db.ExecContext(ctx, insert, name, now.UnixMilli()); err != nil {
		return flagadmin.SinkState{}, s.fail("register sink", err)
	}
	return s.sinkState(ctx, s.db, name)
}

// sinkState reads one sink's row on db.
func (s *Store) sinkState(ctx context.Context, db bun.IDB, name string) (flagadmin.SinkState, error) {
	var r sinkRow
	if err := db.NewSelect().Model(&r).Where("name = ?", name).Scan(ctx); err != nil {
		return flagadmin.SinkState{}, s.fail("read sink", err)
	}
	return r.state(), nil
}

// AcquireSinkLease implements flagadmin.SinkStore.
func (s *Store) AcquireSinkLease(ctx context.Context, name, holder string, now, until time.Time) (flagadmin.SinkState, bool, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	held, err := sinkLease(name).acquire(ctx, s.db, holder, now, until)
	if err != nil {
		return flagadmin.SinkState{}, false, s.fail("acquire sink lease", err)
	}
	st, err := s.sinkState(ctx, s.db, name)
	if err != nil {
		return flagadmin.SinkState{}, false, err
	}
	return st, held, nil
}

// ReleaseSinkLease implements flagadmin.SinkStore.
func (s *Store) ReleaseSinkLease(ctx context.Context, name, holder string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.fail("release sink lease", sinkLease(name).release(ctx, s.db, holder))
}

// AdvanceSink implements flagadmin.SinkStore.
func (s *Store) AdvanceSink(ctx context.Context, name, holder string, now time.Time, position, delivered int64) error {
	return s.fencedSinkWrite(ctx, "advance sink", `after_id = ?, delivered = delivered + ?, attempts = 0, last_error = '', last_error_at = 0`,
		[]any{position, delivered}, name, holder, now)
}

// RecordSinkFailure implements flagadmin.SinkStore.
func (s *Store) RecordSinkFailure(ctx context.Context, name, holder string, now time.Time, attempts int, lastError string) error {
	return s.fencedSinkWrite(ctx, "record sink failure", `attempts = ?, last_error = ?, last_error_at = ?`,
		[]any{attempts, lastError, now.UnixMilli()}, name, holder, now)
}

// fencedSinkWrite sets the columns of set on the sink's row when holder
// holds its lease at now; flagadmin.ErrLeaseLost when it does not.
func (s *Store) fencedSinkWrite(ctx context.Context, op, set string, args []any, name, holder string, now time.Time) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	ok, err := sinkLease(name).whileHeld(ctx, s.db, set, args, s.sqlDialect.AsyncCommit(), holder, now)
	if err != nil {
		return s.fail(op, err)
	}
	if !ok {
		return flagadmin.ErrLeaseLost
	}
	return nil
}

// SinkStates implements flagadmin.SinkStore.
func (s *Store) SinkStates(ctx context.Context) ([]flagadmin.SinkState, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var rows []sinkRow
	if err := s.rdb.NewSelect().Model(&rows).Order("name").Scan(ctx); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, s.fail("read sinks", err)
	}
	states := make([]flagadmin.SinkState, len(rows))
	for i, r := range rows {
		states[i] = r.state()
	}
	return states, nil
}
