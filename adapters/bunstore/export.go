package bunstore

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/sqlq"
	"github.com/flagadmin/flagadmin/adapters/bunstore/internal/stored"
	"github.com/flagadmin/flagadmin/flagadmin"
)

// Keyset paging of the search, and the export in id order.

// after is the condition of a page by cursor (q.After), empty without
// one: the rows after the cursor's position in the order (created_at, id)
// descending, a range of the same indexes the page is read from
// ((column,) created_at, id), so a page at any depth costs what the first
// one does. Each dialect writes the condition in the form its database
// reads as that range (sqlDialect.Before).
func (s *Store) after(q flagadmin.EventQuery) sqlq.Fragment {
	if q.After == nil {
		return sqlq.Fragment{}
	}
	return s.sqlDialect.Before(q.After.CreatedAt.UnixMilli(), q.After.ID)
}

// ExportEvents implements flagadmin.Store: batches of
// flagadmin.ExportBatchSize events, id ascending, each read by one
// statement (WHERE <q's filters> AND id > <last id> ORDER BY id LIMIT n,
// a range of the primary key) outside any transaction, so nothing is held
// while fn runs. On MySQL the export first settles the highest id it will
// read (settled), and reads none above it. The summaries may read a batch
// themselves (summaries.ReadExport: on PostgreSQL, decoded from pgx's raw
// values, as pages are).
func (s *Store) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	q.Limit, q.Offset, q.After = 0, 0, nil
	settled, err := s.settled(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return s.fail("export events", err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		events, err := s.exportBatch(ctx, q, sqlq.And(settled, sqlq.F("id > ?", afterID)))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return s.fail("export events", err)
		}
		for _, e := range events {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(events) < flagadmin.ExportBatchSize {
			return nil
		}
		afterID = events[len(events)-1].ID
	}
}

// exportBatch reads the next batch of an export: q's matches within ids
// (the range of ids still to read), the first flagadmin.ExportBatchSize of
// them by id.
func (s *Store) exportBatch(ctx context.Context, q flagadmin.EventQuery, ids sqlq.Fragment) ([]flagadmin.Event, error) {
	// The store's deadline for one operation (WithTimeout) bounds each
	// batch, not the whole export, which takes as long as its size and its
	// reader need.
	ctx, cancel := s.bound(ctx)
	defer cancel()
	where := sqlq.And(s.filter(q), ids)
	if events, read, err := s.summaries.ReadExport(ctx, s.rdb, where, flagadmin.ExportBatchSize); read || err != nil {
		return events, err
	}
	rows := make([]stored.Event, 0, flagadmin.ExportBatchSize)
	sel := sqlq.Fill("SELECT "+pageColumns+" FROM events AS e WHERE ? ORDER BY id ASC LIMIT ?", where, sqlq.F("?", flagadmin.ExportBatchSize))
	if err := s.rdb.NewRaw(sel.Text, sel.Args...).Scan(ctx, &rows); err != nil {
		return nil, err
	}
	page := flagadmin.EventPage{Events: make([]flagadmin.Event, 0, len(rows))}
	err := appendEvents(&page, rows)
	return page.Events, err
}

// settled is, where the dialect has a settle lock (MySQL), the condition
// id <= the highest id settled when the export starts, and empty
// elsewhere. InnoDB builds the snapshot of a statement by walking its list
// of running transactions without stopping commits, so a snapshot taken
// while two writers commit one after the other can miss the first and see
// the second: its larger id would move a follower past the smaller one for
// good. No writer of events commits while the event order lock is held in
// share mode, so the snapshot taken under it, by a transaction of its
// own, sees every id drawn before it; the highest is settled, and any
// later snapshot sees all those below it. The lock is held for that one
// read of the primary key's last entry; taking it waits for the writer
// that holds the lock to commit.
func (s *Store) settled(ctx context.Context) (sqlq.Fragment, error) {
	lock := s.sqlDialect.SettleLockSQL()
	if lock == "" {
		return sqlq.Fragment{}, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var last int64
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		var id int
		if err := tx.QueryRowContext(ctx, lock).Scan(&id); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, lastEventIDSQL).Scan(&last)
	})
	return sqlq.F("id <= ?", last), err
}
