package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// InsertEvents appends events in order, in transactions of batchSize events
// (1000 when batchSize < 1): the bulk path for imports and generated
// histories. PostgreSQL receives each batch with COPY, MySQL and SQLite with
// multi-row INSERTs, through record as every write. Ids are assigned in
// order but not written back into events. A failed batch is rolled back;
// the batches before it stay. The storage deadline (WithTimeout) applies
// to each batch.
func (s *Store) InsertEvents(ctx context.Context, events []flagadmin.Event, batchSize int) error {
	if batchSize < 1 {
		batchSize = 1000
	}
	for start := 0; start < len(events); start += batchSize {
		if err := s.insertBatch(ctx, events[start:min(len(events), start+batchSize)]); err != nil {
			return err
		}
	}
	return nil
}

// insertBatch is one batch of InsertEvents, under the storage deadline.
func (s *Store) insertBatch(ctx context.Context, batch []flagadmin.Event) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.inTx(ctx, "insert events", func(ctx context.Context, t *txn) (*changes, error) {
		return &changes{events: slices.Clone(batch), bulk: true}, nil
	})
}

// LastEventID returns the id of the newest committed event, 0 when there
// is none: where a live stream's feed starts (adapters/eventfeed). Every
// smaller id is settled (record.go).
func (s *Store) LastEventID(ctx context.Context) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var id int64
	if err := s.rdb.DB.QueryRowContext(ctx, lastEventIDSQL).Scan(&id); err != nil {
		return 0, s.fail("last event id", err)
	}
	return id, nil
}

// preparedInserts are the short INSERTs of events and of leaves that the
// writer connection keeps prepared where the dialect asks for them
// (PreparedInsert): the full runs of that many rows of a write of events
// with their ids, and of leaves, go through them, with their values
// bound, the rest by multi-row INSERTs. They are prepared before a write
// takes its connection (prepareInserts): on SQLite the pool of writers
// has one connection, which a write holds to its end.
type preparedInserts struct {
	mu       sync.Mutex // held while preparing
	prepared atomic.Pointer[insertStatements]
}

// insertStatements are the statements of preparedInserts.
type insertStatements struct {
	rows           int
	events, leaves *sql.Stmt
}

// prepareInserts prepares the store's preparedInserts on its writer pool,
// unless they are or the dialect has none. A failure (a database not
// migrated yet) leaves the writes to their multi-row INSERTs, and the next
// write tries again.
func (s *Store) prepareInserts(ctx context.Context) {
	p := &s.inserts
	if p.prepared.Load() != nil {
		return
	}
	eventsInsert, rows := s.sqlDialect.PreparedInsert("events", stored.RowColumns)
	if rows == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prepared.Load() != nil {
		return
	}
	leavesInsert, _ := s.sqlDialect.PreparedInsert("log_leaves", leafColumns)
	events, err := s.db.DB.PrepareContext(ctx, eventsInsert)
	if err != nil {
		s.log.Debug("bunstore: could not prepare the insert of events", "cause", err.Error())
		return
	}
	leaves, err := s.db.DB.PrepareContext(ctx, leavesInsert)
	if err != nil {
		s.log.Debug("bunstore: could not prepare the insert of leaves", "cause", err.Error())
		_ = events.Close()
		return
	}
	p.prepared.Store(&insertStatements{rows: rows, events: events, leaves: leaves})
}

// close closes the prepared statements.
func (p *preparedInserts) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.prepared.Swap(nil)
	if st == nil {
		return nil
	}
	return errors.Join(st.events.Close(), st.leaves.Close())
}

// insert inserts the first of n rows in the transaction db by one of
// p's statements (pick chooses which), as many full runs of its rows as
// there are; values appends the values of row i to args. It returns how
// many rows it inserted: none when p has no statements or db is no
// transaction, the rest for the caller's multi-row INSERTs.
func (p *preparedInserts) insert(ctx context.Context, db bun.IDB, pick func(*insertStatements) *sql.Stmt, n int, values func(args []any, i int) []any) (int, error) {
	st := p.prepared.Load()
	if st == nil || n < st.rows {
		return 0, nil
	}
	var stmt *sql.Stmt
	switch tx := db.(type) {
	case *txn:
		stmt = tx.Tx.Tx.StmtContext(ctx, pick(st))
	case bun.Tx:
		stmt = tx.Tx.StmtContext(ctx, pick(st))
	default:
		return 0, nil
	}
	defer stmt.Close()
	var args []any
	done := 0
	for ; done+st.rows <= n; done += st.rows {
		args = args[:0]
		for i := done; i < done+st.rows; i++ {
			args = values(args, i)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return 0, err
		}
	}
	return done, nil
}
