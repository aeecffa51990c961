package bunstore

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// Keyset paging and the export (decisions §10 and §11).

// seekAfter adds the seek of a page by cursor (q.After): the rows after
// the cursor's position in the order (created_at, id) descending, a range
// of the same indexes the page is read from ((column,) created_at, id), so
// a page at any depth costs what the first one does. EXPLAIN shows the row
// comparison (created_at, id) < (?, ?) as the index condition on
// PostgreSQL (Index Only Scan Backward on events_created, or on
// events_project with project = ? AND ROW(created_at, id) < ROW(?, ?)) and
// as a range of the index on SQLite. MariaDB 10.11 makes no range of it
// (type index or ref, "Using where": a scan from the newest event down to
// the cursor), but does of the expanded form created_at < ? OR (created_at
// = ? AND id < ?) (type range over created_at and id), which it gets.
// Values are bound by a.
func (s *Store) seekAfter(sel *bun.SelectQuery, q flagadmin.EventQuery, a *sqlArgs) *bun.SelectQuery {
	if q.After == nil {
		return sel
	}
	ms, id := q.After.CreatedAt.UnixMilli(), q.After.ID
	if s.dialect == dialect.MySQL {
		return sel.Where("(created_at < ? OR (created_at = ? AND id < ?))", a.bind(ms), a.bind(ms), a.bind(id))
	}
	return sel.Where("(created_at, id) < (?, ?)", a.bind(ms), a.bind(id))
}

// ExportEvents implements flagadmin.Store: batches of
// flagadmin.ExportBatchSize events, id ascending, each read by one
// statement (WHERE <q's filters> AND id > <last id> ORDER BY id LIMIT n,
// a range of the primary key) outside any transaction, so nothing is held
// while fn runs. On PostgreSQL the rows are decoded from pgx's raw values
// (see pgxscan.go), as pages are.
func (s *Store) ExportEvents(ctx context.Context, q flagadmin.EventQuery, afterID int64, fn func(flagadmin.Event) error) error {
	q.Limit, q.Offset, q.After = 0, 0, nil
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		events, err := s.exportBatch(ctx, q, afterID)
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

// exportBatch reads the next batch of an export: q's matches with an id
// greater than afterID, the first flagadmin.ExportBatchSize of them by id.
func (s *Store) exportBatch(ctx context.Context, q flagadmin.EventQuery, afterID int64) ([]flagadmin.Event, error) {
	// The store's deadline for one operation (WithTimeout) bounds each
	// batch, not the whole export, which takes as long as its size and its
	// reader need.
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if s.dialect == dialect.PG {
		sel := s.rdb.NewSelect().TableExpr("events AS e").
			ColumnExpr("CAST(0 AS bigint) AS total, ?", bun.Safe(pageColumns))
		sel = s.eventFilter(sel, q, nil).Where("id > ?", afterID).
			OrderExpr("id ASC").Limit(flagadmin.ExportBatchSize)
		b, err := sel.AppendQuery(s.rdb.QueryGen(), nil)
		if err != nil {
			return nil, err
		}
		page, err := s.queryPage(ctx, string(b), nil, flagadmin.ExportBatchSize)
		return page.Events, err
	}
	rows := make([]eventRow, 0, flagadmin.ExportBatchSize)
	err := s.eventFilter(s.rdb.NewSelect().Model(&rows).Column(eventColumns...), q, nil).
		Where("id > ?", afterID).
		OrderExpr("id ASC").Limit(flagadmin.ExportBatchSize).
		Scan(ctx)
	if err != nil {
		return nil, err
	}
	page := flagadmin.EventPage{Events: make([]flagadmin.Event, 0, len(rows))}
	err = appendEvents(&page, rows)
	return page.Events, err
}
