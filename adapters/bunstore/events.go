package bunstore

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/flagadmin/flagadmin/flagadmin"
)

// SearchEvents implements flagadmin.Store. The page and the total are read in
// one read-only transaction, so they describe the same snapshot.
func (s *Store) SearchEvents(ctx context.Context, q flagadmin.EventQuery) (flagadmin.EventPage, error) {
	page := flagadmin.EventPage{Events: []flagadmin.Event{}}
	err := s.inReadTx(ctx, "search events", func(ctx context.Context, tx bun.Tx) error {
		total, err := s.eventFilter(tx.NewSelect().Model((*eventRow)(nil)), q).Count(ctx)
		if err != nil {
			return err
		}
		page.Total = int(total)
		if q.Limit <= 0 || q.Offset >= page.Total {
			return nil
		}
		var rows []eventRow
		err = s.eventFilter(tx.NewSelect().Model(&rows).Column(eventColumns...), q).
			OrderExpr("created_at DESC, id DESC").
			Limit(int64(q.Limit)).Offset(int64(q.Offset)).
			Scan(ctx)
		if err != nil {
			return err
		}
		for _, r := range rows {
			e, err := r.event()
			if err != nil {
				return err
			}
			page.Events = append(page.Events, e)
		}
		return nil
	})
	if err != nil {
		return flagadmin.EventPage{}, err
	}
	return page, nil
}

// eventFilter adds the WHERE clause of q: the SQL form of EventQuery.Matches.
// An empty filter list adds nothing (bun.In of an empty list would render
// IN (NULL), which matches nothing).
func (s *Store) eventFilter(sel *bun.SelectQuery, q flagadmin.EventQuery) *bun.SelectQuery {
	for _, f := range []struct {
		column string
		values []string
	}{{"feature_name", q.Features}, {"project", q.Projects}, {"type", q.Types}, {"environment", q.Environments}} {
		if len(f.values) > 0 {
			sel = sel.Where("? IN (?)", bun.Ident(f.column), bun.In(f.values))
		}
	}
	for _, f := range []struct {
		column string
		values []int64
	}{{"created_by_user_id", q.CreatedByUserIDs}, {"id", q.IDs}, {"group_id", q.GroupIDs}} {
		if len(f.values) > 0 {
			sel = sel.Where("? IN (?)", bun.Ident(f.column), bun.In(f.values))
		}
	}
	if q.From != nil {
		sel = sel.Where("created_at >= ?", ceilMillis(*q.From))
	}
	if q.Before != nil {
		sel = sel.Where("created_at < ?", ceilMillis(*q.Before))
	}
	if q.RequireProject {
		sel = sel.Where("project IS NOT NULL")
	}
	if len(q.HiddenProjects) > 0 {
		sel = sel.Where("(project IS NULL OR project NOT IN (?))", bun.In(q.HiddenProjects))
	}
	if q.Text != "" {
		sel = s.textFilter(sel, q.Text, q.TextScope)
	}
	return sel
}

// textFilter keeps the events whose search texts contain text, a literal
// (see the package documentation).
func (s *Store) textFilter(sel *bun.SelectQuery, text string, scope flagadmin.TextScope) *bun.SelectQuery {
	switch s.dialect {
	case dialect.PG:
		// The trigram index covers both texts joined (searchTextSQL); the
		// payload scope rechecks the payload alone.
		pattern := "%" + likeEscaper.Replace(text) + "%"
		sel = sel.Where(searchTextSQL+" LIKE ? ESCAPE '!'", pattern)
		if scope == flagadmin.TextPayload {
			sel = sel.Where("search_payload LIKE ? ESCAPE '!'", pattern)
		}
		return sel
	case dialect.MySQL:
		pattern := "%" + likeEscaper.Replace(text) + "%"
		if scope == flagadmin.TextPayload {
			return sel.Where("search_payload LIKE ? ESCAPE '!'", pattern)
		}
		return sel.Where("(search_payload LIKE ? ESCAPE '!' OR search_meta LIKE ? ESCAPE '!')", pattern, pattern)
	default:
		// SQLite's LIKE folds ASCII case; instr is an exact substring test.
		if scope == flagadmin.TextPayload {
			return sel.Where("instr(search_payload, ?) > 0", text)
		}
		return sel.Where("(instr(search_payload, ?) > 0 OR instr(search_meta, ?) > 0)", text, text)
	}
}

// likeEscaper makes a text a literal LIKE pattern with ESCAPE '!'.
var likeEscaper = strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")

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
// failed batch is rolled back; the batches before it stay.
func (s *Store) InsertEvents(ctx context.Context, events []flagadmin.Event, batchSize int) error {
	if batchSize < 1 {
		batchSize = 1000
	}
	for start := 0; start < len(events); start += batchSize {
		batch := events[start:min(len(events), start+batchSize)]
		if s.dialect == dialect.PG {
			if err := s.copyEvents(ctx, batch); err != nil {
				return err
			}
			continue
		}
		err := s.inTx(ctx, "insert events", false, func(ctx context.Context, tx bun.Tx) error {
			return s.insertEvents(ctx, tx, batch, false)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// copyColumns are the columns COPY fills, in eventRow's order.
var copyColumns = []string{"created_at", "type", "created_by", "created_by_user_id", "environment", "project", "feature_name", "data", "pre_data", "tags", "group_id", "search_payload", "search_meta"}

// copyEvents appends events on PostgreSQL with COPY, in one transaction, on
// the pgx connection under database/sql: far less parsing than INSERT. Rows
// are built as COPY consumes them, overlapping the work with the server's.
func (s *Store) copyEvents(ctx context.Context, events []flagadmin.Event) error {
	conn, err := s.db.DB.Conn(ctx)
	if err != nil {
		return s.fail("insert events", err)
	}
	defer conn.Close()
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres driver connection %T is not pgx's", dc)
		}
		next := 0
		rows := pgx.CopyFromFunc(func() ([]any, error) {
			if next == len(events) {
				return nil, nil
			}
			r, err := eventRowOf(events[next])
			next++
			return []any{r.CreatedAt, r.Type, r.CreatedBy, r.CreatedByUserID, r.Environment, r.Project, r.FeatureName,
				r.Data, r.PreData, r.Tags, r.GroupID, r.SearchPayload, r.SearchMeta}, err
		})
		return pgx.BeginFunc(ctx, sc.Conn(), func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"events"}, copyColumns, rows)
			return err
		})
	})
	return s.fail("insert events", err)
}
