package bunstore

import (
	"context"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// SearchEvents implements flagadmin.Store. The page and the total always
// describe one snapshot of the database.
//
// Without a free-text query, the total is read from event_counts when it
// is a sum of counted rows (planTotal), else counted from an index, and the
// page's ids are read from an index too (a deferred join), so only the
// page's own rows are fetched. On PostgreSQL that is one statement (a
// statement sees one snapshot); MySQL and SQLite run the total and the page
// in one read-only transaction, as does a large offset with no column
// filter, which first skips whole days by their counts (daySeek). With a
// free-text query, whose every candidate row must be read to be checked
// anyway, one pass returns the page's ids with the count of all matches (a
// window count) instead of checking every row twice.
func (s *Store) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if q.Text != "" {
		return s.searchText(ctx, q)
	}
	plan := planTotal(q)
	if s.noDaySeek && plan.seekable(q) { // benchmarks only: read past the offset on the index
		plain := q
		plain.Offset = 0
		plan = planTotal(plain)
	}
	if s.dialect == dialect.PG && !plan.seekable(q) {
		page, err := s.searchOneStatement(ctx, q, plan)
		if err != nil {
			return flagadmin.EventPage{}, s.fail("search events", err)
		}
		return page, nil
	}
	page := flagadmin.EventPage{Events: []flagadmin.Event{}}
	err := s.inReadTx(ctx, "search events", func(ctx context.Context, tx bun.Tx) error {
		var before int64
		hasBefore := false
		offset := q.Offset
		var err error
		if plan.seekable(q) {
			page.Total, before, hasBefore, offset, err = s.daySeek(ctx, tx, q, plan)
		} else {
			page.Total, err = s.readTotal(ctx, tx, q, plan)
		}
		if err != nil || q.Limit <= 0 || q.Offset >= page.Total {
			return err
		}
		ids := s.pageIDs(tx, q, before, hasBefore, offset, nil)
		var rows []eventRow
		err = tx.NewRaw("SELECT ? FROM (?) AS p JOIN events AS e ON e.id = p.id ORDER BY e.created_at DESC, e.id DESC",
			bun.Safe(pageColumns), ids).Scan(ctx, &rows)
		if err != nil {
			return err
		}
		return appendEvents(&page, rows)
	})
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	return page, nil
}

// pageColumns are the columns of a page's events, from events AS e.
var pageColumns = "e." + strings.Join(eventColumns, ", e.")

// pageIDs selects the ids of q's page: q's matches, created before before
// when hasBefore, from offset on. Its values are bound by a (see sqlArgs).
func (s *Store) pageIDs(db bun.IDB, q flagadmin.EventQuery, before int64, hasBefore bool, offset int, a *sqlArgs) *bun.SelectQuery {
	sel := s.eventFilter(db.NewSelect().Model((*eventRow)(nil)).Column("id"), q, a)
	if hasBefore {
		sel = sel.Where("created_at < ?", a.bind(before))
	}
	sel = s.seekAfter(sel, q, a)
	return sel.OrderExpr("created_at DESC, id DESC").Limit(int64(q.Limit)).Offset(int64(offset))
}

// searchOneStatement answers q (no free text, no day seek) in one
// statement: the total (t), the page's ids from an index (p, skipped when
// the offset is past the total), and their rows; with an empty page, one
// row with the total and null event columns. The statement is a cached
// prepared one when its generic plan is safe (genericPlanSafe): planning
// it anew costs PostgreSQL more than running it.
func (s *Store) searchOneStatement(ctx context.Context, q flagadmin.EventQuery, plan totalPlan) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: []flagadmin.Event{}}
	if q.Limit <= 0 {
		var err error
		page.Total, err = s.readTotal(ctx, s.rdb, q, plan)
		return page, err
	}
	var a *sqlArgs
	if genericPlanSafe(q) && !s.literalPages {
		a = &sqlArgs{}
	}
	query, args, err := s.pageStatement(q, plan, a)
	if err != nil {
		return page, err
	}
	return s.queryPage(ctx, query, args, q.Limit)
}

// pageCapacity bounds the events a page's slice is allocated for up front.
const pageCapacity = 1000

// searchText answers a query with free text, in one read-only transaction.
func (s *Store) searchText(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: []flagadmin.Event{}}
	err := s.inReadTx(ctx, "search events", func(ctx context.Context, tx bun.Tx) error {
		if q.Limit > 0 {
			var hits []struct {
				ID    int64 `bun:"id"`
				Total int   `bun:"total"`
			}
			// The window runs over the matches in a subquery, sorted after:
			// with ORDER BY next to the window, PostgreSQL may walk the
			// events_created index and check every event, believing that a
			// LIMIT stops a window count early.
			matches := s.eventFilter(tx.NewSelect().Model((*eventRow)(nil)).Column("id", "created_at").ColumnExpr("COUNT(*) OVER () AS total"), q, nil)
			sel := tx.NewSelect().TableExpr("(?) AS m", matches).Column("id", "total")
			if q.After != nil { // the count stays over every match
				sel = s.seekAfter(sel, q, nil)
			}
			err := sel.OrderExpr("created_at DESC, id DESC").
				Limit(int64(q.Limit)).Offset(int64(q.Offset)).
				Scan(ctx, &hits)
			if err != nil {
				return err
			}
			if len(hits) > 0 || (q.Offset == 0 && q.After == nil) {
				ids := make([]int64, 0, len(hits))
				for _, h := range hits {
					ids = append(ids, h.ID)
					page.Total = h.Total
				}
				return s.fetchEvents(ctx, tx, ids, &page)
			}
			// The offset is past the last match: count them apart.
		}
		var err error
		page.Total, err = s.readTotal(ctx, tx, q, totalPlan{kind: totalCount})
		return err
	})
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	return page, nil
}

// fetchEvents appends the events with these ids to page, in page order.
func (s *Store) fetchEvents(ctx context.Context, tx bun.Tx, ids []int64, page *flagadmin.EventPage) error {
	if len(ids) == 0 {
		return nil
	}
	var rows []eventRow
	err := tx.NewSelect().Model(&rows).Column(eventColumns...).
		Where("id IN (?)", bun.In(ids)).
		OrderExpr("created_at DESC, id DESC").
		Scan(ctx)
	if err != nil {
		return err
	}
	return appendEvents(page, rows)
}

// appendEvents appends the events of rows to page.
func appendEvents(page *flagadmin.EventPage, rows []eventRow) error {
	for _, r := range rows {
		e, err := r.event()
		if err != nil {
			return err
		}
		page.Events = append(page.Events, e)
	}
	return nil
}

// eventFilter adds the WHERE clause of q: the SQL form of EventQuery.Matches.
// An empty filter list adds nothing (bun.In of an empty list would render
// IN (NULL), which matches nothing). Values are bound by a (see sqlArgs);
// free text (textFilter) only ever as literals, with a nil.
func (s *Store) eventFilter(sel *bun.SelectQuery, q flagadmin.EventQuery, a *sqlArgs) *bun.SelectQuery {
	for _, f := range []struct {
		column string
		values []string
	}{{"feature_name", q.Features}, {"project", q.Projects}, {"type", q.Types}, {"environment", q.Environments}, {"group_id", q.GroupIDs}} {
		if len(f.values) > 0 {
			sel = sel.Where("? IN (?)", bun.Ident(f.column), bun.In(bindList(a, f.values)))
		}
	}
	for _, f := range []struct {
		column string
		values []int64
	}{{"created_by_user_id", q.CreatedByUserIDs}, {"id", q.IDs}} {
		if len(f.values) > 0 {
			sel = sel.Where("? IN (?)", bun.Ident(f.column), bun.In(bindList(a, f.values)))
		}
	}
	if q.From != nil {
		sel = sel.Where("created_at >= ?", a.bind(ceilMillis(*q.From)))
	}
	if q.Before != nil {
		sel = sel.Where("created_at < ?", a.bind(ceilMillis(*q.Before)))
	}
	if q.RequireProject {
		sel = sel.Where("project IS NOT NULL")
	}
	if len(q.HiddenProjects) > 0 {
		sel = sel.Where("(project IS NULL OR project NOT IN (?))", bun.In(bindList(a, q.HiddenProjects)))
	}
	if q.Text != "" {
		sel = s.textFilter(sel, q.Text, q.TextScope)
	}
	return sel
}

// insertEvents appends events in order. With writeBack, each gets its id.
func (s *Store) insertEvents(ctx context.Context, db bun.IDB, events []flagadmin.Event, writeBack bool) error {
	if len(events) == 0 {
		return nil
	}
	rows := make([]eventRow, len(events))
	for i, e := range events {
		r, err := eventRowOf(e)
		if err != nil {
			return err
		}
		rows[i] = r
	}
	if err := eventStats(ctx, db, events, !s.oneLastEventRow); err != nil { // project_stats before event_counts (lock order)
		return err
	}
	if err := s.addCountsBun(ctx, db, events); err != nil {
		return err
	}
	if err := s.prepareDraw(ctx, db); err != nil { // last: right before the ids are drawn (eventorder.go)
		return err
	}
	if err := s.drawEventIDs(ctx, db, rows, events, writeBack); err != nil {
		return err
	}
	return s.afterIDs()
}

// drawEventIDs inserts the rows of events, the database drawing their ids;
// with writeBack, each event gets its id.
func (s *Store) drawEventIDs(ctx context.Context, db bun.IDB, rows []eventRow, events []flagadmin.Event, writeBack bool) error {
	if writeBack && s.dialect == dialect.MySQL {
		// MySQL has no RETURNING and a multi-row insert's ids need not be
		// consecutive: insert one by one and read each LAST_INSERT_ID.
		for i := range rows {
			if _, err := db.NewInsert().Model(&rows[i]).Exec(ctx); err != nil {
				return err
			}
			events[i].ID = rows[i].ID
		}
		return nil
	}
	chunk := 1000
	if s.dialect == dialect.SQLite {
		chunk = 500
	}
	for start := 0; start < len(rows); start += chunk {
		part := rows[start:min(len(rows), start+chunk)]
		q := db.NewInsert().Model(&part)
		if writeBack {
			q = q.Returning("id")
		} else {
			q = q.Returning("")
		}
		if _, err := q.Exec(ctx); err != nil {
			return err
		}
		if writeBack {
			// Ids are drawn in VALUES order; RETURNING's row order is not
			// promised, so hand them out sorted.
			ids := make([]int64, len(part))
			for i, r := range part {
				ids[i] = r.ID
			}
			slices.Sort(ids)
			for i, id := range ids {
				events[start+i].ID = id
			}
		}
	}
	return nil
}

// InsertEvents appends events in order, in transactions of batchSize events
// (1000 when batchSize < 1): the bulk path for imports and generated
// histories. PostgreSQL receives each batch with COPY, MySQL and SQLite with
// multi-row INSERTs. Each event's search texts are computed as in every
// write. Ids are assigned in order but not written back into events. A
// failed batch is rolled back; the batches before it stay. The storage
// deadline (WithTimeout) applies to each batch.
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
	if s.dialect == dialect.PG {
		return s.copyEvents(ctx, batch)
	}
	return s.inTx(ctx, "insert events", func(ctx context.Context, tx bun.Tx) error {
		return s.insertEvents(ctx, tx, batch, false)
	})
}

// copyColumns are the columns COPY fills, in eventRow's order.
var copyColumns = []string{"created_at", "type", "created_by", "created_by_user_id", "environment", "project", "feature_name", "data", "pre_data", "tags", "group_type", "group_id", "search_payload", "search_meta"}

// copyEvents appends events on PostgreSQL with COPY, in one transaction, on
// the pgx connection under database/sql: far less parsing than INSERT. Rows
// are built as COPY consumes them, overlapping the work with the server's.
func (s *Store) copyEvents(ctx context.Context, events []flagadmin.Event) error {
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return s.fail("insert events", err)
	}
	defer conn.Close()
	err = onPgx(conn, func(pc *pgx.Conn) error {
		next := 0
		rows := pgx.CopyFromFunc(func() ([]any, error) {
			if next == len(events) {
				return nil, nil
			}
			r, err := eventRowOf(events[next])
			next++
			return []any{r.CreatedAt, r.Type, r.CreatedBy, r.CreatedByUserID, r.Environment, r.Project, r.FeatureName,
				r.Data, r.PreData, r.Tags, r.GroupType, r.GroupID, r.SearchPayload, r.SearchMeta}, err
		})
		return pgx.BeginFunc(ctx, pc, func(tx pgx.Tx) error {
			if err := eventStatsPgx(ctx, tx, events); err != nil { // project_stats before event_counts (lock order)
				return err
			}
			if err := s.addCountsPgx(ctx, tx, events); err != nil {
				return err
			}
			if err := s.bumpVersionPgx(ctx, tx); err != nil { // right before the ids are drawn (eventorder.go)
				return err
			}
			// The events_order trigger takes the event order lock.
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, copyColumns, rows); err != nil {
				return err
			}
			return s.afterIDs()
		})
	})
	return s.fail("insert events", err)
}
